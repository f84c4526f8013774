#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One way of writing an animation as video: the picture size and the H.264 quantiser.
struct VideoPlan: Equatable, Sendable {
    /// Even on both axes, at least `VideoRoute.smallestEdge`.
    var size: PixelSize
    /// OpenH264's QP for every frame (lower: better and larger).
    var quantizer: Int

    func note() -> String { "H.264 QP \(quantizer)" }
}

/// The video route: an animation written as an H.264 MP4 (`MP4Writer`, `H264Encoder`), for services that show
/// animation only as video (`AnimationOutput.video`). Every frame the source shows is composited as a browser
/// shows it (GIF's canvas, or a format's `AnimationFrameSource`), resampled to the planned size, composited over
/// the background where transparent, and encoded; each frame keeps its own duration. A frame whose picture is
/// the one the video already shows (identical after resampling) is not encoded again: the sample before it lasts
/// longer by its duration (reported; the picture and timing are unchanged, the sample count smaller).
///
/// Durations follow Chromium: a frame shown for 10 ms or less (a GIF delay of 0 or 1 cs) plays for 100 ms. The
/// service's video limits apply on the way: a frame shorter than 1/`maxFrameRate` s is dropped (its time goes to
/// the frame before it), an animation longer than `maxDurationMilliseconds` is cut there, one shorter than
/// `minDurationMilliseconds` is played several times in a row. With a `minFrameRate`, a sample (a frame and the
/// identical frames merged into it) that lasts longer than 1/`minFrameRate` s is split into equal parts, each
/// written as a repeat of the picture (`FramePacing`): OpenH264 codes the unchanged picture as a P picture of
/// skipped macroblocks, tens of bytes. All of it is reported, as is what MP4 cannot keep: the loop count and
/// transparency.
///
/// Fitting (`VideoLadder`): the quantiser first (`quantizers`), then smaller dimensions at the highest quantiser.
/// Memory: as the GIF route's frame pass (the source's canvas, the resampler and its two pictures) plus the
/// encoder's pictures (`H264Encoder.meteredBytes`); samples are spilled to a temporary file as they are encoded.
enum VideoRoute {
    static let outputFormat = ImageFormat.mp4
    /// OpenH264 encodes no picture under 16 pixels on either axis.
    static let smallestEdge = 16
    /// H.264 level 5.2's largest frame (36,864 macroblocks), and OpenH264's widest picture.
    static let largestPixels = 9_437_184
    static let largestEdge = 4096
    /// The quantisers the ladder tries at one size, best first. Animations are mostly flat, palette-limited
    /// pictures: from QP 28 H.264 keeps their edges and gradients (CRF 23, x264's default, is set for camera
    /// video) at about 60% of the bytes of QP 23.
    static let quantizers = [28, 31, 34, 37, 39]
    /// A key frame at least every this many samples (x264's default GOP length), so a player seeking decodes at
    /// most this many pictures; OpenH264's scene-change detection adds key frames where the picture changes
    /// entirely. An animation's frames are often shown for long and repeat their background, so a key frame
    /// every few seconds would cost more than the frames between them. Repeats for a minimum frame rate are not
    /// counted: they are P pictures of skipped macroblocks, next to nothing to decode, and counting them would add
    /// a key frame every 11 s at 23 fps (a photo-like animation's grew 38% so, against 10% without them).
    static let keyFrameInterval = 250
    /// The most repeats (`FramePacing`) one pass writes: 12 hours at 23 frames a second. Past it the samples keep
    /// their length (reported), so a hostile source of days-long frames cannot make millions of samples.
    static let mostRepeats = 1_000_000
    /// Chromium's rule for short frames: 10 ms or less plays as 100 ms.
    static func playedMilliseconds(_ milliseconds: Int) -> Int { milliseconds <= 10 ? 100 : milliseconds }

    /// The size a video of the oriented `canvas` is written at under `options`: the video caps, then even edges
    /// (rounded down), at least `smallestEdge`.
    static func initialSize(canvas: PixelSize, options: PrepareOptions.Checked) -> PixelSize {
        var caps = options.videoSizeCaps
        caps.width = min(caps.width ?? largestEdge, largestEdge)
        caps.height = min(caps.height ?? largestEdge, largestEdge)
        caps.pixels = min(caps.pixels ?? largestPixels, largestPixels)
        return encodable(ScalePlan.targetSize(for: canvas, caps: caps))
    }

