import CSharePipe

/// The grid route: a `grid` primary image of HEVC tiles (`HEIFGrid`) decoded one row of tiles at a time with
/// libde265 (`sp_hevc_decode_tiles`), each row of tiles converted to RGB and streamed into the resampler, so
/// only one row of tiles (4032×512 at 4:2:0: 3.1 MB) and the decoders' own pictures are alive, never the
/// whole image's planes. The picture is resampled as coded and `irot`/`imir` are applied to the small result.
///
/// The samples are those libheif's route gets (the same libde265 decodes the same tiles; libheif pastes them
/// into one image without changing them) and go through the same `HEIFRowConverter`, so an unrotated output
/// is identical to the libheif route's; a rotated one differs only by resampling in the other order.
enum HEIFTileDecoding {
    /// Tiles decoded by one call into libde265 (`sp_hevc_decode_tiles`); the job's checkpoint runs between
    /// calls, so a wide row of tiles (up to 128 of 512 pixels) does not hold off a deadline or a cancellation.
    static let tilesPerCall = 16

    /// The chroma plane size for `luma` samples at chroma_format_idc `chroma` (the shim's rule).
    static func chromaSize(_ luma: PixelSize, chroma: Int32) -> PixelSize {
        PixelSize(
            width: Int(sp_hevc_chroma_width(chroma, Int32(luma.width))),
            height: Int(sp_hevc_chroma_height(chroma, Int32(luma.height))))
    }

    /// The row-of-tiles planes the route holds: 8-bit luma and two chroma planes, the output width wide.
    static func rowPlaneBytes(width: Int, tileHeight: Int, chroma: Int32) -> Int {
        width * tileHeight + 2 * chromaSize(PixelSize(width: width, height: tileHeight), chroma: chroma).area
    }

    /// libde265's memory for one tile decode (libde265 1.0.11, 512×512 4:2:0 tiles from x265, massif): the
    /// picture (1.5 bytes per pixel) and the per-block metadata, 1.44 MB or 5.5 bytes per tile pixel; priced at 6
    /// plus the tile's coded data.
    static func decoderBytes(tile: PixelSize) -> Int { tile.area * 6 + (256 << 10) }

    /// What the route holds in all while a row of tiles is decoded (metered); for a single image, what libde265
    /// holds while its picture is read (`imageDecoderBytes`).
    static func decodeMemory(_ grid: HEIFGrid) -> Int {
        if grid.isSingleImage { return imageDecoderBytes(grid) }
        return rowPlaneBytes(width: grid.size.width, tileHeight: grid.tileSize.height, chroma: grid.chroma)
            + min(HEIFDecoding.decodingThreads, grid.columns) * decoderBytes(tile: grid.tileSize)
    }

    /// libde265's memory for a single image decoded whole and read in place: its picture (8-bit planes, rows
    /// padded), its per-block metadata (measured with libde265 1.0.11 on a 4032×3024 4:2:0 x265 image: the
    /// decoder grew by 36.3 MB, 18.3 MB of it the picture, so 1.5 bytes per pixel beside it; priced at 2), a
    /// fixed 1 MiB, and the coded data twice (the caller's copy and libde265's NAL queue).
    static func imageDecoderBytes(_ grid: HEIFGrid) -> Int {
        let chromaPlane = chromaSize(grid.size, chroma: grid.chroma)
        let picture = (grid.size.width + 64) * grid.size.height + 2 * (chromaPlane.width + 64) * chromaPlane.height
        return picture + 2 * grid.size.area + (1 << 20) + 2 * codedBytes(grid, tile: 0)
    }

    /// The bytes of tile `index`'s parameter sets and coded data.
    static func codedBytes(_ grid: HEIFGrid, tile index: Int) -> Int {
        grid.parameterSets[grid.tileParameterSets[index]].count + grid.tileExtents[index].reduce(0) { $0 + $1.length }
    }

    /// The matrix and range a tile of `colour` (`HEIFGrid.colour`) is converted with, as libheif 1.15 converts
    /// grid tiles (each to RGB before it is pasted): the tile items' nclx, else the tile's SPS VUI (libde265's
    /// defaults without one: matrix 2, limited range). nil for matrix 12 (derived from primaries) and matrices
    /// SharePipe cannot convert: `HEIFGrid.plan` leaves those to libheif.
    static func matrix(_ colour: HEIFGrid.Colour) -> YCbCrMatrix? {
        var nclx = sp_heif_nclx()
        nclx.present = 1
        nclx.color_primaries = Int32(colour.primaries)
        nclx.transfer_characteristics = Int32(colour.transfer)
        nclx.matrix_coefficients = Int32(colour.matrix)
        nclx.full_range = colour.fullRange ? 1 : 0
        guard colour.matrix != 12 else { return nil }
        return YCbCrMatrix(nclx: nclx)
    }

