#!/usr/bin/env bash
# make-test-images.sh — regenerate the committed test images under TestImages/.
#
# Usage (from the repo root):
#   scripts/make-test-images.sh            # all sections
#   scripts/make-test-images.sh jpeg       # only the listed sections
#
# Generation-time dependencies only (the images are committed; tests never run this):
#   - ImageMagick 6 (apt: imagemagick). Called as /usr/bin/convert on purpose: a
#     /usr/local/bin/convert earlier in PATH may be a stand-in that is not ImageMagick.
#     Override with CONVERT=/path/to/convert.
#   - exiftool (apt: libimage-exiftool-perl); bytes were produced with 12.57, whose
#     version string ends up in the XMP packet.
#   - python3, standard library only (ICC profile synthesis + JPEG marker checks).
#   - libgs-common (pulled in by imagemagick/ghostscript) for the CMYK ICC profile
#     /usr/share/color/icc/ghostscript/{ps_cmyk,srgb}.icc (CMYK target + sRGB source for
#     cmyk-icc.jpg, which is skipped without them; the ICC checks also use srgb.icc).
#   (libjpeg-turbo-progs is NOT required.)
#
# Deterministic: fixed seeds, MAGICK_THREAD_LIMIT=1 (noise RNGs are per-thread),
# explicit JPEG encoder defines, -strip before every encode (no date properties reach
# the JPEGs), fixed metadata values, ICC profiles synthesised with fixed bytes.
# Idempotent: every output is rebuilt from scratch; rerunning gives identical bytes with
# the same ImageMagick / libjpeg-turbo / exiftool versions.
#
# Each section is a make_<name>() function writing TestImages/<name>/. Add new sections
# (png, gif, ...) as make_png()/make_gif() and list them in ALL_SECTIONS below.

set -euo pipefail

ALL_SECTIONS=(jpeg)

CONVERT=${CONVERT:-/usr/bin/convert}
EXIFTOOL=${EXIFTOOL:-exiftool}
PYTHON=${PYTHON:-python3}
# cmyk-icc.jpg is made only when CMYK_ICC names a CMYK profile whose licence allows committing it
# (Ghostscript's ps_cmyk.icc is Artifex's and is not used by default).
CMYK_ICC=${CMYK_ICC:-}

export MAGICK_THREAD_LIMIT=1
export TZ=UTC LC_ALL=C

ROOT=$(pwd)
if [[ ! -f "$ROOT/Package.swift" ]]; then
  echo "run from the repository root" >&2
  exit 2
fi
OUT_ROOT="$ROOT/TestImages"
# Deliberately broken inputs (truncated, bad headers) for error tests: the demo expects these to fail.
ROOT_BROKEN="$OUT_ROOT/broken"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

FAILURES=0
fail() { echo "FAIL: $*" >&2; FAILURES=$((FAILURES + 1)); }

for tool in "$CONVERT" "$EXIFTOOL" "$PYTHON"; do
  command -v "$tool" >/dev/null || { echo "missing tool: $tool" >&2; exit 2; }
done
"$CONVERT" -version | grep -q 'ImageMagick 6' || { echo "$CONVERT is not ImageMagick 6" >&2; exit 2; }

# ---------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------

# Python helper: ICC synthesis and a small JPEG marker walker.
cat >"$TMP/jpegtool.py" <<'PY'
import hashlib, struct, sys

# ---- ICC -------------------------------------------------------------------
def s15(v):
    return struct.pack(">i", int(round(v * 65536)))

def inv3(m):
    a, b, c = m[0]; d, e, f = m[1]; g, h, i = m[2]
    det = a*(e*i - f*h) - b*(d*i - f*g) + c*(d*h - e*g)
    return [[(e*i - f*h)/det, (c*h - b*i)/det, (b*f - c*e)/det],
            [(f*g - d*i)/det, (a*i - c*g)/det, (c*d - a*f)/det],
            [(d*h - e*g)/det, (b*g - a*h)/det, (a*e - b*d)/det]]

def mul(a, b):
    return [[sum(a[r][k]*b[k][c] for k in range(3)) for c in range(3)] for r in range(3)]

def mulv(a, v):
    return [sum(a[r][k]*v[k] for k in range(3)) for r in range(3)]

D50 = [0.9642, 1.0, 0.8249]

def xy2XYZ(x, y):
    return [x / y, 1.0, (1 - x - y) / y]

