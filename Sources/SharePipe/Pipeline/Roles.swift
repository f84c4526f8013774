/// The decoder role. Two phases, as in libvips: a cheap header read, then rows strictly top to bottom.
/// Each call opens the source afresh and closes it before returning.
protocol ImageDecoder: Sendable {
    var format: ImageFormat { get }
    /// Reads the header and metadata; decodes no pixels. Checks `limits` before anything is allocated.
    func probe(_ source: ImageSource, limits: ImageLimits) throws -> ImageInfo
    /// Decodes `source` (shrinking on load where the codec can), streams its rows through a resampler
    /// to `target` (in stored orientation) and returns the small result.
    func render(
        _ source: ImageSource, info: ImageInfo, target: PixelSize, limits: ImageLimits,
        meter: PixelMemoryMeter
    ) throws -> RenderedImage
    /// `render`, sharper and slower: where the decoder shrinks on load, it leaves the resampler at least a
    /// factor of two (JPEG: `ScalePlan.sharpJPEGScaleNumerator`). For a byte limit that bites, where every
    /// byte goes to detail that should be there. By default `render`.
    func renderSharp(
        _ source: ImageSource, info: ImageInfo, target: PixelSize, limits: ImageLimits,
        meter: PixelMemoryMeter
    ) throws -> RenderedImage
}

extension ImageDecoder {
    func renderSharp(
        _ source: ImageSource, info: ImageInfo, target: PixelSize, limits: ImageLimits,
        meter: PixelMemoryMeter
    ) throws -> RenderedImage {
        try render(source, info: info, target: target, limits: limits, meter: meter)
    }
}

/// A decoder whose render can hand its resampled rows over one at a time, so that the output bitmap never
/// exists whole (`StillSizes.renderEncoded` streams them into the JPEG encoder).
protocol RowStreamingDecoder: ImageDecoder {
    /// `render` without the bitmap: `sink.begin` gets the output size and layout (what `render` would return),
    /// then `sink.push` each output row as the resampler makes it, top to bottom, in stored orientation.
    /// Returns the warnings `render` would carry.
    func renderRows(
        _ source: ImageSource, info: ImageInfo, target: PixelSize, limits: ImageLimits, meter: PixelMemoryMeter,
        into sink: any RenderRowSink
    ) throws -> [String]
}

/// Where `RowStreamingDecoder.renderRows` puts a render's rows.
protocol RenderRowSink: AnyObject {
    /// Called once, before the first row: the render's size and layout.
    func begin(size: PixelSize, layout: PixelLayout) throws
    /// The next row (`size.width` pixels in `layout`), valid only during the call.
    func push(row: UnsafeBufferPointer<UInt8>) throws
}

/// What a decoder's render produced.
struct RenderedImage {
    var bitmap: Bitmap
    /// Recoverable problems the C library reported (corrupt data it worked around).
    var warnings: [String]
    /// False when the stored image data holds more than the image (a PNG whose zlib stream goes on after the
    /// last row): a metadata-only copy would carry it, so the job re-encodes instead.
    var imageDataCopyable = true
}

/// Settings an encoder honours where they apply.
struct EncodeSettings: Sendable, Hashable {
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
    /// The bitmap made ready for several encodes at one size (a quality search): by default the bitmap
    /// itself; an encoder may convert it once to a smaller form of its own (JPEG: 4:2:0 planes), using up
    /// the bitmap's storage as it goes (pass the only copy, `consume`d: a shared one is copied first).
    func staged(_ bitmap: consuming Bitmap) throws -> StagedBitmap
}

extension ImageEncoder {
    func staged(_ bitmap: consuming Bitmap) throws -> StagedBitmap { StagedBitmap(bitmap, encoder: self) }
}

/// What a quality search encodes at one size: the bitmap, or the form its encoder converted it to.
struct StagedBitmap {
    let size: PixelSize
    /// The bytes the staged form holds (the bitmap's own when `isBitmap`).
    let byteCount: Int
    /// True when this is the bitmap itself, not a converted copy.
    let isBitmap: Bool
    /// Encodes the staged form; the same bytes as the encoder's `encode` on the bitmap.
    let encode: (EncodeSettings, [MetadataBlock]) throws -> [UInt8]

    /// The bitmap itself, encoded by `encoder.encode`.
    init(_ bitmap: Bitmap, encoder: any ImageEncoder) {
        self.init(size: bitmap.size, byteCount: bitmap.byteCount, isBitmap: true) { settings, metadata in
            try encoder.encode(bitmap, settings: settings, metadata: metadata)
        }
    }

    init(
        size: PixelSize, byteCount: Int, isBitmap: Bool,
        encode: @escaping (EncodeSettings, [MetadataBlock]) throws -> [UInt8]
    ) {
        (self.size, self.byteCount, self.isBitmap, self.encode) = (size, byteCount, isBitmap, encode)
    }

    /// An encode already made while rendering (`StillSizes.renderEncoded`), with `settings` and the search's
    /// metadata: no pixels are held, and it answers only for those settings (a search of that one quality).
    init(encoded: [UInt8], size: PixelSize, settings: EncodeSettings) {
        self.init(size: size, byteCount: 0, isBitmap: false) { asked, _ in
            precondition(asked == settings, "a streamed encode answers only for its own settings")
            return encoded
        }
    }
}
