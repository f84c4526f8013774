/// Hands the kept pictures of an animation, frame after frame, to the GIF animation encoder: delays on the
/// running total (a dropped frame's delay goes to the frame shown before it), and, for upright canvases,
/// where each picture may differ from the last one handed on (the outputs that read the canvas pixels
/// changed since then).
struct PictureSequence {
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
