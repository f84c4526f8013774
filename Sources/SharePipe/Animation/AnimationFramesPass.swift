#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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
        var firstPicture: PlaceholderThumbnail?
        var partialAlphaFrames = 0
        while let frame = try frames.nextFrame() {
            try checkpoint()
            guard frame.canvas.size == frames.canvasSize, frame.canvas.layout == .rgba else {
                preconditionFailure("an AnimationFrameSource hands over RGBA canvases of its canvas size")
            }
            if Self.hasPartialAlpha(frame.canvas.pixels) { partialAlphaFrames += 1 }
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
            if index == 0 { firstPicture = PlaceholderThumbnail(pixels: picture, size: plan.size, layout: .rgba) }
            spill?.append(
                picture, patch: patch, canvasChanged: changed, durationMilliseconds: frame.durationMilliseconds)
            try sequence.add(picture, canvasChanged: changed, durationMilliseconds: frame.durationMilliseconds)
            index += 1
        }
        try encoder.finish()
        if let spill, spill.finishWriting() { spills?.spill = spill }
        var output = AnimatedGIFPass.Output(
            try writer.finishOutput(), framesWritten: encoder.statistics.framesWritten,
            statistics: encoder.statistics, globalUsage: encoder.globalUsage, firstPicture: firstPicture)
        output.framesWithPartialAlpha = partialAlphaFrames
        return output
    }

    /// Whether any pixel of straight-alpha RGBA `pixels` is neither transparent nor opaque.
    static func hasPartialAlpha(_ pixels: [UInt8]) -> Bool {
        pixels.withUnsafeBufferPointer { buffer in
            var index = 3
            while index < buffer.count {
                let alpha = buffer[index]
                if alpha != 0 && alpha != 255 { return true }
                index += 4
            }
            return false
        }
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
        var firstPicture: PlaceholderThumbnail?
        while let frame = try reader.next(patching: &picture) {
            try checkpoint()
            if firstPicture == nil {
                firstPicture = PlaceholderThumbnail(pixels: picture, size: plan.size, layout: .rgba)
            }
            try sequence.add(
                picture, canvasChanged: frame.canvasChanged, durationMilliseconds: frame.durationMilliseconds)
        }
        try encoder.finish()
        var output = AnimatedGIFPass.Output(
            try writer.finishOutput(), framesWritten: encoder.statistics.framesWritten,
            statistics: encoder.statistics, globalUsage: encoder.globalUsage, firstPicture: firstPicture)
        output.framesWithPartialAlpha = nil  // the pass from the source counted them
        return output
    }

    private func container(_ plan: AnimatedGIFPlan, loopCount: Int?) -> GIFContainer {
        GIFContainer(
            screenSize: plan.size, globalPalette: nil, backgroundIndex: 0, colorResolution: 8,
            aspectByte: 0, loopCount: loopCount, metadata: metadata)
    }
}
