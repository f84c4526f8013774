#!/usr/bin/env bash
# Builds the example posting server (and SharePipe from ../..) and runs its tests: a live server on
# 127.0.0.1, an ephemeral port, real images posted over loopback. Its own .build/, apart from the root's.
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
swift build --build-tests "$@"
echo "build took $(( $(date +%s) - start )) s"
swift test --skip-build "$@"
