/// Which metadata to remove. The ICC colour profile is always kept; the Exif orientation is always
/// applied to the pixels first and then written as 1 (or dropped with the Exif).
public enum StripMode: String, Sendable, Codable, CaseIterable {
    /// Remove Exif (with its thumbnail), XMP, IPTC, comments and text; keep only the colour profile.
    case all
    /// Keep Exif without its GPS block and thumbnail; drop XMP and IPTC, which can carry location too.
    case gps
    /// Keep all metadata; only the orientation is reset to 1.
    case none
}

/// Limits checked against the header before any pixel memory is allocated (decompression bombs).
public struct ImageLimits: Sendable, Equatable, Codable {
    /// Largest width or height accepted (default 65 500, just under JPEG's 65 535 maximum).
    public var maxDimension: Int
    /// Largest width × height accepted. Unset (the default), it is 120 MP (`defaultMaxPixels`, which admits a
    /// 100 MP photo) for a job that holds a full-resolution bitmap, while a larger image whose still route
    /// streams it (a grid HEIC, a JPEG decoded at a reduced DCT scale, a non-interlaced PNG) is taken when its
    /// job is priced (`MemoryEstimate`, from the header) under one byte per pixel and at most
    /// `maxStreamedMemory`, up to `streamedPixelCeiling`. Set (the initializer's argument, this property,
    /// `--max-pixels`), it applies to every route as given.
    public var maxPixels: Int {
        get { pixelLimit ?? Self.defaultMaxPixels }
        set { pixelLimit = newValue }
    }
    /// Whether `maxPixels` was set (then it applies to every route as given).
    public var isPixelLimitSet: Bool { pixelLimit != nil }
    private var pixelLimit: Int?
    /// Largest number of GIF frames accepted.
    public var maxFrames: Int
    /// Largest sum of frame areas over an animation (frames × width × height).
    public var maxTotalFramePixels: Int
    /// Largest input file accepted, in bytes (default 256 MiB).
    public var maxInputBytes: Int
    /// Largest memory libjpeg/libpng may use for their own arrays (libjpeg's `max_memory_to_use`, and the
    /// shim's store of a progressive JPEG's coefficients), in bytes.
    public var maxDecoderMemory: Int
    /// Largest total of metadata segments read from a JPEG header (APPn/COM payloads, plus 64 bytes each for
    /// bookkeeping), in bytes. The default, 32 MiB, holds the largest ICC profile a JPEG can carry (255 chunks,
    /// about 16 MiB) with room for Exif and extended XMP; a file of nothing but metadata stops here instead
    /// of costing memory in proportion to its size.
    public var maxMetadataBytes: Int
    /// Largest priced memory (`MemoryEstimate.totalBytes`) of a job over the default pixel limit, in bytes:
    /// such an image is taken only when its route streams it (see `maxPixels`). Default 256 MiB: a 200 MP
    /// grid HEIC is priced at about 60 MB (it peaks at about 40 MB).
    public var maxStreamedMemory: Int
    /// Largest work a job may do per byte of input, in pixels (`WorkEstimate.pixelsPerInputByte`), once its work
    /// is over `freeWorkPixels`: a file must bring at least one byte per this many pixels it makes SharePipe
    /// decode (tiles, frames and passes counted, `WorkEstimate`). Checked on the header, before anything is
    /// decoded. Default 200 (0.04 bits per pixel).
    ///
    /// The default is set from real files: the least data per pixel among real photos with over 64 MP of work
    /// is a 200 MP Galaxy S24 Ultra HEIC, 2.4 MB for 199.8 MP (83 pixels a byte, 2.4 times below the limit);
    /// 12 MP phone HEICs bring 15 to 20 pixels a byte, real JPEGs and PNG photos under 5; real animations with
    /// over 32 MP of frames (a 380-frame GIF) up to 150. A file declaring 256 MP or more in at most 1 MB brings
    /// at least 256 pixels a byte and is refused: a zlib-bomb PNG, a JPEG of one-code Huffman tables, a
    /// lossless WebP of one-symbol prefix codes, a grid HEIC or AVIF whose thousands of tiles all point at one
    /// coded tile. A job within `freeWorkPixels` is never held to it, however small its file.
    public var maxWorkPerInputByte: Int

