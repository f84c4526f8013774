#!/usr/bin/env python3
"""make-grid-heic.py — assemble a grid HEIC, as an iPhone writes one, from HEIC tiles made by heif-enc.

    make-grid-heic.py OUT.heic WIDTH HEIGHT COLUMNS ROWS TILE_0.heic ... [--exif TIFF_FILE] [--iphone] [--shared-data]

libheif 1.15's heif-enc writes one coded image per file; an iPhone stores a 4032×3024 photo as 8×6 coded
tiles of 512×512 and a `grid` item that places them (ISO/IEC 23008-12, 6.6.2.3). Each TILE is a heif-enc
output (row-major order) whose item 1 is the tile; its hvcC and coded data are copied into the new file.
The grid is the primary item; the tiles are hidden; an optional Exif item (the TIFF structure, e.g. from
`exiftool -b -EXIF`) describes the grid. With --iphone the layout is closer to an iPhone's: identical hvcC
boxes are stored once and shared by the tiles, and the grid descriptor is stored in an `idat` box (iloc version 1,
construction method 1) instead of `mdat`. With --shared-data every tile's `iloc` entry points at the first
tile's coded data, stored once (as a hostile file does to declare a huge grid in a few kilobytes; implies
--iphone). A TILE may also be an AVIF (avifenc or heif-enc -A output): its av1C is copied and the result is an
AVIF grid of `av01` tiles. Standard library only.
"""
import struct
import sys


def box(kind, payload):
    return struct.pack(">I4s", 8 + len(payload), kind) + payload


def full_box(kind, version, flags, payload):
    return box(kind, struct.pack(">I", (version << 24) | flags) + payload)


def children(data, start, end):
    position = start
    while position + 8 <= end:
        size, kind = struct.unpack(">I4s", data[position:position + 8])
        if size < 8:
            raise SystemExit("unsupported box size at %d" % position)
        yield kind, position + 8, position + size
        position += size


def child(data, start, end, kind):
    for found, body, stop in children(data, start, end):
        if found == kind:
            return body, stop
    raise SystemExit("no %r box" % kind)


def read_tile(path):
    """(hvcC or av1C box bytes, coded data, (width, height), item type) of item 1 of a heif-enc or avifenc
    output."""
    data = open(path, "rb").read()
    meta, meta_end = child(data, 0, len(data), b"meta")
    meta += 4
    iprp, iprp_end = child(data, meta, meta_end, b"iprp")
    ipco, ipco_end = child(data, iprp, iprp_end, b"ipco")
    configs = [kind for kind, _, _ in children(data, ipco, ipco_end) if kind in (b"hvcC", b"av1C")]
    if not configs:
        raise SystemExit("%s has no hvcC or av1C" % path)
    item_type = b"hvc1" if configs[0] == b"hvcC" else b"av01"
    hvcc, hvcc_end = child(data, ipco, ipco_end, configs[0])
    ispe, _ = child(data, ipco, ipco_end, b"ispe")
    size = struct.unpack(">II", data[ispe + 4:ispe + 12])
    iloc, _ = child(data, meta, meta_end, b"iloc")
    version = data[iloc]
    sizes = data[iloc + 4], data[iloc + 5]
    offset_size, length_size, base_size = sizes[0] >> 4, sizes[0] & 15, sizes[1] >> 4
    index_size = (sizes[1] & 15) if version in (1, 2) else 0
    position = iloc + 6
    count = struct.unpack(">H", data[position:position + 2])[0]
    position += 2
    for _ in range(count):
        item = struct.unpack(">H", data[position:position + 2])[0]
        position += 2 + (2 if version in (1, 2) else 0) + 2
        base = int.from_bytes(data[position:position + base_size], "big")
        position += base_size
        extents = struct.unpack(">H", data[position:position + 2])[0]
        position += 2
        pieces = []
        for _ in range(extents):
            position += index_size
            offset = int.from_bytes(data[position:position + offset_size], "big")
            position += offset_size
            length = int.from_bytes(data[position:position + length_size], "big")
            position += length_size
            pieces.append(data[base + offset:base + offset + length])
        if item == 1:
            return data[hvcc - 8:hvcc_end], b"".join(pieces), size, item_type
    raise SystemExit("%s has no item 1" % path)


