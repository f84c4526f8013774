import CSharePipe

/// Writes PNGs with libpng: 8-bit, non-interlaced, in the smallest lossless stored form the pixels allow,
/// with the source's colour and physical chunks and the kept metadata.
///
/// Stored form: alpha that is 255 everywhere is dropped; RGB whose channels are all equal becomes gray; a
/// colour image of at most 256 distinct colours (alpha included) becomes a 1/2/4/8-bit palette with tRNS.
/// The colour profile constrains this: libpng refuses an RGB profile on a gray PNG and a gray profile on a
/// colour one, so neither reduction crosses it.
///
/// `EncodeSettings.effort` is the zlib level (0...9). Below 9, truecolour and gray rows all get one filter
/// type, the one whose encode of a sample of the image is smallest (`sp_png_choose_filter`), and palette
/// rows no filter (PNG spec, 12.8) at zlib 3 or more (`paletteLevel`). At 9 — the strongest setting, used when the default does not fit a byte
/// limit — two filter strategies are encoded and the smaller wins: the sampled filter (palette: none) and
/// libpng's per-row heuristic.
struct PNGEncoder: ImageEncoder {
    var format: ImageFormat { .png }
    /// The zlib level of a first attempt. With one filter for the image chosen on a sample, zlib 1 makes
    /// photos smaller than libpng's per-row heuristic at zlib 3 did, in about half the instructions: the 30
    /// RGBA and RGB PNGs of bench/compare's batch at 1620×1080, 95.7 MB against 97.0 MB; one of them
    /// 855 M instructions against 1,785 M (callgrind; libpng 1.6.39, zlib 1.2.13; zlib 3 with the same
    /// filter: 93.9 MB, 1,125 M). Where the byte limit needs more, the ladder goes on to `strongestEffort`.
    static let defaultEffort = 1
    /// The lowest zlib level for palette rows: one byte a pixel, mostly drawn pictures, where zlib 1 costs
    /// 15–20 % over zlib 3 (TestImages: lenient/png-hp-srgb-1200.png 10,675 → 12,300 B, heif/alpha.png
    /// 471 → 567 B) and saves little time.
    static let paletteLevel = 3
    /// The strongest lossless setting.
    static let strongestEffort = 9

    /// Colour and physical chunks of the source (`ImageInfo.pngStructuralChunks`), written again.
    var structuralChunks: [PNGChunk] = []
    /// Whether the pixels were turned a quarter turn since the chunks were read (pHYs swaps x and y).
    var swapsAxes = false

    /// An encoder that writes no source chunks.
    init() {}

    /// An encoder that carries the source's colour and physical chunks into the output, with pHYs adjusted
    /// to the orientation that was applied to the pixels.
    init(preserving info: ImageInfo) {
        structuralChunks = info.pngStructuralChunks
        swapsAxes = info.orientation.swapsAxes
    }

    func encode(_ bitmap: Bitmap, settings: EncodeSettings, metadata: [MetadataBlock]) throws -> [UInt8] {
        var profile: [UInt8]?
        for case .icc(let bytes) in metadata { profile = bytes; break }
        let image = PNGStoredImage(reducing: bitmap, profileColorSpace: profile.flatMap(ICCProfile.colorSpace))
        let chunks =
            structuralChunks.map { (orientedForOutput($0), true) }
            + PNGMetadataChunks.chunks(for: metadata, imageDataChanged: true).map { ($0, false) }
        let level = min(max(settings.effort, 0), PNGEncoder.strongestEffort)
        let filter = image.isPalette ? 0 : try Self.sampledFilter(image)
        if level == PNGEncoder.strongestEffort {
            let adaptive = try write(
                image, level: level, filter: SP_PNG_FILTER_ADAPTIVE, profile: profile, chunks: chunks)
            let single = try write(image, level: level, filter: filter, profile: profile, chunks: chunks)
            return adaptive.count <= single.count ? adaptive : single
        }
        return try write(
            image, level: image.isPalette ? max(level, Self.paletteLevel) : level, filter: filter, profile: profile,
            chunks: chunks)
    }