    /// The work any job may do whatever its input's size: 64 MP (a 64 MP grid HEIC, the slowest decode,
    /// takes about a second of CPU). Beyond it `maxWorkPerInputByte` applies.
    public static let freeWorkPixels = 64_000_000
    /// `maxWorkPerInputByte`'s default.
    public static let defaultMaxWorkPerInputByte = 200

    /// Input families refused whole, from the magic bytes and SharePipe's own reading of the file's structure,
    /// before any decoder library is reached (`FormatFamily`: `heif` keeps libheif and libde265 away from
    /// uploads, `avif` libavif and dav1d). Default: none.
    public var disabledFormats: Set<FormatFamily>

    /// `maxPixels` when it is not set: 120 MP.
    public static let defaultMaxPixels = 120_000_000
    /// The largest image a streamed route takes when `maxPixels` is not set: 1 GP, a bound on decoding time
    /// (a 200 MP phone photo is a fifth of it).
    public static let streamedPixelCeiling = 1_000_000_000

    /// `maxPixels` nil: not set (the default, see `maxPixels`).
    public init(
        maxDimension: Int = 65_500, maxPixels: Int? = nil, maxFrames: Int = 5_000,
        maxTotalFramePixels: Int = 2_000_000_000, maxInputBytes: Int = 256 << 20,
        maxDecoderMemory: Int = 1 << 30, maxMetadataBytes: Int = 32 << 20, maxStreamedMemory: Int = 256 << 20,
        maxWorkPerInputByte: Int = ImageLimits.defaultMaxWorkPerInputByte, disabledFormats: Set<FormatFamily> = []
    ) {
        self.maxDimension = maxDimension
        self.pixelLimit = maxPixels
        self.maxFrames = maxFrames
        self.maxTotalFramePixels = maxTotalFramePixels
        self.maxInputBytes = maxInputBytes
        self.maxDecoderMemory = maxDecoderMemory
        self.maxMetadataBytes = maxMetadataBytes
        self.maxStreamedMemory = maxStreamedMemory
        self.maxWorkPerInputByte = maxWorkPerInputByte
        self.disabledFormats = disabledFormats
    }

    private enum CodingKeys: String, CodingKey {
        case maxDimension, pixelLimit = "maxPixels", maxFrames, maxTotalFramePixels, maxInputBytes, maxDecoderMemory,
            maxMetadataBytes, maxStreamedMemory, maxWorkPerInputByte, disabledFormats
    }

