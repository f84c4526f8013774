#!/usr/bin/env python3
"""make-layered-avif.py — write a layered AVIF (AV1 spatial layers in one item, `a1lx`/`lsel`/`a1op`) for tests.

    make-layered-avif.py OUT.avif LAYER_0.ppm LAYER_1.ppm [...] [--half-base] [--lsel N|none]
                         [--a1op N] [--no-a1lx] [--quality Q]

avifenc 0.11 cannot write layers (libavif 1.0's progressive encoding can). This script does what libavif 1.0's
aom codec does for a layered image: libaom (libaom.so.3, through ctypes; it comes with libavif) encodes one
frame per layer into a single temporal unit, each with its spatial layer id (`AOME_SET_SPATIAL_LAYER_ID`, two
to four layers declared with `AOME_SET_NUMBER_SPATIAL_LAYERS`): the first a key frame, the others inter
frames predicting only from the last frame. Each LAYER is a binary PPM (P6) of the full image size; the
layers may show different pictures, so a test can tell which layer a decoder shows. `--half-base` codes the
first layer at half the width and height (`AOME_SET_SCALEMODE` 1:2), as a progressive AVIF's thumbnail layer
is.

The item holds the layers' OBUs one after another (libaom's temporal delimiter left in the first, as libavif
leaves it) and is described by `ispe` (the size of the layer shown, as in Apple's multilayer examples of the
AV1-AVIF conformance files), `pixi`, `av1C` (from the sequence header), `colr` nclx
(BT.709 primaries, sRGB transfer, BT.601 matrix, full range: what avifenc writes) and
- `a1lx` (unless `--no-a1lx`): the byte size of every layer but the last (never essential);
- `lsel` (essential): the layer to show, `--lsel none` for no box (libavif 0.11 then treats an `a1lx` image
  as progressive), default 0xFFFF (all layers, progressive);
- `a1op` (essential, `--a1op N`): the AV1 operating point to decode (libaom declares one operating point per
  layer: operating point 0 is every layer, the last is the base layer alone).
The pixels are 8-bit 4:4:4 (AV1 High profile), YCbCr by BT.601 full range; `--quality` is libaom's cq-level
(0..63, default 4). Standard library only; libaom's ABI is checked by aom_codec_enc_init_ver.
"""
import argparse
import ctypes
import ctypes.util
import struct

# libaom 3.x (aom_encoder.h, aomcx.h, aom_image.h), as Debian 12's libaom3 3.6 lays them out.
AOM_ENCODER_ABI_VERSION = 29
AOM_USAGE_REALTIME = 1
AOM_IMG_FMT_I444 = 0x106
AOM_Q = 3
AOM_CODEC_CX_FRAME_PKT = 0
AOME_SET_SCALEMODE = 11
AOME_SET_SPATIAL_LAYER_ID = 12
AOME_SET_CPUUSED = 13
AOME_SET_CQ_LEVEL = 25
AOME_SET_NUMBER_SPATIAL_LAYERS = 27
AV1E_SET_COLOR_RANGE = 52
AOME_ONETWO = 6
# The first layer is a key frame; a later layer is an inter frame predicting from the last frame only (the
# flags libavif 1.0 sets on layers after the first).
AOM_EFLAG_FORCE_KF = 1
LATER_LAYER_FLAGS = (1 << 19) | (1 << 20) | (1 << 21) | (1 << 22) | (1 << 24) | (1 << 25)
# Offsets in aom_codec_enc_cfg_t (904 bytes) and aom_codec_cx_pkt_t.
CFG_SIZE = 904
CFG_FIELDS = {"g_usage": 0, "g_threads": 4, "g_profile": 8, "g_w": 12, "g_h": 16, "g_limit": 20,
              "g_lag_in_frames": 56, "rc_end_usage": 96, "rc_min_quantizer": 140, "rc_max_quantizer": 144}


def read_ppm(path):
    """(width, height, RGB bytes) of a binary PPM with maxval 255."""
    data = open(path, "rb").read()
    fields, position = [], 0
    while len(fields) < 4:
        while data[position:position + 1].isspace():
            position += 1
        if data[position:position + 1] == b"#":
            position = data.index(b"\n", position) + 1
            continue
        start = position
        while not data[position:position + 1].isspace():
            position += 1
        fields.append(data[start:position])
    if fields[0] != b"P6" or int(fields[3]) != 255:
        raise SystemExit("%s: not a binary 8-bit PPM (P6, maxval 255; ImageMagick: -depth 8)" % path)
    width, height = int(fields[1]), int(fields[2])
    pixels = data[position + 1:position + 1 + width * height * 3]
    if len(pixels) != width * height * 3:
        raise SystemExit("%s: truncated" % path)
    return width, height, pixels


