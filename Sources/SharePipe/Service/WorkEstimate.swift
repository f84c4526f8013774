/// The decoding work one `SharePipe.prepare` job needs, priced from the header alone beside its memory
/// (`MemoryEstimate`), in pixels: what the decoders produce and the resampler reads, over every tile, frame
/// and pass.
///
/// | part | what it counts |
/// |---|---|
/// | `decodedPixels` | width × height of the image, times its frames on the animation route (each is composited onto the whole canvas and resampled, `AnimationRoute`) |
/// | `passes` | 2 for an Adam7 PNG (its even rows are kept and read again) and a multi-scan JPEG (its coefficients are read by several scans, then stored and read back); 1 otherwise |
/// | `tileCount` | coded images decoded one by one: the tiles of a HEIF or AVIF grid, each costing at least `pixelsPerTile` however small (decoder set-up, parameter sets, its own call into libde265 or dav1d) |
///
/// `totalPixels` is `decodedPixels × passes`, plus `tileCount × pixelsPerTile`. A JPEG is priced at its
/// declared size even where it is decoded at a reduced DCT scale: every block is still entropy-decoded.
///
/// `ImageLimits.checkWork` holds the total against the input's size (`ImageLimits.maxWorkPerInputByte`): a
/// small file cannot make a job decode hundreds of megapixels.
public struct WorkEstimate: Sendable, Equatable, CustomStringConvertible {
    /// Pixels decoded: the image's area, times its frames on the animation route.
    public var decodedPixels: Int
    /// How often the decoded pixels are gone over (2 for Adam7 PNG and multi-scan JPEG).
    public var passes: Int
    /// Coded images decoded one by one (HEIF and AVIF grid tiles); 1 for anything else.
    public var tileCount: Int
    /// The input's size in bytes.
    public var inputBytes: Int

    /// The least a tile is priced at, in pixels: a 256×256 tile's worth. Decoding 10,000 tiles of 16×16 costs
    /// far more than their 2.6 MP: each is a decoder call with its own set-up.
    public static let pixelsPerTile = 65_536

    /// The work in pixels: `decodedPixels × passes + tileCount × pixelsPerTile` (saturating).
    public var totalPixels: Int {
        let (scaled, overflow1) = decodedPixels.multipliedReportingOverflow(by: passes)
        let (tiles, overflow2) = tileCount.multipliedReportingOverflow(by: Self.pixelsPerTile)
        let (total, overflow3) = scaled.addingReportingOverflow(tiles)
        return overflow1 || overflow2 || overflow3 ? Int.max : total
    }

    /// Pixels of work per input byte, rounded up (the figure `ImageLimits.maxWorkPerInputByte` bounds).
    public var pixelsPerInputByte: Int {
        let bytes = max(inputBytes, 1)
        return totalPixels / bytes + (totalPixels % bytes == 0 ? 0 : 1)
    }

    /// "537 MP of work (268 MP × 2 frames…) in 782805 bytes".
    public var description: String {
        var parts = decodedPixels > 0 ? ["\(decodedPixels) pixels decoded"] : []
        if passes > 1 { parts.append("\(passes) passes") }
        if tileCount > 1 { parts.append("\(tileCount) tiles") }
        return "\(totalPixels) pixels of work (\(parts.joined(separator: ", "))) from \(inputBytes) bytes"
    }

    /// Prices the work of preparing an image with `info` (from `SharePipe.inspect`) under `options`.
    ///
    /// - Throws: `SharePipeError.invalidOptions` when `options` would be refused by `SharePipe.prepare`.
    public init(info: ImageInfo, options: PrepareOptions) throws(SharePipeError) {
        let checked = try options.checked()
        self.init(info: info, route: PreparePlan(info: info, options: checked).route)
    }

    /// The work of `tileCount` tiles alone, a lower bound known from the `meta` box before a HEIF or AVIF
    /// library reads the file.
    init(tileCount: Int, inputBytes: Int) {
        decodedPixels = 0
        passes = 1
        self.tileCount = max(tileCount, 1)
        self.inputBytes = inputBytes
    }

    /// Prices the work of `route` (the plan's) for an image with `info`.
    init(info: ImageInfo, route: PreparePlan.Route) {
        let frames = route == .animation ? max(info.frameCount, 1) : 1
        let (pixels, overflow) = info.size.area.multipliedReportingOverflow(by: frames)
        decodedPixels = overflow ? Int.max : pixels
        let multiPass = info.progressive && (info.format == .png || info.format == .jpeg)
        passes = multiPass ? 2 : 1
        tileCount = max(info.tileCount, 1)
        inputBytes = info.byteCount
    }
}
