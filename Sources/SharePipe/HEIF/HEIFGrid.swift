#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A primary image of type `grid` whose tiles are HEVC (`hvc1`), as phones store photos (an iPhone's 12 MP
/// photo is 8×6 tiles of 512×512), read from the file's own boxes so that it can be decoded one row of tiles
/// at a time (`HEIFTileDecoding`). libheif 1.15 cannot do that: it decodes every tile into one full-size image.
///
/// Only what this route handles exactly as libheif would is accepted; for anything else `plan` returns nil
/// and the libheif route decodes the file as before: tiles that are not `hvc1` (AVIF grids), more than 8
/// bits, monochrome, odd tile sizes with subsampled chroma, NAL lengths other than 4 bytes, tiles or grid with
/// properties other than those listed in `gridProperties` / `tileProperties` (`clap`, for one), tile data in
/// `idat` or in other files, protected items, `iovl` overlays, in-band parameter sets, tiles whose colour
/// (their nclx, else their SPS's VUI) differs, cannot be read or is matrix 12. Alpha is checked by the caller
/// (libheif's has_alpha): a grid with an alpha image goes to libheif. So everything that needs libheif is
/// known before any tile is decoded, and the route never hands a file over half-way.
struct HEIFGrid: Equatable, Sendable {
    /// A run of bytes in the file (`iloc` extent).
    struct Extent: Equatable, Sendable {
        var offset: Int
        var length: Int
    }

    var columns: Int
    var rows: Int
    /// The grid's output size as coded (before `irot`/`imir`).
    var size: PixelSize
    /// Every tile's coded size (ispe; all equal).
    var tileSize: PixelSize
    /// chroma_format_idc of every tile: 1 4:2:0, 2 4:2:2, 3 4:4:4.
    var chroma: Int32
    /// Each distinct hvcC's parameter sets as 4-byte length-prefixed NAL units.
    var parameterSets: [[UInt8]]
    /// For each tile (row-major): the index of its parameter sets, and its coded data.
    var tileParameterSets: [Int]
    var tileExtents: [[Extent]]
    /// The transforms (`irot`, `imir`, in their `ipma` order) as the orientation that turns the coded image
    /// into the displayed one.
    var orientation: Orientation
    /// The tiles' own nclx (`colr` on the tile items; all tiles alike), which libheif converts each tile with.
    /// Without one, libheif uses each tile's bitstream VUI (`HEIFTileDecoding` does the same).
    var tileColour: Colour?
    /// The colour description of the tiles' SPS (`sequenceParameters`: the VUI as libde265 reports it; every
    /// tile's alike), read from the hvcC before anything is decoded. nil only where `tileColour` decides and
    /// the SPS's could not be read.
    var bitstreamColour: Colour?

    /// The colour each tile is converted with: the tiles' nclx, else their SPS's VUI. The plan only takes a
    /// grid whose colour SharePipe converts (not matrix 12), so nothing found while decoding hands it to libheif.
    var colour: Colour? { tileColour ?? bitstreamColour }

    /// The H.273 code points of an nclx description.
    struct Colour: Equatable, Sendable {
        var primaries: Int, transfer: Int, matrix: Int
        var fullRange: Bool
    }

    /// The size as displayed.
    var displayedSize: PixelSize { orientation.swapsAxes ? size.transposed : size }

    /// Properties of the grid item this route applies (`irot`, `imir`) or can leave to others (`ispe` checked,
    /// `colr` read by libheif for the colour, `pixi` restated by hvcC). Any other one sends the file to libheif.
    static let gridProperties: Set<String> = ["ispe", "colr", "pixi", "irot", "imir"]
    static let tileProperties: Set<String> = ["hvcC", "ispe", "colr", "pixi"]

    /// The grid of `source`'s primary image, or nil when the primary image is not a grid this route decodes.
    /// Reads the top-level box headers, the `meta` box (at most `limits.maxMetadataBytes`) and the grid
    /// descriptor; no tile data. Throws when the file cannot be read, and `tooLarge` when a tile's size is
    /// over `limits` (the probe and the render both get their grid here, so no size arithmetic on the route
    /// ever sees an unchecked tile).
    static func plan(_ file: HEIFFileBytes, limits: ImageLimits) throws -> HEIFGrid? {
        guard let meta = try file.metaBody(maxBytes: limits.maxMetadataBytes),
              let grid = try? parse(meta: meta, fileSize: file.size, read: { try file.read(at: $0, count: $1) }) else { return nil }
        try limits.check(width: grid.tileSize.width, height: grid.tileSize.height, file: file.name)
        for extents in grid.tileExtents where try !unitsAreSlices(extents, file: file) { return nil }
        return grid
    }