def ycbcr444(rgb):
    """Planar Y, Cb, Cr (BT.601, full range) of packed RGB bytes."""
    clamp = lambda v: max(0, min(255, int(round(v))))
    planes = (bytearray(), bytearray(), bytearray())
    for i in range(0, len(rgb), 3):
        r, g, b = rgb[i], rgb[i + 1], rgb[i + 2]
        planes[0].append(clamp(0.299 * r + 0.587 * g + 0.114 * b))
        planes[1].append(clamp(128 - 0.168736 * r - 0.331264 * g + 0.5 * b))
        planes[2].append(clamp(128 + 0.5 * r - 0.418688 * g - 0.081312 * b))
    return bytes(planes[0] + planes[1] + planes[2])


class Encoder:
    """libaom's AV1 encoder set up for one layered still image."""

    def __init__(self, width, height, layers, quality):
        name = ctypes.util.find_library("aom") or "libaom.so.3"
        self.aom = aom = ctypes.CDLL(name)
        aom.aom_codec_av1_cx.restype = ctypes.c_void_p
        aom.aom_codec_error.restype = ctypes.c_char_p
        aom.aom_codec_error_detail.restype = ctypes.c_char_p
        aom.aom_codec_get_cx_data.restype = ctypes.c_void_p
        aom.aom_img_wrap.restype = ctypes.c_void_p
        iface = ctypes.c_void_p(aom.aom_codec_av1_cx())
        cfg = ctypes.create_string_buffer(CFG_SIZE)
        # Real-time usage: libaom 3.6's good-quality usage codes the second layer as a key frame of its own
        # (nothing layered about it), its real-time usage as an inter frame on the first, as libavif 1.0's
        # progressive files and the AV1-AVIF conformance files have it.
        self.check(aom.aom_codec_enc_config_default(iface, cfg, AOM_USAGE_REALTIME), "config_default")
        # The default configuration is 320×240 at the usage asked for: seeing it proves the offsets above.
        defaults = (self.field(cfg, "g_usage"), self.field(cfg, "g_w"), self.field(cfg, "g_h"))
        if defaults != (AOM_USAGE_REALTIME, 320, 240):
            raise SystemExit("libaom's aom_codec_enc_cfg_t is not laid out as this script expects")
        for name, value in (("g_w", width), ("g_h", height), ("g_profile", 1), ("g_threads", 1),
                            ("g_limit", layers), ("g_lag_in_frames", 0), ("rc_end_usage", AOM_Q),
                            ("rc_min_quantizer", 0), ("rc_max_quantizer", 63)):
            struct.pack_into("<I", cfg, CFG_FIELDS[name], value)
        self.context = ctypes.create_string_buffer(256)  # aom_codec_ctx_t is 56 bytes
        self.check(aom.aom_codec_enc_init_ver(self.context, iface, cfg, 0, AOM_ENCODER_ABI_VERSION), "init")
        self.control(AOME_SET_CPUUSED, 6)
        self.control(AOME_SET_CQ_LEVEL, quality)
        self.control(AV1E_SET_COLOR_RANGE, 1)
        self.control(AOME_SET_NUMBER_SPATIAL_LAYERS, layers)
        # libaom 3.6 fixes the sequence header's operating points when the encoder is made: setting the
        # configuration again redoes them with the layer count (one operating point per layer).
        self.check(aom.aom_codec_enc_config_set(self.context, cfg), "config_set")
        self.width, self.height = width, height

    @staticmethod
    def field(cfg, name):
        return struct.unpack_from("<I", cfg, CFG_FIELDS[name])[0]

    def check(self, result, what):
        if result != 0:
            detail = self.aom.aom_codec_error_detail(self.context) if hasattr(self, "context") else None
            raise SystemExit("libaom %s failed (%d)%s" % (what, result, ": %s" % detail.decode() if detail else ""))

    def control(self, control_id, value):
        self.check(self.aom.aom_codec_control(self.context, control_id, value), "control %d" % control_id)

    def encode(self, layer, planes, half):
        """The OBUs libaom writes for one layer (planes: Y, Cb, Cr of the full size)."""
        self.control(AOME_SET_SPATIAL_LAYER_ID, layer)
        if half:
            mode = (ctypes.c_int * 2)(AOME_ONETWO, AOME_ONETWO)
            self.control(AOME_SET_SCALEMODE, ctypes.byref(mode))
        image = ctypes.create_string_buffer(256)  # aom_image_t is 168 bytes
        pixels = ctypes.create_string_buffer(planes, len(planes))
        if not self.aom.aom_img_wrap(image, AOM_IMG_FMT_I444, self.width, self.height, 1, pixels):
            raise SystemExit("aom_img_wrap failed")
        flags = LATER_LAYER_FLAGS if layer > 0 else AOM_EFLAG_FORCE_KF
        self.check(self.aom.aom_codec_encode(self.context, image, ctypes.c_int64(0), ctypes.c_ulong(1),
                                             ctypes.c_long(flags)), "encode")
        return self.packets()

    def finish(self):
        self.check(self.aom.aom_codec_encode(self.context, None, ctypes.c_int64(0), ctypes.c_ulong(0),
                                             ctypes.c_long(0)), "flush")
        rest = self.packets()
        self.aom.aom_codec_destroy(self.context)
        return rest

    def packets(self):
        out = b""
        iterator = ctypes.c_void_p(0)
        while True:
            packet = self.aom.aom_codec_get_cx_data(self.context, ctypes.byref(iterator))
            if not packet:
                return out
            kind = ctypes.c_int.from_address(packet).value
            if kind == AOM_CODEC_CX_FRAME_PKT:
                buffer = ctypes.c_void_p.from_address(packet + 8).value
                size = ctypes.c_size_t.from_address(packet + 16).value
                out += ctypes.string_at(buffer, size)