    /// Decodes `grid` from `file` and resamples it to `target` (as displayed, at most the displayed size).
    /// Everything that would send the grid to libheif is settled by `HEIFGrid.plan`, so nothing here does: a
    /// tile libde265 fails on is `corrupt` (libheif decodes the same tiles with the same libde265 and would fail
    /// on it too), naming the file and the tile.
    static func render(
        _ grid: HEIFGrid, file: HEIFFileBytes, target: PixelSize,
        limits: ImageLimits, meter: PixelMemoryMeter
    ) throws -> RenderedImage {
        let name = file.name
        let estimate = decodeMemory(grid)
        if estimate > limits.maxDecoderMemory {
            throw SharePipeError.tooLarge(
                file: name,
                exceeded: ExceededLimit(
                    .decoderMemory, found: estimate,
                    limit: limits.maxDecoderMemory, size: grid.displayedSize,
                    detail: "decoding this HEIF grid"))
        }
        if grid.isSingleImage {
            return try renderImage(grid, file: file, target: target, meter: meter, estimate: estimate)
        }
        let width = grid.size.width, tileWidth = grid.tileSize.width, tileHeight = grid.tileSize.height
        let chromaPlane = chromaSize(PixelSize(width: width, height: tileHeight), chroma: grid.chroma)
        let chromaWidth = chromaPlane.width, chromaHeight = chromaPlane.height
        let xShift = grid.chroma == 3 ? 0 : 1

        // Resampled as coded; the transforms turn the small result.
        let codedTarget = codedTarget(grid, target)

        meter.allocate(estimate)
        defer { meter.release(estimate) }
        var luma = [UInt8](repeating: 0, count: width * tileHeight)
        var cb = [UInt8](repeating: 0, count: chromaWidth * chromaHeight)
        var cr = [UInt8](repeating: 0, count: chromaWidth * chromaHeight)
        var resampler = LanczosResampler(from: grid.size, to: codedTarget, layout: .rgb, meter: meter)
        var row = [Float](repeating: 0, count: width * 3)
        guard let colour = grid.colour, let matrix = matrix(colour) else {
            throw SharePipeError.internalError(file: name, reason: "HEIF grid colour the plan did not settle")
        }
        meter.allocate(row.count * MemoryLayout<Float>.stride)
        defer { meter.release(row.count * MemoryLayout<Float>.stride) }
        // On an error the resampler's bytes leave the meter too.
        defer { resampler.discard() }

        for tileRow in 0..<grid.rows {
            // A row of tiles is decoded `tilesPerCall` tiles at a time, with a check before each call.
            let top = tileRow * tileHeight
            let rowsHere = min(tileHeight, grid.size.height - top)
            // The row's coded data: each tile's parameter sets, then its own NAL units.
            var coded: [[UInt8]] = []
            for column in 0..<grid.columns {
                coded.append(try codedData(grid, tile: tileRow * grid.columns + column, file: file))
            }
            var message = shimMessageBuffer()
            var decoded: [sp_hevc_tile] = []
            let status: sp_status = try luma.withUnsafeMutableBufferPointer { y in
                try cb.withUnsafeMutableBufferPointer { cbPlane in
                    try cr.withUnsafeMutableBufferPointer { crPlane in
                        try withUnsafeBufferPointers(ofEach: coded) { buffers in
                            var tiles = (0..<grid.columns).map { column -> sp_hevc_tile in
                                let left = column * tileWidth
                                var tile = sp_hevc_tile()
                                tile.data = buffers[column].baseAddress
                                tile.length = coded[column].count
                                tile.width = Int32(tileWidth)
                                tile.height = Int32(tileHeight)
                                tile.chroma = grid.chroma
                                tile.y = y.baseAddress! + left
                                tile.cb = cbPlane.baseAddress! + (left >> xShift)
                                tile.cr = crPlane.baseAddress! + (left >> xShift)
                                tile.y_stride = Int32(width)
                                tile.c_stride = Int32(chromaWidth)
                                tile.copy_width = Int32(min(tileWidth, width - left))
                                tile.copy_height = Int32(rowsHere)
                                tile.index = Int32(tileRow * grid.columns + column)
                                return tile
                            }
                            var status = SP_OK
                            var start = 0
                            while start < tiles.count, status == SP_OK {
                                try meter.checkCancellation()
                                let count = min(Self.tilesPerCall, tiles.count - start)
                                status = tiles.withUnsafeMutableBufferPointer { all in
                                    sp_hevc_decode_tiles(
                                        all.baseAddress! + start, Int32(count), Int32(HEIFDecoding.decodingThreads),
                                        &message)
                                }
                                start += count
                            }
                            decoded = Array(tiles[..<start])
                            return status
                        }
                    }
                }
            }
            try checkDecoded(status, message, what: "HEIF grid", file: name)
            for tile in decoded {
                try checkColour(
                    grid,
                    decoded: decodedColour(
                        tile.color_primaries, tile.transfer_characteristics, tile.matrix_coefficients,
                        tile.full_range),
                    what: "grid tile \(tile.index)", file: name)
            }
            let rowMatrix = matrix
            try withUnsafeBufferPointers(luma, cb, cr) { y, cbPlane, crPlane in
                var buffers = sp_hevc_planes()
                buffers.y = y.baseAddress
                buffers.cb = cbPlane.baseAddress
                buffers.cr = crPlane.baseAddress
                buffers.y_stride = Int32(width)
                (buffers.cb_stride, buffers.cr_stride) = (Int32(chromaWidth), Int32(chromaWidth))
                (buffers.chroma_width, buffers.chroma_height) = (Int32(chromaWidth), Int32(chromaHeight))
                // The whole buffer's height: the converter infers the subsampling from it.
                let converter = converter(
                    buffers, size: PixelSize(width: width, height: tileHeight), chroma: grid.chroma, matrix: rowMatrix)
                try row.withUnsafeMutableBufferPointer { buffer in
                    for y in 0..<rowsHere {
                        converter.convertRow(y, into: buffer.baseAddress!)
                        try resampler.push(row: UnsafeBufferPointer(buffer))
                    }
                }
            }
        }
        return oriented(try resampler.finish(), grid: grid, meter: meter)
    }