    /// Whether a tile's coded data is whole 4-byte length-prefixed NAL units, none of them a parameter set
    /// (VPS, SPS, PPS in the data would replace the hvcC's checked ones): what would otherwise send the file to
    /// libheif only after rows were decoded. One read of 5 bytes per NAL unit.
    static func unitsAreSlices(_ extents: [Extent], file: HEIFFileBytes) throws -> Bool {
        let total = extents.reduce(0) { $0 + $1.length }
        /// `count` bytes at `position` of the tile's data (its extents one after another).
        func bytes(at position: Int, count: Int) throws -> [UInt8] {
            var out: [UInt8] = [], skip = position, left = count
            for extent in extents where left > 0 {
                if skip >= extent.length { skip -= extent.length; continue }
                let here = min(left, extent.length - skip)
                out += try file.read(at: extent.offset + skip, count: here)
                left -= here
                skip = 0
            }
            return out
        }
        var position = 0
        while position < total {
            guard total - position >= 4 else { return false }
            let head = try bytes(at: position, count: min(5, total - position))
            let length = head[0..<4].reduce(0) { $0 << 8 | Int($1) }
            guard length <= total - position - 4 else { return false }
            if length > 0, (32...34).contains(Int(head[4] >> 1) & 0x3F) { return false }
            position += 4 + length
        }
        return true
    }

    /// The largest tile side the route takes (HEVC's levels stop far below it): tile sizes and areas, and the
    /// memory priced from them, stay far from overflowing whatever the limits are. Larger tiles go to libheif.
    static let maxTileSide = 65_535

    // MARK: - Parsing

    private struct Malformed: Error {}

    /// A bounds-checked cursor over bytes in memory.
    private struct Cursor {
        let bytes: [UInt8]
        var position: Int
        let end: Int

        init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
            self.bytes = bytes
            position = start
            self.end = end ?? bytes.count
        }

        var left: Int { end - position }

        mutating func skip(_ count: Int) throws {
            guard count >= 0, count <= left else { throw Malformed() }
            position += count
        }

        mutating func uint(_ size: Int) throws -> Int {
            guard size >= 0, size <= 8, size <= left else { throw Malformed() }
            var value: UInt64 = 0
            for _ in 0..<size {
                value = value << 8 | UInt64(bytes[position])
                position += 1
            }
            guard value <= UInt64(Int.max) else { throw Malformed() }
            return Int(value)
        }

        mutating func u8() throws -> Int { try uint(1) }
        mutating func u16() throws -> Int { try uint(2) }
        mutating func u32() throws -> Int { try uint(4) }

        mutating func fourCC() throws -> String {
            guard left >= 4 else { throw Malformed() }
            defer { position += 4 }
            return String(decoding: bytes[position..<position + 4], as: UTF8.self)
        }

        /// The next box: its type and a cursor over its body; this cursor moves past it.
        mutating func box() throws -> (type: String, body: Cursor) {
            let size32 = try u32()
            let type = try fourCC()
            let bodySize: Int
            switch size32 {
            case 0: bodySize = left
            case 1:
                let large = try uint(8)
                guard large >= 16 else { throw Malformed() }
                bodySize = large - 16
            default:
                guard size32 >= 8 else { throw Malformed() }
                bodySize = size32 - 8
            }
            guard bodySize <= left else { throw Malformed() }
            let body = Cursor(bytes, from: position, to: position + bodySize)
            position += bodySize
            return (type, body)
        }

