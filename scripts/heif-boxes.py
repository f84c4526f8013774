#!/usr/bin/env python3
"""heif-boxes.py — add item properties to the primary image of a HEIF/AVIF file (test-image generation).

heif-enc (libheif 1.15) cannot write an `irot`/`imir` transform or an nclx-only `colr` box for PNG input, so
scripts/make-test-images.sh writes them here:

    heif-boxes.py IN OUT [--irot N] [--imir AXIS] [--nclx PRIMARIES,TRANSFER,MATRIX,FULLRANGE]
                         [--top-box TYPE:FILE ...]

Each property is appended to `ipco` and associated (essential for the transforms, in the order given:
irot, then imir, then colr) with the primary item in `ipma`. Every box that encloses the change (meta,
iprp, ipco, ipma) gets its new size, and the `iloc` offsets of item data stored after `meta` (mdat) move by
the number of bytes inserted. `--top-box` appends a top-level box holding FILE's bytes at the end of the
file (nothing moves): TYPE is a four-character code, or `c2pa` for the C2PA manifest store's `uuid` box
(extended type D8FEC3D6-1B0E-483C-9297-5828877EC481), as the privacy tests plant them. Standard library only.
"""
import argparse
import struct
import sys


def boxes(data, start, end):
    """Yields (type, box_start, header_size, box_end) for the boxes in data[start:end]."""
    position = start
    while position + 8 <= end:
        size, kind = struct.unpack(">I4s", data[position:position + 8])
        header = 8
        if size == 1:
            size = struct.unpack(">Q", data[position + 8:position + 16])[0]
            header = 16
        elif size == 0:
            size = end - position
        if size < header or position + size > end:
            raise SystemExit("malformed box %r at %d" % (kind, position))
        yield kind.decode("latin-1"), position, header, position + size
        position += size


def find(data, start, end, kind):
    for found in boxes(data, start, end):
        if found[0] == kind:
            return found
    raise SystemExit("no %s box" % kind)