def p3_matrices():
    prim = [xy2XYZ(0.680, 0.320), xy2XYZ(0.265, 0.690), xy2XYZ(0.150, 0.060)]
    M = [[prim[c][r] for c in range(3)] for r in range(3)]
    white = xy2XYZ(0.3127, 0.3290)
    S = mulv(inv3(M), white)
    M = [[M[r][c] * S[c] for c in range(3)] for r in range(3)]
    B = [[0.8951, 0.2664, -0.1614], [-0.7502, 1.7135, 0.0367], [0.0389, -0.0685, 1.0296]]
    src, dst = mulv(B, white), mulv(B, D50)
    scale = [[dst[0]/src[0], 0, 0], [0, dst[1]/src[1], 0], [0, 0, dst[2]/src[2]]]
    chad = mul(inv3(B), mul(scale, B))
    return mul(chad, M), chad

def mluc(text):
    s = text.encode("utf-16-be")
    return b"mluc" + b"\0"*4 + struct.pack(">II", 1, 12) + b"enUS" + struct.pack(">II", len(s), 28) + s

def xyz(v):
    return b"XYZ " + b"\0"*4 + b"".join(s15(x) for x in v)

def srgb_eotf(x):
    return x / 12.92 if x < 0.04045 else ((x + 0.055) / 1.055) ** 2.4

def make_icc(path, variant):
    m, chad = p3_matrices()
    share = variant == "p3"
    if variant == "p3":
        desc = "Display P3 (SharePipe test profile)"
        para = (b"para" + b"\0"*4 + struct.pack(">HH", 3, 0)
                + s15(2.4) + s15(1/1.055) + s15(0.055/1.055) + s15(1/12.92) + s15(0.04045))
        trc = [para, para, para]
    elif variant == "p3-big":
        desc = "Display P3, sampled TRC, >64KB (SharePipe multi-chunk test profile)"
        n = 24000  # 3 curves * 48012 bytes -> ~144 KB -> 3 APP2 chunks
        curves = []
        for ch in range(3):
            vals = [int(round(srgb_eotf(i / (n - 1)) * 65535)) for i in range(n)]
            curves.append(b"curv" + b"\0"*4 + struct.pack(">I", n) + struct.pack(">%dH" % n, *vals))
        trc = curves
    else:
        raise SystemExit("unknown ICC variant " + variant)
    tags = [
        (b"desc", mluc(desc)),
        (b"cprt", mluc("No copyright, use freely (CC0). Generated by SharePipe scripts/make-test-images.sh")),
        (b"wtpt", xyz(D50)),
        (b"rXYZ", xyz([m[0][0], m[1][0], m[2][0]])),
        (b"gXYZ", xyz([m[0][1], m[1][1], m[2][1]])),
        (b"bXYZ", xyz([m[0][2], m[1][2], m[2][2]])),
        (b"rTRC", trc[0]), (b"gTRC", trc[1]), (b"bTRC", trc[2]),
        (b"chad", b"sf32" + b"\0"*4 + b"".join(s15(chad[r][c]) for r in range(3) for c in range(3))),
    ]
    table_len = 4 + 12 * len(tags)
    offset = 128 + table_len
    entries, blobs, seen = [], b"", {}
    for sig, data in tags:
        if share and data in seen:             # share identical tag data (the para TRCs)
            entries.append((sig, seen[data], len(data)))
            continue
        seen[data] = offset
        entries.append((sig, offset, len(data)))
        pad = (-len(data)) % 4
        blobs += data + b"\0" * pad
        offset += len(data) + pad
    size = offset
    hdr = bytearray(128)
    struct.pack_into(">I", hdr, 0, size)
    struct.pack_into(">I", hdr, 8, 0x04300000)
    hdr[12:16] = b"mntr"; hdr[16:20] = b"RGB "; hdr[20:24] = b"XYZ "
    struct.pack_into(">6H", hdr, 24, 2024, 1, 1, 0, 0, 0)
    hdr[36:40] = b"acsp"
    hdr[68:80] = b"".join(s15(x) for x in D50)
    table = struct.pack(">I", len(tags)) + b"".join(struct.pack(">4sII", s, o, l) for s, o, l in entries)
    prof = bytearray(bytes(hdr) + table + blobs)
    assert len(prof) == size
    prof[84:100] = hashlib.md5(bytes(prof)).digest()  # flags/intent/ID are already zero
    open(path, "wb").write(prof)

