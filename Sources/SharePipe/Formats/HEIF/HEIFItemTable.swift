/// The item structure of a HEIF/AVIF `meta` box, read by SharePipe itself (no library): the handler, the
/// primary item, each item's type (`iinf`), where its data lies (`iloc`), the references between items (`iref`),
/// the properties (`ipco`) and which item has which (`ipma`, with the essential bit), and `idat`. The grid
/// route plans from it (`HEIFGrid.parse`), and the checks made before any library sees the file read it: which
/// codings the items need (`FormatFamilyGate`), and whether a transform is marked non-essential
/// (`nonEssentialTransform`).
///
/// Reading throws `HEIFGrid.Malformed` for a box or field that runs past its parent; what it reads but does not
/// describe (an `infe` before version 2, which has no item type; an `iloc` of version 3 or with field sizes the
/// format does not define) is flagged (`hasUntypedItems`, `locationsUnreadable`) rather than guessed.
struct HEIFItemTable {
    /// Where an item's data is (`iloc`).
    struct Location: Equatable {
        /// 0: in the file, 1: in `idat`, 2: in other items; -1 for data in another file (a data reference).
        var method: Int
        /// File offsets (method 0) or `idat` offsets (method 1), base offset added.
        var extents: [HEIFGrid.Extent]
    }

    /// One `ipma` association: a 1-based `ipco` index (0: none) and the essential bit.
    struct Association: Equatable {
        var index: Int
        var essential: Bool
    }

    /// One `iref` reference: its type (`dimg`, `thmb`, `auxl`, `cdsc`, …) from one item to others.
    struct Reference: Equatable {
        var type: String
        var from: Int
        var to: [Int]
    }

    /// The `hdlr` handler type (`pict` for images).
    var handler: String?
    /// The primary item (`pitm`).
    var primary: Int?
    /// Each item's type by id (`hvc1`, `av01`, `grid`, `Exif`, `mime`, …); a protected item is `prot`.
    var itemTypes: [Int: String] = [:]
    /// Whether an `infe` older than version 2 (no item type) was found.
    var hasUntypedItems = false
    /// Each item's data location.
    var locations: [Int: Location] = [:]
    /// Whether the `iloc` box could not be described (version over 2, or offset, length, base or index sizes
    /// other than 0, 4 or 8): `locations` is then empty.
    var locationsUnreadable = false
    var references: [Reference] = []
    /// The `ipco` properties in order (index 1 is the first): type and body.
    var properties: [(type: String, body: HEIFGrid.Cursor)] = []
    /// Each item's associations in `ipma` order.
    var associations: [Int: [Association]] = [:]
    /// The `idat` box's body.
    var idat: HEIFGrid.Cursor?

    /// Properties that transform the decoded image (ISO/IEC 23008-12 §6.5.9: clean aperture, rotation,
    /// mirroring). The format requires them marked essential: a reader that does not know one must not show
    /// the image untransformed.
    static let transformativeProperties: Set<String> = ["clap", "irot", "imir"]

    /// Reads the `meta` body (after its version and flags).
    static func parse(meta: [UInt8]) throws -> HEIFItemTable {
        var table = HEIFItemTable()
        var cursor = HEIFGrid.Cursor(meta)
        while cursor.left >= 8 {
            var (type, body) = try cursor.box()
            switch type {
            case "hdlr":
                _ = try body.fullBoxHeader()
                try body.skip(4)
                table.handler = try body.fourCC()
            case "pitm":
                let (version, _) = try body.fullBoxHeader()
                table.primary = version == 0 ? try body.u16() : try body.u32()
            case "iinf":
                try table.readItemInfo(&body)
            case "iloc":
                try table.readLocations(&body)
            case "iref":
                let (version, _) = try body.fullBoxHeader()
                while body.left >= 8 {
                    var (referenceType, reference) = try body.box()
                    let from = version == 0 ? try reference.u16() : try reference.u32()
                    let count = try reference.u16()
                    var to: [Int] = []
                    for _ in 0..<count { to.append(version == 0 ? try reference.u16() : try reference.u32()) }
                    table.references.append(Reference(type: referenceType, from: from, to: to))
                }
            case "iprp":
                while body.left >= 8 {
                    var (childType, child) = try body.box()
                    if childType == "ipco" {
                        while child.left >= 8 { table.properties.append(try child.box()) }
                    } else if childType == "ipma" {
                        try table.readAssociations(&child)
                    }
                }
            case "idat":
                table.idat = body
            default:
                break
            }
        }
        return table
    }

    private mutating func readItemInfo(_ body: inout HEIFGrid.Cursor) throws {
        let (version, _) = try body.fullBoxHeader()
        let count = version == 0 ? try body.u16() : try body.u32()
        for _ in 0..<count {
            var (entryType, entry) = try body.box()
            guard entryType == "infe" else { throw HEIFGrid.Malformed() }
            let (entryVersion, _) = try entry.fullBoxHeader()
            guard entryVersion >= 2 else {
                hasUntypedItems = true
                continue
            }
            let id = entryVersion == 2 ? try entry.u16() : try entry.u32()
            let protection = try entry.u16()
            itemTypes[id] = protection == 0 ? try entry.fourCC() : "prot"
        }
    }

