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
    }

    /// Runs `ladder` step by step until an encode fits, or throws `cannotMeetLimit` with the smallest
    /// encode seen once the ladder is exhausted.
    func run(_ ladder: inout some LadderRunner, checkpoint: Pipeline.Checkpoint) throws -> PreparedImage {
        var log = AttemptLog(limit: plan.byteLimit ?? Int.max)
        while true {
            try checkpoint()
            if let fit = try ladder.attempt(&log, checkpoint: checkpoint) {
                return prepared(fit, attempts: log.attempts, warnings: ladder.warnings)
            }
            guard ladder.advance(limit: log.limit) else {
                throw SharePipeError.cannotMeetLimit(file: source.displayName, limit: log.limit, bestBytes: log.smallest)
            }
        }
    }

    /// The result: the plan's facts, the fit's bytes, the attempts, the meter's peak.
    func prepared(_ fit: Fit, attempts: [FitAttempt], warnings: [String]) -> PreparedImage {
        PreparedImage(bytes: fit.bytes, format: fit.format, size: fit.size, inputFormat: info.format,
                      inputSize: info.size, inputByteCount: info.byteCount,
                      appliedOrientation: fit.method == .metadataRewrite ? .up : plan.orientation,
                      method: fit.method, quality: fit.quality, attempts: attempts,
                      removedMetadata: fit.metadata.removed, keptMetadata: MetadataOutcome.kinds(of: fit.metadata.kept),
                      frameCount: fit.frameCount, peakPixelBytes: meter.peakBytes, warnings: warnings,
                      adjustments: plan.adjustments + fit.adjustments, inputFrameCount: info.frameCount)
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

/// Every encode tried, and the smallest.
struct AttemptLog {
    let limit: Int
    private(set) var attempts: [FitAttempt] = []
    private(set) var smallest = Int.max

    init(limit: Int) { self.limit = limit }

    /// Records one encode; returns whether it fits.
    @discardableResult
    mutating func record(size: PixelSize, format: ImageFormat, quality: Int?, note: String?, bytes: Int) -> Bool {
        let fits = bytes <= limit
        attempts.append(FitAttempt(size: size, format: format, quality: quality, note: note, bytes: bytes, fits: fits))
        smallest = min(smallest, bytes)
        return fits
    }

    /// The highest quality in `range` whose encode of `bitmap` fits, every encode recorded.
    mutating func searchQuality(_ bitmap: Bitmap, encoder: any ImageEncoder, range: ClosedRange<Int>, progressive: Bool,
                                metadata: [MetadataBlock], note: String?,
                                checkpoint: Pipeline.Checkpoint) throws -> QualitySearch.Outcome<[UInt8]> {
        try searchQuality(StagedBitmap(bitmap, encoder: encoder), format: encoder.format, range: range,
                          progressive: progressive, metadata: metadata, note: note, checkpoint: checkpoint)
    }

    /// The same on a staged bitmap (`ImageEncoder.staged`).
    mutating func searchQuality(_ staged: StagedBitmap, format: ImageFormat, range: ClosedRange<Int>, progressive: Bool,
                                metadata: [MetadataBlock], note: String?,
                                checkpoint: Pipeline.Checkpoint) throws -> QualitySearch.Outcome<[UInt8]> {
        let search = try QualitySearch.highestFitting(range: range, limit: limit) { quality in
            try checkpoint()
            let bytes = try staged.encode(EncodeSettings(quality: quality, progressive: progressive), metadata)
            return (bytes, bytes.count)
        }
        for (quality, bytes) in search.attempts {
            record(size: staged.size, format: format, quality: quality, note: note, bytes: bytes)
        }
        return search
    }
}

/// One fitting ladder being climbed: its current step and how to take the next.
protocol LadderRunner {
    /// Recoverable problems the decoders reported while the ladder ran.
    var warnings: [String] { get }
    /// Encodes every rung of the current step, recording each encode in `log`; returns the first that fits.
    mutating func attempt(_ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint) throws -> FittingDriver.Fit?
    /// Moves to the next step (a smaller size, fewer colours, fewer frames); false when none is left.
    mutating func advance(limit: Int) -> Bool
}

// MARK: - Still ladders

/// Renders a still at a size, upright: a fresh decode of the source (shrinking on load), or under
/// `cpuFirst` a resample of the render kept in memory.
struct StillRenderer {
    let source: ImageSource
    let info: ImageInfo
    let decoder: any ImageDecoder
    let limits: ImageLimits
    let meter: PixelMemoryMeter
    /// Under `cpuFirst`, the render kept for later sizes and services; nil under `memoryFirst`.
    let cache: RenderCache?

    func oriented(_ size: PixelSize, warnings: inout [String]) throws -> Bitmap {
        let bitmap: Bitmap
        if let cached = cache?.bitmap(covering: size) {
            bitmap = InMemoryResample.resize(cached, to: size, meter: meter)
        } else {
            let rendered = try decoder.render(source, info: info, target: size, limits: limits, meter: meter)
            warnings += rendered.warnings
            bitmap = rendered.bitmap
            cache?.keep(bitmap)
        }
        return meter.holding(bitmap.byteCount) { bitmap.applying(info.orientation) }
    }
}

/// The sizes a still ladder walks: the target first, then smaller by the shared shrink step (based on the
/// smallest encode at the last size) down to `minShortEdge`; each size rendered afresh and held upright
/// in the meter while its encodes run.
struct StillSizes {
    let renderer: StillRenderer
    let target: PixelSize
    let minShortEdge: Int
    private(set) var size: PixelSize
    /// The smallest encode at the current size: what the next size is planned from.
    var smallestAtSize = Int.max
    private(set) var warnings: [String] = []

    init(renderer: StillRenderer, target: PixelSize, minShortEdge: Int) {
        self.renderer = renderer
        self.target = target
        self.minShortEdge = minShortEdge
        size = target
    }

    /// "dimensions reduced to fit" once the size is below the target.
    var adjustments: [String] { size == target ? [] : ["dimensions reduced to fit"] }

    /// Renders the current size upright and counts it in the meter until `release`.
    mutating func render() throws -> Bitmap {
        smallestAtSize = Int.max
        let oriented = try renderer.oriented(size, warnings: &warnings)
        renderer.meter.allocate(oriented.byteCount)
        return oriented
    }

    func release(_ oriented: Bitmap) { renderer.meter.release(oriented.byteCount) }

    /// Renders the current size and stages it for `encoder` (`ImageEncoder.staged`), counted in the meter
    /// until `release`. A converted form replaces the bitmap before any encode: JPEG makes 4:2:0 planes, half
    /// the RGB bitmap's bytes, giving the bitmap's pages back 64 rows at a time as it converts them, so
    /// the meter counts the bitmap, then the planes. Under `cpuFirst` the render is kept for later sizes
    /// (it may be the bitmap itself), so the bitmap is encoded as it is.
    mutating func renderStaged(for encoder: any ImageEncoder) throws -> StagedBitmap {
        let oriented = try render()
        if renderer.cache != nil { return StagedBitmap(oriented, encoder: encoder) }
        let bitmapBytes = oriented.byteCount
        let staged: StagedBitmap
        do {
            staged = try encoder.staged(consume oriented)
        } catch {
            renderer.meter.release(bitmapBytes)
            throw error
        }
        if staged.isBitmap { return staged }
        renderer.meter.release(bitmapBytes)
        renderer.meter.allocate(staged.byteCount)
        return staged
    }

    func release(_ staged: StagedBitmap) { renderer.meter.release(staged.byteCount) }

    mutating func shrink(limit: Int) -> Bool {
        guard let next = FittingDriver.shrink(size, bytes: smallestAtSize, limit: limit, floor: minShortEdge) else { return false }
        size = next
        return true
    }
}

/// `FittingLadder.quality`: at each size the highest fitting quality, then a smaller size.
struct QualityLadder: LadderRunner {
    var sizes: StillSizes
    let encoder: any ImageEncoder
    let range: ClosedRange<Int>
    let progressive: Bool
    let metadata: MetadataOutcome
    /// The adjustment the ladder's range carries ("quality capped at the source's q73"), if any.
    let rangeNote: String?

    var warnings: [String] { sizes.warnings }

    mutating func attempt(_ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint) throws -> FittingDriver.Fit? {
        let staged = try sizes.renderStaged(for: encoder)
        defer { sizes.release(staged) }
        let search = try log.searchQuality(staged, format: encoder.format, range: range, progressive: progressive,
                                           metadata: metadata.kept, note: nil, checkpoint: checkpoint)
        sizes.smallestAtSize = search.smallestBytes
        guard let best = search.best else { return nil }
        return FittingDriver.Fit(bytes: best.encoded, format: encoder.format, size: staged.size, quality: best.quality,
                                 metadata: metadata, adjustments: (rangeNote.map { [$0] } ?? []) + sizes.adjustments)
    }

    mutating func advance(limit: Int) -> Bool { sizes.shrink(limit: limit) }
}

/// `FittingLadder.lossless`: for each size, cheapest loss first:
///   1. the lossless encoder at each effort (the default zlib level, then the strongest settings: "zlib 9");
///   2. where a format change is allowed and the image has no meaningful alpha (every pixel opaque at
///      this size), the changed format searched over its quality range: "PNG → JPEG";
///   3. otherwise a smaller size, by about sqrt(limit / bytes) of the smallest encode at this size.
/// A smaller size starts where the larger one ended (the strongest effort, or the changed format once
/// chosen), since what did not fit larger will not fit smaller at a weaker setting.
struct LosslessLadder: LadderRunner {
    var sizes: StillSizes
    let encoder: any ImageEncoder
    private(set) var efforts: [Int]
    let strongest: Int
    let quality: Int
    let progressive: Bool
    let metadata: MetadataOutcome
    let formatChange: FormatChange?
    let changedEncoder: (any ImageEncoder)?
    /// The first effort: a fit there is no adjustment.
    let defaultEffort: Int?
    private var changesFormat = false

    init(sizes: StillSizes, encoder: any ImageEncoder, efforts: [Int], strongest: Int, quality: Int, progressive: Bool,
         metadata: MetadataOutcome, formatChange: FormatChange?, changedEncoder: (any ImageEncoder)?) {
        (self.sizes, self.encoder, self.efforts, self.strongest) = (sizes, encoder, efforts, strongest)
        (self.quality, self.progressive, self.metadata) = (quality, progressive, metadata)
        (self.formatChange, self.changedEncoder) = (formatChange, changedEncoder)
        defaultEffort = efforts.first
    }

    var warnings: [String] { sizes.warnings }

    mutating func attempt(_ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint) throws -> FittingDriver.Fit? {
        let oriented = try sizes.render()
        defer { sizes.release(oriented) }
        if !changesFormat {
            for effort in efforts {
                try checkpoint()
                let bytes = try encoder.encode(oriented, settings: EncodeSettings(quality: quality, progressive: false, effort: effort),
                                               metadata: metadata.kept)
                sizes.smallestAtSize = min(sizes.smallestAtSize, bytes.count)
                if log.record(size: oriented.size, format: encoder.format, quality: nil, note: "zlib \(effort)", bytes: bytes.count) {
                    let effortNote = effort == defaultEffort ? [] : ["zlib \(effort)"]
                    return FittingDriver.Fit(bytes: bytes, format: encoder.format, size: oriented.size, quality: nil,
                                             metadata: metadata, adjustments: effortNote + sizes.adjustments)
                }
            }
            efforts = [strongest]
            changesFormat = formatChange != nil && !oriented.hasTransparency
        }
        guard changesFormat, let formatChange, let changedEncoder else { return nil }
        let note = "\(encoder.format.displayName) → \(formatChange.format.displayName)"
        let search = try log.searchQuality(oriented, encoder: changedEncoder, range: formatChange.range,
                                           progressive: progressive, metadata: formatChange.metadata.kept,
                                           note: note, checkpoint: checkpoint)
        sizes.smallestAtSize = search.smallestBytes
        guard let best = search.best else { return nil }
        return FittingDriver.Fit(bytes: best.encoded, format: formatChange.format, size: oriented.size,
                                 quality: best.quality, metadata: formatChange.metadata, adjustments: [note] + sizes.adjustments)
    }

    mutating func advance(limit: Int) -> Bool { sizes.shrink(limit: limit) }
}

/// The `cpuFirst` strategy's memory: one decoded, resized bitmap (stored orientation) reused for every
/// smaller size the fitting search or a later service asks for, instead of decoding the source again.
final class RenderCache: @unchecked Sendable {
    private let lock = Mutex()
    private var bitmap: Bitmap?

    /// The kept bitmap if it is at least `size` on both edges.
    func bitmap(covering size: PixelSize) -> Bitmap? {
        lock.locked {
            guard let bitmap, bitmap.width >= size.width, bitmap.height >= size.height else { return nil }
            return bitmap
        }
    }

    /// Keeps `candidate` if it is larger than what is kept.
    func keep(_ candidate: Bitmap) {
        lock.locked {
            if bitmap == nil || candidate.size.area > bitmap!.size.area { bitmap = candidate }
        }
    }
}

/// Resizes a bitmap already in memory by feeding its rows to the streaming resampler.
enum InMemoryResample {
    static func resize(_ bitmap: Bitmap, to size: PixelSize, meter: PixelMemoryMeter) -> Bitmap {
        if bitmap.size == size { return bitmap }
        var resampler = LanczosResampler(from: bitmap.size, to: size, layout: bitmap.layout, meter: meter)
        let rowBytes = bitmap.width * bitmap.layout.channels
        bitmap.pixels.withUnsafeBufferPointer { all in
            for y in 0..<bitmap.height {
                resampler.push(row: UnsafeBufferPointer(rebasing: all[y * rowBytes..<(y + 1) * rowBytes]))
            }
        }
        // All rows were pushed, so finish cannot report an incomplete image.
        return (try? resampler.finish()) ?? bitmap
    }
}
