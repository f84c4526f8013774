// The grid route's reading of the `meta` box: items, locations, references, properties, the grid descriptor
// and each tile's hvcC (`HEIFGrid.plan` calls `parse`).
extension HEIFGrid {
    /// Parses the `meta` body (after its version and flags). nil: not a grid for this route. `read` fetches
    /// file bytes (the grid descriptor when it is stored in `mdat`).
    static func parse(meta: [UInt8], fileSize: Int, read: (Int, Int) throws -> [UInt8]) throws -> HEIFGrid? {
        let table = try HEIFItemTable.parse(meta: meta)
        // Items without a type, locations in an iloc this route does not read: libheif's business.
        guard !table.hasUntypedItems, !table.locationsUnreadable else { return nil }
        let handler = table.handler, primary = table.primary, itemTypes = table.itemTypes
        let locations = table.locations, references = table.references, properties = table.properties
        let associations = table.associations, idat = table.idat

        guard handler == "pict", let primary, ["grid", "hvc1"].contains(itemTypes[primary]) else { return nil }
        // A single HEVC image is a grid of one tile: the primary item itself, its transforms and its coded data.
        let singleImage = itemTypes[primary] == "hvc1"
        // One dimg reference from the grid to its tiles. Other items that refer to the grid are never decoded:
        // Exif (cdsc), a thumbnail (thmb), depth maps and gain maps (auxl); an alpha image (auxl too) sends the
        // image to libheif, which the caller learns from libheif's has_alpha.
        let tileLists = references.filter { $0.type == "dimg" && $0.from == primary }
        let tileIDs: [Int]
        if singleImage {
            guard tileLists.isEmpty else { return nil }
            tileIDs = [primary]
        } else {
            guard tileLists.count == 1, let list = tileLists.first?.to, !list.isEmpty else { return nil }
            tileIDs = list
        }

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
        guard
            let gridItemProperties = knownProperties(
                of: primary, allowed: singleImage ? gridProperties.union(tileProperties) : gridProperties)
        else { return nil }
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

        // The grid descriptor (a single image: one tile of its own size).
        let rows: Int, columns: Int, size: PixelSize
        if singleImage {
            guard let gridSize else { return nil }
            (rows, columns, size) = (1, 1, gridSize)
        } else {
            guard let described = try gridDescriptor(locations[primary], idat: idat, fileSize: fileSize, read: read),
                tileIDs.count == described.rows * described.columns
            else { return nil }
            (rows, columns, size) = described
            if let gridSize, gridSize != size { return nil }
        }

        // The tiles: hvc1, one size, one chroma format, 8 bits, in the file.
        var parameterSets: [[UInt8]] = []
        var configIndex: [Int: Int] = [:]  // property index → parameterSets index
        var tileParameterSets: [Int] = []
        var tileExtents: [[Extent]] = []
        var tileSize: PixelSize?
        var chroma: Int32?
        var colours: [Colour?] = []
        var configColours: [Int: Colour?] = [:]  // property index → its SPS's colour (nil: not read)
        var bitstreamColours: [Colour?] = []
        for id in tileIDs {
            guard itemTypes[id] == "hvc1", let location = locations[id], location.method == 0,
                !location.extents.isEmpty
            else { return nil }
            for extent in location.extents {
                guard extent.length > 0, extent.offset <= fileSize - extent.length else { return nil }
            }
            var config: Int?
            var size: PixelSize?
            var colour: Colour?
            guard
                let tileItemProperties = knownProperties(
                    of: id, allowed: singleImage ? gridProperties.union(tileProperties) : tileProperties)
            else { return nil }
            for (type, body, index) in tileItemProperties {
                var value = body
                if type == "ispe" {
                    _ = try value.fullBoxHeader()
                    size = PixelSize(width: try value.u32(), height: try value.u32())
                } else if type == "hvcC" {
                    config = index
                } else if type == "colr", try value.fourCC() == "nclx" {
                    colour = Colour(
                        primaries: try value.u16(), transfer: try value.u16(), matrix: try value.u16(),
                        fullRange: try value.u8() & 0x80 != 0)
                }
            }
            guard let config, let size, (1...maxTileSide).contains(size.width), (1...maxTileSide).contains(size.height)
            else { return nil }
            if tileSize == nil { tileSize = size }
            guard size == tileSize else { return nil }
            if configIndex[config] == nil {
                guard
                    let (sets, tileChroma, spsColour) = try hevcParameterSets(
                        properties[config - 1].body, tileSize: size)
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
        guard
            Set(colours.map { $0.map { [$0.primaries, $0.transfer, $0.matrix, $0.fullRange ? 1 : 0] } ?? [] }).count
                == 1
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
            tileSize.width * (columns - 1) < size.width, tileSize.height * (rows - 1) < size.height
        else { return nil }
        if chroma != 3, tileSize.width % 2 != 0 { return nil }
        if chroma == 1, tileSize.height % 2 != 0 { return nil }
        return HEIFGrid(
            columns: columns, rows: rows, size: size, tileSize: tileSize, chroma: chroma,
            parameterSets: parameterSets, tileParameterSets: tileParameterSets, tileExtents: tileExtents,
            orientation: orientation, tileColour: tileColour, bitstreamColour: bitstreamColour,
            isSingleImage: singleImage)
    }

    /// The grid descriptor of the grid item at `location` (in the file, or in `idat`): rows, columns and the
    /// output size; nil when it cannot be read.
    private static func gridDescriptor(
        _ location: HEIFItemTable.Location?, idat: Cursor?, fileSize: Int,
        read: (Int, Int) throws -> [UInt8]
    ) throws -> (rows: Int, columns: Int, size: PixelSize)? {
        guard let gridLocation = location else { return nil }
        var descriptorBytes: [UInt8] = []
        switch gridLocation.method {
        case 0:
            for extent in gridLocation.extents {
                guard extent.length > 0, extent.length <= 64, extent.offset <= fileSize - extent.length else {
                    return nil
                }
                descriptorBytes += try read(extent.offset, extent.length)
            }
        case 1:
            guard let idat else { return nil }
            for extent in gridLocation.extents {
                guard extent.length > 0, extent.length <= 64, extent.offset <= idat.left - extent.length else {
                    return nil
                }
                descriptorBytes +=
                    idat.bytes[(idat.position + extent.offset)..<(idat.position + extent.offset + extent.length)]
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
        guard size.width > 0, size.height > 0 else { return nil }
        return (rows, columns, size)
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
                        (tileSize.height...(tileSize.height + 64)).contains(sps.height)
                    else { return nil }
                    sequences += 1
                    colour = sps.colour
                }
                out += [0, 0, UInt8(length >> 8), UInt8(length & 0xFF)] + unit
                try config.skip(length)
            }
        }
        return sequences == 1 ? (out, Int32(chroma), colour) : nil
    }
}

extension HEIFGrid {
    /// The number of coded images the primary item of a HEIF or AVIF `meta` body (after its version and
    /// flags) is made of: its `dimg` references when it is a grid (or an overlay), else 1. Reads `pitm` and
    /// `iref` only; a body it cannot read counts as 1 (the decoders refuse it later).
    static func declaredTileCount(meta: [UInt8]) -> Int {
        var cursor = Cursor(meta)
        var primary: Int?
        var derived: [Int: Int] = [:]
        do {
            while cursor.left >= 8 {
                var (type, body) = try cursor.box()
                switch type {
                case "pitm":
                    let (version, _) = try body.fullBoxHeader()
                    primary = version == 0 ? try body.u16() : try body.u32()
                case "iref":
                    let (version, _) = try body.fullBoxHeader()
                    while body.left >= 8 {
                        var (referenceType, reference) = try body.box()
                        guard referenceType == "dimg" else { continue }
                        let from = version == 0 ? try reference.u16() : try reference.u32()
                        derived[from, default: 0] += try reference.u16()
                    }
                default:
                    break
                }
            }
        } catch {
            return 1
        }
        return primary.flatMap { derived[$0] }.map { max($0, 1) } ?? 1
    }

    /// `declaredTileCount(meta:)` of `file`'s `meta` box (at most `maxBytes` read), 1 without one.
    static func declaredTileCount(_ file: HEIFFileBytes, maxBytes: Int) throws -> Int {
        guard let meta = try file.metaBody(maxBytes: maxBytes) else { return 1 }
        return declaredTileCount(meta: meta)
    }
}
