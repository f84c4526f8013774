#!/usr/bin/env python3
"""placeholder.py — the reference BlurHash and ThumbHash packages (PyPI `blurhash`, `thumbhash`) as a witness for
SharePipe's placeholders (Tests/SharePipeTests/Pixels/PlaceholderTests.swift).

Usage: placeholder.py CASES.json. Reads a JSON list of cases, writes a JSON list of answers on stdout. A case gives the pixels either as
raw RGBA (`rgba`: a file of width × height × 4 bytes, `width`, `height`: hashed as they are) or as an image file
(`image`: decoded by Pillow, reduced to fit 100 × 100 with Pillow's box filter, as a service hashes an upload),
the BlurHash components (`x`, `y`) and SharePipe's own hashes (`blurhash`, `thumbhash` in Base64). Each answer
holds the reference hashes and how far SharePipe's are from them once both are decoded by the reference
decoders: the mean absolute difference in 8-bit levels over every channel of a 32 × 32 BlurHash render and of
the ThumbHash render (`blurhashDecodedDifference`, `thumbhashDecodedDifference`).

Installs the pinned packages with pip when they are missing, and fails loudly when it cannot.
"""
import base64
import contextlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pypi import require as require_pinned  # noqa: E402

PINNED = {"blurhash": "blurhash==1.1.5", "thumbhash": "thumbhash==0.1.2", "PIL": "pillow", "numpy": "numpy"}


def require(module):
    return require_pinned(module, PINNED[module], who="placeholder witness")


blurhash = require("blurhash")
thumbhash = require("thumbhash")

# thumbhash 0.1.2's encoder fails on every image with alpha: `a_dc, a_ac, a_scale = encode_channel(...) if
# has_alpha else 1.0, [], 1.0` binds as a 3-tuple whose first element is the whole conditional. The witness runs
# the package's own source with that one line parenthesized (and as published when a release has fixed it).
BUGGY = "a_dc, a_ac, a_scale = encode_channel(a, 5, 5) if has_alpha else 1.0, [], 1.0"
_source = open(thumbhash.__file__, encoding="utf-8").read()
if BUGGY in _source:
    _patched = {"__name__": "thumbhash_witness", "__file__": thumbhash.__file__}
    exec(compile(_source.replace(BUGGY, "a_dc, a_ac, a_scale = encode_channel(a, 5, 5) if has_alpha else (1.0, [], 1.0)"),
                 thumbhash.__file__, "exec"), _patched)
    rgba_to_thumb_hash = _patched["rgba_to_thumb_hash"]
else:
    rgba_to_thumb_hash = thumbhash.rgba_to_thumb_hash
numpy = require("numpy")
PIL = require("PIL")
from PIL import Image  # noqa: E402


def pixels(case):
    """(width, height, flat RGBA list)"""
    if "rgba" in case:
        data = open(case["rgba"], "rb").read()
        width, height = case["width"], case["height"]
        assert len(data) == width * height * 4, "rgba file does not match its size"
        return width, height, list(data)
    image = Image.open(case["image"])
    image.load()
    image = image.convert("RGBA")
    image.thumbnail((100, 100), Image.Resampling.BOX)
    return image.width, image.height, list(image.tobytes())


def composited_over_average(width, height, rgba):
    """The RGB BlurHash is computed from: a picture with transparency composited atop its alpha-weighted average
    colour (ThumbHash's first step; BlurHash itself has no alpha), as floats 0...255; an opaque one as it is."""
    array = numpy.array(rgba, dtype=numpy.float64).reshape(height, width, 4)
    alpha = array[..., 3:4] / 255
    if (alpha == 1).all():
        return array[..., :3].astype(numpy.uint8)
    weight = alpha.sum()
    average = (array[..., :3] * alpha).sum(axis=(0, 1)) / weight if weight > 0 else numpy.zeros(3)
    return average * (1 - alpha) + alpha * array[..., :3]


def blurhash_render(text):
    return numpy.array(blurhash.decode(text, 32, 32), dtype=numpy.float64)[..., :3]


def thumbhash_render(hash_bytes):
    with contextlib.redirect_stdout(sys.stderr):  # thumbhash 0.1.2's decoder prints the aspect ratio
        width, height, rgba = thumbhash.thumb_hash_to_rgba(list(hash_bytes))
    return numpy.array(rgba, dtype=numpy.float64).reshape(height, width, 4)


def main():
    answers = []
    for case in json.load(open(sys.argv[1])):
        width, height, rgba = pixels(case)
        reference_blurhash = blurhash.encode(
            composited_over_average(width, height, rgba), components_x=case["x"], components_y=case["y"])
        reference_thumbhash = bytes(rgba_to_thumb_hash(width, height, rgba))
        ours_thumbhash = base64.b64decode(case["thumbhash"])
        answer = {
            "width": width, "height": height,
            "blurhash": reference_blurhash,
            "thumbhash": base64.b64encode(reference_thumbhash).decode(),
            "blurhashDecodedDifference": float(numpy.abs(
                blurhash_render(case["blurhash"]) - blurhash_render(reference_blurhash)).mean()),
        }
        ours, reference = thumbhash_render(ours_thumbhash), thumbhash_render(reference_thumbhash)
        answer["thumbhashDecodedDifference"] = (
            float(numpy.abs(ours - reference).mean()) if ours.shape == reference.shape else 255.0)
        answers.append(answer)
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