# ---- JPEG marker walker ----------------------------------------------------
def tiff_orientation_and_thumb(t):
    if len(t) < 8:
        return None, False
    e = "<" if t[:2] == b"II" else ">"
    def u16(o): return struct.unpack_from(e + "H", t, o)[0]
    def u32(o): return struct.unpack_from(e + "I", t, o)[0]
    ifd = u32(4)
    orient = None
    n = u16(ifd)
    for k in range(n):
        ent = ifd + 2 + 12 * k
        if u16(ent) == 0x0112:
            orient = u16(ent + 8)
    nxt = u32(ifd + 2 + 12 * n)
    thumb = False
    if nxt:
        for k in range(u16(nxt)):
            if u16(nxt + 2 + 12 * k) == 0x0201:
                thumb = True
    return orient, thumb

def info(path):
    d = open(path, "rb").read()
    r = {"soi": d[:2] == b"\xff\xd8", "eoi": d.rstrip(b"\0")[-2:] == b"\xff\xd9",
         "icc_chunks": 0, "icc_bytes": 0, "icc_seq": "", "adobe_transform": "none",
         "com": 0, "exif": False, "xmp": False, "iptc": False, "orientation": "none",
         "exif_thumb": False, "sof": "none"}
    p = 2
    while p + 4 <= len(d):
        if d[p] != 0xFF:
            raise SystemExit("%s: bad marker at %d" % (path, p))
        mk = d[p + 1]
        if mk == 0xFF:
            p += 1
            continue
        ln = struct.unpack_from(">H", d, p + 2)[0]
        seg = d[p + 4:p + 2 + ln]
        if mk == 0xE1 and seg.startswith(b"Exif\0\0"):
            r["exif"] = True
            o, th = tiff_orientation_and_thumb(seg[6:])
            r["orientation"] = "none" if o is None else str(o)
            r["exif_thumb"] = th
        elif mk == 0xE1 and seg.startswith(b"http://ns.adobe.com/xap/1.0/\0"):
            r["xmp"] = True
        elif mk == 0xE2 and seg.startswith(b"ICC_PROFILE\0"):
            r["icc_chunks"] += 1
            r["icc_bytes"] += len(seg) - 14
            r["icc_seq"] += "%d/%d," % (seg[12], seg[13])
        elif mk == 0xED and seg.startswith(b"Photoshop 3.0\0"):
            r["iptc"] = b"8BIM\x04\x04" in seg
        elif mk == 0xEE and seg.startswith(b"Adobe"):
            r["adobe_transform"] = str(seg[11])
        elif mk == 0xFE:
            r["com"] += 1
        elif mk in (0xC0, 0xC1, 0xC2):
            r["sof"] = {0xC0: "baseline", 0xC1: "extended", 0xC2: "progressive"}[mk]
            r["height"], r["width"] = struct.unpack_from(">HH", seg, 1)
            r["components"] = seg[5]
            r["sampling"] = ",".join("%dx%d" % (seg[7 + 3*i] >> 4, seg[7 + 3*i] & 15) for i in range(seg[5]))
        elif mk == 0xDA:
            break
        p += 2 + ln
    return r

def set_orientation(path, value):
    # Patch IFD0 Orientation in place (fallback if exiftool refuses a value).
    d = bytearray(open(path, "rb").read())
    p = 2
    while True:
        ln = struct.unpack_from(">H", d, p + 2)[0]
        if d[p + 1] == 0xE1 and d[p + 4:p + 10] == b"Exif\0\0":
            t = p + 10
            e = "<" if d[t:t + 2] == b"II" else ">"
            ifd = struct.unpack_from(e + "I", d, t + 4)[0]
            for k in range(struct.unpack_from(e + "H", d, t + ifd)[0]):
                ent = t + ifd + 2 + 12 * k
                if struct.unpack_from(e + "H", d, ent)[0] == 0x0112:
                    struct.pack_into(e + "H", d, ent + 8, value)
                    open(path, "wb").write(d)
                    return
            raise SystemExit("no Orientation entry")
        p += 2 + ln

cmd = sys.argv[1]
if cmd == "icc":
    make_icc(sys.argv[2], sys.argv[3])
elif cmd == "info":
    for k, v in info(sys.argv[2]).items():
        print("%s=%s" % (k, v))
elif cmd == "set-orientation":
    set_orientation(sys.argv[2], int(sys.argv[3]))
else:
    raise SystemExit("unknown command " + cmd)
PY

jt() { "$PYTHON" "$TMP/jpegtool.py" "$@"; }

# jinfo FILE KEY -> value reported by the marker walker
jinfo() { jt info "$1" | sed -n "s/^$2=//p"; }