        /// Version and flags of a full box.
        mutating func fullBoxHeader() throws -> (version: Int, flags: Int) {
            let word = try u32()
            return (word >> 24, word & 0xFFFFFF)
        }
    }

    private struct Location {
        var method: Int
        var extents: [Extent]
    }

    private struct Association {
        var index: Int
        var essential: Bool
    }

    /// Parses the `meta` body (after its version and flags). nil: not a grid for this route. `read` fetches
    /// file bytes (the grid descriptor when it is stored in `mdat`).
    static func parse(meta: [UInt8], fileSize: Int, read: (Int, Int) throws -> [UInt8]) throws -> HEIFGrid? {
        var cursor = Cursor(meta)
        var handler: String?
        var primary: Int?
        var itemTypes: [Int: String] = [:]
        var locations: [Int: Location] = [:]
        var references: [(type: String, from: Int, to: [Int])] = []
        var properties: [(type: String, body: Cursor)] = []
        var associations: [Int: [Association]] = [:]
        var idat: Cursor?

        while cursor.left >= 8 {
            var (type, body) = try cursor.box()
            switch type {
            case "hdlr":
                _ = try body.fullBoxHeader()
                try body.skip(4)
                handler = try body.fourCC()
            case "pitm":
                let (version, _) = try body.fullBoxHeader()
                primary = version == 0 ? try body.u16() : try body.u32()
            case "iinf":
                let (version, _) = try body.fullBoxHeader()
                let count = version == 0 ? try body.u16() : try body.u32()
                for _ in 0..<count {
                    var (entryType, entry) = try body.box()
                    guard entryType == "infe" else { throw Malformed() }
                    let (entryVersion, _) = try entry.fullBoxHeader()
                    guard entryVersion >= 2 else { return nil }
                    let id = entryVersion == 2 ? try entry.u16() : try entry.u32()
                    let protection = try entry.u16()
                    let itemType = try entry.fourCC()
                    // A protected item: libheif's business.
                    itemTypes[id] = protection == 0 ? itemType : "prot"
                }
            case "iloc":
                let (version, _) = try body.fullBoxHeader()
                guard version <= 2 else { return nil }
                let sizes = try body.u8(), more = try body.u8()
                let offsetSize = sizes >> 4, lengthSize = sizes & 15, baseSize = more >> 4
                let indexSize = version >= 1 ? more & 15 : 0
                for size in [offsetSize, lengthSize, baseSize, indexSize] where ![0, 4, 8].contains(size) { return nil }
                let count = version < 2 ? try body.u16() : try body.u32()
                for _ in 0..<count {
                    let id = version < 2 ? try body.u16() : try body.u32()
                    let method = version >= 1 ? try body.u16() & 15 : 0
                    let dataReference = try body.u16()
                    let base = try body.uint(baseSize)
                    let extentCount = try body.u16()
                    var extents: [Extent] = []
                    for _ in 0..<extentCount {
                        try body.skip(indexSize)
                        let offset = try body.uint(offsetSize), length = try body.uint(lengthSize)
                        let (start, overflow) = base.addingReportingOverflow(offset)
                        guard !overflow else { throw Malformed() }
                        extents.append(Extent(offset: start, length: length))
                    }
                    // Data in other files (data reference) or item-offset construction: libheif's business.
                    locations[id] = Location(method: dataReference != 0 ? -1 : method, extents: extents)
                }
            case "iref":
                let (version, _) = try body.fullBoxHeader()
                while body.left >= 8 {
                    var (referenceType, reference) = try body.box()
                    let from = version == 0 ? try reference.u16() : try reference.u32()
                    let count = try reference.u16()
                    var to: [Int] = []
                    for _ in 0..<count { to.append(version == 0 ? try reference.u16() : try reference.u32()) }
                    references.append((referenceType, from, to))
                }
            case "iprp":
                while body.left >= 8 {
                    var (childType, child) = try body.box()
                    if childType == "ipco" {
                        while child.left >= 8 { properties.append(try child.box()) }
                    } else if childType == "ipma" {
                        let (version, flags) = try child.fullBoxHeader()
                        let count = try child.u32()
                        for _ in 0..<count {
                            let id = version < 1 ? try child.u16() : try child.u32()
                            let associationCount = try child.u8()
                            var list = associations[id] ?? []
                            for _ in 0..<associationCount {
                                if flags & 1 != 0 {
                                    let value = try child.u16()
                                    list.append(Association(index: value & 0x7FFF, essential: value & 0x8000 != 0))
                                } else {
                                    let value = try child.u8()
                                    list.append(Association(index: value & 0x7F, essential: value & 0x80 != 0))
                                }
                            }
                            associations[id] = list
                        }
                    }
                }
            case "idat":
                idat = body
            default:
                break
            }
        }
        guard handler == "pict", let primary, itemTypes[primary] == "grid" else { return nil }
        // One dimg reference from the grid to its tiles. Other items that refer to the grid are never decoded:
        // Exif (cdsc), a thumbnail (thmb), depth maps and gain maps (auxl); an alpha image (auxl too) sends the
        // image to libheif, which the caller learns from libheif's has_alpha.
        let tileLists = references.filter { $0.type == "dimg" && $0.from == primary }
        guard tileLists.count == 1, let tileIDs = tileLists.first?.to, !tileIDs.isEmpty else { return nil }

        /// An item's properties in ipma order with their ipco index; nil when one is not in `allowed`, or an
        /// association names no property (index 0 is allowed when not essential).
        func knownProperties(of item: Int, allowed: Set<String>) -> [(type: String, body: Cursor, index: Int)]? {
            var known: [(type: String, body: Cursor, index: Int)] = []
            for association in associations[item] ?? [] {
                guard association.index != 0, association.index <= properties.count else {
                    if association.essential || association.index != 0 { return nil }
                    continue
                }
                let (type, body) = properties[association.index - 1]
                guard allowed.contains(type) else { return nil }
                known.append((type, body, association.index))
            }
            return known
        }

        // The grid item's properties: only the known ones, transforms in order.
        var orientation = Orientation.up
        var gridSize: PixelSize?
        guard let gridItemProperties = knownProperties(of: primary, allowed: gridProperties) else { return nil }
        for (type, body, _) in gridItemProperties {
            var value = body
            switch type {
            case "ispe":
                _ = try value.fullBoxHeader()
                gridSize = PixelSize(width: try value.u32(), height: try value.u32())
            case "irot":
                let angle = try value.u8() & 3
                // Anticlockwise quarter turns.
                orientation = compose(orientation, [.up, .left, .down, .right][angle])
            case "imir":
                // libheif 1.15: axis 0 exchanges top and bottom, 1 left and right.
                orientation = compose(orientation, try value.u8() & 1 == 0 ? .downMirrored : .upMirrored)
            default:
                break
            }
        }

        // The grid descriptor.
        guard let gridLocation = locations[primary] else { return nil }
        var descriptorBytes: [UInt8] = []
        switch gridLocation.method {
        case 0:
            for extent in gridLocation.extents {
                guard extent.length > 0, extent.length <= 64, extent.offset <= fileSize - extent.length else { return nil }
                descriptorBytes += try read(extent.offset, extent.length)
            }
        case 1:
            guard let idat else { return nil }
            for extent in gridLocation.extents {
                guard extent.length > 0, extent.length <= 64, extent.offset <= idat.left - extent.length else { return nil }
                descriptorBytes += idat.bytes[(idat.position + extent.offset)..<(idat.position + extent.offset + extent.length)]
            }
        default:
            return nil
        }
        var descriptor = Cursor(descriptorBytes)
        guard try descriptor.u8() == 0 else { return nil }
        let flags = try descriptor.u8()
        let rows = try descriptor.u8() + 1, columns = try descriptor.u8() + 1
        let fieldSize = flags & 1 != 0 ? 4 : 2
        let size = PixelSize(width: try descriptor.uint(fieldSize), height: try descriptor.uint(fieldSize))
        guard size.width > 0, size.height > 0, tileIDs.count == rows * columns else { return nil }
        if let gridSize, gridSize != size { return nil }

        // The tiles: hvc1, one size, one chroma format, 8 bits, in the file.
        var parameterSets: [[UInt8]] = []
        var configIndex: [Int: Int] = [:]   // property index → parameterSets index
        var tileParameterSets: [Int] = []
        var tileExtents: [[Extent]] = []
        var tileSize: PixelSize?
        var chroma: Int32?
        var colours: [Colour?] = []
        var configColours: [Int: Colour?] = [:]   // property index → its SPS's colour (nil: not read)
        var bitstreamColours: [Colour?] = []
        for id in tileIDs {
            guard itemTypes[id] == "hvc1", let location = locations[id], location.method == 0,
                  !location.extents.isEmpty else { return nil }
            for extent in location.extents {
                guard extent.length > 0, extent.offset <= fileSize - extent.length else { return nil }
            }
            var config: Int?
            var size: PixelSize?
            var colour: Colour?
            guard let tileItemProperties = knownProperties(of: id, allowed: tileProperties) else { return nil }
            for (type, body, index) in tileItemProperties {
                var value = body
                if type == "ispe" {
                    _ = try value.fullBoxHeader()
                    size = PixelSize(width: try value.u32(), height: try value.u32())
                } else if type == "hvcC" {
                    config = index
                } else if type == "colr", try value.fourCC() == "nclx" {
                    colour = Colour(primaries: try value.u16(), transfer: try value.u16(), matrix: try value.u16(),
                                    fullRange: try value.u8() & 0x80 != 0)
                }
            }
            guard let config, let size, (1...maxTileSide).contains(size.width), (1...maxTileSide).contains(size.height) else { return nil }
            if tileSize == nil { tileSize = size }
            guard size == tileSize else { return nil }
            if configIndex[config] == nil {
                guard let (sets, tileChroma, spsColour) = try hevcParameterSets(properties[config - 1].body, tileSize: size)
                else { return nil }
                if chroma == nil { chroma = tileChroma }
                guard chroma == tileChroma else { return nil }
                configIndex[config] = parameterSets.count
                configColours[config] = spsColour
                parameterSets.append(sets)
            }
            bitstreamColours.append(configColours[config] ?? nil)
            tileParameterSets.append(configIndex[config]!)
            tileExtents.append(location.extents)
            colours.append(colour)
        }
        // Tiles that describe their colour differently: libheif's business.
        guard Set(colours.map { $0.map { [$0.primaries, $0.transfer, $0.matrix, $0.fullRange ? 1 : 0] } ?? [] }).count == 1
        else { return nil }
        guard let tileSize, let chroma else { return nil }
        // The bitstream colour: every tile's SPS read and alike where it decides (no tile nclx), else kept when
        // alike. libheif converts each tile with its own, so differing ones are its business.
        let tileColour = colours.first ?? nil
        let bitstreamColour: Colour?
        if let first = bitstreamColours.first ?? nil, bitstreamColours.allSatisfy({ $0 == first }) {
            bitstreamColour = first
        } else {
            guard tileColour != nil else { return nil }
            bitstreamColour = nil
        }
        // Matrix 12 (derived from primaries) and matrices SharePipe cannot convert: libheif's business.
        guard let colour = tileColour ?? bitstreamColour, colour.matrix != 12, HEIFTileDecoding.matrix(colour) != nil
        else { return nil }
        // The tiles cover the output; chroma subsampling never splits a tile's sample pairs.
        guard tileSize.width * columns >= size.width, tileSize.height * rows >= size.height,
              tileSize.width * (columns - 1) < size.width, tileSize.height * (rows - 1) < size.height else { return nil }
        if chroma != 3, tileSize.width % 2 != 0 { return nil }
        if chroma == 1, tileSize.height % 2 != 0 { return nil }
        return HEIFGrid(columns: columns, rows: rows, size: size, tileSize: tileSize, chroma: chroma,
                        parameterSets: parameterSets, tileParameterSets: tileParameterSets, tileExtents: tileExtents,
                        orientation: orientation, tileColour: tileColour, bitstreamColour: bitstreamColour)
    }

    /// The NAL units of an hvcC box as 4-byte length-prefixed units, its chroma_format_idc and its SPS's colour
    /// description (nil where it could not be read); nil for what
    /// this route does not decode (not 8-bit, monochrome, NAL lengths other than 4 bytes) and for a sequence
    /// parameter set whose picture is not the tile's size (up to the coding block padding, 64): libde265
    /// allocates what the SPS says, so it is checked here, before anything is decoded.
    private static func hevcParameterSets(_ body: Cursor, tileSize: PixelSize) throws -> ([UInt8], Int32, Colour?)? {
        var config = body
        guard config.left >= 23 else { return nil }
        let header = config.bytes[config.position..<(config.position + 23)].map { Int($0) }
        let chroma = header[16] & 3, lumaBits = (header[17] & 7) + 8, chromaBits = (header[18] & 7) + 8
        let lengthSize = (header[21] & 3) + 1
        guard (1...3).contains(chroma), lumaBits == 8, chromaBits == 8, lengthSize == 4 else { return nil }
        try config.skip(22)
        let arrays = try config.u8()
        var out: [UInt8] = []
        var sequences = 0
        var colour: Colour?
        for _ in 0..<arrays {
            _ = try config.u8()
            let count = try config.u16()
            for _ in 0..<count {
                let length = try config.u16()
                guard length <= config.left else { return nil }
                let unit = Array(config.bytes[config.position..<(config.position + length)])
                if unit.count >= 2, (unit[0] >> 1) & 0x3F == 33 {
                    guard let sps = sequenceParameters(unit), sps.chroma == chroma,
                          (tileSize.width...(tileSize.width + 64)).contains(sps.width),
                          (tileSize.height...(tileSize.height + 64)).contains(sps.height) else { return nil }
                    sequences += 1
                    colour = sps.colour
                }
                out += [0, 0, UInt8(length >> 8), UInt8(length & 0xFF)] + unit
                try config.skip(length)
            }
        }
        return sequences == 1 ? (out, Int32(chroma), colour) : nil
    }

    /// The coded picture size and chroma_format_idc of an HEVC sequence parameter set NAL unit (H.265 7.3.2.2).
    static func spsSize(_ unit: [UInt8]) -> (width: Int, height: Int, chroma: Int)? {
        guard let sps = sequenceParameters(unit) else { return nil }
        return (sps.width, sps.height, sps.chroma)
    }

    /// What an HEVC sequence parameter set NAL unit says about the picture (H.265 7.3.2.2, E.2.1): its coded size,
    /// chroma_format_idc, and its colour description as libde265 1.0.11 reports it for the decoded picture
    /// (`de265_get_image_colour_primaries` …): the VUI's video_full_range_flag and colour description, its
    /// defaults (2, 2, 2, limited range) where the SPS has no VUI, no video signal type or no colour
    /// description; primaries 0, 3, ≥ 11 and transfer 0, 3, ≥ 18 replaced by 2 as libde265 1.0.11 does (Display
    /// P3's 12 among them; neither decides the conversion, matrix 12 aside). `colour` is nil where the SPS cannot
    /// be read up to the colour description, or says matrix ≥ 11 (libde265 replaces it by 2, other versions may
    /// not): the caller then leaves the image to libheif rather than guess a colour.
    static func sequenceParameters(_ unit: [UInt8]) -> (width: Int, height: Int, chroma: Int, colour: Colour?)? {
        // The RBSP: emulation prevention bytes (00 00 03) removed, after the 2-byte NAL header.
        var rbsp: [UInt8] = []
        var zeros = 0
        for byte in unit.dropFirst(2) {
            if zeros >= 2 && byte == 3 { zeros = 0; continue }
            zeros = byte == 0 ? zeros + 1 : 0
            rbsp.append(byte)
        }
        var bit = 0
        func read(_ count: Int) -> Int? {
            var value = 0
            for _ in 0..<count {
                guard bit < rbsp.count * 8 else { return nil }
                value = value << 1 | Int(rbsp[bit >> 3] >> (7 - UInt8(bit & 7)) & 1)
                bit += 1
            }
            return value
        }
        func golomb() -> Int? {
            var leading = 0
            while true {
                guard let b = read(1) else { return nil }
                if b == 1 { break }
                leading += 1
                guard leading < 32 else { return nil }
            }
            guard let rest = read(leading) else { return nil }
            return (1 << leading) - 1 + rest
        }
        func signedGolomb() -> Int? {
            guard let code = golomb() else { return nil }
            return code & 1 == 1 ? (code + 1) / 2 : -(code / 2)
        }
        guard read(4) != nil, let subLayers = read(3), read(1) != nil else { return nil }
        // profile_tier_level(1, sps_max_sub_layers_minus1): 88 bits of general profile, 8 of level.
        guard read(88) != nil, read(8) != nil else { return nil }
        var profilePresent: [Bool] = [], levelPresent: [Bool] = []
        for _ in 0..<subLayers {
            guard let p = read(1), let l = read(1) else { return nil }
            profilePresent.append(p == 1)
            levelPresent.append(l == 1)
        }
        if subLayers > 0 { for _ in subLayers..<8 { guard read(2) != nil else { return nil } } }
        for i in 0..<subLayers {
            if profilePresent[i] { guard read(88) != nil else { return nil } }
            if levelPresent[i] { guard read(8) != nil else { return nil } }
        }
        guard golomb() != nil, let chroma = golomb() else { return nil }
        if chroma == 3 { guard read(1) != nil else { return nil } }
        guard let width = golomb(), let height = golomb() else { return nil }

        /// The rest of the SPS up to the VUI's colour description; nil on anything out of H.265's ranges.
        func colour() -> Colour? {
            guard let window = read(1) else { return nil }
            if window == 1 { for _ in 0..<4 { guard golomb() != nil else { return nil } } }
            guard golomb() != nil, golomb() != nil,                  // bit_depth_luma/chroma_minus8
                  let pocBits = golomb(), pocBits <= 12,             // log2_max_pic_order_cnt_lsb_minus4
                  let ordering = read(1) else { return nil }
            for _ in (ordering == 1 ? 0 : subLayers)...subLayers {   // max_dec_pic_buffering, num_reorder, latency
                for _ in 0..<3 { guard golomb() != nil else { return nil } }
            }
            for _ in 0..<6 { guard golomb() != nil else { return nil } }  // block sizes, transform hierarchy depths
            guard let scaling = read(1) else { return nil }
            if scaling == 1 {
                guard let present = read(1) else { return nil }
                if present == 1 {
                    // scaling_list_data() (7.3.4)
                    for sizeID in 0..<4 {
                        for _ in stride(from: 0, to: 6, by: sizeID == 3 ? 3 : 1) {
                            guard let predicted = read(1) else { return nil }
                            if predicted == 0 {
                                guard golomb() != nil else { return nil }   // scaling_list_pred_matrix_id_delta
                            } else {
                                if sizeID > 1 { guard signedGolomb() != nil else { return nil } }  // dc_coef_minus8
                                for _ in 0..<min(64, 1 << (4 + (sizeID << 1))) { guard signedGolomb() != nil else { return nil } }
                            }
                        }
                    }
                }
            }
            guard read(1) != nil, read(1) != nil, let pcm = read(1) else { return nil }   // amp, sao, pcm
            if pcm == 1 { guard read(8) != nil, golomb() != nil, golomb() != nil, read(1) != nil else { return nil } }
            // st_ref_pic_set(i) (7.3.7), each set's delta POCs derived (7.4.8) for the next one's prediction.
            guard let setCount = golomb(), setCount <= 64 else { return nil }
            var sets: [(negative: [Int], positive: [Int])] = []
            for index in 0..<setCount {
                let predicted = index == 0 ? 0 : read(1)
                guard let predicted else { return nil }
                if predicted == 1 {
                    let reference = sets[index - 1]   // delta_idx_minus1 is only in slice headers
                    guard let sign = read(1), let magnitude = golomb(), magnitude < 1 << 15 else { return nil }
                    let deltaRps = (1 - 2 * sign) * (magnitude + 1)
                    let count = reference.negative.count + reference.positive.count
                    var use: [Bool] = []
                    for _ in 0...count {
                        guard let used = read(1) else { return nil }
                        if used == 1 { use.append(true) } else {
                            guard let delta = read(1) else { return nil }
                            use.append(delta == 1)
                        }
                    }
                    let negativeCount = reference.negative.count
                    var negative: [Int] = [], positive: [Int] = []
                    for j in stride(from: reference.positive.count - 1, through: 0, by: -1) {
                        let poc = reference.positive[j] + deltaRps
                        if poc < 0 && use[negativeCount + j] { negative.append(poc) }
                    }
                    if deltaRps < 0 && use[count] { negative.append(deltaRps) }
                    for j in 0..<negativeCount {
                        let poc = reference.negative[j] + deltaRps
                        if poc < 0 && use[j] { negative.append(poc) }
                    }
                    for j in stride(from: negativeCount - 1, through: 0, by: -1) {
                        let poc = reference.negative[j] + deltaRps
                        if poc > 0 && use[j] { positive.append(poc) }
                    }
                    if deltaRps > 0 && use[count] { positive.append(deltaRps) }
                    for j in 0..<reference.positive.count {
                        let poc = reference.positive[j] + deltaRps
                        if poc > 0 && use[negativeCount + j] { positive.append(poc) }
                    }
                    guard negative.count <= 16, positive.count <= 16 else { return nil }
                    sets.append((negative, positive))
                } else {
                    guard let negativeCount = golomb(), negativeCount <= 16,
                          let positiveCount = golomb(), positiveCount <= 16 else { return nil }
                    var negative: [Int] = [], positive: [Int] = []
                    for _ in 0..<negativeCount {
                        guard let delta = golomb(), delta < 1 << 15, read(1) != nil else { return nil }
                        negative.append((negative.last ?? 0) - (delta + 1))
                    }
                    for _ in 0..<positiveCount {
                        guard let delta = golomb(), delta < 1 << 15, read(1) != nil else { return nil }
                        positive.append((positive.last ?? 0) + (delta + 1))
                    }
                    sets.append((negative, positive))
                }
            }
            guard let longTerm = read(1) else { return nil }
            if longTerm == 1 {
                guard let count = golomb(), count <= 32 else { return nil }
                for _ in 0..<count { guard read(pocBits + 4) != nil, read(1) != nil else { return nil } }
            }
            // sps_temporal_mvp_enabled_flag, strong_intra_smoothing_enabled_flag, vui_parameters_present_flag
            guard read(1) != nil, read(1) != nil, let vui = read(1) else { return nil }
            var described = Colour(primaries: 2, transfer: 2, matrix: 2, fullRange: false)
            if vui == 1 {
                guard let aspect = read(1) else { return nil }
                if aspect == 1 {
                    guard let idc = read(8) else { return nil }
                    if idc == 255 { guard read(16) != nil, read(16) != nil else { return nil } }
                }
                guard let overscan = read(1) else { return nil }
                if overscan == 1 { guard read(1) != nil else { return nil } }
                guard let signalType = read(1) else { return nil }
                if signalType == 1 {
                    guard read(3) != nil, let fullRange = read(1), let description = read(1) else { return nil }
                    described.fullRange = fullRange == 1
                    if description == 1 {
                        guard let primaries = read(8), let transfer = read(8), let matrix = read(8) else { return nil }
                        guard matrix < 11 else { return nil }
                        described.primaries = [0, 3].contains(primaries) || primaries >= 11 ? 2 : primaries
                        described.transfer = [0, 3].contains(transfer) || transfer >= 18 ? 2 : transfer
                        described.matrix = matrix
                    }
                }
            }
            return described
        }
        return (width, height, chroma, colour())
    }

    /// The orientation of applying `first` and then `second` to a picture.
    static func compose(_ first: Orientation, _ second: Orientation) -> Orientation {
        // Follow three labelled pixels of a 3×2 picture through both transforms.
        let probe = Bitmap(size: PixelSize(width: 3, height: 2), layout: .gray, pixels: [0, 1, 2, 3, 4, 5])
        let result = probe.applying(first).applying(second)
        return Orientation.allCases.first { probe.applying($0) == result } ?? .up
    }
}

