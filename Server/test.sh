#!/usr/bin/env bash
# Builds sharepipe-server (and SharePipe from ..) in release mode, as it is run, and runs its tests: live
# servers on 127.0.0.1 with ephemeral ports, real images posted over loopback, the executable started and
# stopped with SIGTERM. Its own .build/, apart from the root's. Extra arguments go to both commands
# (e.g. `--filter PrepareRouteTests`).
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)
swift build -c release --build-tests "$@"
echo "build took $(( $(date +%s) - start )) s"
swift test -c release --skip-build "$@"
