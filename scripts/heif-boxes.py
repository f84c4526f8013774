#!/usr/bin/env python3
"""heif-boxes.py — add item properties to the primary image of a HEIF/AVIF file (test-image generation).

heif-enc (libheif 1.15) cannot write an `irot`/`imir` transform or an nclx-only `colr` box for PNG input, so
scripts/make-test-images.sh writes them here:

    heif-boxes.py IN OUT [--irot N] [--imir AXIS] [--clap WIDTH,HEIGHT] [--nclx PRIMARIES,TRANSFER,MATRIX,FULLRANGE]
                         [--top-box TYPE:FILE ...] [--mime-item CONTENT_TYPE:FILE] [--sample-entry-box TYPE:FILE ...]
                         [--not-essential TYPE,...] [--brands MAJOR,COMPATIBLE,...]

Each property is appended to `ipco` and associated (essential for the transforms, in the order given:
clap, then irot, then imir, then colr) with the primary item in `ipma`. `--not-essential irot,imir,clap`
then clears the essential bit of every `ipma` association (any item's) with a property of those types, as a
non-conforming writer leaves it (the format requires transforms essential); `--brands` rewrites the `ftyp`
brands in place (as many as the box holds: the last one given repeats). Every box that encloses the change (meta,
iprp, ipco, ipma) gets its new size, and the `iloc` offsets of item data stored after `meta` (mdat) move by
the number of bytes inserted. `--top-box` appends a top-level box holding FILE's bytes at the end of the
file (nothing moves): TYPE is a four-character code, or `c2pa` for the C2PA manifest store's `uuid` box
(extended type D8FEC3D6-1B0E-483C-9297-5828877EC481), as the privacy tests plant them; `--mime-item` adds a
`mime` item (an `application/c2pa` manifest, say) that describes the primary image; `--sample-entry-box` adds
a box to every track's visual sample entry (an image sequence's `clli` or `mdcv`, which avifenc 0.11 does not
write), chunk and item offsets moved. Standard library only.
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


def move_iloc_offsets(data, position, threshold, growth):
    """Moves by `growth` every file offset in the iloc box whose full-box header (version) is at `position` in
    `data` that points at or past `threshold` (construction method 0: the base offset when there is one, else
    each extent's offset)."""
    version = data[position]
    if version not in (0, 1, 2):
        raise SystemExit("iloc version %d is not handled" % version)
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
            if method == 0 and base_size == 0 and offset >= threshold:
                data[offset_position:offset_position + offset_size] = (offset + growth).to_bytes(offset_size, "big")
        if method == 0 and base_size and base >= threshold:
            data[base_position:base_position + base_size] = (base + growth).to_bytes(base_size, "big")


def add_mime_item(data, content_type, payload):
    """Adds a `mime` item holding `payload` (in an mdat box at the end of the file) that describes the primary item:
    an `infe` in iinf, an `iloc` entry, a `cdsc` reference in iref (created when missing). Every iloc offset
    into data after meta moves by the bytes meta grows."""
    _, meta_start, meta_header, meta_end = find(data, 0, len(data), "meta")
    if meta_header != 8:
        raise SystemExit("64-bit box sizes are not handled")
    children_start = meta_start + meta_header + 4
    children = [(kind, bytearray(data[start:end])) for kind, start, _, end in boxes(data, children_start, meta_end)]
    by_kind = {kind: body for kind, body in children}
    pitm = by_kind["pitm"]
    primary = read_uint(pitm, 12, 2 if pitm[8] == 0 else 4)
    iinf, iloc = by_kind["iinf"], by_kind["iloc"]
    count_size = 2 if iinf[8] == 0 else 4
    entries = read_uint(iinf, 12, count_size)
    item_ids = [read_uint(body, start - 0 + 12, 2) for kind, start, _, _ in boxes(iinf, 12 + count_size, len(iinf))
                for body in [iinf] if kind == "infe"]
    new_id = max(item_ids + [primary]) + 1
    infe_body = struct.pack(">B3sHH4s", 2, b"\0\0\0", new_id, 0, b"mime") + b"\0" + content_type.encode() + b"\0"
    iinf += struct.pack(">I4s", 8 + len(infe_body), b"infe") + infe_body
    iinf[12:12 + count_size] = (entries + 1).to_bytes(count_size, "big")
    iinf[0:4] = struct.pack(">I", len(iinf))
    reference = struct.pack(">I4sHHH", 14, b"cdsc", new_id, 1, primary)
    if "iref" in by_kind:
        iref = by_kind["iref"]
        if iref[8] != 0:
            raise SystemExit("only iref version 0 is handled")
        iref += reference
        iref[0:4] = struct.pack(">I", len(iref))
    else:
        children.append(("iref", bytearray(struct.pack(">I4sI", 12 + len(reference), b"iref", 0) + reference)))
    version = iloc[8]
    if version not in (0, 1):
        raise SystemExit("only iloc versions 0 and 1 are handled")
    offset_size, length_size, base_size = iloc[12] >> 4, iloc[12] & 15, iloc[13] >> 4
    if offset_size < 4 or length_size < 4:
        raise SystemExit("iloc offsets or lengths narrower than 4 bytes")
    item_count = read_uint(iloc, 14, 2)
    entry = new_id.to_bytes(2, "big") + (b"\0\0" if version == 1 else b"") + b"\0\0" + bytes(base_size) + b"\0\1"
    entry += bytes(offset_size) + len(payload).to_bytes(length_size, "big")
    new_entry_at = len(iloc)
    iloc += entry
    iloc[14:16] = (item_count + 1).to_bytes(2, "big")
    iloc[0:4] = struct.pack(">I", len(iloc))
    body = b"".join(bytes(child) for _, child in children)
    new_meta = struct.pack(">I4s", 8 + 4 + len(body), b"meta") + data[meta_start + 8:children_start] + body
    growth = len(new_meta) - (meta_end - meta_start)
    # Old items stored after meta move by `growth` (construction method 0, file offsets).
    move_iloc_offsets(iloc, 8, meta_end, growth)
    out = bytearray(data[:meta_start]) + new_meta + data[meta_end:]
    payload_at = len(out) + 8  # in an mdat box of its own at the end
    offset_at = new_entry_at + 2 + (2 if version == 1 else 0) + 2 + base_size + 2
    iloc[offset_at:offset_at + offset_size] = payload_at.to_bytes(offset_size, "big")
    body = b"".join(bytes(child) for _, child in children)
    new_meta = struct.pack(">I4s", 8 + 4 + len(body), b"meta") + data[meta_start + 8:children_start] + body
    return bytearray(data[:meta_start]) + new_meta + data[meta_end:] + struct.pack(">I4s", 8 + len(payload), b"mdat") + payload


# Boxes on the way from `moov` to a track's sample descriptions, and the visual sample entries whose child
# boxes (after the 78 bytes of VisualSampleEntry fields after the box header) describe the coded pictures.
TRACK_CONTAINERS = ("moov", "trak", "mdia", "minf", "stbl")
VISUAL_SAMPLE_ENTRIES = ("av01", "hvc1", "hev1")


def add_sample_entry_box(data, kind, payload):
    """Appends a box of `kind` holding `payload` to the child boxes of every visual sample entry (`av01`,
    `hvc1`) in every track's `stsd` but an auxiliary track's (one with `auxi`: alpha, depth), as a writer puts
    an image sequence's `clli` or `mdcv` there. Every box on the way grows; chunk offsets (`stco`, `co64`) and
    `iloc` offsets (construction method 0) of data after `moov` move by as much."""
    added = struct.pack(">I4s", 8 + len(payload), kind.encode("latin-1")) + payload

    def rebuilt(start, end):
        out, count = b"", 0
        for child, box_start, header, box_end in boxes(data, start, end):
            if header != 8:
                raise SystemExit("64-bit box sizes are not handled")
            if child in TRACK_CONTAINERS:
                body, found = rebuilt(box_start + 8, box_end)
            elif child == "stsd":
                body, found = bytes(data[box_start + 8:box_start + 16]), 0  # version, flags, entry_count
                for entry, entry_start, _, entry_end in boxes(data, box_start + 16, box_end):
                    colour = entry in VISUAL_SAMPLE_ENTRIES and not any(
                        inner == "auxi" for inner, _, _, _ in boxes(data, entry_start + 8 + 78, entry_end))
                    grown = bytes(data[entry_start + 8:entry_end]) + added if colour else b""
                    found += 1 if grown else 0
                    body += (struct.pack(">I4s", 8 + len(grown), entry.encode("latin-1")) + grown if grown
                             else bytes(data[entry_start:entry_end]))
            else:
                out += bytes(data[box_start:box_end])
                continue
            out += struct.pack(">I4s", 8 + len(body), child.encode("latin-1")) + body
            count += found
        return out, count

    _, moov_start, moov_header, moov_end = find(data, 0, len(data), "moov")
    moov_body, count = rebuilt(moov_start + moov_header, moov_end)
    if count == 0:
        raise SystemExit("no visual sample entry in moov")
    moov = struct.pack(">I4s", 8 + len(moov_body), b"moov") + moov_body
    growth = len(moov) - (moov_end - moov_start)
    out = bytearray(data[:moov_start]) + moov + data[moov_end:]

    def move_chunk_offsets(start, end):
        for child, box_start, header, box_end in boxes(out, start, end):
            if child in TRACK_CONTAINERS:
                move_chunk_offsets(box_start + header, box_end)
            elif child in ("stco", "co64"):
                size = 4 if child == "stco" else 8
                entries = read_uint(out, box_start + 12, 4)
                for at in range(box_start + 16, box_start + 16 + entries * size, size):
                    offset = read_uint(out, at, size)
                    if offset >= moov_end:
                        out[at:at + size] = (offset + growth).to_bytes(size, "big")

    move_chunk_offsets(moov_start + 8, moov_start + len(moov))
    for meta_kind, meta_start, meta_header, meta_end in boxes(out, 0, len(out)):
        if meta_kind == "meta":
            _, iloc_start, iloc_header, _ = find(out, meta_start + meta_header + 4, meta_end, "iloc")
            move_iloc_offsets(out, iloc_start + iloc_header, moov_end, growth)
    return out


def clear_essential(data, kinds):
    """Clears, in place, the essential bit of every ipma association (any item's) whose ipco property is one of
    `kinds`. Returns how many were cleared."""
    _, meta_start, meta_header, meta_end = find(data, 0, len(data), "meta")
    children = meta_start + meta_header + 4
    _, iprp_start, iprp_header, iprp_end = find(data, children, meta_end, "iprp")
    _, ipco_start, ipco_header, ipco_end = find(data, iprp_start + iprp_header, iprp_end, "ipco")
    types = [kind for kind, _, _, _ in boxes(data, ipco_start + ipco_header, ipco_end)]
    cleared = 0
    for kind, start, header, _ in boxes(data, iprp_start + iprp_header, iprp_end):
        if kind != "ipma":
            continue
        version, flags = data[start + header], read_uint(data, start + header + 1, 3)
        position = start + header + 4
        entries = read_uint(data, position, 4)
        position += 4
        for _ in range(entries):
            position += 2 if version < 1 else 4
            count = data[position]
            position += 1
            for _ in range(count):
                width = 2 if flags & 1 else 1
                value = read_uint(data, position, width)
                index = value & (0x7FFF if width == 2 else 0x7F)
                if 0 < index <= len(types) and types[index - 1] in kinds and value >> (8 * width - 1):
                    data[position] &= 0x7F
                    cleared += 1
                position += width
    return cleared


def rewrite_brands(data, brands):
    """Rewrites the ftyp box's major brand and compatible brands in place (its size stays)."""
    kind, start, header, end = next(boxes(data, 0, len(data)))
    if kind != "ftyp":
        raise SystemExit("the file does not start with ftyp")
    slots = [start + header] + list(range(start + header + 8, end, 4))
    for number, slot in enumerate(slots):
        brand = brands[min(number, len(brands) - 1)]
        if len(brand) != 4:
            raise SystemExit("brand %r is not four characters" % brand)
        data[slot:slot + 4] = brand.encode("latin-1")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--irot", type=int, help="anticlockwise rotation in quarter turns (0-3)")
    parser.add_argument("--imir", type=int, help="mirror axis: 0 vertical (left-right flip), 1 horizontal")
    parser.add_argument("--clap", help="clean aperture WIDTH,HEIGHT (centred) on the primary item")
    parser.add_argument("--not-essential", metavar="TYPE,...",
                        help="clear the ipma essential bit of every association with a property of these types")
    parser.add_argument("--brands", metavar="MAJOR,COMPATIBLE,...", help="rewrite the ftyp brands in place")
    parser.add_argument("--nclx", help="colour_primaries,transfer_characteristics,matrix_coefficients,full_range")
    parser.add_argument("--top-box", action="append", default=[], metavar="TYPE:FILE",
                        help="append a top-level box (TYPE 'c2pa': the C2PA uuid box) holding FILE's bytes")
    parser.add_argument("--mime-item", metavar="CONTENT_TYPE:FILE",
                        help="add a 'mime' item with FILE's bytes, describing the primary image (cdsc)")
    parser.add_argument("--sample-entry-box", action="append", default=[], metavar="TYPE:FILE",
                        help="add a box holding FILE's bytes to every track's visual sample entry (clli, mdcv)")
    args = parser.parse_args()
    data = bytearray(open(args.input, "rb").read())
    for spec in args.sample_entry_box:
        kind, _, path = spec.partition(":")
        if len(kind) != 4:
            raise SystemExit("box type %r is not four characters" % kind)
        data = add_sample_entry_box(data, kind, open(path, "rb").read())
    if args.mime_item:
        content_type, _, path = args.mime_item.partition(":")
        data = add_mime_item(data, content_type, open(path, "rb").read())
    for spec in args.top_box:
        kind, _, path = spec.partition(":")
        payload = open(path, "rb").read()
        if kind == "c2pa":
            payload = bytes.fromhex("d8fec3d61b0e483c92975828877ec481") + payload
            kind = "uuid"
        if len(kind) != 4:
            raise SystemExit("box type %r is not four characters" % kind)
        data += struct.pack(">I4s", 8 + len(payload), kind.encode("latin-1")) + payload

    new_properties = []
    if args.clap:
        width, height = (int(v) for v in args.clap.split(","))
        # widthN/D, heightN/D, horizOffN/D, vertOffN/D: centred (offsets 0).
        new_properties.append((struct.pack(">I4s8I", 40, b"clap", width, 1, height, 1, 0, 1, 0, 1), True))
    if args.irot is not None:
        new_properties.append((struct.pack(">I4sB", 9, b"irot", args.irot & 3), True))
    if args.imir is not None:
        new_properties.append((struct.pack(">I4sB", 9, b"imir", args.imir & 1), True))
    if args.nclx:
        primaries, transfer, matrix, full = (int(v) for v in args.nclx.split(","))
        new_properties.append((struct.pack(">I4s4sHHHB", 19, b"colr", b"nclx", primaries, transfer, matrix,
                                           0x80 if full else 0), False))
    if not new_properties:
        if not (args.sample_entry_box or args.mime_item or args.top_box or args.not_essential or args.brands):
            raise SystemExit("nothing to add")
        finish(data, args)
        return

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
    move_iloc_offsets(data, iloc_start + iloc_header, meta_end - growth, growth)
    finish(data, args)


def finish(data, args):
    """The in-place edits (essential bits, brands), then the output."""
    if args.not_essential:
        kinds = args.not_essential.split(",")
        if clear_essential(data, kinds) == 0:
            raise SystemExit("no essential association with %s" % args.not_essential)
    if args.brands:
        rewrite_brands(data, args.brands.split(","))
    open(args.output, "wb").write(data)


if __name__ == "__main__":
    sys.exit(main())