    /// Reads the limits as encoded; `maxPixels`, `maxStreamedMemory`, `maxWorkPerInputByte` and `disabledFormats`
    /// may be absent (not set, default).
    public init(from decoder: Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            maxDimension: try values.decode(Int.self, forKey: .maxDimension),
            maxPixels: try values.decodeIfPresent(Int.self, forKey: .pixelLimit),
            maxFrames: try values.decode(Int.self, forKey: .maxFrames),
            maxTotalFramePixels: try values.decode(Int.self, forKey: .maxTotalFramePixels),
            maxInputBytes: try values.decode(Int.self, forKey: .maxInputBytes),
            maxDecoderMemory: try values.decode(Int.self, forKey: .maxDecoderMemory),
            maxMetadataBytes: try values.decode(Int.self, forKey: .maxMetadataBytes),
            maxStreamedMemory: try values.decodeIfPresent(Int.self, forKey: .maxStreamedMemory) ?? 256 << 20,
            maxWorkPerInputByte: try values.decodeIfPresent(Int.self, forKey: .maxWorkPerInputByte)
                ?? Self.defaultMaxWorkPerInputByte,
            disabledFormats: try values.decodeIfPresent(Set<FormatFamily>.self, forKey: .disabledFormats) ?? [])
    }

    /// Throws `tooLarge` when a header's size is over a limit.
    func check(width: Int, height: Int, file: String) throws {
        if width <= 0 || height <= 0 {
            throw SharePipeError.corrupt(
                file: file, phase: .header, reason: "header gives an empty image (\(width)×\(height))")
        }
        let size = PixelSize(width: width, height: height)
        if width > maxDimension || height > maxDimension {
            throw SharePipeError.tooLarge(
                file: file,
                exceeded: ExceededLimit(
                    .dimension, found: max(width, height),
                    limit: maxDimension, size: size))
        }
        let (area, overflow) = width.multipliedReportingOverflow(by: height)
        if overflow || area > maxPixels {
            throw SharePipeError.tooLarge(
                file: file,
                exceeded: ExceededLimit(
                    .pixelArea, found: overflow ? Int.max : area,
                    limit: maxPixels, size: size))
        }
    }

    /// `check` for the header of a format whose still route can stream it (HEIF, JPEG, PNG): when `maxPixels`
    /// is not set, an image over it up to `streamedPixelCeiling` passes here, and the pipeline takes it only if
    /// its job is priced as a streamed one (`checkStreamedCost`). A refusal names `maxPixels`, as `check`'s does.
    func checkHeader(width: Int, height: Int, file: String) throws {
        guard !isPixelLimitSet, width > 0, height > 0, width <= maxDimension, height <= maxDimension else {
            return try check(width: width, height: height, file: file)
        }
        let (area, overflow) = width.multipliedReportingOverflow(by: height)
        guard !overflow, area <= Self.streamedPixelCeiling else {
            return try check(width: width, height: height, file: file)
        }
    }

    /// The pipeline's check, before anything is decoded, of an image over the default pixel limit that a header
    /// check let past (`checkHeader`): its still route must be priced (`estimate`) under one byte per pixel
    /// (no full-resolution plane held) and at most `maxStreamedMemory`. Any other route, or a set `maxPixels`,
    /// refuses it as `check` does.
    func checkStreamedCost(
        size: PixelSize, route: PreparePlan.Route, estimate: @autoclosure () -> MemoryEstimate,
        file: String
    ) throws {
        guard size.area > maxPixels else { return }
        let priced = route == .still && !isPixelLimitSet ? estimate() : nil
        guard let priced, priced.totalBytes < size.area else {
            let detail = priced.map { "its job is priced at \($0.totalBytes) bytes: it holds the whole image" }
            throw SharePipeError.tooLarge(
                file: file,
                exceeded: ExceededLimit(
                    .pixelArea, found: size.area, limit: maxPixels,
                    size: size, detail: detail))
        }
        if priced.totalBytes > maxStreamedMemory {
            throw SharePipeError.tooLarge(
                file: file,
                exceeded: ExceededLimit(
                    .streamedMemory, found: priced.totalBytes,
                    limit: maxStreamedMemory, size: size))
        }
    }

    /// The pipeline's check of a job's work (`WorkEstimate`, from the header) before anything is decoded: over
    /// `freeWorkPixels`, it must be at most `maxWorkPerInputByte` pixels per byte of input. The HEIF and AVIF
    /// probes run it first on the tiles alone (`size` nil), before libheif or libavif reads the items.
    func checkWork(_ work: WorkEstimate, size: PixelSize?, file: String) throws {
        guard work.totalPixels > Self.freeWorkPixels, work.pixelsPerInputByte > maxWorkPerInputByte else { return }
        throw SharePipeError.tooLarge(
            file: file,
            exceeded: ExceededLimit(
                .workPerInputByte, found: work.pixelsPerInputByte, limit: maxWorkPerInputByte, size: size,
                detail: work.description))
    }

    /// Checks an animation whose every frame is composited onto the whole canvas (APNG, animated WebP):
    /// the frame count, and frames × canvas area, before anything is decoded.
    func checkAnimation(frames: Int, canvas: PixelSize, file: String) throws {
        if frames > maxFrames {
            throw SharePipeError.tooLarge(
                file: file,
                exceeded: ExceededLimit(
                    .frameCount, found: frames, limit: maxFrames,
                    size: canvas))
        }
        let (total, overflow) = frames.multipliedReportingOverflow(by: canvas.area)
        if overflow || total > maxTotalFramePixels {
            throw SharePipeError.tooLarge(
                file: file,
                exceeded: ExceededLimit(
                    .totalFramePixels, found: overflow ? Int.max : total,
                    limit: maxTotalFramePixels, size: canvas))
        }
    }
}

/// How the fitting search trades memory for CPU.
public enum FitStrategy: String, Sendable, Codable, CaseIterable {
    /// Each dimension attempt re-opens and re-decodes the source; only the small output bitmap is kept
    /// between quality attempts. The default.
    case memoryFirst
    /// Keeps the decoded, resized bitmap across attempts (faster, more memory).
    case cpuFirst
}

