/// Prepares an animated GIF: every frame composited on the logical screen (honouring the previous frame's
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
/// (`AnimatedGIFPass.incremental = false`, which the tests compare against).
enum AnimatedGIFPipeline {
    static func prepare(_ source: ImageSource, info: ImageInfo, options: PrepareOptions, meter: PixelMemoryMeter,
                        checkpoint: Pipeline.Checkpoint) throws -> PreparedImage {
        let summary = try GIFSummary.read(source, limits: options.limits)
        try checkpoint()
        let metadata = GIFMetadataPolicy().outcome(for: info, mode: options.strip)
        let fitter = AnimatedGIFFitter(source: source, info: info, summary: summary, options: options,
                                       metadata: metadata, meter: meter)
        return try fitter.fit(startingAt: initialPlan(summary: summary, options: options), checkpoint: checkpoint)
    }

    /// The first plan: the size under the animation's caps, and the service's frame limits. Too many frames
    /// are decimated (timing kept); too many pixels in all (width × height × frames) shrink the size, or
    /// decimate when that would go under the smallest short edge.
    static func initialPlan(summary: GIFSummary, options: PrepareOptions) -> AnimatedGIFPlan {
        let screen = summary.container.screenSize
        let frames = summary.frameCount
        var plan = AnimatedGIFPlan(size: ScalePlan.targetSize(for: screen, caps: options.animatedSizeCaps), colorBudget: nil)
        if let maxFrames = options.animation.maxFrames, frames > maxFrames {
            plan.keepEvery = min(max(1, frames - 1), (frames + maxFrames - 1) / maxFrames)
        }
        if let maxTotal = options.animation.maxTotalPixels {
            let kept = (frames + plan.keepEvery - 1) / plan.keepEvery
            if plan.size.area * kept > maxTotal {
                let factor = (Double(maxTotal) / Double(plan.size.area * kept)).squareRoot()
                let smaller = ScalePlan.scaled(plan.size, by: factor)
                if smaller.shortEdge >= options.minShortEdge {
                    plan.size = smaller
                    while plan.size.area * kept > maxTotal && plan.size.shortEdge > 1 {
                        plan.size = ScalePlan.scaled(plan.size, by: 0.98)
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
        parts.append(keepEvery == 1 ? "all \(frameCount) frames" : "every \(ordinal(keepEvery)) frame (\(kept) of \(frameCount))")
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

/// One pass: decode, composite, resample and encode the whole animation with a plan.
struct AnimatedGIFPass {
    let source: ImageSource
    let summary: GIFSummary
    let metadata: [MetadataBlock]
    let meter: PixelMemoryMeter
    /// false: resample the whole canvas for every picture and let the encoder compare whole pictures (the
    /// reference the incremental path is tested against).
    var incremental = true

    struct Output {
        var bytes: [UInt8]
        var framesWritten: Int
        var statistics: GIFAnimationEncoder.Statistics
        var globalUsage: [Int]
    }

    /// Runs the pass. `globalUsage` (from an earlier pass) weights the reduction of the global palette.
    func run(_ plan: AnimatedGIFPlan, globalUsage: [Int]?, checkpoint: Pipeline.Checkpoint) throws -> Output {
        try GIFReader.with(source) { reader in
            let stream = GIFStream(reader)
            let screen = stream.container.screenSize
            guard screen == summary.container.screenSize else {
                throw SharePipeError.corrupt(file: reader.file, reason: "the file changed while it was being read")
            }
            var container = summary.container
            container.screenSize = plan.size
            container.metadata = metadata
            if let budget = plan.colorBudget, let global = container.globalPalette {
                // Leave a slot free so frames can add their transparent index without a local table.
                container.globalPalette = GIFQuantizer.reduce(global, to: max(1, min(budget, 256) - 1), usage: globalUsage)
                let (r, g, b) = global.color(min(container.backgroundIndex, global.count - 1))
                let nearest = GIFNearestColor(palette: container.globalPalette!)
                container.backgroundIndex = nearest.index(r, g, b)
            } else if let global = container.globalPalette, container.backgroundIndex >= global.count {
                container.backgroundIndex = 0
            }
            let writer = try GIFWriter()
            try writer.begin(container)
            let canvas = GIFCanvas(size: screen, meter: meter)
            let resampler = incremental ? GIFPictureResampler(from: screen, to: plan.size, meter: meter) : nil
            let encoder = GIFAnimationEncoder(size: plan.size, globalPalette: container.globalPalette,
                                              colorBudget: plan.colorBudget, writer: writer, meter: meter,
                                              countsPictures: resampler == nil)
            var index = 0
            var clearedSinceLastPicture: GIFRect?  // source pixels disposal may have made transparent
            while let frame = try stream.nextFrame() {
                try checkpoint()
                try canvas.draw(frame, index: index, globalPalette: summary.container.globalPalette, from: stream)
                if index % plan.keepEvery == 0 {
                    let pixels: [UInt8], changed: GIFRect?
                    let canvasChanges = canvas.takeChanges()
                    if let resampler {
                        changed = canvasChanges.map { area in
                            canvas.pixels.withUnsafeBufferPointer { resampler.update(canvas: $0, changed: area) }
                        } ?? .empty
                        pixels = resampler.output
                    } else {
                        pixels = Self.picture(of: canvas, at: plan.size, meter: meter)
                        changed = nil
                    }
                    let mayDrop = clearedSinceLastPicture.map { Self.outputArea(of: $0, from: screen, to: plan.size) }
                    try encoder.add(.init(pixels: pixels, source: frame, delay: frame.delay, coverageMayDrop: mayDrop,
                                          changed: changed))
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
                throw SharePipeError.corrupt(file: reader.file, reason: "the file changed while it was being read")
            }
            return Output(bytes: try writer.finish(), framesWritten: encoder.statistics.framesWritten,
                          statistics: encoder.statistics, globalUsage: encoder.globalUsage)
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
    static func picture(of canvas: GIFCanvas, at size: PixelSize, meter: PixelMemoryMeter) -> [UInt8] {
        if size == canvas.size { return canvas.pixels }
        var resampler = LanczosResampler(from: canvas.size, to: size, layout: .rgba, meter: meter)
        let rowBytes = canvas.size.width * 4
        canvas.pixels.withUnsafeBufferPointer { all in
            for y in 0..<canvas.size.height {
                resampler.push(row: UnsafeBufferPointer(rebasing: all[y * rowBytes..<(y + 1) * rowBytes]))
            }
        }
        // Every row was pushed, so the resampler is complete.
        return (try? resampler.finish())?.pixels ?? [UInt8](repeating: 0, count: size.area * 4)
    }
}

/// Meets the byte limit for an animation, in this order: smaller dimensions (down to half the planned short
/// edge), fewer colours (128, 64, 32), then frame decimation (keep every 2nd, 3rd, ... frame, adding the
/// dropped frames' delays to the kept ones so the total duration stays the same; at least 2 frames stay so
/// the animation never becomes a still), and finally smaller dimensions again down to `minShortEdge`.
/// Nothing over the limit is ever returned: the last resort is `cannotMeetLimit`.
struct AnimatedGIFFitter {
    let source: ImageSource
    let info: ImageInfo
    let summary: GIFSummary
    let options: PrepareOptions
    let metadata: MetadataOutcome
    let meter: PixelMemoryMeter

    static let colorSteps = [128, 64, 32]

    func fit(startingAt initial: AnimatedGIFPlan, checkpoint: Pipeline.Checkpoint) throws -> PreparedImage {
        let limit = options.animatedMaxBytes ?? Int.max
        let pass = AnimatedGIFPass(source: source, summary: summary, metadata: metadata.kept, meter: meter)
        let frameCount = summary.frameCount
        let target = initial.size
        let dimensionFloor = min(target.shortEdge, max(options.minShortEdge, target.shortEdge / 2))
        var plan = initial
        var attempts: [FitAttempt] = []
        var smallest = Int.max
        var globalUsage: [Int]?

        while true {
            try checkpoint()
            let output = try pass.run(plan, globalUsage: globalUsage, checkpoint: checkpoint)
            if globalUsage == nil { globalUsage = output.globalUsage }
            let bytes = output.bytes.count
            smallest = min(smallest, bytes)
            attempts.append(FitAttempt(size: plan.size, format: .gif, quality: nil, note: plan.note(frameCount: frameCount),
                                       bytes: bytes, fits: bytes <= limit))
            if bytes <= limit {
                return result(output, plan: plan, initial: initial, attempts: attempts)
            }
            guard let next = nextPlan(after: plan, bytes: bytes, limit: limit, floor: dimensionFloor) else {
                throw SharePipeError.cannotMeetLimit(file: source.displayName, limit: limit, bestBytes: smallest)
            }
            plan = next
        }
    }

    /// The next rung of the ladder, or nil when every lever is exhausted.
    func nextPlan(after plan: AnimatedGIFPlan, bytes: Int, limit: Int, floor: Int) -> AnimatedGIFPlan? {
        var next = plan
        // 1. Dimensions, while colours and frames are untouched, down to the floor.
        if plan.colorBudget == nil && plan.keepEvery == 1 && plan.size.shortEdge > floor {
            next.size = Self.shrink(plan.size, bytes: bytes, limit: limit, floor: floor)
            if next.size != plan.size { return next }
        }
        // 2. Fewer colours.
        if plan.keepEvery == 1, let budget = Self.colorSteps.first(where: { $0 < (plan.colorBudget ?? 256) }) {
            next.colorBudget = budget
            return next
        }
        // 3. Frame decimation, estimated from how far over the limit the last attempt was.
        let maxKeepEvery = max(1, summary.frameCount - 1)
        if plan.keepEvery < maxKeepEvery {
            let estimate = Int((Double(plan.keepEvery) * Double(bytes) / Double(limit)).rounded(.up))
            next.keepEvery = min(maxKeepEvery, max(plan.keepEvery + 1, estimate))
            return next
        }
        // 4. Dimensions again, down to the smallest short edge allowed.
        let smaller = Self.shrink(plan.size, bytes: bytes, limit: limit, floor: options.minShortEdge)
        if smaller != plan.size && smaller.shortEdge >= options.minShortEdge {
            next.size = smaller
            return next
        }
        return nil
    }

    /// `ScalePlan.shrink`, but never below a short edge of `floor` (landing on it exactly when it would).
    static func shrink(_ size: PixelSize, bytes: Int, limit: Int, floor: Int) -> PixelSize {
        let smaller = ScalePlan.shrink(size, bytes: bytes, limit: limit)
        if smaller.shortEdge >= floor { return smaller }
        if size.shortEdge <= floor { return size }
        return ScalePlan.scaled(size, by: Double(floor) / Double(size.shortEdge), capShortEdge: floor)
    }

    private func result(_ output: AnimatedGIFPass.Output, plan: AnimatedGIFPlan, initial: AnimatedGIFPlan,
                        attempts: [FitAttempt]) -> PreparedImage {
        let screen = summary.container.screenSize
        var adjustments: [String] = []
        let capped = ScalePlan.targetSize(for: screen, caps: options.animatedSizeCaps)
        if initial.size != capped {
            adjustments.append("reduced to \(initial.size) (caps allow \(capped)) for the animation's total pixel limit")
        }
        if plan.size != initial.size {
            adjustments.append("reduced to \(plan.size) (planned \(initial.size)) to meet the byte limit")
        }
        if let budget = plan.colorBudget { adjustments.append("palettes reduced to \(budget) colours to meet the byte limit") }
        if plan.keepEvery > 1 {
            let why = plan.keepEvery == initial.keepEvery ? "for the service's frame limits" : "to meet the byte limit"
            adjustments.append("frames decimated \(plan.keepEvery):1 (\(summary.frameCount) → \(output.framesWritten)) \(why), "
                               + "delays merged so the total duration is unchanged")
        }
        if output.statistics.delaysClamped > 0 {
            adjustments.append("\(output.statistics.delaysClamped) merged delay(s) clamped to 655.35 s")
        }
        return PreparedImage(bytes: output.bytes, format: .gif, size: plan.size, inputFormat: .gif, inputSize: screen,
                             inputByteCount: info.byteCount, appliedOrientation: .up, method: .reencoded, quality: nil,
                             attempts: attempts, removedMetadata: metadata.removed,
                             keptMetadata: MetadataOutcome.kinds(of: metadata.kept), frameCount: output.framesWritten,
                             peakPixelBytes: meter.peakBytes, warnings: summary.warnings, adjustments: adjustments)
    }
}