/// Random access to a source's bytes (pread on the file; slices of bytes in memory) for the grid route: the
/// `meta` box, the grid descriptor, one tile's coded data at a time.
final class HEIFFileBytes {
    private let descriptor: Int32
    private let memory: [UInt8]
    let size: Int
    let name: String

    private init(name: String, descriptor: Int32, memory: [UInt8], size: Int) {
        self.name = name
        self.descriptor = descriptor
        self.memory = memory
        self.size = size
    }

    /// Bytes in memory.
    convenience init(memory: [UInt8], name: String = ImageSource.bytes([]).displayName) {
        self.init(name: name, descriptor: -1, memory: memory, size: memory.count)
    }

    /// The file (opened for reading; regular files only) or the bytes of `source`.
    convenience init(_ source: ImageSource) throws {
        switch source {
        case .bytes(let bytes):
            self.init(memory: bytes, name: source.displayName)
        case .file(let path):
            let opened = open(path, O_RDONLY | O_CLOEXEC)
            guard opened >= 0 else { throw SharePipeError.unreadable(file: path, reason: FileIO.errnoText()) }
            var info = stat()
            guard fstat(opened, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
                _ = close(opened)
                throw SharePipeError.unreadable(file: path, reason: "not a regular file")
            }
            self.init(name: path, descriptor: opened, memory: [], size: Int(info.st_size))
        }
    }

