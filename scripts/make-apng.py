#!/usr/bin/env python3
"""make-apng.py main OUTDIR METADATA.png | make-apng.py broken OUTDIR — writes the APNG test images chunk by chunk (numpy + zlib, no Pillow).

Called by scripts/make-test-images.sh (section apng); see TestImages/README.md for what each file holds.
Deterministic: fixed pixels, zlib level 9, no timestamps.
"""
import struct, sys, zlib
import numpy as np

def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

def ihdr(w, h, depth=8, color=6, interlace=0):
    return chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, interlace))

def raw_rows(pixels):
    """Filter type 0 per row; pixels is (h, w, c) uint8 or (h, w) indices."""
    a = np.ascontiguousarray(pixels)
    h = a.shape[0]
    rows = a.reshape(h, -1)
    return b"".join(b"\x00" + rows[y].tobytes() for y in range(h))

def compressed(pixels):
    return zlib.compress(raw_rows(pixels), 9)

class APNG:
    def __init__(self, w, h, color=6, depth=8):
        self.w, self.h, self.color, self.depth = w, h, color, depth
        self.seq = 0
        self.before = []      # chunks between IHDR and acTL (e.g. eXIf, PLTE)
        self.body = []        # chunks after acTL
        self.frames = 0

    def fctl(self, w, h, x, y, num, den, dispose, blend, seq=None):
        s = self.seq if seq is None else seq
        self.seq += 1
        self.frames += 1
        return chunk(b"fcTL", struct.pack(">IIIIIHHBB", s, w, h, x, y, num, den, dispose, blend))

    def fdat(self, data, seq=None):
        s = self.seq if seq is None else seq
        self.seq += 1
        return chunk(b"fdAT", struct.pack(">I", s) + data)

    def write(self, path, plays, declared=None, extra_after_ihdr=b""):
        out = b"\x89PNG\r\n\x1a\n" + ihdr(self.w, self.h, self.depth, self.color)
        out += extra_after_ihdr
        out += chunk(b"acTL", struct.pack(">II", self.frames if declared is None else declared, plays))
        out += b"".join(self.body) + chunk(b"IEND", b"")
        open(path, "wb").write(out)

def canvas(w, h, rgba):
    a = np.zeros((h, w, 4), np.uint8)
    a[:, :] = rgba
    return a

def marked(w, h, m=8):
    """Grey with red top-left, green top-right, blue bottom-right squares (opaque)."""
    a = canvas(w, h, (128, 128, 128, 255))
    a[:m, :m] = (255, 0, 0, 255)
    a[:m, w - m:] = (0, 255, 0, 255)
    a[h - m:, w - m:] = (0, 0, 255, 255)
    return a

def dispose_blend(out):
    """64×48 RGBA, 4 frames, plays 3; the default image is frame 0."""
    p = APNG(64, 48)
    p.body.append(p.fctl(64, 48, 0, 0, 10, 100, 0, 0))                 # 100 ms, none, source
    p.body.append(chunk(b"IDAT", compressed(marked(64, 48))))
    red = canvas(16, 16, (255, 0, 0, 128))
    p.body.append(p.fctl(16, 16, 8, 8, 1, 4, 2, 1))                    # 250 ms, previous, over
    p.body.append(p.fdat(compressed(red)))
    yellow = canvas(20, 10, (255, 255, 0, 255))
    yellow[:, :4] = (0, 0, 0, 0)                                        # source blend writes transparency
    p.body.append(p.fctl(20, 10, 40, 30, 7, 0, 1, 0))                   # 70 ms (den 0 = 100), background, source
    data = compressed(yellow)
    half = len(data) // 2                                               # frame data split over two fdATs
    p.body.append(p.fdat(data[:half]))
    p.body.append(p.fdat(data[half:]))
    white = canvas(10, 10, (255, 255, 255, 64))
    p.body.append(p.fctl(10, 10, 0, 38, 3, 2, 0, 1))                    # 1500 ms, none, over
    p.body.append(p.fdat(compressed(white)))
    p.write(out + "/dispose-blend.png", plays=3)

def hidden_default(out):
    """40×30 RGB; the IDAT (magenta) is not part of the animation: 2 frames via fdAT, plays forever."""
    p = APNG(40, 30, color=2)
    p.body.append(chunk(b"IDAT", compressed(np.full((30, 40, 3), (255, 0, 255), np.uint8))))
    p.body.append(p.fctl(40, 30, 0, 0, 20, 100, 0, 0))
    p.body.append(p.fdat(compressed(np.full((30, 40, 3), (0, 0, 255), np.uint8))))
    p.body.append(p.fctl(20, 15, 20, 15, 30, 100, 0, 0))
    p.body.append(p.fdat(compressed(np.full((15, 20, 3), (0, 255, 0), np.uint8))))
    p.write(out + "/hidden-default.png", plays=0)