    /// `size` with even edges (rounded down), each at least `smallestEdge`.
    static func encodable(_ size: PixelSize) -> PixelSize {
        func edge(_ value: Int) -> Int { max(smallestEdge, value & ~1) }
        return PixelSize(width: edge(size.width), height: edge(size.height))
    }

    /// The ladder for `plan` (whose ladder is `.video`).
    static func ladder(
        _ source: ImageSource, info: ImageInfo, plan: PreparePlan, options: PrepareOptions.Checked,
        meter: PixelMemoryMeter, checkpoint: Pipeline.Checkpoint, temporaryDirectory: String? = nil
    ) throws -> VideoLadder {
        guard case .video(let initial, let minShortEdge) = plan.ladder,
            let support = FormatRegistry.descriptor(for: info.format).animation
        else {
            preconditionFailure("the video route needs a video plan and an animated format")
        }
        let feed: VideoPass.Feed
        var warnings: [String] = []
        switch support {
        case .nativeGIF:
            let summary = try GIFSummary.read(source, limits: options.limits)
            try checkpoint()
            warnings = summary.warnings
            feed = { visit in try VideoPass.gifCanvases(source, summary: summary, meter: meter, visit) }
        case .frames(let open, _):
            warnings = info.probeWarnings
            feed = { visit in
                var frames = try open(source, info, options.limits, meter)
                defer { frames.close() }
                return try VideoPass.sourceCanvases(&frames, visit)
            }
        }
        let pass = VideoPass(
            feed: feed, canvasSize: info.size, orientation: plan.orientation, limits: options.video, meter: meter,
            file: source.displayName, temporaryDirectory: temporaryDirectory)
        return VideoLadder(
            pass: pass, initial: initial, minShortEdge: minShortEdge, frameCount: info.frameCount,
            metadata: plan.writtenMetadata, warnings: warnings)
    }
}

/// How a minimum frame rate is met: the timescale of the video and the longest sample in its ticks.
///
/// The timescale is the least common multiple of 1000 and the rate (23,000 for 23 fps; 1000 without a minimum),
/// so both a source's milliseconds and 1/rate s are whole numbers of ticks: a sample of `d` ticks longer than
/// `longestSample` becomes `n` = ⌈d / longestSample⌉ parts whose starts are `d · k / n` (rounded down) after its
/// own, each at most 1/rate s and, for n ≥ 2, longer than 1/(2 · rate) s; the parts add up to `d` exactly.
struct FramePacing: Equatable {
    /// Ticks a second.
    let timescale: Int
    /// The longest sample in ticks (1/`minFrameRate` s), nil without a minimum.
    let longestSample: Int?

    init(minFrameRate: Int?) {
        guard let rate = minFrameRate, rate > 0 else {
            timescale = 1000
            longestSample = nil
            return
        }
        var a = 1000, b = rate
        while b != 0 { (a, b) = (b, a % b) }
        timescale = 1000 / a * rate
        longestSample = timescale / rate
    }

    /// Ticks in `milliseconds`.
    func ticks(_ milliseconds: Int) -> Int { milliseconds * (timescale / 1000) }

    /// Milliseconds in `ticks`, rounded down.
    func milliseconds(_ ticks: Int) -> Int { ticks / (timescale / 1000) }

    /// How many parts a sample of `ticks` is written as (1: as it is).
    func parts(_ ticks: Int) -> Int {
        guard let longest = longestSample, ticks > longest else { return 1 }
        return ticks / longest + (ticks % longest == 0 ? 0 : 1)
    }

    /// The start of part `part` (0..<`count`) of a sample of `ticks`, in ticks after the sample's start.
    static func offset(part: Int, of count: Int, ticks: Int) -> Int {
        count.dividingFullWidth(ticks.multipliedFullWidth(by: part)).quotient
    }
}

