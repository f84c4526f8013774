#!/usr/bin/env bash
# The test images are made by scripts/make-test-images (Python, scripts/fixtures/: one module per family).
# This name is kept for the references to it; it runs that generator with the same arguments.
exec python3 "$(dirname "$0")/make-test-images" "$@"