    deinit { if descriptor >= 0 { _ = close(descriptor) } }

    /// `count` bytes at `offset`; throws `corrupt` past the end of the file.
    func read(at offset: Int, count: Int) throws -> [UInt8] {
        guard offset >= 0, count >= 0, offset <= size, count <= size - offset else {
            throw SharePipeError.corrupt(file: name, reason: "HEIF item data at \(offset) (+\(count)) lies past the end of the file")
        }
        if descriptor < 0 { return Array(memory[offset..<(offset + count)]) }
        var out = [UInt8](repeating: 0, count: count)
        try out.withUnsafeMutableBytes { buffer in
            var done = 0
            while done < count {
                let got = pread(descriptor, buffer.baseAddress! + done, count - done, off_t(offset + done))
                if got < 0 && errno == EINTR { continue }
                guard got > 0 else {
                    throw SharePipeError.unreadable(file: name, reason: got < 0 ? FileIO.errnoText() : "file shrank while reading")
                }
                done += got
            }
        }
        return out
    }

    /// Appends `count` bytes at `offset` to `out`.
    func append(at offset: Int, count: Int, to out: inout [UInt8]) throws {
        out += try read(at: offset, count: count)
    }

    /// The body of the top-level `meta` box after its version and flags, nil when there is none or it is
    /// larger than `maxBytes`.
    func metaBody(maxBytes: Int) throws -> [UInt8]? {
        var position = 0
        while position <= size - 8 {
            let header = try read(at: position, count: 8)
            var boxSize = header[0..<4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: header[4..<8], as: UTF8.self)
            var headerSize = 8
            if boxSize == 1 {
                guard position <= size - 16 else { return nil }
                boxSize = try read(at: position + 8, count: 8).reduce(0) { ($0 << 8) | Int($1) }
                headerSize = 16
            } else if boxSize == 0 {
                boxSize = size - position
            }
            guard boxSize >= headerSize, boxSize <= size - position else { return nil }
            if type == "meta" {
                let body = boxSize - headerSize
                guard body >= 4, body - 4 <= maxBytes else { return nil }
                return try read(at: position + headerSize + 4, count: body - 4)
            }
            position += boxSize
        }
        return nil
    }
}