/// One pass: every canvas of the source resampled, encoded and written as MP4 with a plan.
struct VideoPass {
    /// Receives each canvas the source shows (straight-alpha RGBA of the canvas size), how long it is shown in
    /// milliseconds as stored, and the canvas pixels that may differ from the previous canvas (nil: any).
    /// Throwing `Stop` ends the feed early.
    typealias Visit = (_ canvas: [UInt8], _ durationMilliseconds: Int, _ changed: GIFRect?) throws -> Void
    /// Feeds every canvas to the visitor; returns the source's loop count (nil: plays once, 0: forever).
    typealias Feed = (_ visit: Visit) throws -> Int?
    /// Thrown by a visitor to end the feed (the video's duration limit reached).
    struct Stop: Error {}

    let feed: Feed
    /// The source canvas (stored orientation).
    let canvasSize: PixelSize
    /// Applied to each canvas before it is resampled.
    let orientation: Orientation
    let limits: VideoLimits
    let meter: PixelMemoryMeter
    let file: String
    var temporaryDirectory: String?

    /// One pass's MP4 and what it did to the animation.
    struct Output {
        var bytes: [UInt8]
        var file: EncodedFile?
        /// The source's frames written as samples (the repeats of the file counted once).
        var framesWritten: Int
        /// Samples that repeat the picture before them for the minimum frame rate, and the frames so split.
        var repeatSamples: Int
        var framesRepeated: Int
        /// Whether `VideoRoute.mostRepeats` stopped the repeats (later samples may be longer than 1/minimum s).
        var repeatsStopped: Bool
        /// Frames the source showed (up to a cut).
        var framesSeen: Int
        /// Frames dropped for the frame-rate limit, and frames the encoder skipped.
        var framesDropped: Int
        /// Frames identical to the frame before them, merged into its sample (its duration extended).
        var framesMerged: Int
        var framesWithTransparency: Int
        /// The video's duration in milliseconds (one play), and the source's (as a browser plays it).
        var durationMilliseconds: Int
        var sourceMilliseconds: Int
        var repeats: Int
        /// Whether the animation was cut at the duration limit.
        var cut: Bool
        var loopCount: Int?
        var firstPicture: PlaceholderThumbnail?

        var byteCount: Int { file?.byteCount ?? bytes.count }
    }

