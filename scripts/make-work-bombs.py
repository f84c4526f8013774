#!/usr/bin/env python3
"""make-work-bombs.py — small files that declare far more pixels than they bring, one per container.

    make-work-bombs.py OUT_DIRECTORY [KIND ...]

KIND is any of heic-grid, avif-grid, png, apng, webp, gif, jpeg (default: all). Each file is valid (or as
valid as its decoder needs) and declares at least 256 MP in at most 1 MB:

- heic-grid: a 25600×25600 grid of 100×100 tiles of 256×256, every tile's `iloc` entry pointing at one coded
  tile (heif-enc makes the tile, bench/make-grid-heic.py --shared-data the grid); about 25 KB.
- avif-grid: the same with AV1 tiles (heif-enc -A): 16128×16128 in 63×63 tiles.
- png: 16384×16384 RGB, every row zero (a zlib bomb: about 800 KB of deflate for 805 MB of rows).
- apng: the png as the first frame of a two-frame APNG (the second a 1×1 frame).
- webp: a 16383×16383 lossless WebP whose five prefix codes have one symbol each: no bits per pixel, 30 bytes.
- gif: a 4096×4096 animation of 16 frames, each a 1×1 image (268 MP of canvas to composite), 400 bytes.
- jpeg: a 16384×16000 baseline grey JPEG whose Huffman tables have one code each: 2 bits per block, 1 MB.

heic-grid and avif-grid need heif-enc (with an AV1 encoder for avif-grid); the others only the standard library. The tests and
scripts/test-server make them; they are never committed.
"""
import os
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def zero_rows_deflate(width, height, channels):
    """Deflate of `height` filter-0 rows of `width` × `channels` zero bytes."""
    compressor = zlib.compressobj(9)
    row = bytes(1 + width * channels)
    parts = [compressor.compress(row) for _ in range(height)]
    parts.append(compressor.flush())
    return b"".join(parts)


def ihdr(width, height, colour_type):
    return png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0))


def small_png(width, height):
    """An RGB PNG with a gradient, as a tile for heif-enc."""
    rows = b"".join(
        b"\0" + b"".join(bytes(((x * 255) // width, (y * 255) // height, 128)) for x in range(width))
        for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + ihdr(width, height, 2) + png_chunk(b"IDAT", zlib.compress(rows))
            + png_chunk(b"IEND", b""))


def png(out):
    data = zero_rows_deflate(16384, 16384, 3)
    open(out, "wb").write(b"\x89PNG\r\n\x1a\n" + ihdr(16384, 16384, 2) + png_chunk(b"IDAT", data)
                          + png_chunk(b"IEND", b""))


def apng(out):
    def fctl(sequence, width, height):
        return png_chunk(b"fcTL", struct.pack(">IIIIIHHBB", sequence, width, height, 0, 0, 1, 10, 0, 0))

    data = zero_rows_deflate(16384, 16384, 3)
    tiny = struct.pack(">I", 2) + zlib.compress(b"\0\0\0\0")
    open(out, "wb").write(
        b"\x89PNG\r\n\x1a\n" + ihdr(16384, 16384, 2) + png_chunk(b"acTL", struct.pack(">II", 2, 0))
        + fctl(0, 16384, 16384) + png_chunk(b"IDAT", data) + fctl(1, 1, 1) + png_chunk(b"fdAT", tiny)
        + png_chunk(b"IEND", b""))


def webp(out):
    bits = []

    def put(value, count):
        bits.extend((value >> i) & 1 for i in range(count))

    put(16383 - 1, 14)
    put(16383 - 1, 14)
    put(0, 1)  # alpha not used
    put(0, 3)  # version
    put(0, 1)  # no transform
    put(0, 1)  # no colour cache
    put(0, 1)  # no meta prefix codes
    for _ in range(5):  # green, red, blue, alpha, distance: a simple code of one 1-bit symbol, 0
        put(1, 1)
        put(0, 1)
        put(0, 1)
        put(0, 1)
    while len(bits) % 8:
        bits.append(0)
    payload = b"\x2f" + bytes(sum(bit << i for i, bit in enumerate(bits[at:at + 8])) for at in range(0, len(bits), 8))
    if len(payload) % 2:
        payload += b"\0"
    chunk = b"VP8L" + struct.pack("<I", len(payload)) + payload
    open(out, "wb").write(b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk)


def gif(out):
    width = height = 4096
    frames = 16
    data = b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\0\0\0\xff\xff\xff"
    data += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\0\0\0"
    for index in range(frames):
        data += b"\x21\xf9\x04\x00" + struct.pack("<H", 10) + b"\0\0"
        data += b"\x2c" + struct.pack("<HHHHB", index, index, 1, 1, 0)
        # LZW, minimum code size 2: clear (4), index 1, end (5), in 3-bit codes.
        codes = 4 | (1 << 3) | (5 << 6)
        data += b"\x02\x02" + struct.pack("<H", codes) + b"\0"
    open(out, "wb").write(data + b"\x3b")


def jpeg(out):
    width, height = 16384, 16000
    segments = b"\xff\xd8"
    segments += b"\xff\xdb" + struct.pack(">HB", 67, 0) + bytes([1] * 64)
    segments += b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    # One code of length 1 in each table: DC category 0, AC end of block.
    counts = bytes([1] + [0] * 15)
    segments += b"\xff\xc4" + struct.pack(">HB", 2 + 17 + 1, 0x00) + counts + b"\x00"
    segments += b"\xff\xc4" + struct.pack(">HB", 2 + 17 + 1, 0x10) + counts + b"\x00"
    segments += b"\xff\xda" + struct.pack(">HB", 8, 1) + b"\x01\x00" + b"\x00\x3f\x00"
    blocks = (width // 8) * (height // 8)
    open(out, "wb").write(segments + bytes(blocks * 2 // 8) + b"\xff\xd9")


def grid(out, av1, suffix, size, columns):
    with tempfile.TemporaryDirectory() as directory:
        tile_png = os.path.join(directory, "tile.png")
        open(tile_png, "wb").write(small_png(256, 256))
        tile = os.path.join(directory, "tile" + suffix)
        command = ["heif-enc", "-q", "50", tile_png, "-o", tile] + (["-A"] if av1 else [])
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(
            [sys.executable, os.path.join(HERE, "..", "bench", "make-grid-heic.py"), out, str(size), str(size),
             str(columns), str(columns)] + [tile] * (columns * columns) + ["--shared-data"], check=True)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    makers = {
        "heic-grid": ("heic-grid.heic", lambda out: grid(out, False, ".heic", 25600, 100)),
        "avif-grid": ("avif-grid.avif", lambda out: grid(out, True, ".avif", 16128, 63)),
        "png": ("png.png", png),
        "apng": ("apng.png", apng),
        "webp": ("webp.webp", webp),
        "gif": ("gif.gif", gif),
        "jpeg": ("jpeg.jpg", jpeg),
    }
    kinds = sys.argv[2:] or list(makers)
    for kind in kinds:
        name, make = makers[kind]
        make(os.path.join(directory, name))


if __name__ == "__main__":
    main()