    /// The filter type (0...4) whose rows compress smallest on a sample of the image.
    private static func sampledFilter(_ image: PNGStoredImage) throws -> Int32 {
        var filter: Int32 = 0
        var message = shimMessageBuffer()
        let status = image.pixels.withUnsafeBufferPointer {
            sp_png_choose_filter(
                $0.baseAddress, Int32(image.size.width), Int32(image.size.height), Int32(image.colorType), &filter,
                &message)
        }
        try EncoderFailure.check(status, message)
        return filter
    }

    /// pHYs holds x then y pixels per unit; a quarter turn swaps them.
    private func orientedForOutput(_ chunk: PNGChunk) -> PNGChunk {
        guard swapsAxes, chunk.type == .pHYs, chunk.data.count == 9 else { return chunk }
        return PNGChunk(type: .pHYs, data: Array(chunk.data[4..<8] + chunk.data[0..<4] + chunk.data[8...]))
    }

    private func write(
        _ image: PNGStoredImage, level: Int, filter: Int32, profile: [UInt8]?,
        chunks: [(chunk: PNGChunk, beforePalette: Bool)]
    ) throws -> [UInt8] {
        // All payloads in one block, addressed by offset, so a single pointer crosses into C. The trailing
        // byte keeps the block non-empty when every payload is.
        var payloads: [UInt8] = []
        var list: [sp_png_chunk] = []
        for (chunk, beforePalette) in chunks {
            list.append(
                sp_png_chunk(
                    type: chunk.type.code, offset: payloads.count, length: chunk.data.count,
                    before_palette: beforePalette ? 1 : 0))
            payloads += chunk.data
        }
        payloads.append(0)
        let iccBytes = profile ?? []
        var message = shimMessageBuffer()
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = withUnsafeBufferPointers(image.pixels, image.palette, image.paletteAlpha, payloads, list, iccBytes)
        {
            pixels, palette, paletteAlpha, payloadBlock, chunkList, icc in
            let format = sp_png_image_format(
                color_type: Int32(image.colorType), bit_depth: Int32(image.bitDepth),
                palette: palette.baseAddress, palette_count: Int32(image.palette.count / 3),
                palette_alpha: paletteAlpha.baseAddress, palette_alpha_count: Int32(image.paletteAlpha.count))
            return sp_png_encode(
                pixels.baseAddress, Int32(image.size.width), Int32(image.size.height), format,
                sp_png_encode_settings(zlib_level: Int32(level), filter: filter),
                icc.count > 0 ? icc.baseAddress : nil, icc.count,
                payloadBlock.baseAddress, chunkList.baseAddress, Int32(chunkList.count),
                &output, &length, &message)
        }
        try EncoderFailure.check(status, message)
        defer { sp_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: length))
    }
}

/// A bitmap in the PNG form it will be stored in (see `PNGEncoder` for the reductions).
struct PNGStoredImage {
    var size: PixelSize
    /// 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA.
    var colorType: Int
    /// 8, or 1/2/4/8 for a palette.
    var bitDepth: Int
    /// Rows tightly packed: samples, or one palette index per byte (libpng packs them).
    var pixels: [UInt8]
    /// RGB triples.
    var palette: [UInt8] = []
    /// tRNS: alpha of the first entries; translucent entries are sorted first so this stays short.
    var paletteAlpha: [UInt8] = []

    var isPalette: Bool { colorType == 3 }

