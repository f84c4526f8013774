#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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

    /// The ladder for `plan` (whose route is `.animation`), over the pass the input format offers. Each pass
    /// writes its GIF into an unlinked temporary file in `temporaryDirectory` (nil: `$TMPDIR`, else `/tmp`): an
    /// attempt's size is known without holding it, and an attempt not kept takes its file with it.
    static func ladder(
        _ source: ImageSource, info: ImageInfo, plan: PreparePlan, options: PrepareOptions.Checked,
        meter: PixelMemoryMeter, checkpoint: Pipeline.Checkpoint, temporaryDirectory: String? = nil
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
            var pass = AnimatedGIFPass(
                source: source, summary: summary, metadata: plan.writtenMetadata.kept, meter: meter)
            pass.writesTemporaryFile = true
            pass.temporaryDirectory = temporaryDirectory
            run = { [pass] in try pass.run($0, globalUsage: $1, checkpoint: $2) }
        case .frames(let open, _):
            warnings = info.probeWarnings
            var pass = AnimationFramesPass(
                open: { try open(source, info, options.limits, meter) }, orientation: plan.orientation,
                metadata: plan.writtenMetadata.kept, meter: meter)
            pass.dimensionFloor = floor
            pass.initialPlan = initial
            pass.writesTemporaryFile = true
            pass.temporaryDirectory = temporaryDirectory
            run = { [pass] in try pass.run($0, globalUsage: $1, checkpoint: $2) }
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
        lastBytes = output.byteCount
        guard
            log.record(
                size: plan.size, format: .gif, quality: nil, note: plan.note(frameCount: frameCount),
                bytes: lastBytes)
        else { return nil }
        // An attempt over the limit is dropped here: its temporary file (if any) goes with it.
        return FittingDriver.Fit(
            bytes: output.bytes, format: .gif, size: plan.size, quality: nil, metadata: metadata,
            frameCount: output.framesWritten, adjustments: adjustments(output), file: output.file)
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
/// Decoded once per size: a pass that reads the source resamples every frame (kept or not) and spills the
/// pictures to a temporary file as it goes (`ResampledFrameSpill`: each frame's changed rectangle of the
/// output picture); a later pass at the same size (fewer colours, fewer frames) reads the spill back frame
/// by frame instead of decoding and resampling again. A pass at another size reads the source again; a pass the
/// ladder follows with a smaller size anyway (`dimensionFloor`) writes no spill, nor does the ladder's first
/// (`initialPlan`). The pictures and the changed areas handed to the encoder are the same either way, so the
/// output is too.
///
/// Memory: the source's own canvas (and what its codec keeps), the resampled picture and the one after
/// it (a frame-dropping pass: one more), and the encoder's viewer model at the output size, all in the job's
/// meter; each pass opens the source afresh and closes it before the next. A pass from the spill holds no
/// canvas: the picture being patched and the one before it.
struct AnimationFramesPass {
    let open: () throws -> any AnimationFrameSource
    /// Applied to each canvas before it is resampled (the source's Exif orientation).
    var orientation: Orientation = .up
    let metadata: [MetadataBlock]
    let meter: PixelMemoryMeter
    /// The pictures of the last size read from the source, for the passes after it; nil: never spill.
    var spills: ResampledFrameSpill.Holder? = ResampledFrameSpill.Holder()
    /// The ladder's first dimension floor (`AnimationLadder.dimensionFloor`): a plan with all its colours and
    /// frames above it is not spilled, since the ladder's next step changes its size (so a job whose first
    /// attempt fits writes no spill). nil: every pass from the source spills.
    var dimensionFloor: Int?
    /// The ladder's first plan (`AnimationLadder.initial`): not spilled either, since most jobs fit at their first
    /// attempt (at the dimension floor too: a small animation's first size is its floor); when it does not fit,
    /// the next pass at its size reads the source again and spills. nil: no such rule.
    var initialPlan: AnimatedGIFPlan?
    /// Write each pass's GIF into an unlinked temporary file (`AnimatedGIFPass.Output.file`) instead of memory.
    var writesTemporaryFile = false
    /// Where that file is made (nil: `$TMPDIR`, else `/tmp`).
    var temporaryDirectory: String?

    func run(_ plan: AnimatedGIFPlan, globalUsage: [Int]?, checkpoint: Pipeline.Checkpoint) throws
        -> AnimatedGIFPass.Output
    {
        if let spill = spills?.spill, spill.size == plan.size {
            do {
                return try replay(spill, plan: plan, checkpoint: checkpoint)
            } catch is ResampledFrameSpill.Unreadable {
                // Read the source again, as without a spill.
            }
        }
        spills?.spill = nil
        var frames = try open()
        defer { frames.close() }  // an early exit (error, cancelled job) uncounts the source's canvases too
        let nextStepShrinks =
            dimensionFloor.map { plan.colorBudget == nil && plan.keepEvery == 1 && plan.size.shortEdge > $0 } ?? false
        let spill =
            spills == nil || nextStepShrinks || plan == initialPlan
            ? nil : ResampledFrameSpill(size: plan.size, canvasSize: frames.canvasSize, loopCount: frames.loopCount)
        let writer = try writesTemporaryFile ? GIFWriter.toTemporaryFile(in: temporaryDirectory) : GIFWriter()
        try writer.begin(container(plan, loopCount: frames.loopCount))
        // Upright canvases go through a resampler that keeps the last picture and recomputes only the
        // outputs that read changed canvas pixels (byte for byte the whole-canvas result); the encoder then
        // looks for changed pixels only there. Turned canvases are resampled whole.
        let pictures =
            orientation == .up ? GIFPictureResampler(from: frames.canvasSize, to: plan.size, meter: meter) : nil
        let encoder = GIFAnimationEncoder(
            size: plan.size, globalPalette: nil, colorBudget: plan.colorBudget,
            writer: writer, meter: meter, countsPictures: pictures == nil)
        var sequence = PictureSequence(
            plan: plan, encoder: encoder, reach: pictures?.reach, canvasSize: frames.canvasSize)
        // Dropping frames, the encoder holds the last kept picture while the dropped ones after it are still
        // resampled (the resampler's two pictures move on; or, spilling, a whole resample each): one picture
        // more than its producers count.
        let heldBesides = plan.keepEvery > 1 && (pictures != nil || spill != nil) ? plan.size.area * 4 : 0
        meter.allocate(heldBesides)
        defer { meter.release(heldBesides) }
        let whole = GIFRect(left: 0, top: 0, width: plan.size.width, height: plan.size.height)
        let wholeCanvas = GIFRect(left: 0, top: 0, width: frames.canvasSize.width, height: frames.canvasSize.height)
        var index = 0
        while let frame = try frames.nextFrame() {
            try checkpoint()
            guard frame.canvas.size == frames.canvasSize, frame.canvas.layout == .rgba else {
                preconditionFailure("an AnimationFrameSource hands over RGBA canvases of its canvas size")
            }
            let changed = index == 0 ? wholeCanvas : frame.changed ?? wholeCanvas
            let picture: [UInt8], patch: GIFRect
            if let pictures {
                // Every frame, kept or not, so the spill holds them all; each update gives the whole-canvas result.
                patch = frame.canvas.pixels.withUnsafeBufferPointer { pictures.update(canvas: $0, changed: changed) }
                picture = pictures.output
            } else if spill != nil || sequence.keeps(index) {
                let canvas = frame.canvas.applying(orientation)
                picture = try InMemoryResample.resize(canvas, to: plan.size, meter: meter).pixels
                patch = whole
            } else {
                picture = []  // a dropped frame: its picture is never read
                patch = .empty
            }
            spill?.append(
                picture, patch: patch, canvasChanged: changed, durationMilliseconds: frame.durationMilliseconds)
            try sequence.add(picture, canvasChanged: changed, durationMilliseconds: frame.durationMilliseconds)
            index += 1
        }
        try encoder.finish()
        if let spill, spill.finishWriting() { spills?.spill = spill }
        return AnimatedGIFPass.Output(
            try writer.finishOutput(), framesWritten: encoder.statistics.framesWritten,
            statistics: encoder.statistics, globalUsage: encoder.globalUsage)
    }

    /// A pass over the pictures spilled by an earlier pass at the same size.
    private func replay(_ spill: ResampledFrameSpill, plan: AnimatedGIFPlan, checkpoint: Pipeline.Checkpoint) throws
        -> AnimatedGIFPass.Output
    {
        let writer = try writesTemporaryFile ? GIFWriter.toTemporaryFile(in: temporaryDirectory) : GIFWriter()
        try writer.begin(container(plan, loopCount: spill.loopCount))
        let encoder = GIFAnimationEncoder(
            size: plan.size, globalPalette: nil, colorBudget: plan.colorBudget, writer: writer, meter: meter)
        var sequence = PictureSequence(
            plan: plan, encoder: encoder,
            reach: orientation == .up ? ResampleReach(from: spill.canvasSize, to: plan.size) : nil,
            canvasSize: spill.canvasSize)
        // The picture being patched; the encoder holds the one before it (counted there).
        var picture = [UInt8](repeating: 0, count: plan.size.area * 4)
        meter.allocate(picture.count)
        defer { meter.release(plan.size.area * 4) }
        var reader = try spill.reader()
        while let frame = try reader.next(patching: &picture) {
            try checkpoint()
            try sequence.add(
                picture, canvasChanged: frame.canvasChanged, durationMilliseconds: frame.durationMilliseconds)
        }
        try encoder.finish()
        return AnimatedGIFPass.Output(
            try writer.finishOutput(), framesWritten: encoder.statistics.framesWritten,
            statistics: encoder.statistics, globalUsage: encoder.globalUsage)
    }

    private func container(_ plan: AnimatedGIFPlan, loopCount: Int?) -> GIFContainer {
        GIFContainer(
            screenSize: plan.size, globalPalette: nil, backgroundIndex: 0, colorResolution: 8,
            aspectByte: 0, loopCount: loopCount, metadata: metadata)
    }
}

/// Hands the kept pictures of an animation, frame after frame, to the GIF animation encoder: delays on the
/// running total (a dropped frame's delay goes to the frame shown before it), and, for upright canvases,
/// where each picture may differ from the last one handed on (the outputs that read the canvas pixels
/// changed since then).
private struct PictureSequence {
    let plan: AnimatedGIFPlan
    let encoder: GIFAnimationEncoder
    /// nil: turned canvases, resampled whole (any output pixel may change, or turn transparent).
    let reach: ResampleReach?
    let wholeCanvas: GIFRect
    let whole: GIFRect
    var clock = CentisecondClock()
    var index = 0
    /// Canvas pixels changed since the last picture handed on (frames dropped by decimation add theirs).
    var canvasChanged = GIFRect.empty

    init(plan: AnimatedGIFPlan, encoder: GIFAnimationEncoder, reach: ResampleReach?, canvasSize: PixelSize) {
        self.plan = plan
        self.encoder = encoder
        self.reach = reach
        wholeCanvas = GIFRect(left: 0, top: 0, width: canvasSize.width, height: canvasSize.height)
        whole = GIFRect(left: 0, top: 0, width: plan.size.width, height: plan.size.height)
    }

    /// Whether the frame at `index` is shown (the others lend their delay to it).
    func keeps(_ index: Int) -> Bool { index % plan.keepEvery == 0 }

    /// The next frame: its picture at the output size (unread unless kept), the canvas pixels it changed.
    mutating func add(_ picture: [UInt8], canvasChanged changed: GIFRect, durationMilliseconds: Int) throws {
        defer { index += 1 }
        let delay = clock.advance(milliseconds: durationMilliseconds)
        canvasChanged = index == 0 ? wholeCanvas : canvasChanged.union(changed)
        guard keeps(index) else {
            encoder.extendLatestDelay(by: delay)
            return
        }
        let source = GIFFrame(
            rect: whole, localPalette: nil, interlaced: false, control: GIFGraphicsControl(delay: delay))
        if let reach {
            let area = reach.outputArea(reading: canvasChanged)
            canvasChanged = .empty
            // Outside `area` the picture is the previous one: nothing there changed or lost opacity.
            try encoder.add(
                .init(
                    pixels: picture, source: source, delay: delay,
                    coverageMayDrop: index == 0 || area.isEmpty ? nil : area, changed: index == 0 ? nil : area))
        } else {
            // A composited canvas may turn any pixel transparent from one frame to the next.
            try encoder.add(
                .init(
                    pixels: picture, source: source, delay: delay, coverageMayDrop: index == 0 ? nil : whole,
                    changed: nil))
        }
    }
}

/// The pictures of an animation at one output size, in an unlinked temporary file (`UnlinkedTemporaryFile`:
/// `mkstemp` in `$TMPDIR`, else `/tmp`, removed from the directory at once, so nothing is left behind): per frame
/// its duration, the canvas pixels it changed, and the rectangle of the output picture that differs from
/// the frame before (with its pixels). Read back frame by frame into one picture.
///
/// Spilling is best effort: when the file cannot be made or written, or grows past `maxBytes`, the spill
/// is dropped and the next pass reads the source again.
final class ResampledFrameSpill {
    /// Holds the spill of the last size read, across the passes of one ladder.
    final class Holder {
        var spill: ResampledFrameSpill?
        init() {}
    }

    /// The largest spill kept (beyond it, each pass decodes again).
    static let maxBytes = 1 << 30
    /// Bytes before each frame's pixels: duration (Int64), canvas rectangle and picture rectangle (4 × Int32 each).
    private static let headerBytes = 40

    /// A spill that cannot be read back (the pass then reads the source again).
    struct Unreadable: Error {}

    /// The output size.
    let size: PixelSize
    /// The source's canvas size and loop count.
    let canvasSize: PixelSize
    let loopCount: Int?
    private(set) var frameCount = 0
    private var file: UnsafeMutablePointer<FILE>?
    private var written = 0

    /// Starts an empty spill in `directory` (nil: `$TMPDIR`, else `/tmp`); without a file when none can be made.
    init(size: PixelSize, canvasSize: PixelSize, loopCount: Int?, directory: String? = nil) {
        self.size = size
        self.canvasSize = canvasSize
        self.loopCount = loopCount
        guard let descriptor = UnlinkedTemporaryFile.make(prefix: "sharepipe-frames", in: directory) else { return }
        file = fdopen(descriptor, "w+b")
        if file == nil { _ = close(descriptor) }
    }

    deinit { drop() }

    /// Appends a frame: `picture`'s pixels in `patch` (the rectangle that differs from the previous frame's
    /// picture), the canvas pixels that changed, and how long it is shown.
    func append(_ picture: [UInt8], patch: GIFRect, canvasChanged: GIFRect, durationMilliseconds: Int) {
        guard let file else { return }
        frameCount += 1
        written += Self.headerBytes + patch.area * 4
        guard written <= Self.maxBytes else { return drop() }
        var header = [Int64(durationMilliseconds)]
        var rects = [canvasChanged, patch].flatMap {
            [Int32($0.left), Int32($0.top), Int32($0.width), Int32($0.height)]
        }
        var ok = fwrite(&header, 8, 1, file) == 1 && fwrite(&rects, 4, 8, file) == 8
        picture.withUnsafeBufferPointer { pixels in
            for y in patch.top..<patch.bottom where ok {
                ok =
                    fwrite(pixels.baseAddress! + (y * size.width + patch.left) * 4, 1, patch.width * 4, file)
                    == patch.width * 4
            }
        }
        if !ok { drop() }
    }

    /// Ends writing; true when the spill holds every frame appended and can be read.
    func finishWriting() -> Bool {
        guard let file, fflush(file) == 0 else {
            drop()
            return false
        }
        return true
    }

    /// Closes and forgets the file.
    private func drop() {
        if let file { fclose(file) }
        file = nil
    }

    /// A reader from the first frame.
    func reader() throws -> Reader {
        guard let file, fseek(file, 0, SEEK_SET) == 0 else { throw Unreadable() }
        return Reader(spill: self, file: file)
    }

    /// Reads the frames in order.
    struct Reader {
        let spill: ResampledFrameSpill
        let file: UnsafeMutablePointer<FILE>
        private var index = 0

        fileprivate init(spill: ResampledFrameSpill, file: UnsafeMutablePointer<FILE>) {
            self.spill = spill
            self.file = file
        }

        /// The next frame's duration and changed canvas pixels, with `picture` (the previous frame's, or
        /// transparent before the first) patched to its picture; nil after the last frame.
        mutating func next(patching picture: inout [UInt8]) throws -> (
            canvasChanged: GIFRect, durationMilliseconds: Int
        )? {
            guard index < spill.frameCount else { return nil }
            index += 1
            var header: Int64 = 0
            var rects = [Int32](repeating: 0, count: 8)
            guard fread(&header, 8, 1, file) == 1, fread(&rects, 4, 8, file) == 8 else { throw Unreadable() }
            let canvasChanged = GIFRect(
                left: Int(rects[0]), top: Int(rects[1]), width: Int(rects[2]), height: Int(rects[3]))
            let patch = GIFRect(left: Int(rects[4]), top: Int(rects[5]), width: Int(rects[6]), height: Int(rects[7]))
            let width = spill.size.width
            guard patch.isEmpty || patch.clipped(to: spill.size) == patch else { throw Unreadable() }
            var ok = true
            picture.withUnsafeMutableBufferPointer { pixels in
                for y in patch.top..<patch.bottom where ok {
                    ok =
                        fread(pixels.baseAddress! + (y * width + patch.left) * 4, 1, patch.width * 4, file)
                        == patch.width * 4
                }
            }
            guard ok else { throw Unreadable() }
            return (canvasChanged, Int(header))
        }
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
