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
#   (libjpeg-turbo-progs — cjpeg, jpegtran — is needed only by the progressive section.)
#   - gifsicle (apt: gifsicle), only as a witness in the gif section's checks.
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

ALL_SECTIONS=(jpeg png gif broken lenient progressive heif heifgrid webp apng jpegcolor)

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
# OUT_ROOT (set by scripts/make-test-images when it regenerates into a scratch copy) moves the outputs;
# the helper programs are still read from this repository.
OUT_ROOT="${OUT_ROOT:-$ROOT/TestImages}"
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
# Section: png  ->  TestImages/png/
# ---------------------------------------------------------------------------
# PNGs are written by a small Python encoder (stdlib zlib, level 9) so that colour type, bit depth,
# palette, tRNS, Adam7 interlacing, the filter of every row and the place of every chunk are exact.
# Rows cycle through the five filter types (row n uses filter n mod 5) so decoders meet all of them.
# exiftool adds the eXIf and XMP chunks of the metadata images; ImageMagick is only a witness.
write_pngtool() {
  cat >"$TMP/pngtool.py" <<'PY'
import struct, sys, zlib

def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

def pack(samples, depth):
    if depth == 8:
        return bytes(samples)
    if depth == 16:
        return b"".join(struct.pack(">H", s) for s in samples)
    out, acc, bits = bytearray(), 0, 0
    for s in samples:
        acc, bits = (acc << depth) | s, bits + depth
        if bits == 8:
            out.append(acc); acc, bits = 0, 0
    if bits:
        out.append(acc << (8 - bits))
    return bytes(out)

def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)

def filtered(kind, row, prev, bpp):
    out = bytearray([kind])
    for i, x in enumerate(row):
        a = row[i - bpp] if i >= bpp else 0
        b = prev[i] if prev else 0
        c = prev[i - bpp] if prev and i >= bpp else 0
        pred = [0, a, b, (a + b) // 2, paeth(a, b, c)][kind]
        out.append((x - pred) & 0xFF)
    return bytes(out)

ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}

def idat(width, height, color_type, depth, pixel, interlaced):
    bpp = max(1, CHANNELS[color_type] * depth // 8)
    raw, n = bytearray(), 0
    for xs, ys, dx, dy in (ADAM7 if interlaced else [(0, 0, 1, 1)]):
        cols, rows = range(xs, width, dx), range(ys, height, dy)
        if not cols or not rows:
            continue                      # empty Adam7 passes are left out, as the spec says
        prev = None
        for y in rows:
            row = pack([s for x in cols for s in pixel(x, y)], depth)
            raw += filtered(n % 5, row, prev, bpp)
            prev, n = row, n + 1
    return zlib.compress(bytes(raw), 9)

def png(path, width, height, color_type, depth, pixel, interlaced=False, palette=None, trns=None,
        colour=(), before_idat=(), after_idat=(), idat_override=None):
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, int(interlaced)))
    for kind, data in colour:
        out += chunk(kind, data)
    if palette is not None:
        out += chunk(b"PLTE", b"".join(bytes(c) for c in palette))
    if trns is not None:
        out += chunk(b"tRNS", trns)
    for kind, data in before_idat:
        out += chunk(kind, data)
    data = idat_override if idat_override is not None else idat(width, height, color_type, depth, pixel, interlaced)
    out += chunk(b"IDAT", data)
    for kind, data in after_idat:
        out += chunk(kind, data)
    out += chunk(b"IEND", b"")
    open(path, "wb").write(out)

# ---- pictures ----------------------------------------------------------------
W, H = 61, 47                                     # odd: sub-byte rows end mid-byte
def quadrant(x, y):                               # 0 TL, 1 TR, 2 BL, 3 BR
    return (0 if x < 31 else 1) + (0 if y < 24 else 2)

RGB4 = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (128, 64, 32)]
ALPHA4 = [255, 128, 64, 0]
GRAY4 = [0, 85, 170, 255]

def noise(x, y, seed):                            # integer hash: identical bytes on every platform
    h = (x * 73856093) ^ (y * 19349663) ^ (seed * 83492791)
    h = (h ^ (h >> 13)) * 1274126177 & 0xFFFFFFFF
    return (h >> 16) & 0xFF