    private mutating func readLocations(_ body: inout HEIFGrid.Cursor) throws {
        let (version, _) = try body.fullBoxHeader()
        let sizes = try body.u8(), more = try body.u8()
        let offsetSize = sizes >> 4, lengthSize = sizes & 15, baseSize = more >> 4
        let indexSize = version >= 1 ? more & 15 : 0
        guard version <= 2, [offsetSize, lengthSize, baseSize, indexSize].allSatisfy([0, 4, 8].contains) else {
            locationsUnreadable = true
            return
        }
        let count = version < 2 ? try body.u16() : try body.u32()
        for _ in 0..<count {
            let id = version < 2 ? try body.u16() : try body.u32()
            let method = version >= 1 ? try body.u16() & 15 : 0
            let dataReference = try body.u16()
            let base = try body.uint(baseSize)
            let extentCount = try body.u16()
            var extents: [HEIFGrid.Extent] = []
            for _ in 0..<extentCount {
                try body.skip(indexSize)
                let offset = try body.uint(offsetSize), length = try body.uint(lengthSize)
                let (start, overflow) = base.addingReportingOverflow(offset)
                guard !overflow else { throw HEIFGrid.Malformed() }
                extents.append(HEIFGrid.Extent(offset: start, length: length))
            }
            locations[id] = Location(method: dataReference != 0 ? -1 : method, extents: extents)
        }
    }

    private mutating func readAssociations(_ box: inout HEIFGrid.Cursor) throws {
        let (version, flags) = try box.fullBoxHeader()
        let count = try box.u32()
        for _ in 0..<count {
            let id = version < 1 ? try box.u16() : try box.u32()
            let associationCount = try box.u8()
            var list = associations[id] ?? []
            for _ in 0..<associationCount {
                if flags & 1 != 0 {
                    let value = try box.u16()
                    list.append(Association(index: value & 0x7FFF, essential: value & 0x8000 != 0))
                } else {
                    let value = try box.u8()
                    list.append(Association(index: value & 0x7F, essential: value & 0x80 != 0))
                }
            }
            associations[id] = list
        }
    }

    /// The property type at a 1-based `ipco` index; nil for 0 or past the end.
    func propertyType(at index: Int) -> String? {
        index >= 1 && index <= properties.count ? properties[index - 1].type : nil
    }

    /// The first association (items by id, then in `ipma` order) of a transformative property (`clap`, `irot`,
    /// `imir`) that is not marked essential, which the format forbids: Chromium refuses such an AVIF.
    func nonEssentialTransform() -> (item: Int, property: String)? {
        for item in associations.keys.sorted() {
            for association in associations[item] ?? [] where !association.essential {
                if let type = propertyType(at: association.index), Self.transformativeProperties.contains(type) {
                    return (item, type)
                }
            }
        }
        return nil
    }

    /// The item types of the file's coded images (not metadata, not derived images): what decoders the items
    /// need, `hvc1` (HEVC), `av01` (AV1), `jpeg`, and whatever else a libheif plugin may decode.
    var codedImageTypes: Set<String> {
        Set(itemTypes.values.filter { !Self.nonCodedItemTypes.contains($0) })
    }

    /// Item types that hold no coded picture: derived images (grid, overlay, identity, tone map), metadata and
    /// protected items (which no decoder here reads).
    static let nonCodedItemTypes: Set<String> = ["grid", "iovl", "iden", "tmap", "Exif", "mime", "uri ", "prot"]
}

extension HEIFFileBytes {
    /// The sample entry types (`av01`, `hvc1`, `hev1`, …) of every track's `stsd` in the top-level `moov`: the
    /// codings an image sequence needs. At most `maxTracks` tracks are read.
    func sampleEntryTypes(maxTracks: Int = 64) throws -> [String] {
        var movie: Range<Int>?
        try forEachBox(in: 0..<size) { type, body, length in
            if type == "moov" { movie = body..<body + length }
            return movie == nil
        }
        guard let movie else { return [] }
        /// The first box of `type` in `range`, as its body's range.
        func child(_ type: String, in range: Range<Int>) throws -> Range<Int>? {
            var found: Range<Int>?
            try forEachBox(in: range) { kind, body, length in
                if kind == type { found = body..<body + length }
                return found == nil
            }
            return found
        }
        var tracks: [Range<Int>] = []
        try forEachBox(in: movie) { type, body, length in
            if type == "trak" { tracks.append(body..<body + length) }
            return tracks.count < maxTracks
        }
        var types: [String] = []
        for track in tracks {
            guard let media = try child("mdia", in: track), let information = try child("minf", in: media),
                let table = try child("stbl", in: information), let descriptions = try child("stsd", in: table),
                descriptions.count >= 8
            else { continue }
            // stsd: version and flags, entry count, then the sample entries.
            try forEachBox(in: descriptions.lowerBound + 8..<descriptions.upperBound) { type, _, _ in
                types.append(type)
                return types.count < 4 * maxTracks
            }
        }
        return types
    }
}
