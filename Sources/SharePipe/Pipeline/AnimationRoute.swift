/// The animation route: every frame resampled to the planned size and written as an animated GIF under
/// the byte limit, from either of two passes over the source:
///
/// - GIF's native pass (`AnimatedGIFPass`): record by record, keeping each frame's palette, rectangle and
///   disposal where they serve;
/// - any other format's `AnimationFrameSource` (`AnimationFramesPass`): whole composited canvases, each
///   resampled and handed to the same GIF animation encoder, which writes only the changed rectangle.
///
/// Both are climbed by the same `AnimationLadder` (dimensions, colours, frame decimation, dimensions).
enum AnimationRoute {
    /// What the animation route writes.
    static let outputFormat = ImageFormat.gif

    /// The ladder for `plan` (whose route is `.animation`), over the pass the input format offers.
    static func ladder(
        _ source: ImageSource, info: ImageInfo, plan: PreparePlan, options: PrepareOptions.Checked,
        meter: PixelMemoryMeter, checkpoint: Pipeline.Checkpoint
    ) throws -> AnimationLadder {
        guard case .animation(let initial, let frameCount, let floor, let minShortEdge) = plan.ladder,
            let support = FormatRegistry.descriptor(for: info.format).animation
        else {
            preconditionFailure("the animation route needs an animation plan and an animated format")
        }
        let run: AnimationLadder.Pass
        var warnings: [String] = []
        switch support {
        case .nativeGIF:
            let summary = try GIFSummary.read(source, limits: options.limits)
            try checkpoint()
            warnings = summary.warnings
            let pass = AnimatedGIFPass(
                source: source, summary: summary, metadata: plan.writtenMetadata.kept, meter: meter)
            run = { try pass.run($0, globalUsage: $1, checkpoint: $2) }
        case .frames(let open, _):
            warnings = info.probeWarnings
            let pass = AnimationFramesPass(
                open: { try open(source, info, options.limits, meter) }, orientation: plan.orientation,
                metadata: plan.writtenMetadata.kept, meter: meter)
            run = { try pass.run($0, globalUsage: $1, checkpoint: $2) }
        }
        return AnimationLadder(
            run: run, initial: initial, frameCount: frameCount, dimensionFloor: floor,
            minShortEdge: minShortEdge, metadata: plan.writtenMetadata, warnings: warnings)
    }

    /// The first plan: the size under the animation's caps, and the service's frame limits. Too many frames
    /// are decimated (timing kept); too many pixels in all (width × height × frames) shrink the size, or
    /// decimate when that would go under the smallest short edge.
    static func initialPlan(canvas: PixelSize, frameCount frames: Int, options: PrepareOptions.Checked)
        -> AnimatedGIFPlan
    {
        var plan = AnimatedGIFPlan(
            size: ScalePlan.targetSize(for: canvas, caps: options.animatedSizeCaps), colorBudget: nil)
        if let maxFrames = options.animation.maxFrames, frames > maxFrames {
            plan.keepEvery = min(max(1, frames - 1), (frames + maxFrames - 1) / maxFrames)
        }
        // `checked()` makes maxTotalPixels ≥ 1, so the square root is of a positive number; the products
        // saturate instead of overflowing.
        if let maxTotal = options.animation.maxTotalPixels {
            let kept = (frames + plan.keepEvery - 1) / plan.keepEvery
            func total(_ size: PixelSize) -> Int {
                let (product, overflow) = size.area.multipliedReportingOverflow(by: kept)
                return overflow ? Int.max : product
            }
            if total(plan.size) > maxTotal {
                let factor = (Double(maxTotal) / Double(total(plan.size))).squareRoot()
                let smaller = ScalePlan.scaled(plan.size, by: factor)
                if smaller.shortEdge >= options.minShortEdge {
                    plan.size = smaller
                    while total(plan.size) > maxTotal && plan.size.shortEdge > 1 {
                        // 2 % off rounds back to the same size under 26 px (minShortEdge below that): a pixel off
                        // each edge then, so the loop always ends.
                        let next = ScalePlan.scaled(plan.size, by: 0.98)
                        plan.size =
                            next != plan.size
                            ? next
                            : PixelSize(width: max(1, next.width - 1), height: max(1, next.height - 1))
                    }
                } else {
                    let perFrame = max(1, maxTotal / max(1, plan.size.area))
                    plan.keepEvery = min(max(1, frames - 1), max(plan.keepEvery, (frames + perFrame - 1) / perFrame))
                }
            }
        }
        return plan
    }
}