expect() { # expect LABEL ACTUAL EXPECTED
  if [[ "$2" == "$3" ]]; then printf '  ok   %-44s %s\n' "$1" "$2"
  else printf '  BAD  %-44s %s (expected %s)\n' "$1" "$2" "$3"; fail "$1: got '$2', expected '$3'"; fi
}

# Common JPEG encoder settings (explicit so libjpeg defaults cannot drift).
JPEG_BASE=(-define jpeg:optimize-coding=true -define jpeg:dct-method=islow -interlace None)
Q95_444=(-quality 95 -sampling-factor 1x1 "${JPEG_BASE[@]}")

# photo W H SEED OUT.miff — smooth "photo-like" plasma (made at 1/4 size, then upscaled).
photo() {
  local w=$1 h=$2 seed=$3 out=$4 div=${5:-4}
  "$CONVERT" -seed "$seed" -size "$((w / div))x$((h / div))" plasma:fractal \
    -resize "${w}x${h}!" -depth 8 -type TrueColor "$out"
}

# rgb_at FILE X Y -> "R,G,B" (0..255) after -auto-orient
rgb_at() {
  "$CONVERT" "$1" -auto-orient -format \
    "%[fx:int(255*p{$2,$3}.r+0.5)],%[fx:int(255*p{$2,$3}.g+0.5)],%[fx:int(255*p{$2,$3}.b+0.5)]" info:
}

# color_is "R,G,B" "R,G,B" TOL -> exit status
color_is() {
  local IFS=,
  local a=($1) b=($2) i
  for i in 0 1 2; do
    local d=$((a[i] - b[i])); ((d < 0)) && d=$((-d))
    ((d <= $3)) || return 1
  done
}

# check_corners FILE W H SQUARE — displayed red TL, green TR, blue BR, grey BL/centre
check_corners() {
  local f=$1 w=$2 h=$3 s=$4 c=$(($4 / 2)) name row="" ok=1 pos got want
  name=$(basename "$f")
  local dims; dims=$("$CONVERT" "$f" -auto-orient -format '%wx%h' info:)
  [[ $dims == "${w}x${h}" ]] || { ok=0; fail "$name displayed size $dims, expected ${w}x${h}"; }
  for pos in "TL $c $c 255,0,0" "TR $((w - c)) $c 0,255,0" "BR $((w - c)) $((h - c)) 0,0,255" \
             "BL $c $((h - c)) 128,128,128" "C $((w / 2)) $((h / 2)) 128,128,128"; do
    set -- $pos
    got=$(rgb_at "$f" "$2" "$3"); want=$4
    if color_is "$got" "$want" 12; then row+=$(printf ' %s=%-11s' "$1" "$got")
    else row+=$(printf ' %s=%-11s!' "$1" "$got"); ok=0; fail "$name $1 corner $got, expected $want"; fi
  done
  printf '  %-22s stored=%-8s orient=%-4s displayed=%-8s%s  %s\n' "$name" \
    "$("$CONVERT" "$f" -format '%wx%h' info:)" "$(jinfo "$f" orientation)" "$dims" "$row" \
    "$([[ $ok == 1 ]] && echo OK || echo WRONG)"
}

# Metadata shared by the "camera" images.
CAMERA_TAGS=(
  -n
  -Make=SharePipeCam -Model=TestModel
  "-Artist=Test Person" -SerialNumber=SN-0042-PRIVATE
  "-DateTimeOriginal=2021:06:15 14:30:00" "-CreateDate=2021:06:15 14:30:00"
  -GPSLatitude=52.5200 -GPSLatitudeRef=N
  -GPSLongitude=13.4050 -GPSLongitudeRef=E
  -GPSAltitude=34.0 -GPSAltitudeRef=0
  "-GPSDateStamp=2021:06:15" "-GPSTimeStamp=12:30:00"
)
PRIVACY_TAGS=(
  "-XMP-dc:Description=secret description (XMP)"
  -XMP-dc:Subject=secret
  -XMP-exif:GPSLatitude=52.5200 -XMP-exif:GPSLongitude=13.4050  # signed decimal (-n is in effect)
  -XMP-photoshop:City=Berlin
  -IPTC:City=Berlin -IPTC:Keywords=secret "-IPTC:By-line=Test Person"
  "-Comment=private comment"
)
# exiftool exits 0 on warnings (e.g. a value it could not convert); treat any message as an error.
et() {
  "$EXIFTOOL" -q -overwrite_original "$@" 2>"$TMP/et.err" || true
  if [[ -s "$TMP/et.err" ]]; then cat "$TMP/et.err" >&2; fail "exiftool: $*"; fi
}

