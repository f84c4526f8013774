#!/bin/bash
# Runs inside a fresh Debian 12 root (scripts/test-package copies it in as /tmp/sp/in-root.sh with the .deb
# and TestImages/): installs the package with apt from the mirror, then uses it as a user would. Writes what
# the host checks (reports, outputs, timings, the server's log and metrics) into /tmp/sp/out.
# Arguments: the version the programs must print.
set -euo pipefail
version=$1
cd /tmp/sp
out=/tmp/sp/out
mkdir -p "$out"
note() { printf '%s\n' "$*" >> "$out/notes.txt"; echo "in-root: $*"; }
now() { date +%s.%N; }
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8

if command -v swift >/dev/null || compgen -G '/usr/lib/swift*' >/dev/null || compgen -G '/usr/lib/x86_64-linux-gnu/libswiftCore*' >/dev/null; then
  echo "in-root: a Swift toolchain or runtime is in the root before the package" >&2; exit 1
fi
apt-get update -qq
# What a user runs, with apt's default of installing Recommends: mmdebstrap turns that default off in the root
# while its hooks run (its own /etc/apt/apt.conf.d/00mmdebstrap, removed at the end), so it is turned back on
# here; without it libheif1 and libavif15 would be missing and every HEIC and AVIF refused. The clock runs
# until the first prepared image.
start=$(now)
apt-get install -y -qq -o APT::Install-Recommends=true ./sharepipe.deb > "$out/apt-install.log" 2>&1
installed=$(now)
for package in libheif1 libde265-0 libavif15 libdav1d6; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    { echo "in-root: the recommended $package was not installed with the package" >&2; exit 1; }
done
sharepipe prepare TestImages/jpeg/gps-orient6.jpg --out "$out/first" --service mastodon > /dev/null
prepared=$(now)
note "apt-install-seconds $(echo "$installed - $start" | awk '{print $1 - $3}')"
note "install-to-prepared-seconds $(echo "$prepared - $start" | awk '{print $1 - $3}')"
dpkg-query -W -f='${Installed-Size} ${Version} ${Status}\n' sharepipe > "$out/dpkg-query.txt"
dpkg -L sharepipe | LC_ALL=C sort > "$out/dpkg-L.txt"
apt-cache depends --installed sharepipe > "$out/depends.txt" 2>&1 || true
ldd /usr/bin/sharepipe /usr/bin/sharepipe-server > "$out/ldd.txt"

[[ $(sharepipe --version) == "$version" ]] || { echo "in-root: sharepipe --version is $(sharepipe --version)" >&2; exit 1; }
[[ $(sharepipe-server --version) == "$version" ]] || { echo "in-root: sharepipe-server --version differs" >&2; exit 1; }
apt-get install -y -qq --no-install-recommends man-db curl > /dev/null 2>&1
for page in sharepipe sharepipe.prepare sharepipe-server; do man -w "$page" >> "$out/man-w.txt" 2>&1 || true; done
MANWIDTH=100 man sharepipe-server 2> "$out/man-server.err" | col -b > "$out/man-server.txt"
sharepipe-server --help > "$out/server-help.txt"
# The CLI's pages come from the same definitions as --help; whatis and apropos index them (mandb, as cron would).
MANWIDTH=200 man sharepipe.prepare 2> "$out/man-prepare.err" | col -b > "$out/man-prepare.txt"
sharepipe prepare --help > "$out/prepare-help.txt"
mandb -q 2> "$out/mandb.err" || true
apropos sharepipe > "$out/apropos.txt" 2>&1 || true
cp /etc/default/sharepipe-server "$out/etc-default"

# Four kinds of input, two services each; reports and outputs go to the host.
sharepipe services --json > "$out/services.json"
for image in jpeg/gps-orient6.jpg heif/gps-irot.heic webp/animated.webp gif/loop3.gif; do
  # A failure is recorded, not fatal here: the host's check names the input and shows the message.
  sharepipe prepare "TestImages/$image" --out "$out/prepared" --service x --service mastodon --json \
    >> "$out/prepared.jsonl" 2>> "$out/prepared.err" || echo "$image" >> "$out/prepare-failed.txt"
done
for file in $(cd "$out/prepared" && find . -type f | LC_ALL=C sort); do
  sharepipe inspect "$out/prepared/$file" --json >> "$out/inspected.jsonl"
done
# Every test image once, for the byte comparison with the source build (failures are part of the result).
sharepipe prepare TestImages --recursive --out "$out/all" --service x --json > "$out/all.jsonl" 2> "$out/all.err" || true

# The server, with the package's settings file as the unit reads it (all commented out: the defaults).
set -a
# shellcheck disable=SC1091
. /etc/default/sharepipe-server
set +a
export SHAREPIPE_PROFILES=/etc/sharepipe/profiles.json SHAREPIPE_SERVER_PORT=18080
# The root shares the host's network: a server already on the port would answer in this one's place.
if sharepipe-server --health-check 2>/dev/null; then
  echo "in-root: something already answers on 127.0.0.1:18080; stop it first" >&2; exit 1
fi
sharepipe-server 2> "$out/server.log" &
server=$!
# However this script ends, the server does not outlive it (it would hold the port and the root).
trap 'kill -KILL "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  sharepipe-server --health-check 2>/dev/null && break
  sleep 0.1
done
sharepipe-server --health-check
sleep 1
grep -E '^(VmRSS|VmHWM)' "/proc/$server/status" | sed 's/^/idle /' >> "$out/notes.txt"
# A failed request is recorded (its answer kept), not fatal: the host's check shows it.
post() {
  local name=$1 status=0
  shift
  curl -sS --fail-with-body -D "$out/$name-headers.txt" -o "$out/$name.body" "$@" 2>> "$out/curl.err" || status=$?
  note "$name-curl-status $status"
}
post post-jpeg --data-binary @TestImages/jpeg/gps-orient6.jpg 'http://127.0.0.1:18080/v1/prepare?service=x'
post post-heic -F file=@TestImages/heif/gps-irot.heic 'http://127.0.0.1:18080/v1/prepare?service=mastodon'
post metrics http://127.0.0.1:18080/metrics
grep -E '^(VmRSS|VmHWM)' "/proc/$server/status" | sed 's/^/after-two-posts /' >> "$out/notes.txt"
kill -TERM "$server"
status=0
wait "$server" || status=$?
trap - EXIT
note "server-exit-status $status"
if sharepipe-server --health-check 2> "$out/health-after-stop.err"; then
  echo "in-root: health check passed with no server" >&2; exit 1
fi

# A recommended library removed: what the programs say (apt removes only it; nothing depends on it).
apt-get remove -y -qq libheif1 > /dev/null 2>&1
status=0
sharepipe prepare TestImages/heif/gps-irot.heic --out "$out/no-libheif" --service x 2> "$out/no-libheif.err" \
  > /dev/null || status=$?
note "no-libheif-exit-status $status"
# …while a JPEG still prepares (the other formats do not need it).
status=0
sharepipe prepare TestImages/jpeg/gps-orient6.jpg --out "$out/no-libheif" --service x --json \
  > "$out/no-libheif-jpeg.jsonl" 2> "$out/no-libheif-jpeg.err" || status=$?
note "no-libheif-jpeg-exit-status $status"
dpkg-query -W -f='${Status}\n' sharepipe > "$out/after-libheif-removed.txt"
