/// Everything the pipeline needs to know about one format, in one value: how to read it, how to write
/// it, which of its metadata survives each strip mode, whether its metadata can be replaced without
/// touching the image data, how an output in this format is fitted under a byte limit, whether (and how)
/// it animates, and what memory its steps need.
///
/// `Pipeline`, `PreparePlan`, `FittingDriver` and `MemoryEstimate` work only through descriptors; the one
/// place that maps a format to its descriptor is `FormatRegistry`. A new format is a new descriptor there
/// plus its codec files (see docs/ARCHITECTURE.md, "Adding a format").
struct FormatDescriptor: Sendable {
    /// A metadata-only rewrite: copies the image data of `source` unchanged, writing `kept` instead of
    /// the source's metadata; nil when it declines a file that only browsers show right (it is then
    /// re-encoded).
    typealias MetadataRewriter = @Sendable (_ source: ImageSource, _ kept: [MetadataBlock]) throws -> [UInt8]?
    /// A lossless turn: applies `info.orientation` to the image data of `source` without decoding it, writing
    /// `kept` as the metadata.
    typealias LosslessTurn =
        @Sendable (_ source: ImageSource, _ info: ImageInfo, _ kept: [MetadataBlock]) throws
        -> LosslessTurnOutcome

    let format: ImageFormat
    /// The format's name in the message for a file no format matches ("not a JPEG, PNG, …, HEIC or AVIF").
    let signatureName: String
    /// The usual file extension, without the dot (`ImageFormat.fileExtension`).
    let fileExtension: String
    /// The media type (`ImageFormat.mediaType`).
    let mediaType: String
    /// Whether the first bytes of a file (up to 64; fewer for a short file) are this format's signature.
    /// `ImageFormat.sniff` asks the registry's formats in order; no two may claim the same bytes.
    let matches: @Sendable (_ prefix: [UInt8]) -> Bool
    /// Reads the header (`probe`) and renders the image (or an animation's first frame) scaled.
    let decoder: any ImageDecoder
    /// The encoder for an output in this format. It sees the input's probe, so an encoder can carry
    /// structural facts of a same-format source (PNG's colour chunks).
    let encoder: @Sendable (_ input: ImageInfo) -> any ImageEncoder
    /// Decides, for an input in this format, which metadata blocks survive each strip mode. The same
    /// policy holds on every route (metadata rewrite, still, animation, converted).
    let metadataPolicy: any MetadataPolicy
    /// What an output in this format can hold of the kept metadata, once the pixels are re-encoded
    /// (blocks it cannot write move from kept to removed, so the report says what the file holds).
    let writableMetadata: @Sendable (_ kept: MetadataOutcome, _ present: Set<MetadataKind>) -> MetadataOutcome
    /// Replaces only the metadata, when the pixels need no change; nil where the format has none.
    let metadataRewriter: MetadataRewriter?
    /// Applies the orientation without decoding, when that is the pixels' only change; nil where the
    /// format has none.
    let losslessTurn: LosslessTurn?
    /// The quality of the source's own encoding (read from its header), so an output in the same format
    /// never spends more quality than the source had; nil where the format has no such notion.
    let sourceQuality: (@Sendable (ImageSource) -> SourceQuality?)?
    /// The fitting steps an output in this format offers under a byte limit.
    let fitting: FittingSteps
    /// How an animated input in this format reaches the animation route; nil: stills only (an animated
    /// file is then prepared as its first frame).
    let animation: AnimationSupport?
    /// The memory the still and metadata-rewrite routes need for an input in this format.
    let memory: MemoryModel
    /// For a format SharePipe reads but never writes (HEIF, AVIF): the format an input is written as, before
    /// the service's accepted formats apply. nil: the input's own format.
    var writtenAs: (@Sendable (_ input: ImageInfo) -> ImageFormat)? = nil
    /// The fitting steps for an output made from an input in this same format, where they differ from
    /// `fitting` (a lossless WebP is written lossless first); nil: `fitting`.
    var sameFormatFitting: (@Sendable (_ input: ImageInfo) -> FittingSteps?)? = nil
}