def main():
    args = sys.argv[1:]
    exif = None
    iphone = "--iphone" in args
    if iphone:
        args.remove("--iphone")
    shared = "--shared-data" in args
    if shared:
        args.remove("--shared-data")
        iphone = True
    if "--exif" in args:
        at = args.index("--exif")
        exif = open(args[at + 1], "rb").read()
        del args[at:at + 2]
    out, width, height, columns, rows = args[0], int(args[1]), int(args[2]), int(args[3]), int(args[4])
    tiles = [read_tile(p) for p in args[5:]]
    if len(tiles) != columns * rows:
        raise SystemExit("need %d tiles, got %d" % (columns * rows, len(tiles)))

    grid_id = len(tiles) + 1
    exif_id = grid_id + 1
    if len({kind for _, _, _, kind in tiles}) != 1:
        raise SystemExit("tiles differ in codec")
    tile_type = tiles[0][3]
    items = [(i + 1, tile_type, tiles[i][1], 1) for i in range(len(tiles))]
    grid_data = struct.pack(">BBBBHH", 0, 0, rows - 1, columns - 1, width, height)
    items.append((grid_id, b"grid", grid_data, 0))
    if exif is not None:
        items.append((exif_id, b"Exif", struct.pack(">I", 0) + exif, 0))

    # Properties: one hvcC per tile, the tiles' ispe (all tiles have one size), the grid's ispe.
    if len({size for _, _, size, _ in tiles}) != 1:
        raise SystemExit("tiles differ in size")
    tile_width, tile_height = tiles[0][2]
    if tile_width * columns < width or tile_height * rows < height:
        raise SystemExit("tiles do not cover the grid")
    properties = []
    hvcc_index = []
    for hvcc, _, _, _ in tiles:
        if iphone and hvcc in properties:
            hvcc_index.append(properties.index(hvcc) + 1)
        else:
            properties.append(hvcc)
            hvcc_index.append(len(properties))
    properties.append(full_box(b"ispe", 0, 0, struct.pack(">II", tile_width, tile_height)))
    properties.append(full_box(b"ispe", 0, 0, struct.pack(">II", width, height)))
    tile_ispe, grid_ispe = len(properties) - 1, len(properties)
    ipco = box(b"ipco", b"".join(properties))
    entries = b""
    for i in range(len(tiles)):
        entries += struct.pack(">HBBB", i + 1, 2, 0x80 | hvcc_index[i], tile_ispe)
    entries += struct.pack(">HBB", grid_id, 1, grid_ispe)
    ipma = full_box(b"ipma", 0, 0, struct.pack(">I", len(tiles) + 1) + entries)
    iprp = box(b"iprp", ipco + ipma)

    hdlr = full_box(b"hdlr", 0, 0, struct.pack(">I4sIII", 0, b"pict", 0, 0, 0) + b"\0")
    pitm = full_box(b"pitm", 0, 0, struct.pack(">H", grid_id))
    infes = b"".join(full_box(b"infe", 2, hidden, struct.pack(">HH4s", item, 0, kind) + b"\0")
                     for item, kind, _, hidden in items)
    iinf = full_box(b"iinf", 0, 0, struct.pack(">H", len(items)) + infes)
    refs = box(b"dimg", struct.pack(">HH", grid_id, len(tiles)) + b"".join(struct.pack(">H", i + 1) for i in range(len(tiles))))
    if exif is not None:
        refs += box(b"cdsc", struct.pack(">HHH", exif_id, 1, grid_id))
    iref = full_box(b"iref", 0, 0, refs)
    if tile_type == b"av01":
        ftyp = box(b"ftyp", b"avif" + struct.pack(">I", 0) + b"mif1avifmiaf")
    else:
        ftyp = box(b"ftyp", b"heic" + struct.pack(">I", 0) + b"mif1heicmiaf")

    in_idat = {grid_id} if iphone else set()

    def build_meta(mdat_start):
        offset = mdat_start
        locations = b""
        shared_offset = None
        for item, kind, payload, _ in items:
            if shared and kind == tile_type:
                # Every tile at the first tile's data.
                if shared_offset is None:
                    shared_offset = offset
                    offset += len(payload)
                locations += struct.pack(">HHHHII", item, 0, 0, 1, shared_offset, len(payload))
                continue
            if iphone:  # version 1: construction method per item (1: in idat, offset from idat's data)
                method = 1 if item in in_idat else 0
                locations += struct.pack(">HHHHII", item, method, 0, 1, 0 if method else offset, len(payload))
            else:
                locations += struct.pack(">HHHII", item, 0, 1, offset, len(payload))
            if item not in in_idat:
                offset += len(payload)
        iloc = full_box(b"iloc", 1 if iphone else 0, 0, struct.pack(">BBH", 0x44, 0x00, len(items)) + locations)
        idat = box(b"idat", grid_data) if iphone else b""
        return full_box(b"meta", 0, 0, hdlr + pitm + iloc + iinf + iref + iprp + idat)

    meta = build_meta(0)
    meta = build_meta(len(ftyp) + len(meta) + 8)
    stored = [payload for item, kind, payload, _ in items if item not in in_idat]
    if shared:
        stored = [items[0][2]] + [payload for item, kind, payload, _ in items if item not in in_idat and kind != tile_type]
    mdat = box(b"mdat", b"".join(stored))
    open(out, "wb").write(ftyp + meta + mdat)


if __name__ == "__main__":
    main()