/// `FittingLadder.animation`, in this order: smaller dimensions (down to half the planned short edge),
/// fewer colours (128, 64, 32), then frame decimation (keep every 2nd, 3rd, ... frame, adding the dropped
/// frames' delays to the kept ones so the total duration stays the same; at least 2 frames stay so the
/// animation never becomes a still), and finally smaller dimensions again down to `minShortEdge`. Each
/// step is one whole pass over the source.
struct AnimationLadder: LadderRunner {
    /// One pass with a plan; the global palette's usage from an earlier pass weights its reduction.
    typealias Pass = (AnimatedGIFPlan, _ globalUsage: [Int]?, Pipeline.Checkpoint) throws -> AnimatedGIFPass.Output

    static let colorSteps = [128, 64, 32]

    let run: Pass
    let initial: AnimatedGIFPlan
    let frameCount: Int
    let dimensionFloor: Int
    let minShortEdge: Int
    let metadata: MetadataOutcome
    let warnings: [String]
    private var plan: AnimatedGIFPlan
    private var lastBytes = 0
    private var globalUsage: [Int]?

    init(
        run: @escaping Pass, initial: AnimatedGIFPlan, frameCount: Int, dimensionFloor: Int, minShortEdge: Int,
        metadata: MetadataOutcome, warnings: [String]
    ) {
        self.run = run
        self.initial = initial
        self.frameCount = frameCount
        self.dimensionFloor = dimensionFloor
        self.minShortEdge = minShortEdge
        self.metadata = metadata
        self.warnings = warnings
        plan = initial
    }

    mutating func attempt(_ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint) throws -> FittingDriver.Fit? {
        let output = try run(plan, globalUsage, checkpoint)
        if globalUsage == nil { globalUsage = output.globalUsage }
        lastBytes = output.bytes.count
        guard
            log.record(
                size: plan.size, format: .gif, quality: nil, note: plan.note(frameCount: frameCount),
                bytes: lastBytes)
        else { return nil }
        return FittingDriver.Fit(
            bytes: output.bytes, format: .gif, size: plan.size, quality: nil, metadata: metadata,
            frameCount: output.framesWritten, adjustments: adjustments(output))
    }

    mutating func advance(limit: Int) -> Bool {
        guard let next = nextPlan(after: plan, bytes: lastBytes, limit: limit) else { return false }
        plan = next
        return true
    }

    /// The next rung of the ladder, or nil when every lever is exhausted.
    func nextPlan(after plan: AnimatedGIFPlan, bytes: Int, limit: Int) -> AnimatedGIFPlan? {
        var next = plan
        // 1. Dimensions, while colours and frames are untouched, down to the floor.
        if plan.colorBudget == nil && plan.keepEvery == 1 && plan.size.shortEdge > dimensionFloor,
            let smaller = FittingDriver.shrink(
                plan.size, bytes: bytes, limit: limit, floor: dimensionFloor, landOnFloor: true)
        {
            next.size = smaller
            return next
        }
        // 2. Fewer colours.
        if plan.keepEvery == 1, let budget = Self.colorSteps.first(where: { $0 < (plan.colorBudget ?? 256) }) {
            next.colorBudget = budget
            return next
        }
        // 3. Frame decimation, estimated from how far over the limit the last attempt was.
        let maxKeepEvery = max(1, frameCount - 1)
        if plan.keepEvery < maxKeepEvery {
            let estimate = Int((Double(plan.keepEvery) * Double(bytes) / Double(limit)).rounded(.up))
            next.keepEvery = min(maxKeepEvery, max(plan.keepEvery + 1, estimate))
            return next
        }
        // 4. Dimensions again, down to the smallest short edge allowed.
        if let smaller = FittingDriver.shrink(
            plan.size, bytes: bytes, limit: limit, floor: minShortEdge, landOnFloor: true),
            smaller.shortEdge >= minShortEdge
        {
            next.size = smaller
            return next
        }
        return nil
    }

    /// What the fitting changed, for the report (the plan reports its own reductions).
    private func adjustments(_ output: AnimatedGIFPass.Output) -> [String] {
        var adjustments: [String] = []
        if plan.size != initial.size {
            adjustments.append("reduced to \(plan.size) (planned \(initial.size)) to meet the byte limit")
        }
        if let budget = plan.colorBudget {
            adjustments.append("palettes reduced to \(budget) colours to meet the byte limit")
        }
        if plan.keepEvery > 1 {
            let why = plan.keepEvery == initial.keepEvery ? "for the service's frame limits" : "to meet the byte limit"
            adjustments.append(
                "frames decimated \(plan.keepEvery):1 (\(frameCount) → \(output.framesWritten)) \(why), "
                    + "delays merged so the total duration is unchanged")
        }
        if output.statistics.delaysClamped > 0 {
            adjustments.append("\(output.statistics.delaysClamped) merged delay(s) clamped to 655.35 s")
        }
        return adjustments
    }
}