    init(reducing bitmap: Bitmap, profileColorSpace: String?) {
        var reduced = bitmap.hasTransparency ? bitmap : bitmap.droppingAlpha()
        let colourProfile = profileColorSpace == "RGB"
        let grayProfile = profileColorSpace == "GRAY"
        if !reduced.layout.isGray, !colourProfile, reduced.isGrayscale { reduced = PNGStoredImage.gray(from: reduced) }
        size = reduced.size
        bitDepth = 8
        pixels = reduced.pixels
        switch reduced.layout {
        case .gray: colorType = 0
        case .grayAlpha: colorType = 4
        case .rgb: colorType = 2
        case .rgba: colorType = 6
        }
        if !reduced.layout.isGray, !grayProfile, let indexed = PNGStoredImage.indexed(reduced) {
            colorType = 3
            bitDepth = indexed.bitDepth
            pixels = indexed.indices
            palette = indexed.palette
            paletteAlpha = indexed.alpha
        }
    }

    /// An RGB(A) bitmap whose channels are equal, as gray(+alpha).
    private static func gray(from bitmap: Bitmap) -> Bitmap {
        let channels = bitmap.layout.channels
        let layout: PixelLayout = bitmap.layout.hasAlpha ? .grayAlpha : .gray
        var out = [UInt8](repeating: 0, count: bitmap.size.area * layout.channels)
        bitmap.pixels.withUnsafeBufferPointer { source in
            out.withUnsafeMutableBufferPointer { target in
                for p in 0..<bitmap.size.area {
                    target[p * layout.channels] = source[p * channels]
                    if layout.hasAlpha { target[p * 2 + 1] = source[p * channels + 3] }
                }
            }
        }
        return Bitmap(size: bitmap.size, layout: layout, pixels: out)
    }

    /// The image as palette indices when it has at most 256 distinct colours (nil otherwise; photos bail
    /// out within the first few hundred pixels).
    private static func indexed(_ bitmap: Bitmap) -> (
        indices: [UInt8], palette: [UInt8], alpha: [UInt8], bitDepth: Int
    )? {
        let channels = bitmap.layout.channels
        var slots: [UInt32: UInt8] = [:]
        slots.reserveCapacity(257)
        var colours: [UInt32] = []
        var firstSeen = [UInt8](repeating: 0, count: bitmap.size.area)
        let complete = bitmap.pixels.withUnsafeBufferPointer { source in
            for p in 0..<bitmap.size.area {
                let base = p * channels
                let alpha = channels == 4 ? UInt32(source[base + 3]) : 255
                let key =
                    UInt32(source[base]) << 24 | UInt32(source[base + 1]) << 16 | UInt32(source[base + 2]) << 8 | alpha
                if let slot = slots[key] {
                    firstSeen[p] = slot
                } else {
                    if colours.count == 256 { return false }
                    slots[key] = UInt8(colours.count)
                    firstSeen[p] = UInt8(colours.count)
                    colours.append(key)
                }
            }
            return true
        }
        guard complete else { return nil }
        // Translucent entries first: tRNS then only needs to list those.
        let order =
            colours.indices.filter { colours[$0] & 0xFF != 255 } + colours.indices.filter { colours[$0] & 0xFF == 255 }
        var remap = [UInt8](repeating: 0, count: colours.count)
        var palette: [UInt8] = [], alpha: [UInt8] = []
        for (final, original) in order.enumerated() {
            remap[original] = UInt8(final)
            let key = colours[original]
            palette += [UInt8(key >> 24), UInt8((key >> 16) & 0xFF), UInt8((key >> 8) & 0xFF)]
            if key & 0xFF != 255 { alpha.append(UInt8(key & 0xFF)) }
        }
        for p in firstSeen.indices { firstSeen[p] = remap[Int(firstSeen[p])] }
        let bitDepth = colours.count <= 2 ? 1 : colours.count <= 4 ? 2 : colours.count <= 16 ? 4 : 8
        return (firstSeen, palette, alpha, bitDepth)
    }
}

extension PixelLayout {
    /// Gray or gray+alpha.
    var isGray: Bool { self == .gray || self == .grayAlpha }
}
