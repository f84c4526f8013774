#!/usr/bin/env python3
"""Writes ten varied photo-like test images for the byte-cap quality row of bench/compare (`--rows cap`).

Deterministic (fixed seeds, numpy's PCG64): the same bytes on every machine with the same numpy and
ImageMagick. Each image is 3600×2400 (3:2, so the 1080 short edge is 1620×1080 for every tool) and is
written as a camera-like JPEG (ImageMagick, quality 95, 4:4:4) to OUT_DIR/NN-name.jpg.

The scenes stress what a byte cap trades away: smooth gradients (banding, blocking), dense fine texture
(foliage, fabric: detail the quality search must drop), sharp edges and strokes (ringing), saturated
colour edges (chroma subsampling), dark noisy areas (grain) and low-contrast haze.

Usage: bench/make-cap-photos.py OUT_DIR        (needs numpy and /usr/bin/convert)
"""
import os
import subprocess
import sys

import numpy as np

W, H = 3600, 2400


def rng(seed):
    return np.random.Generator(np.random.PCG64(seed))


def upsample(a, shape):
    """Bilinear upscaling of a 2-D array to `shape` (rows, cols)."""
    h, w = a.shape
    ys = np.linspace(0, h - 1, shape[0])
    xs = np.linspace(0, w - 1, shape[1])
    y0 = np.floor(ys).astype(int); x0 = np.floor(xs).astype(int)
    y1 = np.minimum(y0 + 1, h - 1); x1 = np.minimum(x0 + 1, w - 1)
    fy = (ys - y0)[:, None]; fx = (xs - x0)[None, :]
    top = a[y0][:, x0] * (1 - fx) + a[y0][:, x1] * fx
    bottom = a[y1][:, x0] * (1 - fx) + a[y1][:, x1] * fx
    return top * (1 - fy) + bottom * fy


