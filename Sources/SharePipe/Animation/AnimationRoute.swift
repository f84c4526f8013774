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