    func run(_ plan: VideoPlan, checkpoint: Pipeline.Checkpoint) throws -> Output {
        let pictures =
            orientation == .up ? GIFPictureResampler(from: canvasSize, to: plan.size, meter: meter) : nil
        let pacing = FramePacing(minFrameRate: limits.minFrameRate)
        let writer = MP4Writer(size: plan.size, timescale: pacing.timescale, temporaryDirectory: temporaryDirectory)
        let minimumFrame = limits.maxFrameRate.map { (1000 + $0 - 1) / $0 } ?? 0
        let background = UInt32(truncatingIfNeeded: limits.background & 0xFF_FFFF)
        var encoder: H264Encoder?
        var sourceTime = 0, seen = 0, dropped = 0, merged = 0, transparentFrames = 0
        // Whether the last frame seen is what the video shows at its end (encoded, or merged into the sample
        // before it): only then can an identical frame after it be merged.
        var lastFrameShown = false
        // The last picture, when the pictures are not the resampler's (which compares its own two pictures).
        var lastPicture: [UInt8] = []
        defer { meter.release(lastPicture.count) }
        var lastStart: Int?, samplesSinceKey = 0
        var repeatSamples = 0, framesRepeated = 0, repeatsStopped = false
        // Splits the last sample, from its start (or its last repeat's) to `end` ms, into repeats of its picture
        // within the minimum frame rate.
        func repeatLastSample(until end: Int) throws {
            guard pacing.longestSample != nil, let encoder, let from = writer.sampleStarts.last else { return }
            let ticks = pacing.ticks(end) - from
            var parts = pacing.parts(ticks)
            guard parts > 1, !repeatsStopped else { return }
            if parts - 1 > VideoRoute.mostRepeats - repeatSamples {
                parts = VideoRoute.mostRepeats - repeatSamples + 1
                repeatsStopped = true
                if parts < 2 { return }
            }
            framesRepeated += 1
            for part in 1..<parts {
                try checkpoint()
                let start = from + FramePacing.offset(part: part, of: parts, ticks: ticks)
                // Not counted towards the key-frame interval (`VideoRoute.keyFrameInterval`).
                let sample = try encoder.encodeRepeat(timestampMilliseconds: pacing.milliseconds(start))
                try writer.append(sample.bytes, isKey: sample.isKey, start: start)
                if sample.isKey { samplesSinceKey = 1 }
                repeatSamples += 1
            }
        }
        var cut = false
        var firstPicture: PlaceholderThumbnail?
        let wholeCanvas = GIFRect(left: 0, top: 0, width: canvasSize.width, height: canvasSize.height)
        let loopCount: Int?
        do {
            loopCount = try feed { canvas, duration, changed in
                try checkpoint()
                let start = sourceTime
                if let longest = limits.maxDurationMilliseconds, start >= longest {
                    cut = true
                    throw Stop()
                }
                seen += 1
                sourceTime += VideoRoute.playedMilliseconds(duration)
                let picture: [UInt8]
                let unchanged: Bool
                if let pictures {
                    // Every frame, kept or not: the resampler updates its picture from the changed area.
                    let area = seen == 1 ? wholeCanvas : changed ?? wholeCanvas
                    let updated = canvas.withUnsafeBufferPointer { pictures.update(canvas: $0, changed: area) }
                    unchanged = seen > 1 && pictures.updateKeptPicture(updated)
                    picture = pictures.output
                } else {
                    let turned = Bitmap(size: canvasSize, layout: .rgba, pixels: canvas).applying(orientation)
                    picture = try InMemoryResample.resize(turned, to: plan.size, meter: meter).pixels
                    unchanged = Self.same(picture, lastPicture)
                    if lastPicture.isEmpty { meter.allocate(picture.count) }
                    lastPicture = picture
                }
                if unchanged && lastFrameShown {
                    merged += 1  // the sample before shows on: its duration grows by this frame's
                    return
                }
                lastFrameShown = false
                if let last = lastStart, start - last < minimumFrame {
                    dropped += 1
                    return
                }
                if encoder == nil {
                    let rate = limits.maxFrameRate.map(Double.init) ?? 30
                    do {
                        encoder = try H264Encoder(
                            size: plan.size, quantizer: plan.quantizer, frameRate: rate, keyInterval: 0, meter: meter)
                    } catch let failure as H264Encoder.Unavailable {
                        throw SharePipeError.unsupportedFormat(file: file, missing: .library, reason: failure.reason)
                    }
                }
                try repeatLastSample(until: start)
                let forceKey = lastStart != nil && samplesSinceKey >= VideoRoute.keyFrameInterval
                let sample = try encoder!.encode(
                    picture, timestampMilliseconds: start, background: background, forceKey: forceKey)
                if sample.transparentPixels > 0 { transparentFrames += 1 }
                guard !sample.bytes.isEmpty else {
                    dropped += 1  // skipped by the encoder: the frame before shows on
                    return
                }
                lastFrameShown = true
                if firstPicture == nil {
                    firstPicture = PlaceholderThumbnail(pixels: picture, size: plan.size, layout: .rgba)
                }
                try writer.append(sample.bytes, isKey: sample.isKey, start: pacing.ticks(start))
                samplesSinceKey = sample.isKey ? 1 : samplesSinceKey + 1
                lastStart = start
            }
        } catch is Stop {
            loopCount = nil
        }
        guard let encoder, writer.sampleCount > 0 else {
            throw SharePipeError.corrupt(file: file, phase: .decode, reason: "the animation has no frames")
        }
        let total = limits.maxDurationMilliseconds.map { min($0, sourceTime) } ?? sourceTime
        var repeats = 1
        if let shortest = limits.minDurationMilliseconds, total < shortest {
            repeats = (shortest + total - 1) / total
        }
        try repeatLastSample(until: total)
        let (sps, pps) = try encoder.parameterSets()
        let written = try writer.finish(
            sps: sps, pps: pps, total: pacing.ticks(total), repeats: repeats, temporaryDirectory: temporaryDirectory)
        return Output(
            bytes: written.bytes, file: written.file, framesWritten: writer.sampleCount - repeatSamples,
            repeatSamples: repeatSamples, framesRepeated: framesRepeated, repeatsStopped: repeatsStopped,
            framesSeen: seen,
            framesDropped: dropped, framesMerged: merged, framesWithTransparency: transparentFrames,
            durationMilliseconds: total,
            sourceMilliseconds: sourceTime, repeats: repeats, cut: cut, loopCount: cut ? nil : loopCount,
            firstPicture: firstPicture)
    }