    /// The size to resample to, as coded: `target` (as displayed, at most the displayed size) before the
    /// grid's transforms.
    private static func codedTarget(_ grid: HEIFGrid, _ target: PixelSize) -> PixelSize {
        let shown = PixelSize(
            width: min(target.width, grid.displayedSize.width), height: min(target.height, grid.displayedSize.height))
        return grid.orientation.swapsAxes ? shown.transposed : shown
    }

    /// The row converter of 8-bit planes as libde265 decodes them (`size`: the luma plane's).
    private static func converter(
        _ decoded: sp_hevc_planes, size: PixelSize, chroma: Int32, matrix: YCbCrMatrix
    ) -> HEIFRowConverter {
        var planes = sp_heif_planes()
        planes.width = Int32(size.width)
        planes.height = Int32(size.height)
        planes.chroma = chroma
        planes.bits = 8
        planes.chroma_bits = 8
        planes.y = decoded.y
        planes.cb = decoded.cb
        planes.cr = decoded.cr
        planes.y_stride = decoded.y_stride
        planes.cb_stride = decoded.cb_stride
        planes.cr_stride = decoded.cr_stride
        planes.chroma_width = decoded.chroma_width
        planes.chroma_height = decoded.chroma_height
        return HEIFRowConverter(planes: planes, matrix: matrix, premultiplied: false)
    }

    /// The colour a decoded picture says it has (libde265's VUI values).
    private static func decodedColour(_ primaries: Int32, _ transfer: Int32, _ matrix: Int32, _ fullRange: Int32)
        -> HEIFGrid.Colour
    {
        HEIFGrid.Colour(
            primaries: Int(primaries), transfer: Int(transfer), matrix: Int(matrix), fullRange: fullRange != 0)
    }

    /// The small result turned by the grid's transforms.
    private static func oriented(_ bitmap: Bitmap, grid: HEIFGrid, meter: PixelMemoryMeter) -> RenderedImage {
        guard grid.orientation != .up else { return RenderedImage(bitmap: bitmap, warnings: []) }
        return RenderedImage(
            bitmap: meter.holding(bitmap.byteCount) { bitmap.applying(grid.orientation) }, warnings: [])
    }