/// One pass over an `AnimationFrameSource`: each kept canvas resampled to the plan's size and handed to
/// the GIF animation encoder (which writes the changed rectangle with its own palette), delays converted
/// from milliseconds to centiseconds on the running total (so rounding never drifts the total duration),
/// the loop count as the source gives it (nil: no NETSCAPE2.0 extension).
///
/// Memory: the source's own canvas (and what its codec keeps), the resampled picture and the one after
/// it, and the encoder's viewer model at the output size, all in the job's meter; each pass opens the
/// source afresh and closes it before the next.
struct AnimationFramesPass {
    let open: () throws -> any AnimationFrameSource
    /// Applied to each canvas before it is resampled (the source's Exif orientation).
    var orientation: Orientation = .up
    let metadata: [MetadataBlock]
    let meter: PixelMemoryMeter

    func run(_ plan: AnimatedGIFPlan, globalUsage: [Int]?, checkpoint: Pipeline.Checkpoint) throws
        -> AnimatedGIFPass.Output
    {
        var frames = try open()
        defer { frames.close() }  // an early exit (error, cancelled job) uncounts the source's canvases too
        let writer = try GIFWriter()
        try writer.begin(
            GIFContainer(
                screenSize: plan.size, globalPalette: nil, backgroundIndex: 0, colorResolution: 8,
                aspectByte: 0, loopCount: frames.loopCount, metadata: metadata))
        // Upright canvases go through a resampler that keeps the last picture and recomputes only the
        // outputs that read changed canvas pixels (byte for byte the whole-canvas result); the encoder then
        // looks for changed pixels only there. Turned canvases are resampled whole.
        let pictures =
            orientation == .up ? GIFPictureResampler(from: frames.canvasSize, to: plan.size, meter: meter) : nil
        let encoder = GIFAnimationEncoder(
            size: plan.size, globalPalette: nil, colorBudget: plan.colorBudget,
            writer: writer, meter: meter, countsPictures: pictures == nil)
        let whole = GIFRect(left: 0, top: 0, width: plan.size.width, height: plan.size.height)
        let wholeCanvas = GIFRect(left: 0, top: 0, width: frames.canvasSize.width, height: frames.canvasSize.height)
        var clock = CentisecondClock()
        var index = 0
        /// Canvas pixels changed since the last picture was made (frames dropped by decimation add theirs).
        var canvasChanged = GIFRect.empty
        while let frame = try frames.nextFrame() {
            try checkpoint()
            guard frame.canvas.size == frames.canvasSize, frame.canvas.layout == .rgba else {
                preconditionFailure("an AnimationFrameSource hands over RGBA canvases of its canvas size")
            }
            let delay = clock.advance(milliseconds: frame.durationMilliseconds)
            canvasChanged = index == 0 ? wholeCanvas : canvasChanged.union(frame.changed ?? wholeCanvas)
            if index % plan.keepEvery == 0 {
                if let pictures {
                    let area = frame.canvas.pixels.withUnsafeBufferPointer {
                        pictures.update(canvas: $0, changed: canvasChanged)
                    }
                    canvasChanged = .empty
                    let source = GIFFrame(
                        rect: whole, localPalette: nil, interlaced: false,
                        control: GIFGraphicsControl(delay: delay))
                    // Outside `area` the picture is the previous one: nothing there changed or lost opacity.
                    try encoder.add(
                        .init(
                            pixels: pictures.output, source: source, delay: delay,
                            coverageMayDrop: index == 0 || area.isEmpty ? nil : area,
                            changed: index == 0 ? nil : area))
                    index += 1
                    continue
                }
                let canvas = orientation == .up ? frame.canvas : frame.canvas.applying(orientation)
                let picture = try InMemoryResample.resize(canvas, to: plan.size, meter: meter)
                // A composited canvas may turn any pixel transparent from one frame to the next.
                let source = GIFFrame(
                    rect: whole, localPalette: nil, interlaced: false,
                    control: GIFGraphicsControl(delay: delay))
                try encoder.add(
                    .init(
                        pixels: picture.pixels, source: source, delay: delay,
                        coverageMayDrop: index == 0 ? nil : whole, changed: nil))
            } else {
                encoder.extendLatestDelay(by: delay)
            }
            index += 1
        }
        try encoder.finish()
        return AnimatedGIFPass.Output(
            bytes: try writer.finish(), framesWritten: encoder.statistics.framesWritten,
            statistics: encoder.statistics, globalUsage: encoder.globalUsage)
    }
}

/// Converts frame durations in milliseconds to GIF delays in centiseconds on the running total: each
/// delay is the rounded end time minus the rounded start time, so the delays always add up to the
/// rounded total duration.
struct CentisecondClock {
    private var elapsedMilliseconds = 0

    /// The delay, in centiseconds, of a frame shown for `milliseconds` after the frames before it.
    mutating func advance(milliseconds: Int) -> Int {
        let start = (elapsedMilliseconds + 5) / 10
        elapsedMilliseconds += max(0, milliseconds)
        return (elapsedMilliseconds + 5) / 10 - start
    }
}