class Bits:
    def __init__(self, data):
        self.data, self.position = data, 0

    def read(self, count):
        value = 0
        for _ in range(count):
            byte = self.data[self.position >> 3]
            value = (value << 1) | ((byte >> (7 - (self.position & 7))) & 1)
            self.position += 1
        return value


def leb128(data, position):
    value, shift = 0, 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, position


def obus(data):
    """(type, header bytes, payload) of each OBU (all with obu_has_size_field, as libaom writes them)."""
    position = 0
    while position < len(data):
        header = data[position]
        kind, extension = (header >> 3) & 15, (header >> 2) & 1
        if not (header >> 1) & 1:
            raise SystemExit("OBU without a size field")
        size, start = leb128(data, position + 1 + extension)
        yield kind, data[position:start], data[start:start + size]
        position = start + size


def av1c(stream):
    """The av1C box for the stream's sequence header (AV1-ISOBMFF 2.3), the header as its configOBUs."""
    for kind, header, payload in obus(stream):
        if kind != 1:
            continue
        bits = Bits(payload)
        profile, still, reduced = bits.read(3), bits.read(1), bits.read(1)
        if reduced:
            level, tier = bits.read(5), 0
        else:
            if bits.read(1):
                raise SystemExit("timing info in the sequence header is not handled")
            initial_delay = bits.read(1)
            count = bits.read(5) + 1
            level = tier = None
            for _ in range(count):
                bits.read(12)
                point_level = bits.read(5)
                point_tier = bits.read(1) if point_level > 7 else 0
                if initial_delay and bits.read(1):
                    bits.read(4)
                if level is None:
                    level, tier = point_level, point_tier
        # 4:4:4 8-bit colour, so no subsampling and no high bit depth.
        body = struct.pack(">BBBB", 0x81, (profile << 5) | level, tier << 7, 0)
        return struct.pack(">I4s", 8 + len(body) + len(header) + len(payload), b"av1C") + body + header + payload
    raise SystemExit("no sequence header in the stream")


def box(kind, payload):
    return struct.pack(">I4s", 8 + len(payload), kind) + payload


def full_box(kind, version, flags, payload):
    return box(kind, struct.pack(">I", (version << 24) | flags) + payload)