    /// Tile `index`'s coded data: its parameter sets, then its own NAL units, read from `file`.
    static func codedData(_ grid: HEIFGrid, tile index: Int, file: HEIFFileBytes) throws -> [UInt8] {
        var data = grid.parameterSets[grid.tileParameterSets[index]]
        let start = data.count
        for extent in grid.tileExtents[index] { try file.append(at: extent.offset, count: extent.length, to: &data) }
        // The plan found no parameter sets in the tile's data (they would replace the checked hvcC ones);
        // read again here, one would mean the file changed since.
        var at = start
        while at + 5 <= data.count {
            let length = data[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) }
            if (32...34).contains(Int(data[at + 4] >> 1) & 0x3F) {
                throw SharePipeError.unreadable(
                    file: file.name,
                    reason: "HEIF \(grid.isSingleImage ? "image" : "tile \(index)") "
                        + "carries its own parameter sets (the file changed while it was read)")
            }
            at += 4 + length
        }
        return data
    }

    /// A libde265 decode's status: a picture libde265 cannot decode is corrupt (libheif's libde265 plugin would
    /// fail on it too), named `what` ("HEIF grid", "HEIF"); other failures as `checkShim` maps them.
    private static func checkDecoded(_ status: sp_status, _ message: [CChar], what: String, file: String) throws {
        if status == SP_ERR_LIBRARY {
            throw SharePipeError.corrupt(file: file, phase: .decode, reason: "\(what) \(shimText(message))")
        }
        try checkShim(status, message, file: file, phase: .decode)
    }

    /// The decoded picture's matrix and range (what the conversion uses) are the SPS's the plan read (the
    /// hvcC's, the only parameter sets the tiles have); anything else would be a parse of ours libde265
    /// disagrees with: never a guessed colour. (Primaries and transfer: libde265 versions replace different
    /// values, and neither changes the conversion.)
    private static func checkColour(_ grid: HEIFGrid, decoded vui: HEIFGrid.Colour, what: String, file: String) throws {
        guard let planned = grid.bitstreamColour else { return }
        guard vui.matrix == planned.matrix, vui.fullRange == planned.fullRange else {
            throw SharePipeError.internalError(
                file: file, reason: "HEIF \(what) decodes with colour \(vui), its SPS says \(planned)")
        }
    }

    /// A single HEVC image (`HEIFGrid.isSingleImage`): decoded whole by one libde265 decoder, its rows converted
    /// straight from libde265's picture (no copy of the planes) and pushed into the resampler; the transforms
    /// turn the small result. `estimate` (metered by the caller) covers the decoder and its picture.
    private static func renderImage(
        _ grid: HEIFGrid, file: HEIFFileBytes, target: PixelSize, meter: PixelMemoryMeter,
        estimate: Int
    ) throws -> RenderedImage {
        let name = file.name
        guard let colour = grid.colour, let matrix = matrix(colour) else {
            throw SharePipeError.internalError(file: name, reason: "HEIF image colour the plan did not settle")
        }
        let codedTarget = codedTarget(grid, target)
        meter.allocate(estimate)
        defer { meter.release(estimate) }
        var image: OpaquePointer?
        var decoded = sp_hevc_planes()
        var message = shimMessageBuffer()
        // Our copy of the coded data is gone before the decode: libde265 keeps its own copy of each NAL unit.
        var status: sp_status = try codedData(grid, tile: 0, file: file).withUnsafeBufferPointer { data in
            sp_hevc_image_open(
                data.baseAddress, data.count, Int32(grid.size.width), Int32(grid.size.height), grid.chroma,
                &image, &message)
        }
        defer { sp_hevc_image_free(image) }
        if status == SP_OK { status = sp_hevc_image_decode(image, &decoded, &message) }
        try checkDecoded(status, message, what: "HEIF", file: name)
        try checkColour(
            grid,
            decoded: decodedColour(
                decoded.color_primaries, decoded.transfer_characteristics, decoded.matrix_coefficients,
                decoded.full_range),
            what: "image", file: name)
        let converter = converter(decoded, size: grid.size, chroma: grid.chroma, matrix: matrix)
        return oriented(
            try converter.resampled(size: grid.size, to: codedTarget, meter: meter), grid: grid, meter: meter)
    }
}