def photo(x, y, w, h, seed):                      # smooth ramps + a ring + grain: compresses like a photo
    d = ((x - w // 3) ** 2 + (y - h // 2) ** 2) * 255 // (w * w // 4 + h * h // 4)
    base = (x * 255 // (w - 1), y * 255 // (h - 1), min(255, d))
    return tuple(max(0, min(255, v + noise(x, y, seed + i) % 49 - 24)) for i, v in enumerate(base))

def detail(x, y):                                 # every pixel differs from its neighbours
    return ((x * 2) & 255, (y * 5 + x) & 255, (x * y) & 255)

def text_chunk(keyword, text):
    return keyword.encode("latin-1") + b"\0" + text.encode("latin-1")

def make(out):
    p = lambda name: out + "/" + name
    # -- every colour type and depth, one picture: four quadrants
    png(p("gray-1.png"), W, H, 0, 1, lambda x, y: (quadrant(x, y) in (1, 2),))
    png(p("gray-2.png"), W, H, 0, 2, lambda x, y: (quadrant(x, y),))
    png(p("gray-4.png"), W, H, 0, 4, lambda x, y: (quadrant(x, y) * 5,))
    png(p("gray-4-trns.png"), W, H, 0, 4, lambda x, y: (quadrant(x, y) * 5,), trns=struct.pack(">H", 10))
    png(p("gray-8.png"), W, H, 0, 8, lambda x, y: (GRAY4[quadrant(x, y)],))
    png(p("gray-16.png"), W, H, 0, 16, lambda x, y: (GRAY4[quadrant(x, y)] * 257,))
    png(p("gray-alpha-8.png"), W, H, 4, 8, lambda x, y: (GRAY4[quadrant(x, y)], ALPHA4[quadrant(x, y)]))
    png(p("gray-alpha-16.png"), W, H, 4, 16, lambda x, y: (GRAY4[quadrant(x, y)] * 257, ALPHA4[quadrant(x, y)] * 257))
    png(p("rgb-8.png"), W, H, 2, 8, lambda x, y: RGB4[quadrant(x, y)])
    png(p("rgb-8-trns.png"), W, H, 2, 8, lambda x, y: RGB4[quadrant(x, y)], trns=struct.pack(">HHH", 128, 64, 32))
    png(p("rgb-16.png"), W, H, 2, 16, lambda x, y: tuple(v * 257 for v in RGB4[quadrant(x, y)]))
    png(p("rgba-8.png"), W, H, 6, 8, lambda x, y: RGB4[quadrant(x, y)] + (ALPHA4[quadrant(x, y)],))
    png(p("rgba-16.png"), W, H, 6, 16, lambda x, y: tuple(v * 257 for v in RGB4[quadrant(x, y)] + (ALPHA4[quadrant(x, y)],)))
    # palettes: quadrant q uses entry INDEX[depth][q], whose colour is RGB4[q]; other entries are filler
    index = {1: [0, 1, 1, 0], 2: [0, 1, 2, 3], 4: [0, 7, 12, 15], 8: [0, 100, 200, 255]}
    for depth in (1, 2, 4, 8):
        entries = [(i * 37 % 256, i * 91 % 256, i * 13 % 256) for i in range(1 << depth)]
        alpha = [255] * (1 << depth)
        for q in range(4):
            if depth > 1 or q < 2:
                entries[index[depth][q]] = RGB4[q]
                alpha[index[depth][q]] = ALPHA4[q]
        if depth == 1:
            alpha[0] = 128                        # a tRNS shorter than the palette: entry 1 stays opaque
        pixel = lambda x, y, d=depth: (index[d][quadrant(x, y)],)
        png(p("palette-%d.png" % depth), W, H, 3, depth, pixel, palette=entries)
        trns = bytes(alpha[:1] if depth == 1 else alpha[:max(index[depth]) + 1])
        png(p("palette-%d-trns.png" % depth), W, H, 3, depth, pixel, palette=entries, trns=trns)

    # -- Adam7: the same pictures interlaced and not, 123x97 so that every pass has ragged edges
    w, h = 123, 97
    pal16 = [(i * 16, 255 - i * 16, (i * 77) & 255) for i in range(16)]
    pal_alpha = bytes([0, 60, 120, 180])
    pictures = [
        ("detail-rgba-8", 6, 8, lambda x, y: detail(x, y) + ((x + y * 3) & 255,), {}),
        ("detail-rgb-16", 2, 16, lambda x, y: tuple(v * 256 + (x * 7 + y) % 256 for v in detail(x, y)), {}),
        ("detail-palette-4-trns", 3, 4, lambda x, y: ((x // 3 + y // 5) % 16,), {"palette": pal16, "trns": pal_alpha}),
        ("detail-gray-1", 0, 1, lambda x, y: ((x ^ y) & 1 if (x // 8 + y // 8) % 2 else (x * y) % 3 == 0,), {}),
    ]
    for name, ct, depth, pixel, extra in pictures:
        png(p(name + ".png"), w, h, ct, depth, pixel, **extra)
        png(p(name + "-interlaced.png"), w, h, ct, depth, pixel, interlaced=True, **extra)

    # -- alpha edges: an opaque red square on fully transparent *green*
    png(p("red-on-clear-green.png"), 300, 200, 6, 8,
        lambda x, y: (255, 0, 0, 255) if 100 <= x < 200 and 50 <= y < 150 else (0, 255, 0, 0))

    # -- 16-bit precision: 1-px stripes of 33050 / 33307 (128.60 / 129.60 on the 8-bit scale).
    #    Averaged in 16-bit they give 129.10 -> 129; rounded to 8 bits first, (129 + 130) / 2 -> 130.
    png(p("gray-16-stripes.png"), 64, 64, 0, 16, lambda x, y: (33050 if x % 2 == 0 else 33307,))

    # -- colour chunks (structural) next to a text chunk (metadata); pHYs 2835 x 5670 px/m
    srgb_chrm = struct.pack(">8I", 31270, 32900, 64000, 33000, 30000, 60000, 15000, 6000)
    colour = [(b"sRGB", b"\0"), (b"gAMA", struct.pack(">I", 45455)), (b"cHRM", srgb_chrm)]
    phys = (b"pHYs", struct.pack(">IIB", 2835, 5670, 1))
    png(p("colour-chunks.png"), 80, 60, 2, 8, lambda x, y: photo(x, y, 80, 60, 3), colour=colour,
        before_idat=[phys, (b"tEXt", text_chunk("Software", "SharePipe make-test-images"))])

    # -- ICC profile (iCCP, compressed) + pHYs + a text chunk
    icc = open(sys.argv[3], "rb").read()
    png(p("icc-p3.png"), 80, 60, 2, 8, lambda x, y: photo(x, y, 80, 60, 4),
        colour=[(b"iCCP", b"Display P3\0\0" + zlib.compress(icc, 9))],
        before_idat=[phys, (b"tEXt", text_chunk("Title", "ICC test"))])

    # -- metadata base images (exiftool adds eXIf + XMP afterwards). Stored 48x64 = displayed 64x48
    #    under orientation 6: red TL, green TR, blue BR, grey elsewhere, 16px markers (displayed).
    def marker(dx, dy):
        if dx < 16 and dy < 16: return (255, 0, 0)
        if dx >= 48 and dy < 16: return (0, 255, 0)
        if dx >= 48 and dy >= 32: return (0, 0, 255)
        return (128, 128, 128)
    iptc = bytes.fromhex("1c020000020004") + bytes.fromhex("1c025a0006") + b"Berlin"   # record version, City
    raw_iptc = b"\nIPTC profile\n%8d\n" % len(iptc) + iptc.hex().encode() + b"\n"     # ImageMagick's layout
    texts = [
        (b"tEXt", text_chunk("Title", "harmless title")),
        (b"zTXt", b"Raw profile type iptc\0\0" + zlib.compress(raw_iptc, 9)),
    ]
    time = (b"tIME", struct.pack(">HBBBBB", 2021, 6, 15, 14, 30, 0))
    # orientation 6 (turn 90° clockwise to show) puts stored pixel (x, y) at displayed (63 - y, x)
    png(p("gps-orient6.png"), 48, 64, 2, 8, lambda x, y: marker(63 - y, x),
        before_idat=[phys] + texts, after_idat=[time])
    pal = [RGB4[q] for q in range(4)] + [(200, 200, 200)] * 12
    png(p("palette-meta.png"), W, H, 3, 4, lambda x, y: (quadrant(x, y),), palette=pal, trns=bytes([255, 128]),
        before_idat=texts, after_idat=[time])

    # -- the byte-limit ladder: photo-like RGB, and the same with a meaningful alpha ramp
    png(p("photo-160x120.png"), 160, 120, 2, 8, lambda x, y: photo(x, y, 160, 120, 7))
    png(p("photo-alpha-160x120.png"), 160, 120, 6, 8, lambda x, y: photo(x, y, 160, 120, 7) + (55 + x * 200 // 159,))

    # -- an IHDR that claims 100000x100000 RGBA (40 GB decoded) over a few bytes of data (moved to broken/)
    png(p("huge-ihdr.png"), 100000, 100000, 6, 8, None, idat_override=zlib.compress(b"\0" * 64, 9))

def chunks(path):
    d = open(path, "rb").read()
    assert d[:8] == b"\x89PNG\r\n\x1a\n", path
    p, names = 8, []
    while p + 8 <= len(d):
        n = struct.unpack(">I", d[p:p + 4])[0]
        names.append(d[p + 4:p + 8].decode("latin-1"))
        if p + 12 + n > len(d):
            names[-1] += "(cut)"
        elif zlib.crc32(d[p + 4:p + 8 + n]) & 0xFFFFFFFF != struct.unpack(">I", d[p + 8 + n:p + 12 + n])[0]:
            names[-1] += "(bad crc)"
        p += 12 + n
    return names

def tail_text(path, keyword, text):               # a tEXt chunk right before IEND (after the image data)
    d = open(path, "rb").read()
    assert d[-12:-8] == b"\0\0\0\0" and d[-8:-4] == b"IEND", path
    open(path, "wb").write(d[:-12] + chunk(b"tEXt", text_chunk(keyword, text)) + d[-12:])

def first_pixel(path):                            # raw bytes of pixel (0, 0) of an 8-bit, non-interlaced PNG
    d, p, data = open(path, "rb").read(), 8, b""
    while p + 8 <= len(d):
        n = struct.unpack(">I", d[p:p + 4])[0]
        if d[p + 4:p + 8] == b"IDAT":
            data += d[p + 8:p + 8 + n]
        p += 12 + n
    raw = zlib.decompress(data)
    assert raw[0] == 0, "row 0 is not unfiltered"
    channels = CHANNELS[d[25]]
    return ",".join(str(b) for b in raw[1:1 + channels])

def ihdr(path):
    d = open(path, "rb").read()
    w, h, depth, ct, _, _, il = struct.unpack(">IIBBBBB", d[16:29])
    return "%dx%d ct%d d%d i%d" % (w, h, ct, depth, il)

if __name__ != "__main__":
    pass                                          # imported by the lenient section for png()
elif sys.argv[1] == "make":
    make(sys.argv[2])
elif sys.argv[1] == "chunks":
    print(",".join(chunks(sys.argv[2])))
elif sys.argv[1] == "ihdr":
    print(ihdr(sys.argv[2]))
elif sys.argv[1] == "tail-text":
    tail_text(sys.argv[2], sys.argv[3], sys.argv[4])
elif sys.argv[1] == "first-pixel":
    print(first_pixel(sys.argv[2]))
else:
    raise SystemExit("unknown command " + sys.argv[1])
PY
}

pt() { "$PYTHON" "$TMP/pngtool.py" "$@"; }

make_png() {
  local out="$OUT_ROOT/png" t="$TMP/png" f
  mkdir -p "$out" "$t"
  echo "== png -> ${out#"$ROOT"/} (broken inputs -> ${ROOT_BROKEN#"$ROOT"/})"
  mkdir -p "$ROOT_BROKEN"
  rm -f "$out"/*.png "$ROOT_BROKEN/truncated.png" "$ROOT_BROKEN/huge-ihdr.png"
  write_pngtool
  jt icc "$t/p3.icc" p3
  pt make "$out" "$t/p3.icc"
  mv "$out/huge-ihdr.png" "$ROOT_BROKEN/huge-ihdr.png"

  # eXIf (camera tags, GPS, orientation) and XMP (iTXt) via exiftool. Tags are named with their EXIF
  # group: for a PNG, exiftool would otherwise write Make/Model/... as PNG text chunks.
  local -a png_camera=(
    -n -EXIF:Make=SharePipeCam -EXIF:Model=TestModel "-EXIF:Artist=Test Person" -EXIF:SerialNumber=SN-0042-PRIVATE
    "-EXIF:DateTimeOriginal=2021:06:15 14:30:00"
    -GPSLatitude=52.5200 -GPSLatitudeRef=N -GPSLongitude=13.4050 -GPSLongitudeRef=E -GPSAltitude=34.0 -GPSAltitudeRef=0
  )
  local -a png_xmp=(
    "-XMP-dc:Description=secret description (XMP)" -XMP-exif:GPSLatitude=52.5200 -XMP-exif:GPSLongitude=13.4050
    -XMP-photoshop:City=Berlin
  )
  et "${png_camera[@]}" -EXIF:Orientation=6 "${png_xmp[@]}" "$out/gps-orient6.png"
  pt tail-text "$out/gps-orient6.png" Comment "after the image data"   # exiftool moves text before IDAT
  et "${png_camera[@]}" -EXIF:Orientation=1 "$out/palette-meta.png"

  # broken/truncated.png: the first 60% of photo-160x120.png (cut inside IDAT).
  local sz; sz=$(stat -c %s "$out/photo-160x120.png")
  head -c $((sz * 60 / 100)) "$out/photo-160x120.png" >"$ROOT_BROKEN/truncated.png"

  verify_png "$out"
}

verify_png() {
  local out=$1 f name want
  echo "-- headers (IHDR: size, colour type, depth, interlace)"
  for want in "gray-1 61x47 ct0 d1 i0" "gray-2 61x47 ct0 d2 i0" "gray-4 61x47 ct0 d4 i0" "gray-8 61x47 ct0 d8 i0" \
              "gray-16 61x47 ct0 d16 i0" "gray-alpha-8 61x47 ct4 d8 i0" "gray-alpha-16 61x47 ct4 d16 i0" \
              "rgb-8 61x47 ct2 d8 i0" "rgb-16 61x47 ct2 d16 i0" "rgba-8 61x47 ct6 d8 i0" "rgba-16 61x47 ct6 d16 i0" \
              "palette-1 61x47 ct3 d1 i0" "palette-2 61x47 ct3 d2 i0" "palette-4 61x47 ct3 d4 i0" "palette-8 61x47 ct3 d8 i0" \
              "detail-rgba-8-interlaced 123x97 ct6 d8 i1" "detail-rgb-16-interlaced 123x97 ct2 d16 i1" \
              "detail-palette-4-trns-interlaced 123x97 ct3 d4 i1" "detail-gray-1-interlaced 123x97 ct0 d1 i1" \
              "../broken/huge-ihdr 100000x100000 ct6 d8 i0"; do
    set -- $want
    expect "$1.png IHDR" "$(pt ihdr "$out/$1.png")" "$2 $3 $4 $5"
  done

  echo "-- chunks"
  for f in 1 2 4 8; do
    expect "palette-$f.png chunks" "$(pt chunks "$out/palette-$f.png")" "IHDR,PLTE,IDAT,IEND"
    expect "palette-$f-trns.png chunks" "$(pt chunks "$out/palette-$f-trns.png")" "IHDR,PLTE,tRNS,IDAT,IEND"
  done
  expect "colour-chunks.png chunks" "$(pt chunks "$out/colour-chunks.png")" "IHDR,sRGB,gAMA,cHRM,pHYs,tEXt,IDAT,IEND"
  expect "icc-p3.png chunks" "$(pt chunks "$out/icc-p3.png")" "IHDR,iCCP,pHYs,tEXt,IDAT,IEND"
  expect "gps-orient6.png chunks" "$(pt chunks "$out/gps-orient6.png" | tr ',' '\n' | sort | tr '\n' ' ')" \
    "IDAT IEND IHDR eXIf iTXt pHYs tEXt tEXt tIME zTXt "
  expect "gps-orient6.png after IDAT" "$(pt chunks "$out/gps-orient6.png" | grep -o 'IDAT.*')" "IDAT,tIME,tEXt,IEND"
  expect "gps-orient6.png IPTC City (raw profile)" "$("$EXIFTOOL" -s3 -IPTC:City "$out/gps-orient6.png" 2>&1)" Berlin
  expect "palette-meta.png chunks" "$(pt chunks "$out/palette-meta.png" | tr ',' '\n' | sort | tr '\n' ' ')" \
    "IDAT IEND IHDR PLTE eXIf tEXt tIME tRNS zTXt "
  expect "broken/huge-ihdr.png chunks" "$(pt chunks "$ROOT_BROKEN/huge-ihdr.png")" "IHDR,IDAT,IEND"
  expect "broken/truncated.png ends inside IDAT" "$(pt chunks "$ROOT_BROKEN/truncated.png")" "IHDR,IDAT(cut)"

  echo "-- metadata (exiftool as witness)"
  expect "gps-orient6.png Exif GPS" "$("$EXIFTOOL" -n -s3 -EXIF:GPSLatitude -EXIF:GPSLongitude "$out/gps-orient6.png" | tr '\n' ' ')" "52.52 13.405 "
  expect "gps-orient6.png Exif Orientation" "$("$EXIFTOOL" -n -s3 -EXIF:Orientation "$out/gps-orient6.png")" 6
  expect "gps-orient6.png XMP City" "$("$EXIFTOOL" -s3 -XMP:City "$out/gps-orient6.png")" Berlin
  expect "palette-meta.png Exif Orientation" "$("$EXIFTOOL" -n -s3 -EXIF:Orientation "$out/palette-meta.png")" 1
  expect "icc-p3.png profile description" "$("$EXIFTOOL" -s3 -ICC_Profile:ProfileDescription "$out/icc-p3.png")" "Display P3 (SharePipe test profile)"

  echo "-- pixels (ImageMagick as witness)"
  # ImageMagick 6 ignores a PNG's eXIf orientation: turn the picture as a viewer would, then check it.
  local shown="$TMP/png/gps-orient6-shown.png"
  "$CONVERT" "$out/gps-orient6.png" -rotate 90 +repage "$shown" 2>/dev/null
  expect "gps-orient6.png shown size" "$("$CONVERT" "$shown" -format '%wx%h' info:)" 64x48
  expect "gps-orient6.png shown TL/TR/BR/BL" "$(rgb_at "$shown" 8 8) $(rgb_at "$shown" 56 8) $(rgb_at "$shown" 56 40) $(rgb_at "$shown" 8 40)" \
    "255,0,0 0,255,0 0,0,255 128,128,128"
  expect "rgb-8.png TL/TR/BL/BR" "$(rgb_at "$out/rgb-8.png" 5 5) $(rgb_at "$out/rgb-8.png" 55 5) $(rgb_at "$out/rgb-8.png" 5 40) $(rgb_at "$out/rgb-8.png" 55 40)" \
    "255,0,0 0,255,0 0,0,255 128,64,32"
  for name in detail-rgba-8 detail-rgb-16 detail-palette-4-trns detail-gray-1; do
    expect "$name interlaced = progressive pixels" \
      "$("$CONVERT" "$out/$name-interlaced.png" -depth 16 rgba:- | md5sum | cut -c1-12)" \
      "$("$CONVERT" "$out/$name.png" -depth 16 rgba:- | md5sum | cut -c1-12)"
  done
  expect "gray-16-stripes.png samples" "$("$CONVERT" "$out/gray-16-stripes.png" -format '%[fx:int(65535*p{0,0}+0.5)],%[fx:int(65535*p{1,0}+0.5)]' info:)" "33050,33307"
  # ImageMagick zeroes the colour of fully transparent pixels on reading, so read the stored bytes.
  expect "red-on-clear-green.png clear pixel (stored)" "$(pt first-pixel "$out/red-on-clear-green.png")" "0,255,0,0"
  expect "red-on-clear-green.png centre" "$(rgb_at "$out/red-on-clear-green.png" 150 100)" "255,0,0"

  echo "-- summary"
  (cd "$out" && for f in ./*.png; do printf '%-40s %8s  %s\n' "${f#./}" "$(stat -c %s "$f")" "$(pt chunks "$f")"; done)
  du -cb "$out"/*.png | tail -1 | awk '{printf "total: %d bytes\n", $1}'
}

# ---------------------------------------------------------------------------
# GIF: written byte by byte by a small python3 GIF writer (standard library), so every
# container and frame property (loop extension or none, palettes, rectangles, disposal,
# delays, interlacing, LZW code size) is exactly what the file name says. Checked with
# ImageMagick (identify: delays, disposal; convert -coalesce: pixels) and gifsicle --info
# (frame count, loop count) as outside witnesses.
# ---------------------------------------------------------------------------
GIFSICLE=${GIFSICLE:-gifsicle}

GIFTOOL_PY=$(cat <<'PY'
# A small, exact GIF writer: every byte of the test GIFs is chosen here (palettes, rectangles, disposal,
# delays, loop extensions, interlacing, LZW code size), so the files test what their names say.
import os, struct, sys

def lzw(indices, min_code_size):
    """GIF LZW with variable-width codes (late change, as decoders expect) and a clear before the table fills."""
    clear, eoi = 1 << min_code_size, (1 << min_code_size) + 1
    out, acc, nbits = bytearray(), 0, 0
    def emit(code, size):
        nonlocal acc, nbits
        acc |= code << nbits
        nbits += size
        while nbits >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8
    size = min_code_size + 1
    table, next_code = {}, eoi + 1
    emit(clear, size)
    prefix = indices[0]
    for k in indices[1:]:
        key = (prefix, k)
        if key in table:
            prefix = table[key]
            continue
        emit(prefix, size)
        table[key] = next_code
        next_code += 1
        if next_code > (1 << size) and size < 12:
            size += 1
        if next_code >= 4094:
            emit(clear, size)
            table, next_code, size = {}, eoi + 1, min_code_size + 1
        prefix = k
    emit(prefix, size)
    next_code += 1  # the decoder counts the last code too before it reads the end code
    if next_code > (1 << size) and size < 12:
        size += 1
    emit(eoi, size)
    if nbits:
        out.append(acc & 0xFF)
    return bytes(out)

def sub_blocks(data):
    return b"".join(bytes([len(data[i:i + 255])]) + data[i:i + 255] for i in range(0, len(data), 255)) + b"\0"

def table_bits(n):
    bits = 1
    while (1 << bits) < n:
        bits += 1
    return bits

def pad(palette):
    n = 1 << table_bits(len(palette))
    return palette + [(0, 0, 0)] * (n - len(palette))

def color_table(palette):
    return b"".join(bytes(c) for c in pad(palette))

class GIF:
    def __init__(self, width, height, palette=None, background=0, aspect=0):
        self.out = bytearray(b"GIF89a")
        flags = 0x70  # colour resolution 8 bits
        if palette:
            flags |= 0x80 | (table_bits(len(palette)) - 1)
        self.out += struct.pack("<HHBBB", width, height, flags, background, aspect)
        if palette:
            self.out += color_table(palette)
        self.palette = palette

    def loop(self, count):
        self.out += b"\x21\xFF\x0BNETSCAPE2.0\x03\x01" + struct.pack("<H", count) + b"\0"

    def comment(self, text):
        self.out += b"\x21\xFE" + sub_blocks(text)

    def application(self, ident, data, raw=False):
        self.out += b"\x21\xFF\x0B" + ident + (data if raw else sub_blocks(data))

    def frame(self, left, top, width, height, pixels, delay=None, disposal=0, transparent=None,
              local=None, interlace=False, code_size=None, user_input=False):
        """pixels: a list of rows of palette indices. delay None: no Graphics Control Extension."""
        if delay is not None:
            packed = (disposal << 2) | (2 if user_input else 0) | (1 if transparent is not None else 0)
            self.out += b"\x21\xF9\x04" + struct.pack("<BHB", packed, delay, transparent or 0) + b"\0"
        flags = 0x40 if interlace else 0
        if local:
            flags |= 0x80 | (table_bits(len(local)) - 1)
        self.out += b"\x2C" + struct.pack("<HHHHB", left, top, width, height, flags)
        if local:
            self.out += color_table(local)
        rows = pixels
        if interlace:
            order = [y for start, step in ((0, 8), (4, 8), (2, 4), (1, 2)) for y in range(start, height, step)]
            rows = [pixels[y] for y in order]
        flat = [i for row in rows for i in row]
        table = local or self.palette
        bits = max(2, table_bits(len(table))) if table else 2   # no colour table at all: 2-bit codes
        if flat:
            data = lzw(flat, bits)
        else:                                   # no pixels (a zero-width frame): a clear code, then the end code
            clear, width = 1 << bits, bits + 1
            data = (clear | (clear + 1) << width).to_bytes((2 * width + 7) // 8, "little")
        self.out += bytes([code_size if code_size is not None else bits]) + sub_blocks(data)

    def bytes(self):
        return bytes(self.out) + b"\x3B"

def rect(width, height, fn):
    return [[fn(x, y) for x in range(width)] for y in range(height)]

def filled(width, height, index):
    return [[index] * width for _ in range(height)]

# ---- the test images --------------------------------------------------------------------------------------

BASE = [(0, 0, 0), (255, 255, 255), (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (0, 255, 255),
        (255, 0, 255), (128, 128, 128), (192, 64, 0), (0, 128, 64), (64, 0, 128), (200, 200, 200),
        (100, 50, 25), (25, 100, 50), (50, 25, 100)]

def checker(width, height, a, b, cell):
    return rect(width, height, lambda x, y: a if ((x // cell) + (y // cell)) % 2 == 0 else b)

def delays_loop0():
    g = GIF(120, 90, BASE[:8])
    g.loop(0)
    for n, delay in enumerate([0, 1, 2, 10, 50]):
        g.frame(0, 0, 120, 90, rect(120, 90, lambda x, y: 1 + ((x // 20 + y // 15 + n) % 7)), delay=delay, disposal=1)
    return g.bytes()

def disposals():
    g = GIF(160, 120, BASE)
    g.loop(0)
    # 0: full background, disposal none.
    g.frame(0, 0, 160, 120, checker(160, 120, 8, 12, 16), delay=10, disposal=1)
    # 1: 40x30 at 10,10, disposal unspecified, transparent index 0 in a ring.
    g.frame(10, 10, 40, 30, rect(40, 30, lambda x, y: 0 if 8 <= x < 32 and 8 <= y < 22 else 2), delay=20,
            disposal=0, transparent=0)
    # 2: 50x40 at 60,20 with its own 4-colour table, disposal background (cleared to transparent afterwards).
    g.frame(60, 20, 50, 40, rect(50, 40, lambda x, y: (x // 10 + y // 10) % 4), delay=30, disposal=2,
            local=[(10, 20, 30), (240, 120, 0), (0, 160, 240), (250, 250, 250)])
    # 3: 60x40 at 30,60, disposal previous, transparent index 3 in a diagonal band.
    g.frame(30, 60, 60, 40, rect(60, 40, lambda x, y: 3 if abs(x - y) < 6 else 4), delay=40, disposal=3,
            transparent=3)
    # 4: 30x30 at 100,70 with a local table, disposal none.
    g.frame(100, 70, 30, 30, checker(30, 30, 0, 1, 5), delay=50, disposal=1,
            local=[(20, 200, 20), (200, 20, 200)])
    # 5: 20x20 at 130,0, unspecified disposal, no transparency.
    g.frame(130, 0, 20, 20, filled(20, 20, 5), delay=60, disposal=0)
    return g.bytes()

def simple_frames(g, count, width, height, delay):
    for n in range(count):
        g.frame(0, 0, width, height, rect(width, height, lambda x, y: 1 + ((x // 16 + y // 16 + n) % 6)),
                delay=delay, disposal=1)

def loop3():
    g = GIF(96, 64, BASE[:8])
    g.loop(3)
    simple_frames(g, 3, 96, 64, 25)
    return g.bytes()

def noloop():
    g = GIF(96, 64, BASE[:8])
    simple_frames(g, 3, 96, 64, 25)
    return g.bytes()

def single_frame():
    g = GIF(200, 150, BASE)
    g.comment(b"single frame comment")
    g.frame(0, 0, 200, 150, rect(200, 150, lambda x, y: 0 if (x - 100) ** 2 + (y - 75) ** 2 < 900 else
                                  2 + (x // 25 + y // 25) % 6), delay=0, transparent=0)
    return g.bytes()

def interlaced():
    g = GIF(100, 75, BASE[:8])
    g.loop(0)
    for n in range(3):
        local = [(n * 80, 40, 200 - n * 60), (250, 250, 250), (20, 20, 20), (200, 0, 0)]
        g.frame(0, 0, 100, 75, rect(100, 75, lambda x, y: (x // 10 + y // 5 + n) % 4), delay=15, disposal=1,
                local=local if n != 1 else None, interlace=True)
    return g.bytes()

def large():
    # 1600x1200: 64 colour bands and a moving square on later frames (sub-rectangles).
    palette = [(4 * i, 255 - 4 * i, (97 * i) % 256) for i in range(64)]
    g = GIF(1600, 1200, palette)
    g.loop(0)
    g.frame(0, 0, 1600, 1200, rect(1600, 1200, lambda x, y: ((x + 2 * y) // 50) % 63), delay=20, disposal=1)
    for n, (left, top) in enumerate([(200, 150), (700, 500), (1100, 800)]):
        g.frame(left, top, 300, 300, checker(300, 300, 63, (n * 21) % 63, 60), delay=20, disposal=1)
    return g.bytes()

def gps_xmp(g):
    """An XMP application extension with GPS in the packet, raw, followed by the magic trailer."""
    xmp = (b'<?xpacket begin="\xef\xbb\xbf" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/">'
           b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" '
           b'xmlns:exif="http://ns.adobe.com/exif/1.0/" exif:GPSLatitude="52,31.2N" exif:GPSLongitude="13,24.3E"/>'
           b'</rdf:RDF></x:xmpmeta><?xpacket end="w"?>')
    trailer = bytes([1] + list(range(255, -1, -1))) + b"\0"
    g.application(b"XMP DataXMP", xmp + trailer, raw=True)

def metadata():
    g = GIF(80, 60, BASE[:8])
    g.loop(0)
    g.comment(b"private comment: shot at home")
    gps_xmp(g)
    g.application(b"ICCRGBG1012", bytes(range(256)) * 3)
    simple_frames(g, 2, 80, 60, 30)
    g.comment(b"second comment, after the frames")
    return g.bytes()

def metadata_everywhere(frames):
    """Every kind of GIF metadata: comment, XMP (with GPS), ICC, ImageMagick's IPTC and 8BIM extensions."""
    g = GIF(80, 60, BASE[:8])
    if frames > 1:
        g.loop(0)
    g.comment(b"private comment: shot at home")
    gps_xmp(g)
    g.application(b"ICCRGBG1012", open(os.environ["GIF_ICC"], "rb").read())
    # IPTC-IIM records 2:90 City "Berlin" and 2:120 Caption, as ImageMagick writes them.
    iptc = b"\x1c\x02\x5a\x00\x06Berlin" + b"\x1c\x02\x78\x00\x0fHome, at night."
    g.application(b"MGKIPTC0000", iptc)
    g.application(b"MGK8BIM0000", b"8BIM\x04\x04\x00\x00" + struct.pack(">I", len(iptc)) + iptc)
    simple_frames(g, frames, 80, 60, 30)
    return g.bytes()

def multiple_loops():
    g = GIF(64, 48, BASE[:8])
    g.loop(5)
    g.frame(0, 0, 64, 48, filled(64, 48, 2), delay=10, disposal=1)
    g.loop(7)
    g.frame(0, 0, 64, 48, filled(64, 48, 3), delay=10, disposal=1)
    g.loop(9)
    g.frame(0, 0, 64, 48, filled(64, 48, 4), delay=10, disposal=1)
    return g.bytes()

def frame_outside():
    g = GIF(100, 80, BASE[:8])
    g.loop(0)
    g.frame(0, 0, 100, 80, checker(100, 80, 1, 6, 10), delay=10, disposal=1)
    g.frame(70, 50, 60, 50, filled(60, 50, 2), delay=20, disposal=1)            # partly outside: clipped
    g.frame(200, 200, 20, 20, filled(20, 20, 3), delay=30, disposal=1)          # wholly outside: empty
    g.frame(10, 10, 20, 20, filled(20, 20, 4), delay=40, disposal=1)
    return g.bytes()

def bad_code_size():
    g = GIF(40, 30, BASE[:8])
    g.loop(0)
    g.frame(0, 0, 40, 30, filled(40, 30, 1), delay=10, disposal=1)
    g.frame(0, 0, 40, 30, filled(40, 30, 2), delay=10, disposal=1, code_size=12)
    return g.bytes()

def bench(path, frames=100, width=800, height=600):
    """A 100-frame 800x600 animation for measurements (not committed): a moving ball over bands."""
    palette = [(i, (i * 3) % 256, 255 - i) for i in range(0, 256, 2)] + [(255, 255, 255)] * 0
    g = GIF(width, height, palette[:128])
    g.loop(0)
    g.frame(0, 0, width, height, rect(width, height, lambda x, y: (x // 7 + y // 11) % 120), delay=4, disposal=1)
    for n in range(1, frames):
        cx, cy = 60 + (n * 7) % (width - 120), 60 + (n * 5) % (height - 120)
        g.frame(cx - 60, cy - 60, 120, 120,
                rect(120, 120, lambda x, y: 127 if (x - 60) ** 2 + (y - 60) ** 2 < 3000 else (x + y + n) % 120),
                delay=4, disposal=1)
    open(path, "wb").write(g.bytes())

def walk(d):
    """The structure of a GIF, block by block: each frame's LZW code size and rectangle, and how it ends."""
    p = 13
    if d[10] & 0x80:
        p += 3 << ((d[10] & 7) + 1)
    sizes, rects = [], []
    def skip_blocks(p):
        while p < len(d) and d[p]:
            p += d[p] + 1
        return p + 1
    while p < len(d):
        if d[p] == 0x21:
            p = skip_blocks(p + 2)
        elif d[p] == 0x2C:
            if p + 10 > len(d):
                break
            left, top, width, height, flags = struct.unpack_from("<HHHHB", d, p + 1)
            rects.append("%dx%d+%d+%d" % (width, height, left, top))
            p += 10 + ((3 << ((flags & 7) + 1)) if flags & 0x80 else 0)
            if p >= len(d):
                break
            sizes.append(str(d[p]))
            p = skip_blocks(p + 1)
        elif d[p] == 0x3B:
            return "codesizes=%s end=trailer%s" % (",".join(sizes), "" if len(rects) < 4 else " rects=" + ",".join(rects))
        else:
            return "codesizes=%s end=garbage" % ",".join(sizes)
    return "codesizes=%s end=truncated" % ",".join(sizes)

IMAGES = {
    "delays-loop0.gif": delays_loop0, "disposals.gif": disposals, "loop3.gif": loop3, "noloop.gif": noloop,
    "single-frame.gif": single_frame, "interlaced.gif": interlaced, "large-1600x1200.gif": large,
    "metadata.gif": metadata, "multiple-loops.gif": multiple_loops, "frame-outside.gif": frame_outside,
    "metadata-all-kinds.gif": lambda: metadata_everywhere(2), "metadata-all-kinds-still.gif": lambda: metadata_everywhere(1),
    "bad-lzw-code-size.gif": bad_code_size,
}

if __name__ == "__main__":
    command = sys.argv[1]
    if command == "all":
        out = sys.argv[2]
        for name, make in IMAGES.items():
            open(out + "/" + name, "wb").write(make())
        data = open(out + "/disposals.gif", "rb").read()
        open(out + "/truncated.gif", "wb").write(data[:len(data) * 70 // 100])
    elif command == "walk":
        print(walk(open(sys.argv[2], "rb").read()))
    elif command == "bench":
        bench(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 100)
    else:
        raise SystemExit("unknown command " + command)
PY
)

gt() { "$PYTHON" "$TMP/giftool.py" "$@"; }

make_gif() {
  local out="$OUT_ROOT/gif"
  command -v "$GIFSICLE" >/dev/null || { echo "missing tool: $GIFSICLE (apt: gifsicle)" >&2; exit 2; }
  echo "== gif -> $out"
  printf '%s\n' "$GIFTOOL_PY" >"$TMP/giftool.py"
  rm -rf "$out"
  mkdir -p "$out"
  # metadata-all-kinds*.gif carry a real (synthesised, CC0) ICC profile, so converted outputs can keep it.
  jt icc "$TMP/gif-p3.icc" p3
  GIF_ICC="$TMP/gif-p3.icc" gt all "$out"
  # Files that must fail go with the other deliberately broken inputs.
  mkdir -p "$ROOT_BROKEN"
  mv "$out/truncated.gif" "$ROOT_BROKEN/truncated.gif"
  mv "$out/bad-lzw-code-size.gif" "$ROOT_BROKEN/bad-lzw-code-size.gif"
  verify_gif "$out"
}

# gif_delays FILE -> "d1,d2,..." (centiseconds) and gif_disposals FILE -> "D1,D2,..." via ImageMagick
gif_delays() { "${CONVERT%convert}identify" -format '%T,' "$1" 2>/dev/null; }
gif_disposals() { "${CONVERT%convert}identify" -format '%D,' "$1" 2>/dev/null; }
# gif_loop FILE -> "forever", "N" or "none" via gifsicle
gif_loop() {
  local info; info=$("$GIFSICLE" --info "$1" 2>/dev/null)
  if grep -q 'loop forever' <<<"$info"; then echo forever
  elif grep -q 'loop count' <<<"$info"; then sed -n 's/.*loop count \([0-9]*\).*/\1/p' <<<"$info" | head -1
  else echo none; fi
}
gif_frames() { "$GIFSICLE" --info "$1" 2>/dev/null | sed -n 's/^\* .* \([0-9]*\) images\{0,1\}$/\1/p'; }

verify_gif() {
  local out=$1 f
  echo "-- container and frame properties (identify %T %D, gifsicle --info)"
  expect "delays-loop0.gif delays" "$(gif_delays "$out/delays-loop0.gif")" "0,1,2,10,50,"
  expect "delays-loop0.gif loop" "$(gif_loop "$out/delays-loop0.gif")" forever
  expect "disposals.gif delays" "$(gif_delays "$out/disposals.gif")" "10,20,30,40,50,60,"
  expect "disposals.gif disposals" "$(gif_disposals "$out/disposals.gif")" \
    "None,Undefined,Background,Previous,None,Undefined,"
  expect "disposals.gif local tables" "$("$GIFSICLE" --info "$out/disposals.gif" | grep -c 'local color table')" 2
  expect "disposals.gif transparent frames" "$("$GIFSICLE" --info "$out/disposals.gif" | grep -c 'transparent')" 2
  expect "loop3.gif loop" "$(gif_loop "$out/loop3.gif")" 3
  expect "noloop.gif loop" "$(gif_loop "$out/noloop.gif")" none
  expect "multiple-loops.gif NETSCAPE counts" "$(grep -ao 'NETSCAPE2.0....' "$out/multiple-loops.gif" | wc -l)" 3
  expect "single-frame.gif frames" "$(gif_frames "$out/single-frame.gif")" 1
  expect "interlaced.gif interlaced frames" "$("$GIFSICLE" --info "$out/interlaced.gif" | grep -c ' interlaced$')" 3
  expect "large-1600x1200.gif screen" "$("$GIFSICLE" --info "$out/large-1600x1200.gif" | sed -n 's/.*logical screen //p')" 1600x1200
  expect "large-1600x1200.gif frames" "$(gif_frames "$out/large-1600x1200.gif")" 4
  expect "metadata.gif comments" "$("$GIFSICLE" --info "$out/metadata.gif" | grep -c 'comment')" 2
  expect "metadata.gif XMP/ICC extensions" "$(grep -aoc -e 'XMP DataXMP' -e 'ICCRGBG1012' "$out/metadata.gif")" 2
  expect "frame-outside.gif frames" "$(gif_frames "$out/frame-outside.gif")" 4
  for f in metadata-all-kinds metadata-all-kinds-still; do
    expect "$f.gif extensions" "$(grep -ao -e 'XMP DataXMP' -e 'ICCRGBG1012' -e 'MGKIPTC0000' -e 'MGK8BIM0000' "$out/$f.gif" | wc -l)" 4
  done
  expect "metadata-all-kinds.gif frames" "$(gif_frames "$out/metadata-all-kinds.gif")" 2
  expect "metadata-all-kinds-still.gif frames" "$(gif_frames "$out/metadata-all-kinds-still.gif")" 1
  echo "-- pixels (convert -coalesce: the writer's LZW decodes to the intended frames)"
  for f in delays-loop0 disposals loop3 noloop single-frame interlaced large-1600x1200 metadata frame-outside; do
    expect "$f.gif decodes" "$("$CONVERT" "$out/$f.gif" -coalesce -format '%wx%h ' info: 2>&1 | wc -w)" \
      "$(gif_frames "$out/$f.gif")"
  done
  expect "delays-loop0.gif frame 3 at 25,20" "$("$CONVERT" "$out/delays-loop0.gif[3]" -format \
    '%[fx:int(255*p{25,20}.r)],%[fx:int(255*p{25,20}.g)],%[fx:int(255*p{25,20}.b)]' info:)" "0,255,255"
  expect "interlaced.gif frame 2 at 55,5 (local entry 0)" "$("$CONVERT" "$out/interlaced.gif[2]" -format \
    '%[fx:int(255*p{55,5}.r+0.5)],%[fx:int(255*p{55,5}.g+0.5)],%[fx:int(255*p{55,5}.b+0.5)]' info:)" "160,40,80"
  echo "-- damaged files"
  expect "truncated.gif size (70% of disposals.gif)" "$(stat -c %s "$ROOT_BROKEN/truncated.gif")" \
    "$(($(stat -c %s "$out/disposals.gif") * 70 / 100))"
  expect "truncated.gif walk" "$(gt walk "$ROOT_BROKEN/truncated.gif")" "codesizes=4,4 end=truncated"
  expect "bad-lzw-code-size.gif walk" "$(gt walk "$ROOT_BROKEN/bad-lzw-code-size.gif")" "codesizes=3,12 end=trailer"
  expect "frame-outside.gif walk" "$(gt walk "$out/frame-outside.gif")" \
    "codesizes=3,3,3,3 end=trailer rects=100x80+0+0,60x50+70+50,20x20+200+200,20x20+10+10"

  echo "-- summary"
  (cd "$out" && for f in ./*.gif; do printf '%-26s %8s  %s\n' "${f#./}" "$(stat -c %s "$f")" \
    "$("$GIFSICLE" --sinfo "$f" 2>/dev/null | head -1 | sed 's/^\* [^ ]* //')"; done)
  du -cb "$out"/*.gif | tail -1 | awk '{printf "total: %d bytes\n", $1}'
}

# ---------------------------------------------------------------------------
# Section: broken  ->  TestImages/broken/  (the jpeg and png sections add truncated.* and huge-ihdr.png)
# ---------------------------------------------------------------------------
# Hostile and damaged inputs, each of which must FAIL with a clear error naming the file: scripts/demo
# expects every file in broken/ to fail, and Tests/SharePipeTests/HardeningInputTests.swift checks each
# one's error kind and reason. Made from the committed jpeg/, png/ and gif/ images (run those sections
# first) with python3 and ImageMagick; only the files listed here are replaced.
# Inputs that are damaged but must still be prepared (bad Exif, garbage between segments, a frame
# outside the GIF screen) do not belong here: the tests build those themselves.
BROKEN_FILES=(empty.jpg not-an-image.png no-sof.jpg sos-before-sof.jpg huge-header.jpg lying-header.jpg
              cut-with-eoi.jpg many-segments.jpg many-scans.jpg bad-crc-ihdr.png idat-before-ihdr.png
              plte-after-idat.png no-iend.png gif-no-frames.gif gif-huge-screen.gif)

BROKENTOOL_PY=$(cat <<'PY'
import struct, sys, zlib

def jpeg_segments(data):
    """(marker, bytes) for each segment up to the first SOS; then ('scan', rest)."""
    i, out = 2, []
    while i < len(data):
        assert data[i] == 0xFF, "marker expected at %d" % i
        marker = data[i + 1]
        length = struct.unpack('>H', data[i + 2:i + 4])[0]
        out.append((marker, data[i:i + 2 + length]))
        i += 2 + length
        if marker == 0xDA:
            out.append(('scan', data[i:]))
            break
    return out

def with_size(data, width, height):
    i = data.index(b'\xff\xc0')
    return data[:i + 5] + struct.pack('>HH', height, width) + data[i + 9:]

def png_chunks(data):
    i, out = 8, []
    while i < len(data):
        length = struct.unpack('>I', data[i:i + 4])[0]
        out.append((data[i + 4:i + 8], data[i + 8:i + 8 + length]))
        i += 12 + length
    return out

def png_chunk(kind, body, crc_xor=0):
    return struct.pack('>I', len(body)) + kind + body + struct.pack('>I', (zlib.crc32(kind + body) ^ crc_xor) & 0xFFFFFFFF)

SIGNATURE = b'\x89PNG\r\n\x1a\n'

def main(images, out, progressive_tiny):
    def write(name, data):
        open(out + '/' + name, 'wb').write(data)
    tiny = open(images + '/jpeg/tiny-16x16.jpg', 'rb').read()
    segments = jpeg_segments(tiny)
    write('empty.jpg', b'')
    write('not-an-image.png', b'This is a text file with a .png name; images are recognised by their bytes.\n')
    # Tables only: SOI, APP0, DQT, DHT, EOI (a legal "abbreviated table specification", no image).
    write('no-sof.jpg', b'\xff\xd8' + b''.join(s for m, s in segments if m in (0xE0, 0xDB, 0xC4)) + b'\xff\xd9')
    write('sos-before-sof.jpg', b'\xff\xd8' + b''.join(s for m, s in segments if m != 0xC0))
    # A frame header over the 120 MP default (65000 x 65000 = 4.2 G pixels) on 16 x 16 data.
    write('huge-header.jpg', with_size(tiny, 65000, 65000))
    # A frame header of 4000 x 3000 on the 16 x 16 image's data: the data ends long before the last row.
    write('lying-header.jpg', with_size(tiny, 4000, 3000))
    # orient-1.jpg cut in the middle of its scan data, with EOI appended (as some repair tools do).
    photo = open(images + '/jpeg/orient-1.jpg', 'rb').read()
    scan_start = len(photo) - len(jpeg_segments(photo)[-1][1])
    write('cut-with-eoi.jpg', photo[:(scan_start + len(photo)) // 2] + b'\xff\xd9')
    # 20 000 empty COM segments (80 kB): over the 10 000-segment limit, far under any byte limit.
    write('many-segments.jpg', tiny[:2] + b'\xff\xfe\x00\x02' * 20000 + tiny[2:])
    # A progressive 16 x 16 whose last scan is repeated 600 times (over the 500-scan limit).
    prog = open(progressive_tiny, 'rb').read()
    sos = prog.rindex(b'\xff\xda')
    eoi = len(prog) - 2
    assert prog[eoi:] == b'\xff\xd9'
    write('many-scans.jpg', prog[:eoi] + prog[sos:eoi] * 600 + prog[eoi:])
    gray = png_chunks(open(images + '/png/gray-8.png', 'rb').read())
    assert [k for k, _ in gray] == [b'IHDR', b'IDAT', b'IEND'], gray
    write('bad-crc-ihdr.png', SIGNATURE + b''.join(png_chunk(k, b, 1 if k == b'IHDR' else 0) for k, b in gray))
    write('idat-before-ihdr.png', SIGNATURE + png_chunk(*gray[1]) + png_chunk(*gray[0]) + png_chunk(*gray[2]))
    write('no-iend.png', SIGNATURE + png_chunk(*gray[0]) + png_chunk(*gray[1]))
    palette = png_chunks(open(images + '/png/palette-8.png', 'rb').read())
    plte = [c for c in palette if c[0] == b'PLTE']
    others = [c for c in palette if c[0] not in (b'PLTE', b'IEND')]
    assert len(plte) == 1 and others[-1][0] == b'IDAT'
    write('plte-after-idat.png', SIGNATURE + b''.join(png_chunk(*c) for c in others + plte) + png_chunk(b'IEND', b''))
    # A GIF of a 10 x 10 screen and a global palette, and no image before the trailer.
    write('gif-no-frames.gif', b'GIF89a' + struct.pack('<HHBBB', 10, 10, 0x80, 0, 0) + bytes([0, 0, 0, 255, 255, 255]) + b';')
    # single-frame.gif with a 65535 x 65535 logical screen: over the dimension limit, refused on the header.
    single = open(images + '/gif/single-frame.gif', 'rb').read()
    write('gif-huge-screen.gif', single[:6] + struct.pack('<HH', 65535, 65535) + single[10:])

main(*sys.argv[1:])
PY
)

make_broken() {
  echo "== broken -> ${ROOT_BROKEN#"$ROOT"/}"
  for f in jpeg/tiny-16x16.jpg jpeg/orient-1.jpg png/gray-8.png png/palette-8.png gif/single-frame.gif; do
    [[ -f "$OUT_ROOT/$f" ]] || { echo "missing $OUT_ROOT/$f: run the jpeg, png and gif sections first" >&2; exit 2; }
  done
  mkdir -p "$ROOT_BROKEN"
  (cd "$ROOT_BROKEN" && rm -f "${BROKEN_FILES[@]}")
  printf '%s\n' "$BROKENTOOL_PY" >"$TMP/brokentool.py"
  "$CONVERT" "$OUT_ROOT/jpeg/tiny-16x16.jpg" -strip -interlace JPEG -quality 95 -sampling-factor 1x1 "$TMP/prog-tiny.jpg"
  "$PYTHON" "$TMP/brokentool.py" "$OUT_ROOT" "$ROOT_BROKEN" "$TMP/prog-tiny.jpg"
  verify_broken
}

verify_broken() {
  local f
  for f in "${BROKEN_FILES[@]}"; do
    [[ -f "$ROOT_BROKEN/$f" ]] || fail "broken/$f was not made"
  done
  expect "broken/empty.jpg size" "$(stat -c %s "$ROOT_BROKEN/empty.jpg")" 0
  expect "broken/many-segments.jpg size" "$(stat -c %s "$ROOT_BROKEN/many-segments.jpg")" \
    $(( $(stat -c %s "$OUT_ROOT/jpeg/tiny-16x16.jpg") + 80000 ))
  expect "broken/many-scans.jpg scans" "$("$PYTHON" -c "import sys; print(open(sys.argv[1],'rb').read().count(b'\xff\xda'))" "$ROOT_BROKEN/many-scans.jpg")" \
    $(( $("$PYTHON" -c "import sys; print(open(sys.argv[1],'rb').read().count(b'\xff\xda'))" "$TMP/prog-tiny.jpg") + 600 ))
  expect "broken/huge-header.jpg frame header" "$("$PYTHON" -c "import struct, sys; d = open(sys.argv[1], 'rb').read(); i = d.index(b'\xff\xc0'); print('%dx%d' % struct.unpack('>HH', d[i + 7:i + 9] + d[i + 5:i + 7]))" "$ROOT_BROKEN/huge-header.jpg")" 65000x65000
  ls -l "$ROOT_BROKEN" | tail -n +2 | awk '{printf "%-24s %8s\n", $9, $5}'
}

# ---------------------------------------------------------------------------
# Section: lenient  ->  TestImages/lenient/
# ---------------------------------------------------------------------------
# Odd files that browsers display and SharePipe must prepare as a browser shows them (and two things a
# browser does not do, which SharePipe must not do either). GIFs by the gif section's writer, PNGs by the
# png section's writer; the JPEG is jpeg/orient-1.jpg with one bogus segment added (run the jpeg section
# first). The HP/Microsoft sRGB profile is the one ImageMagick 6 carries in its built-in "wizard:" image;
# it is checked byte for byte (size, MD5, and libpng's own Adler-32/CRC-32 pair for it).
HP_SRGB_MD5=1d3fda2edb4a89ab60a23c5f7c7d81dd

LENIENTTOOL_PY=$(cat <<'PY'
import struct, sys, zlib
sys.path.insert(0, sys.argv[1])
from giftool import GIF, BASE, rect, filled, checker
from pngtool import png

def no_color_table():
    # 48x32, no global table and no local tables. Frame 0: columns 0-15 index 0, 16-31 index 1 (the
    # transparent index), 32-47 index 3. Frame 1: index 0 over 16x16 at 16,0. Browsers: opaque black
    # for every index, the transparent index transparent.
    g = GIF(48, 32)
    g.loop(0)
    g.frame(0, 0, 48, 32, rect(48, 32, lambda x, y: 0 if x < 16 else (1 if x < 32 else 3)), delay=10,
            disposal=1, transparent=1)
    g.frame(16, 0, 16, 16, filled(16, 16, 0), delay=20, disposal=1)
    return g.bytes()

def appended_gif():
    # A 2-frame GIF without its trailer, then a whole 3-frame GIF: after frame 1 comes the byte 'G'.
    first = GIF(40, 30, BASE[:8])
    first.loop(0)
    first.frame(0, 0, 40, 30, filled(40, 30, 2), delay=10, disposal=1)    # red
    first.frame(0, 0, 40, 30, filled(40, 30, 3), delay=20, disposal=1)    # green
    second = GIF(40, 30, BASE[:8])
    second.loop(0)
    for index in (4, 5, 6):                                                # blue, yellow, cyan
        second.frame(0, 0, 40, 30, filled(40, 30, index), delay=30, disposal=1)
    return first.bytes()[:-1] + second.bytes()

def transparent_edges():
    # 80x60. Frame 0 covers the screen: an 8-px border of the transparent index 0 around a checkerboard
    # of grey/light grey. Frames 1, 2: 20x20 at 30,20, yellow then green (disposal none).
    g = GIF(80, 60, BASE)
    g.loop(0)
    inner = lambda x, y: 0 if x < 8 or y < 8 or x >= 72 or y >= 52 else (8 if (x // 8 + y // 8) % 2 else 12)
    g.frame(0, 0, 80, 60, rect(80, 60, inner), delay=20, disposal=1, transparent=0)
    g.frame(30, 20, 20, 20, filled(20, 20, 5), delay=20, disposal=1)
    g.frame(30, 20, 20, 20, filled(20, 20, 3), delay=20, disposal=1)
    return g.bytes()

def zero_width_frame():
    # 40x30: red; a frame 0 pixels wide at 10,0 (30 rows, no pixels; 20 cs); a blue 10x10 at 0,0.
    g = GIF(40, 30, BASE[:8])
    g.loop(0)
    g.frame(0, 0, 40, 30, filled(40, 30, 2), delay=10, disposal=1)
    g.frame(10, 0, 0, 30, [[] for _ in range(30)], delay=20, disposal=1)
    g.frame(0, 0, 10, 10, filled(10, 10, 4), delay=30, disposal=1)
    return g.bytes()

def quadrants(width, height):
    # red TL, green TR, blue BR, grey BL (as the orientation images)
    def pixel(x, y):
        right, bottom = x >= width // 2, y >= height // 2
        if not bottom:
            return (0, 255, 0) if right else (255, 0, 0)
        return (0, 0, 255) if right else (128, 128, 128)
    return pixel

def main(tools, out, icc_path, jpeg_path):
    write = lambda name, data: open(out + "/" + name, "wb").write(data)
    write("gif-no-color-table.gif", no_color_table())
    write("gif-appended-gif.gif", appended_gif())
    write("gif-transparent-edges.gif", transparent_edges())
    write("gif-zero-width-frame.gif", zero_width_frame())
    icc = open(icc_path, "rb").read()
    png(out + "/png-hp-srgb-1200.png", 1200, 1200, 2, 8, quadrants(1200, 1200),
        colour=[(b"iCCP", b"sRGB IEC61966-2.1\0\0" + zlib.compress(icc, 9))])
    # Stored 48x64 with red TL / green TR / blue BR / grey BL; exiftool adds XMP tiff:Orientation 6 only.
    png(out + "/png-xmp-orientation.png", 48, 64, 2, 8, quadrants(48, 64))
    # orient-1.jpg with a COM segment whose length field is 0 (below its own 2 bytes) after the first segment.
    jpeg = open(jpeg_path, "rb").read()
    first = 4 + struct.unpack(">H", jpeg[4:6])[0]
    write("jpeg-zero-length-com.jpg", jpeg[:first] + b"\xff\xfe\x00\x00" + jpeg[first:])

main(*sys.argv[1:])
PY
)

make_lenient() {
  local out="$OUT_ROOT/lenient" t="$TMP/lenient"
  [[ -f "$OUT_ROOT/jpeg/orient-1.jpg" ]] || { echo "missing $OUT_ROOT/jpeg/orient-1.jpg: run the jpeg section first" >&2; exit 2; }
  command -v "$GIFSICLE" >/dev/null || { echo "missing tool: $GIFSICLE (apt: gifsicle)" >&2; exit 2; }
  echo "== lenient -> ${out#"$ROOT"/}"
  rm -rf "$out"
  mkdir -p "$out" "$t"
  printf '%s\n' "$GIFTOOL_PY" >"$TMP/giftool.py"
  write_pngtool
  printf '%s\n' "$LENIENTTOOL_PY" >"$t/lenienttool.py"
  "$CONVERT" wizard: "$t/hp-srgb.icc"
  expect "HP/Microsoft sRGB profile (ImageMagick's wizard:) MD5" "$(md5sum <"$t/hp-srgb.icc" | cut -c1-32)" "$HP_SRGB_MD5"
  expect "HP/Microsoft sRGB profile: libpng's Adler-32, CRC-32, size" \
    "$("$PYTHON" -c "import sys, zlib; p = open(sys.argv[1], 'rb').read(); print('%08x %08x %d' % (zlib.adler32(p), zlib.crc32(p), len(p)))" "$t/hp-srgb.icc")" \
    "f784f3fb 182ea552 3144"
  "$PYTHON" "$t/lenienttool.py" "$TMP" "$out" "$t/hp-srgb.icc" "$OUT_ROOT/jpeg/orient-1.jpg"
  et -n -XMP-tiff:Orientation=6 "$out/png-xmp-orientation.png"
  verify_lenient "$out"
}

verify_lenient() {
  local out=$1 f
  echo "-- GIF structure (gifsicle --info, the script's walker)"
  expect "gif-no-color-table.gif tables" "$("$GIFSICLE" --info "$out/gif-no-color-table.gif" | grep -c 'color table')" 0
  expect "gif-no-color-table.gif frames" "$(gif_frames "$out/gif-no-color-table.gif")" 2
  expect "gif-appended-gif.gif walk" "$(gt walk "$out/gif-appended-gif.gif")" "codesizes=3,3 end=garbage"
  expect "gif-appended-gif.gif GIF headers" "$(grep -ao GIF89a "$out/gif-appended-gif.gif" | wc -l)" 2
  expect "gif-transparent-edges.gif walk" "$(gt walk "$out/gif-transparent-edges.gif")" "codesizes=4,4,4 end=trailer"
  expect "gif-zero-width-frame.gif walk" "$(gt walk "$out/gif-zero-width-frame.gif")" "codesizes=3,3,3 end=trailer"
  echo "-- pixels (convert -coalesce)"
  expect "gif-transparent-edges.gif frame 0 corner alpha, centre" "$("$CONVERT" "$out/gif-transparent-edges.gif[0]" -format \
    '%[fx:int(255*p{0,0}.a)] %[fx:int(255*p{40,30}.r+0.5)]' info:)" "0 200"
  expect "gif-transparent-edges.gif frames decode" "$("$CONVERT" "$out/gif-transparent-edges.gif" -coalesce -format '%wx%h ' info: | wc -w)" 3
  echo "-- PNG and JPEG"
  expect "png-hp-srgb-1200.png chunks" "$(pt chunks "$out/png-hp-srgb-1200.png")" "IHDR,iCCP,IDAT,IEND"
  expect "png-hp-srgb-1200.png IHDR" "$(pt ihdr "$out/png-hp-srgb-1200.png")" "1200x1200 ct2 d8 i0"
  expect "png-hp-srgb-1200.png profile" "$("$EXIFTOOL" -s3 -ICC_Profile:ProfileDescription -ICC_Profile:ProfileCreator "$out/png-hp-srgb-1200.png" | tr '\n' ' ')" \
    "sRGB IEC61966-2.1 Hewlett-Packard "
  expect "png-hp-srgb-1200.png corners" "$(rgb_at "$out/png-hp-srgb-1200.png" 10 10) $(rgb_at "$out/png-hp-srgb-1200.png" 1190 10) $(rgb_at "$out/png-hp-srgb-1200.png" 1190 1190) $(rgb_at "$out/png-hp-srgb-1200.png" 10 1190)" \
    "255,0,0 0,255,0 0,0,255 128,128,128"
  expect "png-xmp-orientation.png XMP/Exif orientation" "$("$EXIFTOOL" -n -s3 -XMP-tiff:Orientation "$out/png-xmp-orientation.png"),$("$EXIFTOOL" -n -s3 -EXIF:Orientation "$out/png-xmp-orientation.png")" "6,"
  expect "png-xmp-orientation.png chunks" "$(pt chunks "$out/png-xmp-orientation.png")" "IHDR,iTXt,IDAT,IEND"
  expect "jpeg-zero-length-com.jpg segment" "$("$PYTHON" -c "import sys; d = open(sys.argv[1], 'rb').read(); print(d.count(b'\xff\xfe\x00\x00'))" "$out/jpeg-zero-length-com.jpg")" 1
  expect "jpeg-zero-length-com.jpg decodes as orient-1.jpg" "$("$CONVERT" "$out/jpeg-zero-length-com.jpg" rgb:- 2>/dev/null | md5sum | cut -c1-12)" \
    "$("$CONVERT" "$OUT_ROOT/jpeg/orient-1.jpg" rgb:- | md5sum | cut -c1-12)"
  echo "-- summary"
  (cd "$out" && for f in ./*; do printf '%-28s %8s\n' "${f#./}" "$(stat -c %s "$f")"; done)
}

# ---------------------------------------------------------------------------
# progressive: multi-scan JPEGs from cjpeg scan scripts, for the compact coefficient store
# ---------------------------------------------------------------------------
# Small pictures at odd sizes in every sampling, with and without successive approximation, restart
# intervals, arithmetic coding and a script that never refines (libjpeg smooths the blocks). The store must
# decode each exactly as libjpeg's own arrays do (Tests/SharePipeTests/ProgressiveStoreTests.swift).
make_progressive() {
  local out="$OUT_ROOT/progressive" t="$TMP/progressive"
  echo "== progressive -> ${out#"$ROOT"/}"
  for tool in cjpeg jpegtran; do command -v "$tool" >/dev/null || { echo "missing tool: $tool (libjpeg-turbo-progs)" >&2; exit 2; }; done
  rm -rf "$out" "$t"; mkdir -p "$out" "$t"
  printf '%s\n' '0,1,2: 0-0, 0, 1;' '0: 1-5, 0, 2;' '2: 1-63, 0, 1;' '1: 1-63, 0, 1;' '0: 6-63, 0, 2;' \
    '0: 1-63, 2, 1;' '0,1,2: 0-0, 1, 0;' '2: 1-63, 1, 0;' '1: 1-63, 1, 0;' '0: 1-63, 1, 0;' >"$t/sa.scans"
  printf '%s\n' '0,1,2: 0-0, 0, 0;' '0: 1-2, 0, 0;' '0: 3-9, 0, 0;' '0: 10-63, 0, 0;' '1: 1-63, 0, 0;' \
    '2: 1-63, 0, 0;' >"$t/spectral.scans"
  printf '%s\n' '0,1,2: 0-0, 0, 1;' '0: 1-5, 0, 2;' '0: 6-63, 0, 2;' >"$t/incomplete.scans"
  printf '%s\n' '0: 0-0, 0, 0;' '0: 1-9, 0, 1;' >"$t/gray-incomplete.scans"
  photo 203 157 47 "$t/odd.miff"
  "$CONVERT" "$t/odd.miff" -strip "ppm:$t/odd.ppm"
  photo 64 48 48 "$t/small.miff"
  "$CONVERT" "$t/small.miff" -strip "ppm:$t/small.ppm"
  local s
  for s in 1x1 2x1 2x2; do
    cjpeg -quality 90 -sample "$s" -scans "$t/sa.scans" -outfile "$out/sa-$s-203x157.jpg" "$t/odd.ppm"
  done
  cjpeg -quality 75 -sample 2x2 -scans "$t/spectral.scans" -outfile "$out/spectral-420-203x157.jpg" "$t/odd.ppm"
  cjpeg -quality 85 -sample 2x2 -progressive -restart 1 -outfile "$out/restart-420-203x157.jpg" "$t/odd.ppm"
  cjpeg -quality 85 -sample 2x2 -progressive -arithmetic -outfile "$out/arithmetic-420-64x48.jpg" "$t/small.ppm"
  cjpeg -quality 80 -sample 2x2 -scans "$t/incomplete.scans" -outfile "$out/incomplete-420-203x157.jpg" "$t/odd.ppm"
  cjpeg -quality 90 -grayscale -scans "$t/gray-incomplete.scans" -outfile "$out/incomplete-gray-64x48.jpg" "$t/small.ppm"
  cjpeg -quality 90 -grayscale -progressive -outfile "$out/gray-203x157.jpg" "$t/odd.ppm"
  cjpeg -quality 95 -sample 1x1 -outfile "$t/base.jpg" "$t/small.ppm"
  jpegtran -progressive -outfile "$out/jpegtran-444-64x48.jpg" "$t/base.jpg"
  verify_progressive
}

verify_progressive() {
  local f
  for f in "$OUT_ROOT"/progressive/*.jpg; do
    if [[ $f == */arithmetic-* ]]; then   # SOF10: progressive, arithmetic-coded
      expect "$(basename "$f") SOF10" "$("$PYTHON" -c "import sys; print(open(sys.argv[1],'rb').read().count(b'\xff\xca'))" "$f")" 1
    else
      expect "$(basename "$f") SOF" "$(jinfo "$f" sof)" progressive
    fi
  done
  ls -l "$OUT_ROOT/progressive" | tail -n +2 | awk '{printf "%-32s %8s\n", $9, $5}'
}

# ---------------------------------------------------------------------------
# Section: heif  ->  TestImages/heif/  (HEIC and AVIF through heif-enc; libheif-examples 1.15)
# ---------------------------------------------------------------------------
# heif-enc 1.15 writes no irot/imir and no nclx-only colr for PNG input: scripts/heif-boxes.py adds them.
# Its AVIF encoder (aom 3.6) aborts on PNG input at 4:2:0 or 4:4:4 (an assertion in write_color_config),
# so AVIFs are made from a JPEG (4:2:0) or at 4:2:2 (alpha).
HEIF_ENC=${HEIF_ENC:-heif-enc}
HEIF_CONVERT=${HEIF_CONVERT:-heif-convert}

# heif_rgb FILE X Y -> "R,G,B" of the displayed (transformed) image as libheif converts it
heif_rgb() {
  "$HEIF_CONVERT" "$1" "$TMP/heif-check.png" >/dev/null
  rgb_at "$TMP/heif-check.png" "$2" "$3"
}
heif_size() { "$HEIF_CONVERT" "$1" "$TMP/heif-check.png" >/dev/null; "$CONVERT" "$TMP/heif-check.png" -format '%wx%h' info:; }

# corners_png W H OUT — grey with 100×100 red TL, green TR, blue BR squares (the orientation picture)
corners_png() {
  local w=$1 h=$2
  "$CONVERT" -size "${w}x${h}" xc:'rgb(128,128,128)' -fill 'rgb(255,0,0)' -draw "rectangle 0,0 99,99" \
    -fill 'rgb(0,255,0)' -draw "rectangle $((w - 100)),0 $((w - 1)),99" \
    -fill 'rgb(0,0,255)' -draw "rectangle $((w - 100)),$((h - 100)) $((w - 1)),$((h - 1))" -strip "PNG24:$3"
}

make_heif() {
  local out="$OUT_ROOT/heif" box="$ROOT/scripts/heif-boxes.py"
  for tool in "$HEIF_ENC" "$HEIF_CONVERT"; do
    command -v "$tool" >/dev/null || { echo "missing tool: $tool (apt: libheif-examples)" >&2; exit 2; }
  done
  echo "== heif -> $out"
  rm -rf "$out"
  mkdir -p "$out" "$ROOT_BROKEN"
  corners_png 600 400 "$TMP/corners.png"

  # gps-irot.heic: pixels stored turned a quarter clockwise (400×600), irot 1 (a quarter anticlockwise)
  # restores the 600×400 picture. The Exif item says Orientation 6 as well: applying it again would turn
  # the picture a second time. Camera metadata (GPS) in Exif, privacy metadata in XMP.
  "$CONVERT" "$TMP/corners.png" -rotate 90 -quality 95 -sampling-factor 1x1 "${JPEG_BASE[@]}" "$TMP/stored.jpg"
  et "${CAMERA_TAGS[@]}" -Orientation=6 "-XMP-dc:Description=secret description (XMP)" \
    -XMP-exif:GPSLatitude=52.5200 -XMP-exif:GPSLongitude=13.4050 -XMP-photoshop:City=Berlin "$TMP/stored.jpg"
  "$HEIF_ENC" -q 90 "$TMP/stored.jpg" -o "$TMP/stored.heic" >/dev/null
  "$PYTHON" "$box" "$TMP/stored.heic" "$out/gps-irot.heic" --irot 1

  # mirror.heic: the picture stored upside down (flipped top to bottom), imir mode 0 flips it back (ISO/IEC
  # 23008-12:2022: mode 0 exchanges top and bottom, 1 left and right; libheif does the same).
  # mirror-rotate.heic: stored transposed (400×600); irot 3 (three quarters anticlockwise) and then imir 1
  # (left-right) restore the picture: the two transforms in ipma order. No metadata in either.
  "$CONVERT" "$TMP/corners.png" -flip "PNG24:$TMP/flip.png"
  "$HEIF_ENC" -q 90 "$TMP/flip.png" -o "$TMP/flip.heic" >/dev/null
  "$PYTHON" "$box" "$TMP/flip.heic" "$out/mirror.heic" --imir 0
  "$CONVERT" "$TMP/corners.png" -transpose "PNG24:$TMP/transposed.png"
  "$HEIF_ENC" -q 90 "$TMP/transposed.png" -o "$TMP/transposed.heic" >/dev/null
  "$PYTHON" "$box" "$TMP/transposed.heic" "$out/mirror-rotate.heic" --irot 3 --imir 1

  # corners-444.heic: 4:4:4 chroma, no metadata, no colr box.
  "$HEIF_ENC" -q 90 -p chroma=444 "$TMP/corners.png" -o "$out/corners-444.heic" >/dev/null

  # corners.avif: AV1, 4:2:0 (from a JPEG), no metadata.
  "$CONVERT" "$TMP/corners.png" -quality 95 -sampling-factor 1x1 "${JPEG_BASE[@]}" "$TMP/corners.jpg"
  "$HEIF_ENC" -A -q 80 "$TMP/corners.jpg" -o "$out/corners.avif" >/dev/null

  # alpha.avif: 300×200 at 4:2:2 with an alpha item: opaque red left half (top), 50 % blue right half,
  # fully transparent bottom-left quadrant.
  "$CONVERT" -size 300x200 xc:'rgba(255,0,0,1)' \( -size 150x200 xc:'rgba(0,0,255,0.5)' \) -geometry +150+0 \
    -compose Copy -composite \( -size 150x100 xc:'rgba(0,0,0,0)' \) -geometry +0+100 -compose Copy -composite \
    -strip "PNG32:$TMP/alpha.png"
  "$HEIF_ENC" -A -q 90 -p chroma=422 "$TMP/alpha.png" -o "$out/alpha.avif" >/dev/null

  # p3-nclx.heic: 128×128, four 64×64 patches given as Display P3 values (colour only as nclx: P3
  # primaries 12, sRGB transfer 13, BT.601 matrix 6, full range), 4:4:4 at quality 95.
  "$CONVERT" -size 128x128 xc:'rgb(230,230,230)' -fill 'rgb(200,60,40)' -draw 'rectangle 0,0 63,63' \
    -fill 'rgb(40,180,90)' -draw 'rectangle 64,0 127,63' -fill 'rgb(60,80,200)' -draw 'rectangle 0,64 63,127' \
    -strip "PNG24:$TMP/p3.png"
  "$HEIF_ENC" -q 95 -p chroma=444 "$TMP/p3.png" -o "$TMP/p3.heic" >/dev/null
  "$PYTHON" "$box" "$TMP/p3.heic" "$out/p3-nclx.heic" --nclx 12,13,6,1

  # ten-bit.heic: 256×64 horizontal gradient black → white from a 16-bit PNG, coded at 10 bits.
  "$CONVERT" -size 64x256 gradient:white-black -rotate 90 -depth 16 -strip "PNG48:$TMP/gradient16.png"
  "$HEIF_ENC" -q 95 -b 10 -p chroma=444 "$TMP/gradient16.png" -o "$out/ten-bit.heic" >/dev/null

  # Broken: the first 60 % of gps-irot.heic; and a copy of corners-444.heic whose ispe claims 60000×60000.
  head -c $(( $(stat -c %s "$out/gps-irot.heic") * 6 / 10 )) "$out/gps-irot.heic" >"$ROOT_BROKEN/truncated.heic"
  "$PYTHON" - "$out/corners-444.heic" "$ROOT_BROKEN/huge-ispe.heic" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
at = data.index(b"ispe") + 8  # after type and version/flags
data[at:at + 8] = struct.pack(">II", 60000, 60000)
open(sys.argv[2], "wb").write(data)
PY
  verify_heif "$out"
}

verify_heif() {
  local out=$1
  echo "-- displayed size and corners as libheif decodes them (heif-convert)"
  expect "gps-irot.heic displayed" "$(heif_size "$out/gps-irot.heic")" 600x400
  color_is "$(heif_rgb "$out/gps-irot.heic" 50 50)" 255,0,0 12 || fail "gps-irot.heic top-left is not red"
  color_is "$(heif_rgb "$out/gps-irot.heic" 550 350)" 0,0,255 12 || fail "gps-irot.heic bottom-right is not blue"
  expect "gps-irot.heic Exif orientation" "$("$EXIFTOOL" -n -s3 -Orientation "$out/gps-irot.heic")" 6
  expect "gps-irot.heic GPS" "$("$EXIFTOOL" -n -s3 -GPSLatitude "$out/gps-irot.heic")" 52.52
  expect "gps-irot.heic XMP city" "$("$EXIFTOOL" -s3 -XMP-photoshop:City "$out/gps-irot.heic")" Berlin
  local f
  for f in mirror.heic mirror-rotate.heic; do
    expect "$f displayed" "$(heif_size "$out/$f")" 600x400
    color_is "$(heif_rgb "$out/$f" 50 50)" 255,0,0 12 || fail "$f top-left is not red"
    color_is "$(heif_rgb "$out/$f" 550 50)" 0,255,0 12 || fail "$f top-right is not green"
  done
  expect "corners-444.heic displayed" "$(heif_size "$out/corners-444.heic")" 600x400
  expect "corners.avif displayed" "$(heif_size "$out/corners.avif")" 600x400
  color_is "$(heif_rgb "$out/corners.avif" 550 50)" 0,255,0 12 || fail "corners.avif top-right is not green"
  expect "alpha.avif has alpha" "$(heif-info "$out/alpha.avif" | grep -c 'alpha channel: yes')" 1
  expect "p3-nclx.heic colour profile" "$(heif-info "$out/p3-nclx.heic" | sed -n 's/.*color profile: //p' | head -1)" nclx
  expect "ten-bit.heic bit depth" "$("$EXIFTOOL" -s3 -BitDepthLuma "$out/ten-bit.heic")" 10
  ls -l "$out" | tail -n +2 | awk '{printf "%-24s %8s\n", $9, $5}'
}

# ---------------------------------------------------------------------------
# Section: heifgrid  ->  TestImages/heif-grid/  (grid HEICs for the tile route, HEIFTileDecoding)
# ---------------------------------------------------------------------------
# The corner picture as a phone stores a photo: a `grid` primary item of 256×256 HEVC tiles (4:2:0, heif-enc
# -q 90), the right and bottom tiles cut at the output size (600×400 from 3×2 tiles, 400×600 from 2×3),
# assembled by bench/make-grid-heic.py; scripts/heif-boxes.py adds the transforms to the grid item. Every
# file shows the upright 600×400 corner picture.

# grid_heic PICTURE COLUMNS ROWS OUT [HEIF-ENC OPTION...] — PICTURE cut into 256×256 tiles (padded with
# black), each coded by heif-enc -q 90 (with the options), a grid of them (GRID_OPTIONS: make-grid-heic.py's).
grid_heic() {
  local picture=$1 columns=$2 rows=$3 out=$4 size f
  shift 4
  size=$("$CONVERT" "$picture" -format '%w %h' info:)
  rm -f "$TMP"/gtile-*
  "$CONVERT" "$picture" +repage -gravity NorthWest -background black -extent "$((columns * 256))x$((rows * 256))" \
    -crop 256x256 +repage -strip "PNG24:$TMP/gtile-%02d.png"
  for f in "$TMP"/gtile-*.png; do "$HEIF_ENC" -q 90 "$@" "$f" -o "${f%.png}.heic" >/dev/null; done
  "$PYTHON" "$ROOT/bench/make-grid-heic.py" "$out" ${size% *} ${size#* } "$columns" "$rows" "$TMP"/gtile-*.heic \
    ${GRID_OPTIONS:-}
}

make_heifgrid() {
  local out="$OUT_ROOT/heif-grid" box="$ROOT/scripts/heif-boxes.py" f
  for tool in "$HEIF_ENC" "$HEIF_CONVERT"; do
    command -v "$tool" >/dev/null || { echo "missing tool: $tool (apt: libheif-examples)" >&2; exit 2; }
  done
  echo "== heifgrid -> $out"
  rm -rf "$out" && mkdir -p "$out"
  corners_png 600 400 "$TMP/corners.png"
  # grid.heic: no transform.
  grid_heic "$TMP/corners.png" 3 2 "$out/grid.heic"
  # grid-irot1/2/3.heic: stored turned a quarter clockwise / half / three quarters clockwise; irot 1/2/3
  # (anticlockwise quarter turns) shows the picture upright.
  "$CONVERT" "$TMP/corners.png" -rotate 90 "PNG24:$TMP/r90.png"
  grid_heic "$TMP/r90.png" 2 3 "$TMP/g.heic" && "$PYTHON" "$box" "$TMP/g.heic" "$out/grid-irot1.heic" --irot 1
  "$CONVERT" "$TMP/corners.png" -rotate 180 "PNG24:$TMP/r180.png"
  grid_heic "$TMP/r180.png" 3 2 "$TMP/g.heic" && "$PYTHON" "$box" "$TMP/g.heic" "$out/grid-irot2.heic" --irot 2
  "$CONVERT" "$TMP/corners.png" -rotate 270 "PNG24:$TMP/r270.png"
  grid_heic "$TMP/r270.png" 2 3 "$TMP/g.heic" && "$PYTHON" "$box" "$TMP/g.heic" "$out/grid-irot3.heic" --irot 3
  # grid-imir0.heic: stored upside down, imir 0 (libheif 1.15: exchanges top and bottom).
  # grid-imir1.heic: stored mirrored left to right, imir 1.
  # grid-mirror-rotate.heic: stored transposed (400×600), irot 3 and then imir 1, as mirror-rotate.heic.
  "$CONVERT" "$TMP/corners.png" -flip "PNG24:$TMP/flip.png"
  grid_heic "$TMP/flip.png" 3 2 "$TMP/g.heic" && "$PYTHON" "$box" "$TMP/g.heic" "$out/grid-imir0.heic" --imir 0
  "$CONVERT" "$TMP/corners.png" -flop "PNG24:$TMP/flop.png"
  grid_heic "$TMP/flop.png" 3 2 "$TMP/g.heic" && "$PYTHON" "$box" "$TMP/g.heic" "$out/grid-imir1.heic" --imir 1
  "$CONVERT" "$TMP/corners.png" -transpose "PNG24:$TMP/transposed.png"
  grid_heic "$TMP/transposed.png" 2 3 "$TMP/g.heic" \
    && "$PYTHON" "$box" "$TMP/g.heic" "$out/grid-mirror-rotate.heic" --irot 3 --imir 1
  # grid-709-limited.heic: the tiles' bitstreams say BT.709 limited range in their VUI (x265 options; heif-enc
  # 1.15 ignores its own --matrix_coefficients, converts with BT.601 full range and writes a colr nclx that
  # make-grid-heic.py does not copy). libheif converts each tile with its VUI, so the colours come out shifted
  # (a 200,50,50 patch shows as 227,58,39): the file tests that the VUI is honoured as libheif honours it.
  grid_heic "$TMP/corners.png" 3 2 "$out/grid-709-limited.heic" -p x265:colormatrix=bt709 -p x265:range=limited
  expect "grid-709-limited.heic displayed" "$(heif_size "$out/grid-709-limited.heic")" 600x400
  # grid-iphone-irot1.heic: as grid-irot1.heic, laid out as an iPhone does (one shared hvcC, the grid
  # descriptor in idat with iloc version 1).
  GRID_OPTIONS=--iphone grid_heic "$TMP/r90.png" 2 3 "$TMP/g.heic" \
    && "$PYTHON" "$box" "$TMP/g.heic" "$out/grid-iphone-irot1.heic" --irot 1
  # grid-444.heic and grid-422.heic: tiles coded with 4:4:4 and 4:2:2 chroma.
  grid_heic "$TMP/corners.png" 3 2 "$out/grid-444.heic" -p chroma=444
  grid_heic "$TMP/corners.png" 3 2 "$out/grid-422.heic" -p chroma=422
  echo "-- displayed size and corners as libheif decodes them (heif-convert)"
  for f in grid grid-444 grid-422 grid-iphone-irot1 grid-irot1 grid-irot2 grid-irot3 grid-imir0 grid-imir1 grid-mirror-rotate; do
    expect "$f.heic displayed" "$(heif_size "$out/$f.heic")" 600x400
    color_is "$(heif_rgb "$out/$f.heic" 50 50)" 255,0,0 12 || fail "$f.heic top-left is not red"
    color_is "$(heif_rgb "$out/$f.heic" 550 50)" 0,255,0 12 || fail "$f.heic top-right is not green"
    color_is "$(heif_rgb "$out/$f.heic" 550 350)" 0,0,255 12 || fail "$f.heic bottom-right is not blue"
  done
  ls -l "$out" | tail -n +2 | awk '{printf "%-24s %8s\n", $9, $5}'
}

# ---------------------------------------------------------------------------
# apng: animated PNGs written chunk by chunk by scripts/make-apng.py (numpy + zlib)
# ---------------------------------------------------------------------------
APNG_BROKEN_ANIMATIONS=(bad-sequence.png frame-outside.png missing-fdat.png)

make_apng() {
  local out="$OUT_ROOT/apng"
  echo "== apng -> ${out#"$ROOT"/}"
  rm -rf "$out" && mkdir -p "$out/broken-animation"
  # Exif orientation 6 + GPS (eXIf), a tEXt comment and an XMP packet (iTXt), written by exiftool into a
  # still PNG whose metadata chunks make-apng.py copies into exif-gps-orient6.png.
  "$CONVERT" -size 4x4 xc:gray -strip "PNG24:$TMP/apng-metadata.png"
  "$EXIFTOOL" -q -overwrite_original -Orientation#=6 -Make=SharePipeCam \
    -GPSLatitude=52.52 -GPSLatitudeRef=N -GPSLongitude=13.405 -GPSLongitudeRef=E \
    -PNG:Comment="private comment" -XMP:Description=secret "$TMP/apng-metadata.png"
  "$PYTHON" "$ROOT/scripts/make-apng.py" main "$out" "$TMP/apng-metadata.png"
  "$PYTHON" "$ROOT/scripts/make-apng.py" broken "$out/broken-animation"
  local f
  for f in dispose-blend:4 hidden-default:2 palette:3 exif-gps-orient6:2; do
    expect "apng/${f%%:*}.png frames (ffprobe)" \
      "$(ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$out/${f%%:*}.png" 2>/dev/null || echo ?)" "${f##*:}"
  done
  expect "apng/exif-gps-orient6.png Orientation" "$("$EXIFTOOL" -s3 -n -Orientation "$out/exif-gps-orient6.png")" 6
  expect "apng/exif-gps-orient6.png GPS" "$("$EXIFTOOL" -s3 -n -GPSLatitude "$out/exif-gps-orient6.png")" 52.52
  for f in "${APNG_BROKEN_ANIMATIONS[@]}"; do [[ -f "$out/broken-animation/$f" ]] || fail "apng/broken-animation/$f was not made"; done
  ls -l "$out" | tail -n +2 | awk '{printf "%-24s %8s\n", $9, $5}'
}

# ---------------------------------------------------------------------------
# Section: webp  ->  TestImages/webp/  (cwebp, img2webp, webpmux from the `webp` package)
# ---------------------------------------------------------------------------
# webp_rgb_at FILE X Y -> "R,G,B" of the stored pixels (dwebp decodes; no orientation applied)
webp_rgb_at() {
  dwebp -quiet -pam "$1" -o "$TMP/webp-probe.pam"
  "$CONVERT" "$TMP/webp-probe.pam" -format \
    "%[fx:int(255*p{$2,$3}.r+0.5)],%[fx:int(255*p{$2,$3}.g+0.5)],%[fx:int(255*p{$2,$3}.b+0.5)]" info:
}

make_webp() {
  local out="$OUT_ROOT/webp" t="$TMP/webp" f
  mkdir -p "$out" "$t"
  echo "== webp -> ${out#"$ROOT"/}"
  for tool in cwebp dwebp img2webp gif2webp webpmux webpinfo; do
    command -v "$tool" >/dev/null || { echo "missing tool: $tool (apt: webp)" >&2; exit 2; }
  done

  # --- 1. gps-orient6.webp: lossy, stored 240x320, Exif Orientation 6, displayed 320x240 with 32px markers
  #        red TL / green TR / blue BR on grey; camera metadata (Exif GPS) and XMP, copied by cwebp from a JPEG.
  "$CONVERT" -size 320x240 'xc:rgb(128,128,128)' \
    -fill 'rgb(255,0,0)' -draw 'rectangle 0,0 31,31' \
    -fill 'rgb(0,255,0)' -draw 'rectangle 288,0 319,31' \
    -fill 'rgb(0,0,255)' -draw 'rectangle 288,208 319,239' \
    -rotate -90 +repage -strip -type TrueColor "${Q95_444[@]}" "$t/orient6.jpg"
  et "${CAMERA_TAGS[@]}" -Orientation=6 "-XMP-dc:Description=secret description (XMP)" \
    -XMP-exif:GPSLatitude=52.5200 -XMP-exif:GPSLongitude=13.4050 "$t/orient6.jpg"
  cwebp -quiet -q 90 -sharp_yuv -metadata all "$t/orient6.jpg" -o "$out/gps-orient6.webp"

  # --- 2. icc.webp: lossy 200x150 photo-like with the synthesised Display P3 profile of jpeg/icc-p3.jpg.
  "$CONVERT" "$OUT_ROOT/jpeg/icc-p3.jpg" -resize 200x150! "${Q95_444[@]}" "$t/icc.jpg"
  cwebp -quiet -q 80 -metadata icc "$t/icc.jpg" -o "$out/icc.webp"

  # --- 3. lossless-alpha.webp: VP8L 200x150 grey with 20px red TL / green TR / blue BR markers, the
  #        bottom-left quarter (100x75) fully transparent and a 40x40 half-transparent yellow square at 100,40.
  "$CONVERT" -size 200x150 'xc:rgb(128,128,128)' -alpha set \
    -fill 'rgb(255,0,0)' -draw 'rectangle 0,0 19,19' \
    -fill 'rgb(0,255,0)' -draw 'rectangle 180,0 199,19' \
    -fill 'rgb(0,0,255)' -draw 'rectangle 180,130 199,149' \
    \( -size 100x75 xc:none \) -geometry +0+75 -compose copy -composite \
    \( -size 40x40 'xc:rgba(255,255,0,0.5)' \) -geometry +100+40 -compose copy -composite \
    -depth 8 -strip "PNG32:$t/alpha.png"
  cwebp -quiet -lossless -exact "$t/alpha.png" -o "$out/lossless-alpha.webp"

  # --- 4. animated.webp: 160x120, 4 frames with 16px red TL / green TR / blue BR markers on grey and a
  #        40x40 centre square white, black, yellow, cyan; durations 100, 250, 40, 500 ms; loop count 3
  #        (plays 3 times); Exif with GPS (Orientation 1) added with webpmux.
  local colours=("255,255,255" "0,0,0" "255,255,0" "0,255,255") i
  for i in 0 1 2 3; do
    "$CONVERT" -size 160x120 'xc:rgb(128,128,128)' \
      -fill 'rgb(255,0,0)' -draw 'rectangle 0,0 15,15' \
      -fill 'rgb(0,255,0)' -draw 'rectangle 144,0 159,15' \
      -fill 'rgb(0,0,255)' -draw 'rectangle 144,104 159,119' \
      -fill "rgb(${colours[i]})" -draw 'rectangle 60,40 99,79' \
      -depth 8 -strip "PNG24:$t/frame$i.png"
  done
  img2webp -loop 3 -lossless -d 100 "$t/frame0.png" -d 250 "$t/frame1.png" -lossy -q 90 -d 40 "$t/frame2.png" \
    -lossless -d 500 "$t/frame3.png" -o "$t/animated.webp" >/dev/null 2>&1
  cp "$t/orient6.jpg" "$t/exif-source.jpg"
  et -n -Orientation=1 "$t/exif-source.jpg"
  "$EXIFTOOL" -b -EXIF "$t/exif-source.jpg" >"$t/exif.bin"
  webpmux -set exif "$t/exif.bin" "$t/animated.webp" -o "$out/animated.webp" >/dev/null 2>&1

  # --- 4b. disposals-mixed.webp / disposals-lossy.webp: gif/disposals.gif through gif2webp (-mixed: each frame
  #        lossy or lossless, whichever is smaller; -lossy: every frame lossy, alpha in ALPH chunks): sub-rectangle
  #        frames with and without alpha, blend and no-blend, a dispose to background. WebPAnimationSource's
  #        canvases are compared with libwebp's WebPAnimDecoder on these.
  gif2webp -quiet -mixed "$OUT_ROOT/gif/disposals.gif" -o "$out/disposals-mixed.webp"
  gif2webp -quiet -lossy "$OUT_ROOT/gif/disposals.gif" -o "$out/disposals-lossy.webp"

  # --- 5. broken inputs: truncated.webp (first 60 % of gps-orient6.webp), canvas-bomb.webp (animated.webp with
  #        its VP8X canvas rewritten to 16000x16000: 256 MP, refused before libwebp allocates two canvases).
  head -c "$(( $(stat -c %s "$out/gps-orient6.webp") * 60 / 100 ))" "$out/gps-orient6.webp" >"$ROOT_BROKEN/truncated.webp"
  "$PYTHON" - "$out/animated.webp" "$ROOT_BROKEN/canvas-bomb.webp" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], 'rb').read())
assert data[12:16] == b'VP8X'
data[24:27] = struct.pack('<I', 16000 - 1)[:3]
data[27:30] = struct.pack('<I', 16000 - 1)[:3]
open(sys.argv[2], 'wb').write(data)
PY

  # --- checks
  expect "gps-orient6.webp Exif GPS" "$("$EXIFTOOL" -n -s3 -EXIF:GPSLatitude -EXIF:GPSLongitude "$out/gps-orient6.webp" | tr '\n' ' ')" "52.52 13.405 "
  expect "gps-orient6.webp XMP GPS" "$("$EXIFTOOL" -n -s3 -XMP:GPSLatitude "$out/gps-orient6.webp")" "52.52"
  expect "gps-orient6.webp orientation" "$("$EXIFTOOL" -n -s3 -Orientation "$out/gps-orient6.webp")" "6"
  expect "gps-orient6.webp stored size" "$(webpinfo "$out/gps-orient6.webp" | sed -n 's/^  Canvas size \(.*\)$/\1/p')" "240 x 320"
  for f in "16 303 255,0,0" "16 16 0,255,0" "223 16 0,0,255" "223 303 128,128,128"; do
    set -- $f
    color_is "$(webp_rgb_at "$out/gps-orient6.webp" "$1" "$2")" "$3" 12 || fail "gps-orient6.webp stored pixel $1,$2 is not $3"
  done
  expect "icc.webp ICC" "$("$EXIFTOOL" -s3 -ICC_Profile:ProfileDescription "$out/icc.webp")" "$("$EXIFTOOL" -s3 -ICC_Profile:ProfileDescription "$OUT_ROOT/jpeg/icc-p3.jpg")"
  expect "lossless-alpha.webp format" "$(webpinfo "$out/lossless-alpha.webp" | grep -c 'Format: Lossless')" "1"
  dwebp -quiet -pam "$out/lossless-alpha.webp" -o "$t/a.pam"
  expect "lossless-alpha.webp alpha at 50,100 / 120,60" "$("$CONVERT" "$t/a.pam" -format '%[fx:int(255*p{50,100}.a+0.5)] %[fx:int(255*p{120,60}.a+0.5)]' info:)" "0 128"
  expect "animated.webp frames" "$(webpmux -info "$out/animated.webp" | sed -n 's/^Number of frames: //p')" "4"
  expect "animated.webp loop" "$(webpmux -info "$out/animated.webp" | sed -n 's/.*Loop Count *: //p')" "3"
  expect "animated.webp durations" "$(webpmux -info "$out/animated.webp" | awk '/^ *[0-9]+:/ {print $7}' | tr '\n' ' ')" "100 250 40 500 "
  expect "animated.webp Exif GPS" "$("$EXIFTOOL" -n -s3 -EXIF:GPSLatitude "$out/animated.webp")" "52.52"
  expect "disposals-mixed.webp disposes" "$(webpmux -info "$out/disposals-mixed.webp" | awk '/^ *[0-9]+:/ {print $8}' | tr '\n' ' ')" "none none background none none none "
  expect "disposals-lossy.webp frames" "$(webpmux -info "$out/disposals-lossy.webp" | sed -n 's/^Number of frames: //p')" "6"
  ls -l "$out" | tail -n +2 | awk '{printf "  %-24s %8s\n", $9, $5}'
}

# ---------------------------------------------------------------------------
# jpegcolor: a CMYK JPEG with an embedded (synthetic, CC0) CMYK profile and ImageMagick's profile-based
# conversion of it as the expected colours; a 12-bit and a lossless JPEG that must be refused as unsupported.
# ---------------------------------------------------------------------------
make_jpegcolor() {
  local out="$OUT_ROOT/jpeg-color"
  echo "== jpegcolor -> ${out#"$ROOT"/}"
  [[ -f "$OUT_ROOT/jpeg/tiny-16x16.jpg" ]] || { echo "run the jpeg section first" >&2; exit 2; }
  command -v ffmpeg >/dev/null || { echo "missing tool: ffmpeg" >&2; exit 2; }
  rm -rf "$out" && mkdir -p "$out"
  "$PYTHON" "$ROOT/scripts/make-cmyk-profile.py" cmyk "$TMP/test-cmyk.icc"
  "$PYTHON" "$ROOT/scripts/make-cmyk-profile.py" srgb "$TMP/test-srgb.icc"
  # 64×64, a 4×4 grid of 16×16 CMYK patches (row by row; see TestImages/README.md).
  "$PYTHON" - "$TMP/patches.cmyk" <<'PY'
import sys
patches = [(0,0,0,0),(255,0,0,0),(0,255,0,0),(0,0,255,0),(0,0,0,255),(255,255,0,0),(0,255,255,0),(255,0,255,0),
           (128,0,0,0),(0,128,0,0),(0,0,128,0),(0,0,0,128),(64,128,192,32),(200,100,50,20),(30,60,90,120),(255,255,255,255)]
rows = bytearray()
for y in range(64):
    for x in range(64):
        rows += bytes(patches[(y // 16) * 4 + x // 16])
open(sys.argv[1], "wb").write(rows)
PY
  "$CONVERT" -size 64x64 -depth 8 "cmyk:$TMP/patches.cmyk" -profile "$TMP/test-cmyk.icc" \
    -quality 100 -sampling-factor 1x1 "${JPEG_BASE[@]}" "$out/cmyk-icc.jpg"
  "$CONVERT" "$out/cmyk-icc.jpg" -profile "$TMP/test-srgb.icc" -strip "PNG24:$out/cmyk-icc-imagemagick.png"
  # Refused as unsupported, so they live in broken/ (the demo and HardeningInputTests expect them to fail).
  # 12-bit: tiny-16x16.jpg's SOF0 turned into SOF1 with precision 12 (the header is what libjpeg refuses).
  mkdir -p "$ROOT_BROKEN"
  "$PYTHON" - "$OUT_ROOT/jpeg/tiny-16x16.jpg" "$ROOT_BROKEN/sof1-12bit.jpg" <<'PY'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
i = d.index(b"\xff\xc0")
d[i + 1], d[i + 4] = 0xC1, 12
open(sys.argv[2], "wb").write(d)
PY
  ffmpeg -v error -y -i "$OUT_ROOT/jpeg/tiny-16x16.jpg" -c:v ljpeg -pix_fmt bgr24 -strict -1 "$ROOT_BROKEN/sof3-lossless.jpg"
  expect "jpeg-color/cmyk-icc.jpg colorspace" "$("$CONVERT" "$out/cmyk-icc.jpg" -format '%[colorspace]' info:)" CMYK
  expect "jpeg-color/cmyk-icc.jpg profile" "$("$EXIFTOOL" -s3 -ICC_Profile:ColorSpaceData "$out/cmyk-icc.jpg")" "CMYK"
  expect "jpeg-color/cmyk-icc-imagemagick.png paper" "$("$CONVERT" "$out/cmyk-icc-imagemagick.png" -format '%[pixel:p{8,8}]' info:)" "srgb(245,242,234)"
  expect "broken/sof3-lossless.jpg SOF3" "$("$PYTHON" -c "import sys; print(b'\xff\xc3' in open(sys.argv[1],'rb').read())" "$ROOT_BROKEN/sof3-lossless.jpg")" True
  ls -l "$out" | tail -n +2 | awk '{printf "%-28s %8s\n", $9, $5}'
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