/// What to do with one image. Checked once, by the public entry point it is given to, before any
/// decoding (`validate()` runs the same check). Every option's names, type, valid values, default and
/// help are rows of `OptionTable`.
public struct PrepareOptions: Sendable, Equatable {
    /// The short edge is reduced to at most this many pixels; never enlarged.
    public var maxShortEdge: Int
    /// Optional cap on the long edge.
    public var maxLongEdge: Int?
    /// Optional cap on width × height of the output.
    public var maxPixels: Int?
    /// Output byte limit; nil means no limit.
    public var maxBytes: Int?
    /// Metadata removal mode.
    public var strip: StripMode
    /// Highest (first tried) JPEG quality. Setting it fixes the quality: it clears `qualityTarget` (a service
    /// profile's `auto` included), as `--quality N` does.
    public var quality: Int { didSet { qualityTarget = nil } }
    /// The SSIMULACRA2 score `--quality auto` aims at (`qualitySetting`); nil (the default): `quality` is
    /// fixed.
    public var qualityTarget: Double? = nil
    /// Lowest JPEG quality the byte search may go to before reducing dimensions.
    public var minQuality: Int
    /// Write progressive JPEGs.
    public var progressive: Bool
    /// Header limits (decompression bombs).
    public var limits: ImageLimits
    /// Whether a PNG without meaningful alpha may become a JPEG to meet the byte limit.
    public var allowFormatChange: Bool
    /// Memory versus CPU trade-off of the fitting search.
    public var strategy: FitStrategy
    /// The smallest short edge the dimension search may go to.
    public var minShortEdge: Int
    /// Optional caps on the displayed width and height, and on width + height.
    public var maxWidth: Int?
    public var maxHeight: Int?
    public var maxEdgeSum: Int?
    /// Limits for animated GIFs (byte limit, size box, frames); nil fields fall back to the still limits.
    public var animation: AnimationLimits
    /// The job's deadline in seconds, from its start (for several services of one file, from the file's): past
    /// it the job stops at its next checkpoint with `SharePipeError.timedOut`, writing nothing. nil (the
    /// default): none.
    public var timeout: Int?
    /// Output formats the destination accepts; nil accepts all. An input in a format not listed is
    /// converted (to JPEG when listed, flattening alpha over white, else to PNG).
    public var acceptedFormats: [ImageFormat]?
    /// The BlurHash's components across and down (`PreparedImage.placeholder`), 1...9 each; 4 × 4 by default,
    /// as Mastodon stores it.
    public var blurHashXComponents = 4
    public var blurHashYComponents = 4
    /// The named variants to prepare beside the main output (`OutputVariant`, by name, each declared in
    /// `declaredVariants`), in this order; none by default.
    public var variants: [String] = []
    /// The variants the destination declares (`ServiceProfile.variants`, set by `ServiceProfile.options(basedOn:)`).
    public var declaredVariants: [OutputVariant] = []
    /// Crop the output to this width-to-height ratio (`1:1`, `4:5`), around the picture's focal point rather
    /// than its centre (`PreparedImage.focus`), keeping every pixel of the window the size caps allow; reported
    /// ("cropped to 1:1 around the focal point (x, y)"). nil (the default): no crop. A still only: a job on an
    /// animation that keeps its animation is refused (`unsupportedFormat`, `feature`).
    public var cropTo: AspectRatio? = nil
    /// How an animation is written: an animated GIF (the default), an MP4 video within `video`, or its first
    /// frame as a still.
    public var animationOutput = AnimationOutput.gif
    /// Limits for an animation written as video (`animationOutput` `.video`).
    public var video = VideoLimits()

    /// The format to write for an input in `format`: the same where accepted; otherwise JPEG, or PNG for a
    /// GIF and for a WebP with alpha (`hasAlpha`) where PNG is accepted.
    public func outputFormat(for format: ImageFormat, hasAlpha: Bool = false) -> ImageFormat {
        guard let accepted = acceptedFormats, !accepted.contains(format) else { return format }
        if format == .gif, accepted.contains(.png) { return .png }  // palette art stays lossless
        if format == .webp, hasAlpha, accepted.contains(.png) { return .png }  // transparency survives
        return accepted.contains(.jpeg) ? .jpeg : accepted.first ?? format
    }

