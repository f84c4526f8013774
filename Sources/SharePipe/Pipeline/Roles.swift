/// The decoder role. Two phases, as in libvips: a cheap header read, then rows strictly top to bottom.
/// Each call opens the source afresh and closes it before returning.
protocol ImageDecoder: Sendable {
    var format: ImageFormat { get }
    /// Reads the header and metadata; decodes no pixels. Checks `limits` before anything is allocated.
    func probe(_ source: ImageSource, limits: ImageLimits) throws -> ImageInfo
    /// Decodes `source` (shrinking on load where the codec can), streams its rows through a resampler
    /// to `target` (in stored orientation) and returns the small result.
    func render(_ source: ImageSource, info: ImageInfo, target: PixelSize, limits: ImageLimits,
                meter: PixelMemoryMeter) throws -> RenderedImage
}

/// What a decoder's render produced.
struct RenderedImage {
    var bitmap: Bitmap
    /// Recoverable problems the C library reported (corrupt data it worked around).
    var warnings: [String]
}

/// Settings an encoder honours where they apply.
struct EncodeSettings: Sendable, Equatable {
    /// Lossy quality 1...100 (JPEG).
    var quality: Int
    var progressive: Bool
    /// Lossless effort 0...9 (PNG zlib level); higher is smaller and slower.
    var effort: Int = 6
    /// Encode without loss where the format has both kinds (WebP: VP8L instead of VP8); ignored elsewhere.
    var lossless = false
}

/// The encoder role: a whole (small) bitmap plus the metadata to keep, to bytes in memory.
protocol ImageEncoder: Sendable {
    var format: ImageFormat { get }
    func encode(_ bitmap: Bitmap, settings: EncodeSettings, metadata: [MetadataBlock]) throws -> [UInt8]
}
