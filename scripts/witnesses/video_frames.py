#!/usr/bin/env python3
"""video_frames.py — headless Chromium as a witness for SharePipe's MP4 output
(Tests/SharePipeTests/Animation/VideoRouteTests.swift).

Usage: video_frames.py VIDEO.mp4 TIME... Opens a page holding the video in headless Chromium, driven over the
DevTools protocol (a WebSocket client of its own: the standard library has none), seeks to each time in seconds
and reads the frame Chromium shows there through requestVideoFrameCallback and a canvas. Prints one JSON object:
the video's `duration` (seconds) and size (`width`, `height`) as Chromium reports them, and for each time the
frame's media time (`mediaTime`) and its centre pixel (`centre`, RGB). Exits non-zero, saying why, when Chromium
is missing or cannot play the file.
"""
import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

PAGE = """<html><body><video id="v" muted playsinline preload="auto"></video><canvas id="c"></canvas></body></html>"""

SCRIPT = """
(async () => {
  const v = document.getElementById('v');
  await new Promise((done, fail) => {
    v.addEventListener('loadedmetadata', done, {once: true});
    v.addEventListener('error', () => fail(new Error('video error ' + (v.error && v.error.code))), {once: true});
    v.src = %s;
  });
  const frames = [];
  for (const t of %s) {
    frames.push(await new Promise(done => {
      let finished = false;
      const read = (via, mediaTime) => {
        if (finished) return;
        finished = true;
        const c = document.getElementById('c');
        c.width = v.videoWidth; c.height = v.videoHeight;
        const g = c.getContext('2d');
        g.drawImage(v, 0, 0);
        const d = g.getImageData(Math.floor(c.width / 2), Math.floor(c.height / 2), 1, 1).data;
        done({time: t, via, mediaTime, centre: [d[0], d[1], d[2]]});
      };
      // The frame presented after the seek; when the seek lands on the frame already shown, none is presented
      // again, so the seeked event (plus a second) reads the frame in place.
      v.requestVideoFrameCallback((now, meta) => read('requestVideoFrameCallback', meta.mediaTime));
      v.addEventListener('seeked', () => setTimeout(() => read('seeked', v.currentTime), 1000), {once: true});
      v.currentTime = t;
    }));
  }
  return JSON.stringify({duration: v.duration, width: v.videoWidth, height: v.videoHeight, frames});
})()
"""


class WebSocket:
    """The least of RFC 6455 a DevTools session needs: text frames, masked from the client."""

    def __init__(self, url):
        match = re.match(r"ws://([^:/]+):(\d+)(/.*)", url)
        host, port, path = match.group(1), int(match.group(2)), match.group(3)
        self.sock = socket.create_connection((host, port), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            ("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, host, port, key)).encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError("DevTools closed the WebSocket handshake")
            response += chunk
        if b" 101 " not in response.split(b"\r\n")[0]:
            raise RuntimeError("DevTools refused the WebSocket: %r" % response[:200])
        self.buffer = response.split(b"\r\n\r\n", 1)[1]

    def send(self, text):
        payload = text.encode()
        header = bytearray([0x81])
        if len(payload) < 126:
            header.append(0x80 | len(payload))
        elif len(payload) < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", len(payload))
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", len(payload))
        mask = os.urandom(4)
        self.sock.sendall(bytes(header) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def read(self, count):
        while len(self.buffer) < count:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("DevTools closed the WebSocket")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def receive(self):
        message = b""
        while True:
            first, second = self.read(2)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack(">H", self.read(2))[0]
            elif length == 127:
                length = struct.unpack(">Q", self.read(8))[0]
            payload = self.read(length)
            if first & 0x0F == 0x8:
                raise RuntimeError("DevTools closed the WebSocket")
            if first & 0x0F in (0x1, 0x0, 0x2):
                message += payload
                if first & 0x80:
                    return message.decode()


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: video_frames.py VIDEO.mp4 TIME...")
    video = os.path.abspath(sys.argv[1])
    times = [float(t) for t in sys.argv[2:]]
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        sys.exit("video_frames.py: chromium is missing (scripts/install-deps does not install it; apt install chromium)")
    profile = tempfile.mkdtemp(prefix="sharepipe-chromium-")
    page = os.path.join(os.path.dirname(video), "play-%d.html" % os.getpid())
    with open(page, "w") as handle:
        handle.write(PAGE)
    process = subprocess.Popen(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
         "--allow-file-access-from-files", "--autoplay-policy=no-user-gesture-required", "--mute-audio",
         "--user-data-dir=" + profile, "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        endpoint = None
        deadline = time.time() + 60
        while endpoint is None and time.time() < deadline:
            line = process.stderr.readline()
            if not line and process.poll() is not None:
                sys.exit("video_frames.py: chromium exited before DevTools listened")
            match = re.search(r"DevTools listening on (ws://\S+)", line)
            if match:
                endpoint = match.group(1)
        if endpoint is None:
            sys.exit("video_frames.py: chromium's DevTools did not start within 60 s")
        port = re.match(r"ws://[^:]+:(\d+)/", endpoint).group(1)
        # The page's target (the browser endpoint cannot evaluate script).
        targets = None
        for _ in range(100):
            with urllib.request.urlopen("http://127.0.0.1:%s/json/list" % port, timeout=10) as listing:
                response = listing.read()
            targets = [t for t in json.loads(response) if t.get("type") == "page"]
            if targets:
                break
            time.sleep(0.1)
        ws = WebSocket(targets[0]["webSocketDebuggerUrl"])
        calls = iter(range(1, 1 << 30))

        def call(method, **params):
            """Sends one command and returns its response (events in between are read and dropped)."""
            identifier = next(calls)
            ws.send(json.dumps({"id": identifier, "method": method, "params": params}))
            while True:
                message = json.loads(ws.receive())
                if message.get("id") == identifier:
                    return message

        # Load the page, then wait until the document in the tab is it, fully loaded.
        call("Page.navigate", url="file://" + page)
        for _ in range(600):
            state = call("Runtime.evaluate", expression="location.href + ' ' + document.readyState",
                         returnByValue=True).get("result", {}).get("result", {}).get("value", "")
            if state == "file://%s complete" % page:
                break
            time.sleep(0.1)
        else:
            sys.exit("video_frames.py: the page did not load in chromium within 60 s")
        expression = SCRIPT % (json.dumps(os.path.basename(video)), json.dumps(times))
        message = call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        result = message.get("result", {})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            sys.exit("video_frames.py: Chromium could not play %s: %s" % (
                video, details.get("exception", {}).get("description") or details.get("text")))
        print(result["result"]["value"])
    finally:
        process.kill()
        process.wait()
        os.remove(page)
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
