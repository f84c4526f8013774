#!/usr/bin/env bash
# Builds the example posting server (and SharePipe from ../..) in release mode, as it is run, and runs its
# tests: a live server on 127.0.0.1, an ephemeral port, real images posted over loopback. Its own .build/,
# apart from the root's. (A debug build works too, `swift build --build-tests`, but prepares a 12 MP photo in
# about a second instead of a tenth.)
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
swift build -c release --build-tests "$@"
echo "build took $(( $(date +%s) - start )) s"
swift test -c release --skip-build "$@"
