/// One way of writing the animation: output size, colour budget, and which frames are shown.
struct AnimatedGIFPlan: Equatable, Sendable {
    var size: PixelSize
    /// nil: the source palettes where they serve; otherwise the largest colour table.
    var colorBudget: Int?
    /// 1 keeps every frame; n keeps frames 0, n, 2n, ..., each shown for its own delay plus those dropped after it.
    var keepEvery: Int = 1

    /// The attempt's note.
    func note(frameCount: Int) -> String {
        var parts = [colorBudget.map { "\($0) colours" } ?? "source palettes"]
        let kept = (frameCount + keepEvery - 1) / keepEvery
        parts.append(
            keepEvery == 1 ? "all \(frameCount) frames" : "every \(ordinal(keepEvery)) frame (\(kept) of \(frameCount))"
        )
        return parts.joined(separator: ", ")
    }

    private func ordinal(_ n: Int) -> String {
        if (11...13).contains(n % 100) { return "\(n)th" }
        switch n % 10 {
        case 1: return "\(n)st"
        case 2: return "\(n)nd"
        case 3: return "\(n)rd"
        default: return "\(n)th"
        }
    }
}

/// GIF's native animation route (`AnimationSupport.nativeGIF`): every frame composited on the logical screen (honouring the previous frame's
/// disposal), the whole screen resampled to the output size, and written back as an animation with the
/// same frame count, order, delays and loop count, under the byte limit.
///
/// Streaming: one pass reads the source record by record and writes the output frame by frame. Memory is
/// the source canvas (plus the rectangle a `previous` frame must restore), the resampler's window, and at
/// the output size two pictures (the frame being written and the one after it: the resampler's two
/// pictures), the viewer model, the changed-pixel mask and one frame of indices, whatever the frame count.
/// Each fitting attempt is a fresh pass over the source.
///
/// Incremental: each picture is the previous one updated where the canvas changed (the frame's rectangle and
/// the areas disposal cleared or restored), widened by the resampling filter's reach, or copied from the
/// canvas without resizing (`GIFPictureResampler`); the encoder then looks for changed pixels only there.
/// The result is byte for byte that of resampling and comparing whole pictures
/// (`AnimatedGIFPass.incremental = false`, which the tests compare against). `AnimationLadder` runs the passes.
///
/// One pass: decode, composite, resample and encode the whole animation with a plan.
struct AnimatedGIFPass {
    let source: ImageSource
    let summary: GIFSummary
    let metadata: [MetadataBlock]
    let meter: PixelMemoryMeter
    /// false: resample the whole canvas for every picture and let the encoder compare whole pictures (the
    /// reference the incremental path is tested against).
    var incremental = true
    /// Write the output into an unlinked temporary file (`GIFWriter.toTemporaryFile`, `Output.file`) instead of
    /// memory, so that a pass holds no more as the animation grows (the animation route's passes do).
    var writesTemporaryFile = false
    /// Where that file is made (nil: `$TMPDIR`, else `/tmp`).
    var temporaryDirectory: String?

    /// One pass's GIF: its bytes, or (written to a temporary file) `file` and no bytes.
    struct Output {
        var bytes: [UInt8]
        var file: EncodedFile? = nil
        var framesWritten: Int
        var statistics: GIFAnimationEncoder.Statistics
        var globalUsage: [Int]
        /// The first picture written (RGBA at the output size), reduced for the placeholder.
        var firstPicture: PlaceholderThumbnail?
        /// Source frames with partial transparency (alpha neither 0 nor 255), which GIF cannot hold; nil when the
        /// pass did not look at the source's canvases (a replay of spilled pictures).
        var framesWithPartialAlpha: Int? = 0

        /// The output's length, wherever it is.
        var byteCount: Int { file?.byteCount ?? bytes.count }

        init(
            _ output: (bytes: [UInt8], file: EncodedFile?), framesWritten: Int,
            statistics: GIFAnimationEncoder.Statistics, globalUsage: [Int], firstPicture: PlaceholderThumbnail?
        ) {
            (bytes, file) = output
            self.framesWritten = framesWritten
            self.statistics = statistics
            self.globalUsage = globalUsage
            self.firstPicture = firstPicture
        }
    }