def container(width, height, layers, a1lx, lsel, a1op):
    """The AVIF file: one av01 item holding `layers` (bytes per layer) with its properties; `ispe` is the
    size of the layer shown (width, height)."""
    data = b"".join(layers)
    properties = [  # (box, essential)
        (full_box(b"ispe", 0, 0, struct.pack(">II", width, height)), False),
        (full_box(b"pixi", 0, 0, bytes([3, 8, 8, 8])), False),
        (av1c(data), True),
        (box(b"colr", b"nclx" + struct.pack(">HHHB", 1, 13, 6, 0x80)), False),
    ]
    if a1lx:
        sizes = [len(layer) for layer in layers[:-1]] + [0] * (4 - len(layers))
        large = any(size > 0xFFFF for size in sizes)
        properties.append((box(b"a1lx", bytes([1 if large else 0]) +
                               b"".join(struct.pack(">I" if large else ">H", s) for s in sizes)), False))
    if lsel is not None:
        properties.append((box(b"lsel", struct.pack(">H", lsel)), True))
    if a1op is not None:
        properties.append((box(b"a1op", bytes([a1op])), True))
    ipco = box(b"ipco", b"".join(p for p, _ in properties))
    associations = bytes((0x80 if essential else 0) | (i + 1) for i, (_, essential) in enumerate(properties))
    ipma = full_box(b"ipma", 0, 0, struct.pack(">IHB", 1, 1, len(properties)) + associations)
    ftyp = box(b"ftyp", b"avif" + struct.pack(">I", 0) + b"avifmif1miafMA1A")
    hdlr = full_box(b"hdlr", 0, 0, struct.pack(">I4sIII", 0, b"pict", 0, 0, 0) + b"\0")
    pitm = full_box(b"pitm", 0, 0, struct.pack(">H", 1))
    infe = full_box(b"infe", 2, 0, struct.pack(">HH4s", 1, 0, b"av01") + b"\0")
    iinf = full_box(b"iinf", 0, 0, struct.pack(">H", 1) + infe)

    def meta(mdat_data_offset):
        # One extent per layer, as libavif 1.0 writes a layered item.
        extents, offset = b"", mdat_data_offset
        for layer in layers:
            extents += struct.pack(">II", offset, len(layer))
            offset += len(layer)
        iloc = full_box(b"iloc", 0, 0, struct.pack(">BBHHHH", 0x44, 0, 1, 1, 0, len(layers)) + extents)
        return full_box(b"meta", 0, 0, hdlr + pitm + iloc + iinf + box(b"iprp", ipco + ipma))

    first = meta(0)
    return ftyp + meta(len(ftyp) + len(first) + 8) + box(b"mdat", data)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("layers", nargs="+", help="a PPM per layer (2 to 4), all the full size")
    parser.add_argument("--half-base", action="store_true", help="code the first layer at half size")
    parser.add_argument("--lsel", default="65535", help="layer to show, or 'none' for no lsel box")
    parser.add_argument("--a1op", type=int, help="AV1 operating point to decode")
    parser.add_argument("--no-a1lx", action="store_true", help="write no a1lx box")
    parser.add_argument("--quality", type=int, default=4, help="libaom cq-level (0..63)")
    args = parser.parse_args()
    if not 2 <= len(args.layers) <= 4:
        raise SystemExit("2 to 4 layers")
    pictures = [read_ppm(path) for path in args.layers]
    width, height = pictures[0][:2]
    if any(p[:2] != (width, height) for p in pictures):
        raise SystemExit("every layer's PPM must be the full size")
    encoder = Encoder(width, height, len(pictures), args.quality)
    coded = [encoder.encode(i, ycbcr444(p[2]), args.half_base and i == 0) for i, p in enumerate(pictures)]
    coded[-1] += encoder.finish()
    if any(not layer for layer in coded):
        raise SystemExit("libaom wrote no frame for a layer")
    lsel = None if args.lsel == "none" else int(args.lsel, 0)
    # The layer shown: lsel's, else the highest of the operating point (libaom's operating point k holds
    # layers 0 to count - 1 - k), else the last; ispe gives its size, as Apple's multilayer examples do.
    if lsel is not None and lsel != 0xFFFF:
        shown = lsel
    elif args.a1op is not None:
        shown = max(len(coded) - 1 - args.a1op, 0)
    else:
        shown = len(coded) - 1
    size = ((width + 1) // 2, (height + 1) // 2) if args.half_base and shown == 0 else (width, height)
    open(args.out, "wb").write(container(size[0], size[1], coded, not args.no_a1lx, lsel, args.a1op))
    print("%s: %s" % (args.out, " + ".join("%d B" % len(layer) for layer in coded)))


if __name__ == "__main__":
    main()