/// A source's own quality as read from its header (`FormatDescriptor.sourceQuality`), in the two numbers its uses
/// need: the quality it was saved at on its encoder's scale, and the ceiling that caps a same-format output's
/// fixed-quality search on SharePipe's scale. They differ where the scales do: a JPEG from another encoder has
/// libjpeg's Annex K number (q95), while SharePipe's quality N means jpegli's table shape at the libjpeg quality
/// its map gives (`sp_jpeg_tables.c`), so its ceiling is found by comparing the tables (`JPEGQuality.ceiling`).
struct SourceQuality: Sendable, Equatable {
    /// The quality the source was saved at, on its own encoder's scale (a JPEG's Annex K estimate,
    /// `JPEGQuality.estimate`): the auto search's first guess is fitted on it (`QualityLadder.autoGuess`).
    var saved: Int
    /// The highest quality on SharePipe's scale a same-format output is worth: the lowest one as fine as the
    /// source (`PreparePlan.capQuality(atSource:options:)`).
    var ceiling: Int
    /// Whether `ceiling` was found by comparing the source's quantisation tables with SharePipe's (a JPEG
    /// SharePipe did not write), rather than being `saved` itself (a WebP, a JPEG SharePipe wrote).
    var comparedTables: Bool

    /// A quality on SharePipe's own scale: a WebP's (libwebp's scale is the one SharePipe passes on), a JPEG
    /// whose tables are exactly ones SharePipe writes or wrote.
    init(sameScale quality: Int) {
        (saved, ceiling, comparedTables) = (quality, quality, false)
    }

    /// A quality `saved` on another scale whose tables compare with SharePipe's at `ceiling`.
    init(saved: Int, ceiling: Int) {
        (self.saved, self.ceiling, comparedTables) = (saved, ceiling, true)
    }

    /// The adjustment reported when `ceiling` lowers the search's ceiling: "quality capped at the source's
    /// q73" on the same scale, "quality capped at q72, as fine as the source's q75 tables" after comparing.
    var capNote: String {
        comparedTables
            ? "quality capped at q\(ceiling), as fine as the source's q\(saved) tables"
            : "quality capped at the source's q\(ceiling)"
    }
}

/// The fitting steps a format offers as an output, cheapest loss first. `PreparePlan` turns them into a
/// `FittingLadder` with the options' numbers; `FittingDriver` runs the ladder.
enum FittingSteps: Sendable, Equatable {
    /// Search the encoder's quality range (JPEG quality; a GIF reads quality as a colour budget), then
    /// smaller dimensions.
    case qualitySearch
    /// Lossless encodes at rising effort, then (where the options allow a format change and the image is
    /// opaque) a JPEG quality search, then smaller dimensions.
    case lossless(efforts: [Int], strongest: Int)
    /// One lossless encode (`EncodeSettings.lossless`), then, where it is over the limit, the quality search
    /// in the same format (reported), then smaller dimensions.
    case losslessFirst
}

/// What a lossless turn made.
enum LosslessTurnOutcome: Sendable {
    case turned([UInt8])
    /// Why the image data cannot be turned losslessly (reported when the job re-encodes instead).
    case impossible(String)
}

/// How an animated input reaches the animation route.
enum AnimationSupport: Sendable {
    /// GIF's own route: read record by record and written back frame by frame (`AnimatedGIFPipeline`),
    /// keeping each frame's palette, disposal and rectangle where they serve.
    case nativeGIF
    /// Any other animated format: its decoder composites each frame onto the canvas and hands the
    /// canvases over (`AnimationFrameSource`); the route resamples them and writes an animated GIF.
    /// `open` counts every pixel buffer the source holds in the job's meter (so `peakPixelBytes` includes
    /// the canvases); `meteredBytes` is the most it counts for an input with `info`, which `MemoryEstimate`
    /// prices for the animation route.
    case frames(
        open:
            @Sendable (_ source: ImageSource, _ info: ImageInfo, _ limits: ImageLimits, _ meter: PixelMemoryMeter)
            throws
            -> any AnimationFrameSource,
        meteredBytes: @Sendable (_ info: ImageInfo) -> Int)
}

/// A format's memory model: the parts of `MemoryEstimate` for the still and metadata-rewrite routes,
/// priced from the plan (the animation route has its own model, `MemoryEstimate.animation`).
typealias MemoryModel =
    @Sendable (
        _ info: ImageInfo, _ plan: PreparePlan, _ options: PrepareOptions.Checked,
        _ keptMetadataBytes: Int
    ) -> MemoryEstimate.Parts