    /// Whether two pictures hold the same bytes.
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && !a.isEmpty
            && a.withUnsafeBytes { a in b.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
            }
    }

    /// GIF's canvases, as a browser composites them (`GIFCanvas`): delays in milliseconds as stored.
    static func gifCanvases(_ source: ImageSource, summary: GIFSummary, meter: PixelMemoryMeter, _ visit: Visit) throws
        -> Int?
    {
        try GIFReader.with(source) { reader in
            let stream = GIFStream(reader)
            guard stream.container.screenSize == summary.container.screenSize else {
                throw SharePipeError.unreadable(file: reader.file, reason: "the file changed while it was being read")
            }
            let canvas = GIFCanvas(size: stream.container.screenSize, meter: meter)
            do {
                while let frame = try stream.nextFrame() {
                    try canvas.draw(frame, globalPalette: summary.container.globalPalette, from: stream)
                    try visit(canvas.pixels, frame.delay * 10, canvas.takeChanges())
                    canvas.dispose(frame)
                }
            } catch is Stop {
                return nil
            }
            return summary.container.loopCount
        }
    }

    /// An `AnimationFrameSource`'s canvases.
    static func sourceCanvases(_ frames: inout any AnimationFrameSource, _ visit: Visit) throws -> Int? {
        var index = 0
        while let frame = try frames.nextFrame() {
            guard frame.canvas.size == frames.canvasSize, frame.canvas.layout == .rgba else {
                preconditionFailure("an AnimationFrameSource hands over RGBA canvases of its canvas size")
            }
            do {
                try visit(frame.canvas.pixels, frame.durationMilliseconds, index == 0 ? nil : frame.changed)
            } catch is Stop {
                return nil
            }
            index += 1
        }
        return frames.loopCount
    }
}

/// `FittingLadder.video`: the quantiser up `VideoRoute.quantizers` (skipping rungs the last attempt's size
/// says cannot fit: about 6 QP per halving), then smaller dimensions at the highest quantiser, down to
/// `minShortEdge`. Each step is one pass over the source.
struct VideoLadder: LadderRunner {
    let pass: VideoPass
    let initial: VideoPlan
    let minShortEdge: Int
    let frameCount: Int
    let metadata: MetadataOutcome
    let warnings: [String]
    private var plan: VideoPlan
    private var lastBytes = 0
    private(set) var placeholderThumbnail: PlaceholderThumbnail?

    init(
        pass: VideoPass, initial: VideoPlan, minShortEdge: Int, frameCount: Int, metadata: MetadataOutcome,
        warnings: [String]
    ) {
        self.pass = pass
        self.initial = initial
        self.minShortEdge = minShortEdge
        self.frameCount = frameCount
        self.metadata = metadata
        self.warnings = warnings
        plan = initial
    }

    mutating func attempt(_ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint) throws -> FittingDriver.Fit? {
        let output = try pass.run(plan, checkpoint: checkpoint)
        if placeholderThumbnail == nil { placeholderThumbnail = output.firstPicture }
        lastBytes = output.byteCount
        guard
            log.record(size: plan.size, format: .mp4, quality: nil, note: plan.note(), bytes: lastBytes)
        else { return nil }
        return FittingDriver.Fit(
            bytes: output.bytes, format: .mp4, size: plan.size, quality: nil, metadata: metadata,
            frameCount: (output.framesWritten + output.framesMerged) * output.repeats, adjustments: adjustments(output),
            file: output.file)
    }

    mutating func advance(limit: Int) -> Bool {
        guard let next = Self.nextPlan(after: plan, bytes: lastBytes, limit: limit, minShortEdge: minShortEdge) else {
            return false
        }
        plan = next
        return true
    }