# ---------------------------------------------------------------------------
# Section: jpeg  ->  TestImages/jpeg/
# ---------------------------------------------------------------------------
make_jpeg() {
  local out="$OUT_ROOT/jpeg" t="$TMP/jpeg" n f
  mkdir -p "$out" "$t"
  echo "== jpeg -> ${out#"$ROOT"/}"

  # --- 1. orient-1..8: one upright 600x400 picture, stored so that Exif Orientation N displays it upright.
  "$CONVERT" -size 600x400 'xc:rgb(128,128,128)' \
    -fill 'rgb(255,0,0)' -draw 'rectangle 0,0 99,99' \
    -fill 'rgb(0,255,0)' -draw 'rectangle 500,0 599,99' \
    -fill 'rgb(0,0,255)' -draw 'rectangle 500,300 599,399' \
    -depth 8 -type TrueColor "$t/upright.miff"
  # Stored = inverse of the viewer's transform for orientation N.
  local -a inverse=("" "" "-flop" "-rotate 180" "-flip" "-transpose" "-rotate -90" "-transverse" "-rotate 90")
  for n in 1 2 3 4 5 6 7 8; do
    f="$out/orient-$n.jpg"
    # shellcheck disable=SC2086
    "$CONVERT" "$t/upright.miff" ${inverse[n]} +repage -strip -type TrueColor "${Q95_444[@]}" "$f"
    et -n "-Orientation=$n" "$f"
  done

  # --- 2. gps-thumb.jpg: 800x600, full camera + privacy metadata, Exif thumbnail, Orientation 1.
  photo 800 600 42 "$t/gps.miff"
  "$CONVERT" "$t/gps.miff" -strip -quality 90 -sampling-factor 2x2,1x1,1x1 "${JPEG_BASE[@]}" "$out/gps-thumb.jpg"
  "$CONVERT" "$t/gps.miff" -resize 160x120! -strip -quality 80 -sampling-factor 2x2,1x1,1x1 "${JPEG_BASE[@]}" "$t/thumb.jpg"
  et "${CAMERA_TAGS[@]}" -Orientation=1 "-ThumbnailImage<=$t/thumb.jpg" "${PRIVACY_TAGS[@]}" "$out/gps-thumb.jpg"

  # --- 3. gps-orient6.jpg: displayed 640x480 with 64px corner markers, stored 480x640, Orientation 6.
  photo 640 480 43 "$t/o6.miff"
  "$CONVERT" "$t/o6.miff" \
    -fill 'rgb(128,128,128)' -draw 'rectangle 0,416 63,479' -draw 'rectangle 288,208 351,271' \
    -fill 'rgb(255,0,0)' -draw 'rectangle 0,0 63,63' \
    -fill 'rgb(0,255,0)' -draw 'rectangle 576,0 639,63' \
    -fill 'rgb(0,0,255)' -draw 'rectangle 576,416 639,479' \
    -rotate -90 +repage -type TrueColor "$t/o6-stored.miff"
  "$CONVERT" "$t/o6-stored.miff" -strip -quality 90 -sampling-factor 1x1 "${JPEG_BASE[@]}" "$out/gps-orient6.jpg"
  "$CONVERT" "$t/o6-stored.miff" -resize 120x160! -strip -quality 80 -sampling-factor 2x2,1x1,1x1 "${JPEG_BASE[@]}" "$t/thumb6.jpg"
  et "${CAMERA_TAGS[@]}" -Orientation=6 "-ThumbnailImage<=$t/thumb6.jpg" "${PRIVACY_TAGS[@]}" "$out/gps-orient6.jpg"

  # --- 4. cmyk-adobe.jpg: Adobe-style CMYK (APP14, inverted, YCCK transform), quadrants R G / B W.
  "$CONVERT" \( -size 200x200 'xc:rgb(255,0,0)' 'xc:rgb(0,255,0)' +append \) \
             \( -size 200x200 'xc:rgb(0,0,255)' 'xc:rgb(255,255,255)' +append \) -append \
    -depth 8 -type TrueColor "$t/quad.miff"
  "$CONVERT" "$t/quad.miff" -colorspace CMYK -strip -quality 95 -sampling-factor 1x1 "${JPEG_BASE[@]}" "$out/cmyk-adobe.jpg"
  # cmyk-icc.jpg: same picture converted to CMYK through an ICC transform, CMYK profile embedded.
  if [[ -r "$CMYK_ICC" ]]; then
    "$CONVERT" "$t/quad.miff" -profile "$(srgb_profile)" -profile "$CMYK_ICC" \
      -quality 95 -sampling-factor 1x1 "${JPEG_BASE[@]}" "$out/cmyk-icc.jpg"
  else
    echo "  (skipping cmyk-icc.jpg: $CMYK_ICC not found)"; rm -f "$out/cmyk-icc.jpg"
  fi

  # --- 5. gray.jpg: 1-component 640x480, horizontal black->white gradient.
  "$CONVERT" -size 480x640 gradient:black-white -rotate -90 +repage -colorspace Gray -type Grayscale -depth 8 \
    -strip -quality 95 "${JPEG_BASE[@]}" "$out/gray.jpg"

  # --- 6. progressive.jpg: 1600x1200, progressive, quality 90.
  photo 1600 1200 44 "$t/prog.miff"
  "$CONVERT" "$t/prog.miff" -strip -quality 90 -sampling-factor 2x2,1x1,1x1 \
    -define jpeg:optimize-coding=true -define jpeg:dct-method=islow -interlace JPEG "$out/progressive.jpg"

  # --- 7. icc-p3.jpg / icc-multichunk.jpg: synthesised Display P3 profiles (small / >64KB).
  jt icc "$t/p3.icc" p3
  jt icc "$t/p3-big.icc" p3-big
  photo 800 600 45 "$t/p3.miff"
  "$CONVERT" "$t/p3.miff" -strip -quality 90 -sampling-factor 2x2,1x1,1x1 "${JPEG_BASE[@]}" "$out/icc-p3.jpg"
  et "-ICC_Profile<=$t/p3.icc" "$out/icc-p3.jpg"
  "$CONVERT" "$t/p3.miff" -strip -quality 90 -sampling-factor 2x2,1x1,1x1 "${JPEG_BASE[@]}" "$out/icc-multichunk.jpg"
  et "-ICC_Profile<=$t/p3-big.icc" "$out/icc-multichunk.jpg"

  # --- 8. large-4000x3000.jpg: baseline, q85, GPS Exif, Orientation 1.
  photo 4000 3000 46 "$t/large.miff" 16
  "$CONVERT" "$t/large.miff" -strip -quality 85 -sampling-factor 2x2,1x1,1x1 "${JPEG_BASE[@]}" "$out/large-4000x3000.jpg"
  et "${CAMERA_TAGS[@]}" -Orientation=1 "$out/large-4000x3000.jpg"

  # --- 9. noisy-2000x1500.jpg: luma noise over plasma, q95 4:4:4 (high entropy for byte-limit tests).
  photo 2000 1500 47 "$t/noisy-base.miff" 8
  "$CONVERT" "$t/noisy-base.miff" \
    \( -size 2000x1500 xc:gray50 -seed 7 -attenuate 0.1 +noise Random -colorspace Gray \) \
    -compose Overlay -composite -type TrueColor -strip "${Q95_444[@]}" "$out/noisy-2000x1500.jpg"

  # --- 10. truncated.jpg: first 60% of gps-thumb.jpg.
  local sz; sz=$(stat -c %s "$out/gps-thumb.jpg")
  mkdir -p "$ROOT_BROKEN"
  head -c $((sz * 60 / 100)) "$out/gps-thumb.jpg" >"$ROOT_BROKEN/truncated.jpg"

  # --- 11. tiny-16x16.jpg
  "$CONVERT" \( -size 16x16 gradient:'rgb(255,0,0)'-'rgb(0,0,255)' -rotate 90 \) \
             \( -size 16x16 gradient:'rgb(0,0,0)'-'rgb(0,255,0)' \) -compose Screen -composite \
    -type TrueColor -strip "${Q95_444[@]}" "$out/tiny-16x16.jpg"

  # --- 12. landscape-orient0.jpg: 300x200, Orientation tag present with invalid value 0 (treat as 1).
  "$CONVERT" -size 300x200 'xc:rgb(128,128,128)' \
    -fill 'rgb(255,0,0)' -draw 'rectangle 0,0 49,49' \
    -fill 'rgb(0,255,0)' -draw 'rectangle 250,0 299,49' \
    -fill 'rgb(0,0,255)' -draw 'rectangle 250,150 299,199' \
    -type TrueColor -strip "${Q95_444[@]}" "$out/landscape-orient0.jpg"
  et -n -Orientation=0 "$out/landscape-orient0.jpg"
  [[ $(jinfo "$out/landscape-orient0.jpg" orientation) == 0 ]] || jt set-orientation "$out/landscape-orient0.jpg" 0

  verify_jpeg "$out"
}