def read_uint(data, position, size):
    return int.from_bytes(data[position:position + size], "big") if size else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--irot", type=int, help="anticlockwise rotation in quarter turns (0-3)")
    parser.add_argument("--imir", type=int, help="mirror axis: 0 vertical (left-right flip), 1 horizontal")
    parser.add_argument("--nclx", help="colour_primaries,transfer_characteristics,matrix_coefficients,full_range")
    parser.add_argument("--top-box", action="append", default=[], metavar="TYPE:FILE",
                        help="append a top-level box (TYPE 'c2pa': the C2PA uuid box) holding FILE's bytes")
    args = parser.parse_args()
    data = bytearray(open(args.input, "rb").read())
    for spec in args.top_box:
        kind, _, path = spec.partition(":")
        payload = open(path, "rb").read()
        if kind == "c2pa":
            payload = bytes.fromhex("d8fec3d61b0e483c92975828877ec481") + payload
            kind = "uuid"
        if len(kind) != 4:
            raise SystemExit("box type %r is not four characters" % kind)
        data += struct.pack(">I4s", 8 + len(payload), kind.encode("latin-1")) + payload
    if args.top_box and args.irot is None and args.imir is None and not args.nclx:
        open(args.output, "wb").write(data)
        return

    new_properties = []
    if args.irot is not None:
        new_properties.append((struct.pack(">I4sB", 9, b"irot", args.irot & 3), True))
    if args.imir is not None:
        new_properties.append((struct.pack(">I4sB", 9, b"imir", args.imir & 1), True))
    if args.nclx:
        primaries, transfer, matrix, full = (int(v) for v in args.nclx.split(","))
        new_properties.append((struct.pack(">I4s4sHHHB", 19, b"colr", b"nclx", primaries, transfer, matrix,
                                           0x80 if full else 0), False))
    if not new_properties:
        raise SystemExit("nothing to add")

    _, meta_start, meta_header, meta_end = find(data, 0, len(data), "meta")
    children = meta_start + meta_header + 4  # meta is a full box
    _, pitm_start, pitm_header, _ = find(data, children, meta_end, "pitm")
    pitm_version = data[pitm_start + pitm_header]
    primary = read_uint(data, pitm_start + pitm_header + 4, 2 if pitm_version == 0 else 4)
    _, iprp_start, iprp_header, iprp_end = find(data, children, meta_end, "iprp")
    _, ipco_start, ipco_header, ipco_end = find(data, iprp_start + iprp_header, iprp_end, "ipco")
    property_count = sum(1 for _ in boxes(data, ipco_start + ipco_header, ipco_end))
    _, ipma_start, ipma_header, ipma_end = find(data, iprp_start + iprp_header, iprp_end, "ipma")

    # Rewrite ipma with the new associations for the primary item.
    version = data[ipma_start + ipma_header]
    flags = read_uint(data, ipma_start + ipma_header + 1, 3)
    position = ipma_start + ipma_header + 4
    entry_count = read_uint(data, position, 4)
    position += 4
    id_size = 2 if version < 1 else 4
    wide = flags & 1
    out = bytearray(data[ipma_start + ipma_header:ipma_start + ipma_header + 8])
    found = False
    for _ in range(entry_count):
        item = read_uint(data, position, id_size)
        count = data[position + id_size]
        association_bytes = count * (2 if wide else 1)
        associations = data[position + id_size + 1:position + id_size + 1 + association_bytes]
        position += id_size + 1 + association_bytes
        if item == primary:
            found = True
            for offset, (_, essential) in enumerate(new_properties):
                index = property_count + 1 + offset
                if wide:
                    associations += struct.pack(">H", (0x8000 if essential else 0) | index)
                else:
                    if index > 0x7F:
                        raise SystemExit("property index too large for 8-bit ipma")
                    associations += bytes([(0x80 if essential else 0) | index])
            count += len(new_properties)
        out += item.to_bytes(id_size, "big") + bytes([count]) + associations
    if not found:
        raise SystemExit("primary item %d has no ipma entry" % primary)
    new_ipma = struct.pack(">I4s", 8 + len(out), b"ipma") + out
    added_properties = b"".join(p for p, _ in new_properties)

    # Splice: properties at the end of ipco, the new ipma in place of the old.
    growth = len(added_properties) + len(new_ipma) - (ipma_end - ipma_start)
    assert ipco_end <= ipma_start, "ipco must come before ipma"
    data[ipma_start:ipma_end] = new_ipma
    data[ipco_end:ipco_end] = added_properties
    for start, header in ((ipco_start, ipco_header), (iprp_start, iprp_header), (meta_start, meta_header)):
        if header != 8:
            raise SystemExit("64-bit box sizes are not handled")
        size = struct.unpack(">I", data[start:start + 4])[0]
        grown = size + (len(added_properties) if start == ipco_start else growth)
        data[start:start + 4] = struct.pack(">I", grown)

    # Move the iloc offsets of data stored after meta (construction method 0, file offsets).
    meta_end += growth
    _, iloc_start, iloc_header, _ = find(data, children, meta_end, "iloc")
    position = iloc_start + iloc_header
    version = data[position]
    position += 4
    offset_size, length_size = data[position] >> 4, data[position] & 15
    base_size, index_size = data[position + 1] >> 4, (data[position + 1] & 15) if version in (1, 2) else 0
    position += 2
    item_count = read_uint(data, position, 2 if version < 2 else 4)
    position += 2 if version < 2 else 4
    for _ in range(item_count):
        position += 2 if version < 2 else 4
        method = 0
        if version in (1, 2):
            method = read_uint(data, position, 2) & 15
            position += 2
        position += 2  # data_reference_index
        base_position = position
        base = read_uint(data, position, base_size)
        position += base_size
        extents = read_uint(data, position, 2)
        position += 2
        for _ in range(extents):
            position += index_size
            offset_position = position
            offset = read_uint(data, position, offset_size)
            position += offset_size + length_size
            if method == 0 and base_size == 0 and offset >= meta_end - growth:
                data[offset_position:offset_position + offset_size] = (offset + growth).to_bytes(offset_size, "big")
        if method == 0 and base_size and base >= meta_end - growth:
            data[base_position:base_position + base_size] = (base + growth).to_bytes(base_size, "big")
    open(args.output, "wb").write(data)


if __name__ == "__main__":
    sys.exit(main())
