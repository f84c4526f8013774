#!/usr/bin/env python3
"""Schemathesis (a property-based HTTP API tester) against a live sharepipe-server, driven by the OpenAPI
document the server serves (GET /v1/openapi.json), with every check: statuses, headers, content types and
bodies as documented, every error a JSON body, negative data refused, positive data accepted (by
hooks.py's check, exact on /v1/prepare, in place of the stock one), 405 with Allow for a method a route
does not take, no route served without the token.

    SHAREPIPE_SERVER=path/to/sharepipe-server python3 Server/Tests/schemathesis/run_schemathesis.py

Bounded and repeatable: a fixed seed (SHAREPIPE_SCHEMATHESIS_SEED, default 20251128) and a time budget
(SHAREPIPE_SCHEMATHESIS_SECONDS, default 120). Installs the pinned Schemathesis with pip when it is missing
or another version (a seed replays the same cases only with the same version); fails when it cannot.
Exit status: Schemathesis's (0 when no check failed), 1 when the server or Schemathesis cannot start.
"""

import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

SCHEMATHESIS_VERSION = "4.32.5"
TOKEN = "schemathesis-token"
HERE = os.path.dirname(os.path.abspath(__file__))


def fail(message):
    print("schemathesis: " + message, file=sys.stderr)
    sys.exit(1)


def installed_version():
    try:
        return importlib.metadata.version("schemathesis")
    except importlib.metadata.PackageNotFoundError:
        return None


def ensure_schemathesis():
    version = installed_version()
    if version == SCHEMATHESIS_VERSION:
        return
    print("schemathesis: installing schemathesis==%s with pip (found: %s)" % (SCHEMATHESIS_VERSION, version or "none"),
          file=sys.stderr)
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "schemathesis==" + SCHEMATHESIS_VERSION])
    if result.returncode != 0 or installed_version() != SCHEMATHESIS_VERSION:
        fail("cannot install schemathesis==%s (pip exit %d): install it, then run again"
             % (SCHEMATHESIS_VERSION, result.returncode))


def start_server(binary, spool_parent):
    """Starts the server on a free port; returns (process, port, log lines)."""
    log, found = [], {}
    listening = threading.Event()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHAREPIPE_SERVER_")}
    process = subprocess.Popen(
        [binary, "--host", "127.0.0.1", "--port", "0", "--spool-dir", spool_parent, "--token", TOKEN,
         # Short enough that a body shorter than its Content-Length does not hold a case for long.
         "--read-timeout", "5"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)

    def read_log():
        for raw in process.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            log.append(line)
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("message") == "listening" and "port" not in found:
                found["port"] = int(entry.get("port", 0))
                listening.set()

    threading.Thread(target=read_log, daemon=True).start()
    if not listening.wait(30) or not found.get("port"):
        process.kill()
        fail("no \"listening\" log line within 30 s; exit %s; log tail: %s" % (process.poll(), log[-5:]))
    return process, found["port"], log


def main():
    binary = os.environ.get("SHAREPIPE_SERVER")
    if not binary or not os.access(binary, os.X_OK):
        fail("set SHAREPIPE_SERVER to the sharepipe-server binary (cd Server && swift build -c release)")
    seed = os.environ.get("SHAREPIPE_SCHEMATHESIS_SEED", "20251128")
    seconds = os.environ.get("SHAREPIPE_SCHEMATHESIS_SECONDS", "120")
    ensure_schemathesis()
    st = shutil.which("st") or shutil.which("schemathesis")
    command = [st] if st else [sys.executable, "-m", "schemathesis.cli"]
    spool_parent = tempfile.mkdtemp(prefix="sharepipe-schemathesis-spool.")
    # Its working folder: Schemathesis keeps failures there (.schemathesis/) and replays them first, which
    # would make a run depend on the ones before it.
    work_dir = tempfile.mkdtemp(prefix="sharepipe-schemathesis.")
    process, port, log = start_server(binary, spool_parent)
    try:
        base = "http://127.0.0.1:%d" % port
        command += [
            "run", base + "/v1/openapi.json", "--url", base,
            # Every check; the stock positive-data check is replaced by hooks.py's exact one.
            "--checks", "all", "--exclude-checks", "positive_data_acceptance",
            "--seed", seed, "--max-time", seconds,
            "--workers", "1", "--request-timeout", "20",
            "-H", "Authorization: Bearer " + TOKEN,
            "--report-dir", os.path.join(work_dir, "report"),
        ]
        print("schemathesis: " + " ".join(command), file=sys.stderr, flush=True)
        result = subprocess.run(
            command, cwd=work_dir,
            env=dict(os.environ, NO_COLOR="1", SCHEMATHESIS_TELEMETRY="false",
                     SCHEMATHESIS_HOOKS=os.path.join(HERE, "hooks.py")))
        if process.poll() is not None:
            fail("the server died during the run (exit %s); log tail:\n%s" % (process.returncode, "\n".join(log[-10:])))
        return result.returncode
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(spool_parent, ignore_errors=True)
        shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