    /// Runs the pass. `globalUsage` (from an earlier pass) weights the reduction of the global palette.
    func run(_ plan: AnimatedGIFPlan, globalUsage: [Int]?, checkpoint: Pipeline.Checkpoint) throws -> Output {
        try GIFReader.with(source) { reader in
            let stream = GIFStream(reader)
            let screen = stream.container.screenSize
            guard screen == summary.container.screenSize else {
                throw SharePipeError.unreadable(file: reader.file, reason: "the file changed while it was being read")
            }
            var container = summary.container
            container.screenSize = plan.size
            container.metadata = metadata
            if let budget = plan.colorBudget, let global = container.globalPalette {
                // Leave a slot free so frames can add their transparent index without a local table.
                container.globalPalette = GIFQuantizer.reduce(
                    global, to: max(1, min(budget, 256) - 1), usage: globalUsage)
                let (r, g, b) = global.color(min(container.backgroundIndex, global.count - 1))
                let nearest = GIFNearestColor(palette: container.globalPalette!)
                container.backgroundIndex = nearest.index(r, g, b)
            } else if let global = container.globalPalette, container.backgroundIndex >= global.count {
                container.backgroundIndex = 0
            }
            let writer = try writesTemporaryFile ? GIFWriter.toTemporaryFile(in: temporaryDirectory) : GIFWriter()
            try writer.begin(container)
            let canvas = GIFCanvas(size: screen, meter: meter)
            let resampler = incremental ? GIFPictureResampler(from: screen, to: plan.size, meter: meter) : nil
            let encoder = GIFAnimationEncoder(
                size: plan.size, globalPalette: container.globalPalette,
                colorBudget: plan.colorBudget, writer: writer, meter: meter,
                countsPictures: resampler == nil)
            var index = 0
            var clearedSinceLastPicture: GIFRect?  // source pixels disposal may have made transparent
            var firstPicture: PlaceholderThumbnail?
            while let frame = try stream.nextFrame() {
                try checkpoint()
                try canvas.draw(frame, globalPalette: summary.container.globalPalette, from: stream)
                if index % plan.keepEvery == 0 {
                    let pixels: [UInt8], changed: GIFRect?
                    let canvasChanges = canvas.takeChanges()
                    if let resampler {
                        changed =
                            canvasChanges.map { area in
                                canvas.pixels.withUnsafeBufferPointer { resampler.update(canvas: $0, changed: area) }
                            } ?? .empty
                        pixels = resampler.output
                    } else {
                        pixels = try Self.picture(of: canvas, at: plan.size, meter: meter)
                        changed = nil
                    }
                    if index == 0 {
                        firstPicture = PlaceholderThumbnail(pixels: pixels, size: plan.size, layout: .rgba)
                    }
                    let mayDrop = clearedSinceLastPicture.map { Self.outputArea(of: $0, from: screen, to: plan.size) }
                    try encoder.add(
                        .init(
                            pixels: pixels, source: frame, delay: frame.delay, coverageMayDrop: mayDrop,
                            changed: changed, fillsScreen: index == 0 && summary.firstFrameCoversScreen))
                    clearedSinceLastPicture = nil
                } else {
                    encoder.extendLatestDelay(by: frame.delay)
                }
                let visible = frame.rect.clipped(to: screen)
                if (frame.disposal == .background || frame.disposal == .previous) && !visible.isEmpty {
                    clearedSinceLastPicture = clearedSinceLastPicture.map { $0.union(visible) } ?? visible
                }
                canvas.dispose(frame)
                index += 1
            }
            try encoder.finish()
            if index != summary.frameCount {
                throw SharePipeError.unreadable(file: reader.file, reason: "the file changed while it was being read")
            }
            return Output(
                try writer.finishOutput(), framesWritten: encoder.statistics.framesWritten,
                statistics: encoder.statistics, globalUsage: encoder.globalUsage, firstPicture: firstPicture)
        }
    }

    /// The output pixels a source rectangle can influence: scaled, then widened by the resampling filter's
    /// reach (3 output pixels for Lanczos-3 when reducing, plus one for rounding); exact without resizing.
    static func outputArea(of rect: GIFRect, from source: PixelSize, to output: PixelSize) -> GIFRect {
        if source == output { return rect }
        let sx = Double(output.width) / Double(source.width), sy = Double(output.height) / Double(source.height)
        let reach = 4
        let left = max(0, Int((Double(rect.left) * sx).rounded(.down)) - reach)
        let top = max(0, Int((Double(rect.top) * sy).rounded(.down)) - reach)
        let right = min(output.width, Int((Double(rect.right) * sx).rounded(.up)) + reach)
        let bottom = min(output.height, Int((Double(rect.bottom) * sy).rounded(.up)) + reach)
        return GIFRect(left: left, top: top, width: max(0, right - left), height: max(0, bottom - top))
    }

    /// The canvas at the output size: Lanczos on RGBA (premultiplied inside the resampler), or a copy.
    static func picture(of canvas: GIFCanvas, at size: PixelSize, meter: PixelMemoryMeter) throws -> [UInt8] {
        try InMemoryResample.resize(
            Bitmap(size: canvas.size, layout: .rgba, pixels: canvas.pixels), to: size, meter: meter
        ).pixels
    }
}