# sRGB source profile for the RGB->CMYK transform (only used at generation time).
srgb_profile() {
  local p
  for p in /usr/share/color/icc/ghostscript/srgb.icc /usr/share/color/icc/colord/sRGB.icc /usr/share/color/icc/sRGB.icc; do
    [[ -r $p ]] && { echo "$p"; return; }
  done
  echo "no sRGB profile found" >&2; return 1
}

verify_jpeg() {
  local out=$1 n f
  echo "-- orientation check (sampled after convert -auto-orient; TL red, TR green, BR blue, BL/C grey)"
  for n in 1 2 3 4 5 6 7 8; do
    f="$out/orient-$n.jpg"
    check_corners "$f" 600 400 100
    expect "orient-$n.jpg Exif Orientation" "$(jinfo "$f" orientation)" "$n"
    if ((n >= 5)); then expect "orient-$n.jpg stored size" "$("$CONVERT" "$f" -format '%wx%h' info:)" 400x600
    else expect "orient-$n.jpg stored size" "$("$CONVERT" "$f" -format '%wx%h' info:)" 600x400; fi
    expect "orient-$n.jpg sampling" "$(jinfo "$f" sampling)" "1x1,1x1,1x1"
  done
  check_corners "$out/gps-orient6.jpg" 640 480 64
  check_corners "$out/landscape-orient0.jpg" 300 200 50

  echo "-- structure checks"
  for f in gps-thumb gps-orient6; do
    expect "$f.jpg exif thumbnail" "$(jinfo "$out/$f.jpg" exif_thumb)" True
    expect "$f.jpg XMP" "$(jinfo "$out/$f.jpg" xmp)" True
    expect "$f.jpg IPTC" "$(jinfo "$out/$f.jpg" iptc)" True
    expect "$f.jpg COM segments" "$(jinfo "$out/$f.jpg" com)" 1
    expect "$f.jpg Exif GPS" "$("$EXIFTOOL" -n -s3 -EXIF:GPSLatitude -EXIF:GPSLongitude "$out/$f.jpg" | tr '\n' ' ')" "52.52 13.405 "
    expect "$f.jpg XMP GPS" "$("$EXIFTOOL" -n -s3 -XMP:GPSLatitude -XMP:GPSLongitude "$out/$f.jpg" | tr '\n' ' ')" "52.52 13.405 "
    expect "$f.jpg IPTC City/Keywords" "$("$EXIFTOOL" -s3 -IPTC:City -IPTC:Keywords "$out/$f.jpg" | tr '\n' ' ')" "Berlin secret "
  done
  expect "gps-thumb.jpg orientation" "$(jinfo "$out/gps-thumb.jpg" orientation)" 1
  expect "gps-thumb.jpg thumbnail size" "$("$EXIFTOOL" -b -ThumbnailImage "$out/gps-thumb.jpg" | "$CONVERT" - -format '%wx%h' info:)" 160x120
  expect "gps-orient6.jpg orientation" "$(jinfo "$out/gps-orient6.jpg" orientation)" 6
  expect "cmyk-adobe.jpg colorspace" "$("$CONVERT" "$out/cmyk-adobe.jpg" -format '%[colorspace]' info:)" CMYK
  expect "cmyk-adobe.jpg components" "$(jinfo "$out/cmyk-adobe.jpg" components)" 4
  expect "cmyk-adobe.jpg Adobe APP14 transform" "$(jinfo "$out/cmyk-adobe.jpg" adobe_transform)" 2
  expect "cmyk-adobe.jpg ICC chunks" "$(jinfo "$out/cmyk-adobe.jpg" icc_chunks)" 0
  local q; for q in "100 100 255,0,0" "300 100 0,255,0" "100 300 0,0,255" "300 300 255,255,255"; do
    set -- $q
    local got; got=$("$CONVERT" "$out/cmyk-adobe.jpg" -colorspace sRGB -format \
      "%[fx:int(255*p{$1,$2}.r+0.5)],%[fx:int(255*p{$1,$2}.g+0.5)],%[fx:int(255*p{$1,$2}.b+0.5)]" info:)
    color_is "$got" "$3" 12 && expect "cmyk-adobe.jpg naive RGB at $1,$2" "$3" "$3" \
      || expect "cmyk-adobe.jpg naive RGB at $1,$2" "$got" "$3"
  done
  if [[ -f "$out/cmyk-icc.jpg" ]]; then
    expect "cmyk-icc.jpg colorspace" "$("$CONVERT" "$out/cmyk-icc.jpg" -format '%[colorspace]' info:)" CMYK
    expect "cmyk-icc.jpg ICC colour space" "$("$EXIFTOOL" -s3 -ICC_Profile:ColorSpaceData "$out/cmyk-icc.jpg")" "CMYK"
  fi
  expect "gray.jpg components" "$(jinfo "$out/gray.jpg" components)" 1
  expect "gray.jpg left/right" "$("$CONVERT" "$out/gray.jpg" -format '%[fx:int(255*p{0,240}+0.5)]/%[fx:int(255*p{639,240}+0.5)]' info:)" "0/255"
  expect "progressive.jpg SOF" "$(jinfo "$out/progressive.jpg" sof)" progressive
  expect "large-4000x3000.jpg SOF" "$(jinfo "$out/large-4000x3000.jpg" sof)" baseline
  expect "icc-p3.jpg ICC chunks" "$(jinfo "$out/icc-p3.jpg" icc_chunks)" 1
  expect "icc-p3.jpg profile description" "$("$EXIFTOOL" -s3 -ICC_Profile:ProfileDescription "$out/icc-p3.jpg")" "Display P3 (SharePipe test profile)"
  expect "icc-multichunk.jpg ICC chunks" "$(jinfo "$out/icc-multichunk.jpg" icc_seq)" "1/3,2/3,3/3,"
  expect "icc-multichunk.jpg ICC bytes = profile size" "$(jinfo "$out/icc-multichunk.jpg" icc_bytes)" \
    "$("$EXIFTOOL" -b -ICC_Profile "$out/icc-multichunk.jpg" | wc -c)"
  for f in icc-p3 icc-multichunk; do   # lcms must accept the profile as a transform source
    "$CONVERT" "$out/$f.jpg" -profile "$(srgb_profile)" -format '%wx%h' info: >/dev/null 2>"$TMP/lcms.err" \
      && ! grep -q . "$TMP/lcms.err" && expect "$f.jpg profile usable by lcms" yes yes \
      || expect "$f.jpg profile usable by lcms" "no: $(head -1 "$TMP/lcms.err")" yes
  done
  expect "truncated.jpg EOI" "$(jinfo "$ROOT_BROKEN/truncated.jpg" eoi)" False
  expect "landscape-orient0.jpg raw Orientation" "$(jinfo "$out/landscape-orient0.jpg" orientation)" 0
  local sz
  sz=$(stat -c %s "$out/noisy-2000x1500.jpg"); expect "noisy-2000x1500.jpg 1MB..2.5MB" "$((sz >= 1000000 && sz <= 2500000))" 1
  sz=$(stat -c %s "$out/large-4000x3000.jpg"); expect "large-4000x3000.jpg < 1.5MB" "$((sz < 1500000))" 1

  echo "-- summary"
  (cd "$out" && "$EXIFTOOL" -T -FileName -FileSize# -ImageSize -Orientation# -ColorComponents \
      -GPSLatitude# -ThumbnailLength -ICC_Profile:ProfileDescription -EncodingProcess ./*.jpg 2>/dev/null || true) |
    awk 'BEGIN{printf "%-24s %9s %-10s %-3s %-3s %-8s %-6s %-40s %s\n","file","bytes","size","ori","cmp","gpslat","thumb","icc","process"}
         {n=split($0,a,"\t"); printf "%-24s %9s %-10s %-3s %-3s %-8s %-6s %-40s %s\n",a[1],a[2],a[3],a[4],a[5],a[6],a[7],a[8],a[9]}'
  du -cb "$out"/*.jpg | tail -1 | awk '{printf "total: %d bytes\n", $1}'
}

# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------
main() {
  local sections=("$@") s
  ((${#sections[@]})) || sections=("${ALL_SECTIONS[@]}")
  for s in "${sections[@]}"; do
    if ! declare -F "make_$s" >/dev/null; then
      echo "unknown section '$s' (known: ${ALL_SECTIONS[*]})" >&2
      exit 2
    fi
  done
  for s in "${sections[@]}"; do "make_$s"; done
  if ((FAILURES)); then
    echo "$FAILURES check(s) failed" >&2
    exit 1
  fi
  echo "all checks passed"
}

main "$@"