    /// Every size cap for still images, in one value.
    public var sizeCaps: SizeCaps {
        SizeCaps(
            shortEdge: maxShortEdge, longEdge: maxLongEdge, width: maxWidth, height: maxHeight,
            pixels: maxPixels, edgeSum: maxEdgeSum)
    }

    /// Size caps for animations: the still caps narrowed by the animation's own.
    public var animatedSizeCaps: SizeCaps {
        var caps = sizeCaps
        if let width = animation.maxWidth { caps.width = min(caps.width ?? width, width) }
        if let height = animation.maxHeight { caps.height = min(caps.height ?? height, height) }
        if let pixels = animation.maxPixels { caps.pixels = min(caps.pixels ?? pixels, pixels) }
        return caps
    }

    /// The byte limit for an animation: the animated limit where set, else the still one.
    public var animatedMaxBytes: Int? { animation.maxBytes ?? maxBytes }

    public init(
        maxShortEdge: Int = 1080, maxLongEdge: Int? = nil, maxPixels: Int? = nil, maxBytes: Int? = nil,
        strip: StripMode = .all, quality: Int = 85, minQuality: Int = 40, progressive: Bool = false,
        limits: ImageLimits = ImageLimits(), allowFormatChange: Bool = false,
        strategy: FitStrategy = .memoryFirst, minShortEdge: Int = 64
    ) {
        self.maxShortEdge = maxShortEdge
        self.maxLongEdge = maxLongEdge
        self.maxPixels = maxPixels
        self.maxBytes = maxBytes
        self.strip = strip
        self.quality = quality
        self.minQuality = minQuality
        self.progressive = progressive
        self.limits = limits
        self.allowFormatChange = allowFormatChange
        self.strategy = strategy
        self.minShortEdge = minShortEdge
        self.animation = AnimationLimits()
    }

    /// Checks the options make sense together, as every public entry point does before any work
    /// (`SharePipe.prepare`, `SharePipeline`, `Batch`, profile loading, `MemoryEstimate`): call it to learn
    /// early whether a value you built will be accepted.
    ///
    /// - Throws: `SharePipeError.invalidOptions` naming the first option that cannot work.
    public func validate() throws(SharePipeError) {
        _ = try checked()
    }

    /// The options as the pipeline takes them, or `invalidOptions` naming the first bad one. The only way
    /// to make a `Checked` value: every internal function that reads options takes one, so nothing inside
    /// can run on unchecked options or check them a second time.
    func checked() throws(SharePipeError) -> Checked {
        if let invalid = firstInvalidOption { throw .invalidOptions(invalid) }
        return Checked(self)
    }

    /// The first option that cannot work, in `OptionTable.all`'s order; nil when all can.
    private var firstInvalidOption: InvalidOption? {
        for spec in OptionTable.all {
            if let invalid = spec.invalidity(in: self) { return invalid }
        }
        return nil
    }

    /// Options that passed `checked()`. Reads like `PrepareOptions` (every property, through dynamic
    /// member lookup) but cannot be changed or made any other way, so a function taking one knows its
    /// options are valid: the pipeline, the planner, the memory estimate and the format parts take this.
    @dynamicMemberLookup
    struct Checked: Sendable, Equatable {
        /// The checked value.
        let options: PrepareOptions

        fileprivate init(_ options: PrepareOptions) { self.options = options }

        subscript<Value>(dynamicMember keyPath: KeyPath<PrepareOptions, Value>) -> Value { options[keyPath: keyPath] }

        /// `PrepareOptions.outputFormat(for:hasAlpha:)`.
        func outputFormat(for format: ImageFormat, hasAlpha: Bool = false) -> ImageFormat {
            options.outputFormat(for: format, hasAlpha: hasAlpha)
        }
    }
}

/// What a service accepts for animated images.
public struct AnimationLimits: Sendable, Equatable, Codable {
    /// Byte limit for animations (X: 15 MB); nil means the still limit applies.
    public var maxBytes: Int?
    /// Box the animation must fit (X: 1280×1080).
    public var maxWidth: Int?
    public var maxHeight: Int?
    /// Largest width × height (Mastodon: 921,600).
    public var maxPixels: Int?
    /// Largest number of frames (X: 350); more are decimated, keeping the total duration.
    public var maxFrames: Int?
    /// Largest width × height × frames (X: 300 M): over it the size shrinks, or frames are decimated where
    /// the size would go under `minShortEdge`.
    public var maxTotalPixels: Int?
    /// Whether the service shows animations at all; when false an animated GIF is prepared as a still
    /// of its first frame, under the still limits.
    public var allowed: Bool

