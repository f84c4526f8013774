/// A width and a height in pixels.
public struct PixelSize: Sendable, Hashable, Codable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    public var shortEdge: Int { min(width, height) }
    public var longEdge: Int { max(width, height) }
    public var area: Int { width * height }
    /// The size with width and height swapped (a quarter turn).
    public var transposed: PixelSize { PixelSize(width: height, height: width) }
    public var description: String { "\(width)×\(height)" }
}

/// The colour model of the stored image.
public enum ColorModel: String, Sendable, Codable {
    case gray, grayAlpha, rgb, rgba, palette, cmyk, ycck
}

/// What the header read found: size, colour, orientation, metadata. No pixels were decoded.
public struct ImageInfo: Sendable {
    public var format: ImageFormat
    /// Stored size (before orientation is applied).
    public var size: PixelSize
    public var colorModel: ColorModel
    /// Bits per sample as stored (8 for JPEG, 1...16 for PNG).
    public var bitDepth: Int
    /// Progressive JPEG or interlaced PNG/GIF.
    public var progressive: Bool
    /// The Exif orientation (1 when absent or invalid).
    public var orientation: Orientation
    /// The raw orientation value as stored, if a tag was present (0 and >8 are invalid and mean 1).
    public var storedOrientationValue: Int?
    /// Number of frames (1 for stills).
    public var frameCount: Int
    /// Whether the image has an alpha channel or transparency.
    public var hasAlpha: Bool
    /// Metadata blocks found, in file order.
    public var metadata: [MetadataBlock]
    /// Input size in bytes.
    public var byteCount: Int
    /// What the format's decoder found that only that format's own later steps read: JPEG's Adobe inversion,
    /// PNG's structural chunks and APNG animation, the WebP container walk, a HEIF tile grid. Each format
    /// reads and writes its own through an `ImageInfo` extension beside its decoder (`info.webp`,
    /// `info.heifGrid`, …), so a new format adds no field here.
    var formatDetail: (any Sendable)? = nil
    /// Coded images the decoder decodes one by one for one picture: the tiles of a HEIF or AVIF grid, 1
    /// elsewhere (`WorkEstimate` prices each).
    var tileCount = 1
    /// What the header read noticed and worked around (a broken APNG animation shown as its still image).
    var probeWarnings: [String] = []
    /// Changes the decoder will make that were not asked for, known from the header (HDR tone-mapped to SDR,
    /// a gain map left out): the plan reports them with its own adjustments.
    var probeAdjustments: [String] = []

    /// Whether the stored image data is what viewers show. Not for an APNG whose default image is not part of
    /// its animation: browsers show the animation's first frame (even when it is the only one), so a
    /// metadata-only copy, which keeps the default image, cannot serve.
    var storedImageIsShown: Bool { pngAnimation.map(\.defaultImageIsFirstFrame) ?? true }

    /// Size as displayed, after the orientation is applied.
    public var orientedSize: PixelSize { orientation.swapsAxes ? size.transposed : size }

    /// What kinds of metadata the file carries.
    public var metadataKinds: Set<MetadataKind> { MetadataOutcome.kinds(of: metadata) }
}