def palette(out):
    """32×32 palette + tRNS, 3 frames with a shared PLTE, plays 1 (no loop)."""
    p = APNG(32, 32, color=3)
    plte = bytes([0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255])
    trns = bytes([0, 255, 255, 255])                                  # index 0 transparent
    idx = np.zeros((32, 32), np.uint8)
    idx[:16, :16] = 1
    p.body.append(p.fctl(32, 32, 0, 0, 5, 100, 0, 0))
    p.body.append(chunk(b"IDAT", compressed(idx)))
    p.body.append(p.fctl(8, 8, 24, 24, 5, 100, 0, 1))
    p.body.append(p.fdat(compressed(np.full((8, 8), 2, np.uint8))))
    p.body.append(p.fctl(8, 8, 0, 24, 5, 100, 0, 1))
    p.body.append(p.fdat(compressed(np.full((8, 8), 3, np.uint8))))
    p.write(out + "/palette.png", plays=1, extra_after_ihdr=chunk(b"PLTE", plte) + chunk(b"tRNS", trns))

def sixteen_bit(out):
    """24×16 RGBA 16-bit, 2 frames: full-canvas dark red, then a half-transparent 8×8 blue blended over."""
    p = APNG(24, 16, color=6, depth=16)
    base = np.zeros((16, 24, 4), ">u2"); base[:, :] = (0x8080, 0, 0, 0xFFFF)
    p.body.append(p.fctl(24, 16, 0, 0, 10, 100, 0, 0))
    p.body.append(chunk(b"IDAT", compressed(base.view(np.uint8))))
    top = np.zeros((8, 8, 4), ">u2"); top[:, :] = (0, 0, 0xFFFF, 0x8000)
    p.body.append(p.fctl(8, 8, 4, 4, 10, 100, 0, 1))
    p.body.append(p.fdat(compressed(top.view(np.uint8))))
    p.write(out + "/rgba16.png", plays=0)

def metadata_chunks(path):
    """The eXIf/tEXt/zTXt/iTXt chunks of a PNG, verbatim (exiftool writes them into a still PNG)."""
    d = open(path, "rb").read()
    i, found = 8, b""
    while i < len(d):
        n = struct.unpack(">I", d[i:i + 4])[0]
        if d[i + 4:i + 8] in (b"eXIf", b"tEXt", b"zTXt", b"iTXt"):
            found += d[i:i + 12 + n]
        i += 12 + n
    return found

def orient_source(out, metadata_png):
    """60×40 stored, 2 frames, with the metadata chunks of `metadata_png` right after IHDR (before acTL, where
    every APNG reader expects nothing between fcTL and IDAT)."""
    p = APNG(60, 40)
    p.body.append(p.fctl(60, 40, 0, 0, 50, 100, 0, 0))
    p.body.append(chunk(b"IDAT", compressed(marked(60, 40))))
    dot = canvas(4, 4, (255, 255, 255, 255))
    p.body.append(p.fctl(4, 4, 28, 18, 50, 100, 1, 0))
    p.body.append(p.fdat(compressed(dot)))
    p.write(out + "/exif-gps-orient6.png", plays=0, extra_after_ihdr=metadata_chunks(metadata_png))

def broken(out):
    """Animations a browser refuses to animate (it shows the default image): each keeps a valid IDAT."""
    def base(name, mutate):
        p = APNG(32, 32)
        p.body.append(p.fctl(32, 32, 0, 0, 10, 100, 0, 0))
        p.body.append(chunk(b"IDAT", compressed(canvas(32, 32, (0, 0, 255, 255)))))
        mutate(p)
        p.write(out + "/" + name, plays=0)
    green = compressed(canvas(8, 8, (0, 255, 0, 255)))
    def bad_sequence(p):
        p.body.append(p.fctl(8, 8, 0, 0, 10, 100, 0, 0))
        p.body.append(p.fdat(green, seq=7))
    def outside(p):
        p.body.append(p.fctl(8, 8, 28, 0, 10, 100, 0, 0))             # 28 + 8 > 32
        p.body.append(p.fdat(green))
    def missing_data(p):
        p.body.append(p.fctl(8, 8, 0, 0, 10, 100, 0, 0))              # no fdAT follows
    base("bad-sequence.png", bad_sequence)
    base("frame-outside.png", outside)
    base("missing-fdat.png", missing_data)

if __name__ == "__main__":
    which, out = sys.argv[1], sys.argv[2]
    if which == "broken":
        broken(out)
    else:
        for make in (dispose_blend, hidden_default, palette, sixteen_bit):
            make(out)
        orient_source(out, sys.argv[3])
