/// Runs any fitting ladder under a plan's byte limit, and builds every `PreparedImage`.
///
/// The driver owns what every ladder shares: the attempts log, a checkpoint (cancellation) before each
/// step, the single `cannotMeetLimit` when the ladder has no rung left, and the one place a result is
/// assembled from the plan, the winning encode and the log. A ladder (`LadderRunner`) owns only its rungs:
/// what it encodes at its current step, and what its next step is. Nothing over the limit is ever
/// returned as a success.
struct FittingDriver {
    let source: ImageSource
    let info: ImageInfo
    let plan: PreparePlan
    let meter: PixelMemoryMeter

    /// An encode that fits, and what it took.
    struct Fit {
        var bytes: [UInt8]
        var format: ImageFormat
        /// Output size as displayed.
        var size: PixelSize
        var quality: Int?
        /// The metadata the encode holds.
        var metadata: MetadataOutcome
        var frameCount = 1
        var method = PreparationMethod.reencoded
        /// Adjustments this fit made (the plan's own come first in the report).
        var adjustments: [String] = []
        /// The encode, when it was written to a temporary file instead of memory (then `bytes` is empty).
        var file: EncodedFile? = nil
        /// Its SSIMULACRA2 score against the render, where the quality search measured it.
        var score: Double? = nil
    }

    /// Runs `ladder` step by step until an encode fits, or throws `cannotMeetLimit` with the smallest
    /// encode seen once the ladder is exhausted.
    func run(_ ladder: inout some LadderRunner, checkpoint: Pipeline.Checkpoint) throws -> PreparedImage {
        var log = AttemptLog(limit: plan.byteLimit ?? Int.max)
        while true {
            try checkpoint()
            if let fit = try ladder.attempt(&log, checkpoint: checkpoint) {
                return prepared(
                    fit, attempts: log.attempts, warnings: ladder.warnings, thumbnail: ladder.placeholderThumbnail,
                    focus: ladder.focalPoint)
            }
            guard ladder.advance(limit: log.limit) else {
                throw SharePipeError.cannotMeetLimit(
                    file: source.displayName, limit: log.limit, bestBytes: log.smallest)
            }
        }
    }

    /// The result: the plan's facts, the fit's bytes (or its file), the attempts, the meter's peak, and the
    /// placeholder hashed from `thumbnail` (the render reduced, `PlaceholderThumbnail`), and the focal point:
    /// `focus` where the ladder placed a crop around it, else estimated from `thumbnail`.
    func prepared(
        _ fit: Fit, attempts: [FitAttempt], warnings: [String], thumbnail: PlaceholderThumbnail?,
        focus: FocalPoint? = nil
    ) -> PreparedImage {
        var prepared = PreparedImage(
            bytes: fit.bytes, format: fit.format, size: fit.size, inputFormat: info.format,
            inputSize: info.size, inputByteCount: info.byteCount,
            appliedOrientation: fit.method == .metadataRewrite ? .up : plan.orientation,
            method: fit.method, quality: fit.quality, attempts: attempts,
            removedMetadata: fit.metadata.removed, keptMetadata: MetadataOutcome.kinds(of: fit.metadata.kept),
            embeddedVideo: info.embeddedVideo,
            frameCount: fit.frameCount, peakPixelBytes: meter.peakBytes, warnings: warnings,
            adjustments: plan.adjustments + fit.adjustments, inputFrameCount: info.frameCount, outputFile: fit.file)
        prepared.placeholder = thumbnail?.placeholder(
            xComponents: plan.blurHashComponents.x, yComponents: plan.blurHashComponents.y)
        prepared.placeholderPixels = thumbnail
        prepared.score = fit.score
        prepared.sourceDecodes = meter.decodeCount
        prepared.focus = focus ?? thumbnail.map(AttentionMap.focalPoint(of:))
        return prepared
    }

    /// The shrink step every ladder uses: about sqrt(limit / bytes) smaller (`ScalePlan.shrink`), or nil
    /// when that makes no progress or goes under `floor`. With `landOnFloor` a step that would go under
    /// the floor lands exactly on it instead.
    static func shrink(_ size: PixelSize, bytes: Int, limit: Int, floor: Int, landOnFloor: Bool = false) -> PixelSize? {
        var next = ScalePlan.shrink(size, bytes: bytes, limit: limit)
        if next.shortEdge < floor {
            guard landOnFloor, size.shortEdge > floor else { return nil }
            next = ScalePlan.scaled(size, by: Double(floor) / Double(size.shortEdge), capShortEdge: floor)
        }
        return next == size ? nil : next
    }
}

/// One fitting ladder being climbed: its current step and how to take the next.
protocol LadderRunner {
    /// Recoverable problems the decoders reported while the ladder ran.
    var warnings: [String] { get }
    /// The first picture the ladder rendered, reduced for the placeholder (`PlaceholderThumbnail`).
    var placeholderThumbnail: PlaceholderThumbnail? { get }
    /// Encodes every rung of the current step, recording each encode in `log`; returns the first that fits.
    mutating func attempt(_ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint) throws -> FittingDriver.Fit?
    /// Moves to the next step (a smaller size, fewer colours, fewer frames); false when none is left.
    mutating func advance(limit: Int) -> Bool
    /// The output's focal point where the ladder knows it already (it cropped around the focal point of the
    /// whole picture: `CropWindow`); nil to estimate it from `placeholderThumbnail`.
    var focalPoint: FocalPoint? { get }
}

extension LadderRunner {
    var focalPoint: FocalPoint? { nil }
}