def fractal(r, octaves, base=6, persistence=0.55, shape=(H, W)):
    """Multi-scale value noise in about -1…1: `octaves` layers, each twice as fine as the last."""
    out = np.zeros(shape)
    amp, total = 1.0, 0.0
    for o in range(octaves):
        cells = base * 2 ** o
        grid = r.standard_normal((max(2, cells * shape[0] // shape[1]) + 1, cells + 1))
        out += amp * upsample(grid, shape)
        total += amp
        amp *= persistence
    return out / total


def grain(r, sigma):
    return r.normal(0, sigma, (H, W, 1)) + r.normal(0, sigma / 2, (H, W, 3))


def coords():
    y, x = np.mgrid[0:H, 0:W].astype(np.float64)
    return y / H, x / W


def landscape(r):
    y, x = coords()
    horizon = 0.45 + 0.08 * np.sin(x * 7 + 1) + 0.05 * fractal(r, 5, 4)[0:1, :]
    sky = np.stack([110 + 90 * y, 160 + 60 * y, 235 - 20 * y], -1)
    grass_tex = fractal(r, 9, 8, 0.7)
    grass = np.stack([70 + 60 * grass_tex, 120 + 70 * grass_tex, 40 + 30 * grass_tex], -1)
    img = np.where((y > horizon)[..., None], grass, sky)
    return img + grain(r, 3)


def portrait(r):
    y, x = coords()
    bokeh = fractal(r, 3, 3)
    img = np.stack([90 + 60 * bokeh, 110 + 40 * bokeh, 80 + 70 * bokeh], -1)
    d = ((x - 0.5) / 0.18) ** 2 + ((y - 0.5) / 0.33) ** 2
    face = np.clip(1.3 - d, 0, 1)[..., None]
    skin = np.stack([225 - 40 * y, 180 - 40 * y, 150 - 30 * y], -1) + 6 * fractal(r, 8, 16, 0.6)[..., None]
    img = img * (1 - face) + skin * face
    # hair: fine dark strands above the face
    strands = (np.sin(x * 900 + 30 * fractal(r, 4, 4)) > 0.6) & (y < 0.3) & (np.abs(x - 0.5) < 0.22)
    img[strands] = img[strands] * 0.35
    return img + grain(r, 2.5)


def city(r):
    y, x = coords()
    img = np.stack([150 + 50 * y, 170 + 40 * y, 200 + 20 * y], -1) + np.zeros((H, W, 3))
    for i in range(26):
        left = r.uniform(0, 1); width = r.uniform(0.04, 0.14); top = r.uniform(0.15, 0.7)
        shade = r.uniform(60, 200, 3)
        box = (x >= left) & (x < left + width) & (y >= top)
        img[box] = shade
        win = box & (np.mod(x * W, 40) < 18) & (np.mod(y * H, 56) < 30)
        img[win] = shade * 0.5 + r.uniform(0, 100)
    return img + grain(r, 2)


def foliage(r):
    leaves = fractal(r, 10, 10, 0.8)
    light = fractal(r, 3, 2)
    img = np.stack([60 + 80 * leaves + 30 * light, 110 + 90 * leaves + 30 * light, 30 + 40 * leaves], -1)
    return img + grain(r, 5)


def sea(r):
    y, x = coords()
    sky = np.stack([200 + 40 * y, 210 + 30 * y, 240 + 0 * y], -1)
    waves = np.sin(y * 400 + 8 * fractal(r, 5, 6)) * (y - 0.4) * 20
    water = np.stack([30 + 40 * y + waves, 90 + 60 * y + waves, 140 + 50 * y + waves], -1)
    sand = np.stack([220 + 0 * y, 200 + 0 * y, 160 + 0 * y], -1) + 12 * fractal(r, 9, 12, 0.7)[..., None]
    img = np.where((y < 0.4)[..., None], sky, np.where((y < 0.8)[..., None], water, sand))
    return img + grain(r, 2)


def night(r):
    y, x = coords()
    img = np.stack([12 + 10 * y, 14 + 10 * y, 30 + 5 * y], -1) + np.zeros((H, W, 3))
    for _ in range(300):
        cy, cx = r.uniform(0, 1), r.uniform(0, 1)
        radius = r.uniform(0.001, 0.006)
        colour = r.uniform(120, 255, 3)
        # only the window where the glow is visible (4 radii)
        top, bottom = max(0, int((cy - 4 * radius * W / H) * H)), min(H, int((cy + 4 * radius * W / H) * H) + 1)
        left, right = max(0, int((cx - 4 * radius) * W)), min(W, int((cx + 4 * radius) * W) + 1)
        if top >= bottom or left >= right:
            continue
        wy, wx = y[top:bottom, left:right], x[top:bottom, left:right]
        d = ((wx - cx) ** 2 + ((wy - cy) * H / W) ** 2) / radius ** 2
        img[top:bottom, left:right] += np.exp(-d)[..., None] * colour
    return img + grain(r, 6)


def sign(r):
    y, x = coords()
    wall = 150 + 40 * fractal(r, 8, 6, 0.6)
    img = np.stack([wall, wall * 0.95, wall * 0.85], -1)
    board = (x > 0.15) & (x < 0.85) & (y > 0.25) & (y < 0.75)
    img[board] = [245, 240, 225]
    # letter-like strokes: thin bars of varying widths on a grid
    for row in range(6):
        for col in range(40):
            if r.uniform() < 0.2:
                continue
            cx = 0.18 + col * 0.016; cy = 0.3 + row * 0.075
            shape = r.integers(0, 3)
            if shape == 0:
                m = (np.abs(x - cx) < 0.0015) & (np.abs(y - cy) < 0.025)
            elif shape == 1:
                m = (np.abs(y - cy) < 0.0025) & (np.abs(x - cx) < 0.006)
            else:
                m = np.abs(np.hypot((x - cx) * W / H, y - cy) - 0.015) < 0.003
            img[m] = [20, 25, 120] if row % 2 else [170, 20, 25]
    return img + grain(r, 2)


def flowers(r):
    y, x = coords()
    leaves = fractal(r, 8, 8, 0.65)
    img = np.stack([40 + 40 * leaves, 120 + 60 * leaves, 40 + 30 * leaves], -1)
    for _ in range(90):
        cy, cx = r.uniform(0, 1), r.uniform(0, 1)
        radius = r.uniform(0.01, 0.04)
        d = np.hypot((x - cx) * W / H, y - cy)
        petal = d < radius * (1 + 0.3 * np.sin(np.arctan2(y - cy, x - cx) * 6))
        colour = [(230, 20, 60), (200, 30, 190), (250, 200, 20), (120, 40, 220)][r.integers(0, 4)]
        img[petal] = colour
    return img + grain(r, 2.5)


def fabric(r):
    y, x = coords()
    weave = np.sin(x * W / 5.0) * np.sin(y * H / 5.0)
    folds = fractal(r, 3, 3)
    shade = 1 + 0.35 * folds
    img = np.stack([(150 + 50 * weave) * shade, (60 + 30 * weave) * shade, (70 + 40 * weave) * shade], -1)
    return img + grain(r, 3)


def fog(r):
    y, x = coords()
    base = 215 + 15 * fractal(r, 4, 3)
    trees = fractal(r, 7, 10, 0.6) > 0.25
    img = np.stack([base, base + 3, base + 8], -1)
    img[trees & (y > 0.5)] -= 45
    return img + grain(r, 2)


SCENES = [landscape, portrait, city, foliage, sea, night, sign, flowers, fabric, fog]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for number, scene in enumerate(SCENES, 1):
        path = os.path.join(out_dir, f"{number:02d}-{scene.__name__}.jpg")
        if os.path.exists(path):
            continue
        pixels = np.clip(np.rint(scene(rng(1000 + number))), 0, 255).astype(np.uint8)
        header = f"P6\n{W} {H}\n255\n".encode()
        subprocess.run(["/usr/bin/convert", "ppm:-", "-quality", "95", "-sampling-factor", "1x1", path + ".tmp.jpg"],
                       input=header + pixels.tobytes(), check=True, env=dict(os.environ, MAGICK_THREAD_LIMIT="1"))
        os.replace(path + ".tmp.jpg", path)
        print(path, file=sys.stderr)


if __name__ == "__main__":
    main()