    public init(
        maxBytes: Int? = nil, maxWidth: Int? = nil, maxHeight: Int? = nil, maxPixels: Int? = nil,
        maxFrames: Int? = nil, maxTotalPixels: Int? = nil, allowed: Bool = true
    ) {
        self.maxBytes = maxBytes
        self.maxWidth = maxWidth
        self.maxHeight = maxHeight
        self.maxPixels = maxPixels
        self.maxFrames = maxFrames
        self.maxTotalPixels = maxTotalPixels
        self.allowed = allowed
    }
}

/// How an animation is written (`PrepareOptions.animationOutput`, `--animation`, a profile's `animation`).
public enum AnimationOutput: String, Sendable, Codable, CaseIterable {
    /// An animated GIF (where the destination accepts GIF; otherwise the first frame as a still).
    case gif
    /// An H.264 MP4 video within `PrepareOptions.video`: for services that show animation only as video.
    case video
    /// The first frame as a still.
    case still
}

/// What a service accepts for video, where animations are written as MP4 (`AnimationOutput.video`).
public struct VideoLimits: Sendable, Equatable, Codable {
    /// Byte limit of a video; nil means the animated limit (then the still one).
    public var maxBytes: Int?
    /// Longest video in milliseconds: a longer animation is cut there (reported).
    public var maxDurationMilliseconds: Int?
    /// Shortest video in milliseconds: a shorter animation is played several times in a row (reported).
    public var minDurationMilliseconds: Int?
    /// Box and area the video must fit (narrowing the animation's and the still's caps).
    public var maxWidth: Int?
    public var maxHeight: Int?
    public var maxPixels: Int?
    /// Highest frame rate: a frame shown for less than 1/rate s is dropped, its time given to the frame
    /// before it (reported).
    public var maxFrameRate: Int?
    /// Lowest frame rate (at most 120, and at most `maxFrameRate`): a frame shown for longer than 1/rate s is
    /// shown as several samples of the same picture (repeats, coded as P pictures of a few tens of bytes), so
    /// every sample lasts at most 1/rate s; the durations still add up to the source's exactly (reported).
    /// Frames identical to the one before are still merged first. nil: no minimum.
    public var minFrameRate: Int?
    /// Whether the service plays a short video in a loop (said in the report: MP4 stores no loop count).
    public var loops: Bool
    /// The colour transparent pixels are composited on (MP4 has no transparency), 0xRRGGBB; white by default.
    public var background: Int

    public init(
        maxBytes: Int? = nil, maxDurationMilliseconds: Int? = nil, minDurationMilliseconds: Int? = nil,
        maxWidth: Int? = nil, maxHeight: Int? = nil, maxPixels: Int? = nil, maxFrameRate: Int? = nil,
        minFrameRate: Int? = nil, loops: Bool = false, background: Int = 0xFFFFFF
    ) {
        self.maxBytes = maxBytes
        self.maxDurationMilliseconds = maxDurationMilliseconds
        self.minDurationMilliseconds = minDurationMilliseconds
        self.maxWidth = maxWidth
        self.maxHeight = maxHeight
        self.maxPixels = maxPixels
        self.maxFrameRate = maxFrameRate
        self.minFrameRate = minFrameRate
        self.loops = loops
        self.background = background
    }
}

extension PrepareOptions {
    /// Size caps for a video: the still caps narrowed by the video's own (the animation's caps are for GIFs).
    public var videoSizeCaps: SizeCaps {
        var caps = sizeCaps
        if let width = video.maxWidth { caps.width = min(caps.width ?? width, width) }
        if let height = video.maxHeight { caps.height = min(caps.height ?? height, height) }
        if let pixels = video.maxPixels { caps.pixels = min(caps.pixels ?? pixels, pixels) }
        return caps
    }

    /// The byte limit for a video: the video's own where set, else the animated one, else the still one.
    public var videoMaxBytes: Int? { video.maxBytes ?? animatedMaxBytes }
}
