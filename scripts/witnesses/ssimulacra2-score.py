#!/usr/bin/env python3
"""ssimulacra2-score.py — the PyPI `ssimulacra2` package (a Python port of libjxl's tools/ssimulacra2.cc) as a witness
for SharePipe's SSIMULACRA2 (Sources/CSharePipe/sp_ssimulacra2.c;
Tests/SharePipeTests/Pixels/SSIMULACRA2Tests.swift).

Usage: ssimulacra2-score.py CASES.json. Reads a JSON list of cases, each naming two image files (`reference`,
`distorted`: any format Pillow reads; the tests write binary PPM/PGM so both sides score the same pixels), and
writes a JSON list of answers on stdout: `{"score": …}` per case, the package's `compute_ssimulacra2`.

Installs the pinned package with pip when it is missing, and fails loudly when it cannot.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pypi import require  # noqa: E402

ssimulacra2 = require("ssimulacra2", "ssimulacra2==0.3.0", who="ssimulacra2 witness")

cases = json.load(open(sys.argv[1], encoding="utf-8"))
answers = [{"score": float(ssimulacra2.compute_ssimulacra2(case["reference"], case["distorted"]))} for case in cases]
json.dump(answers, sys.stdout)