    /// The next rung, or nil when every lever is exhausted.
    static func nextPlan(after plan: VideoPlan, bytes: Int, limit: Int, minShortEdge: Int) -> VideoPlan? {
        var next = plan
        if let highest = VideoRoute.quantizers.last, plan.quantizer < highest {
            // About 6 QP halve the bytes: skip the rungs that cannot bring them under the limit.
            let needed = 6 * log2(Double(max(bytes, 1)) / Double(max(limit, 1)))
            let wanted = plan.quantizer + max(1, Int(needed.rounded(.down)))
            next.quantizer = VideoRoute.quantizers.first { $0 >= wanted } ?? highest
            return next
        }
        let floor = max(minShortEdge, VideoRoute.smallestEdge)
        guard
            let smaller = FittingDriver.shrink(plan.size, bytes: bytes, limit: limit, floor: floor, landOnFloor: true)
        else { return nil }
        let even = VideoRoute.encodable(smaller)
        guard even != plan.size, even.shortEdge < plan.size.shortEdge || even.longEdge < plan.size.longEdge else {
            return nil
        }
        next.size = even
        return next
    }

    /// What the pass changed, for the report.
    private func adjustments(_ output: VideoPass.Output) -> [String] {
        var notes: [String] = []
        if plan.size != initial.size {
            notes.append("reduced to \(plan.size) (planned \(initial.size)) to meet the byte limit")
        }
        if output.framesDropped > 0 {
            notes.append(
                "\(output.framesDropped) of \(output.framesSeen) frames dropped for the video frame-rate limit "
                    + "(shown by the frame before them, the total duration unchanged)")
        }
        if output.framesMerged > 0 {
            notes.append(
                "\(output.framesMerged) of \(output.framesSeen) frames identical to the frame before them merged "
                    + "into it (shown for their time, the picture and timing unchanged)")
        }
        if let rate = pass.limits.minFrameRate, output.repeatSamples > 0 {
            notes.append(
                "frame rate raised to at least \(rate) fps by repeating frames (the service asks for at least "
                    + "\(rate)): \(output.framesRepeated) frames shown for longer than 1/\(rate) s written as "
                    + "\(output.framesRepeated + output.repeatSamples) samples of their pictures, the timing unchanged")
        }
        if output.repeatsStopped, let rate = pass.limits.minFrameRate {
            notes.append(
                "frame rate not raised to \(rate) fps past \(VideoRoute.mostRepeats) repeated samples (the video's "
                    + "later frames are shown for longer than 1/\(rate) s)")
        }
        if output.cut {
            notes.append(
                "cut at \(Self.seconds(output.durationMilliseconds)) (the service's video duration limit; "
                    + "the first \(output.framesSeen) frames kept)")
        }
        if output.repeats > 1 {
            notes.append(
                "played \(output.repeats) times in a row (\(Self.seconds(output.durationMilliseconds * output.repeats))"
                    + ": the service's shortest video is longer than the animation's \(Self.seconds(output.durationMilliseconds)))"
            )
        }
        if output.framesWithTransparency > 0 {
            let hex = String(pass.limits.background & 0xFF_FFFF, radix: 16, uppercase: true)
            let colour = String(repeating: "0", count: max(0, 6 - hex.count)) + hex
            notes.append(
                "transparency composited on #\(colour) in \(output.framesWithTransparency) of \(output.framesWritten) "
                    + "frames (MP4 has no transparency)")
        }
        if output.cut == false {
            let plays: String
            switch output.loopCount {
            case nil: plays = "played once"
            case 0?: plays = "looped forever"
            case let count?: plays = "played \(count + 1) times"
            }
            let service =
                pass.limits.loops
                ? "the service plays short videos in a loop" : "the service decides whether the video loops"
            notes.append("loop count not kept (the source \(plays); MP4 stores none: \(service))")
        }
        return notes
    }

    private static func seconds(_ milliseconds: Int) -> String {
        let tenths = (milliseconds + 50) / 100
        return "\(tenths / 10).\(tenths % 10) s"
    }
}
