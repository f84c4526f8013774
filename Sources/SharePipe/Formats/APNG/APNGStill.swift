/// An APNG prepared as a still (a service that shows no animation): its first animation frame, composited
/// as a browser shows it, resampled to the target. That is the IDAT image when the default image is frame 0,
/// and the first fdAT frame when the default image is only a fallback for viewers without APNG.
enum APNGStill {
    /// Renders the first frame of `animation` into `target` (stored orientation, never enlarged).
    static func render(
        _ source: ImageSource, animation: APNGAnimation, target: PixelSize, limits: ImageLimits,
        meter: PixelMemoryMeter
    ) throws -> RenderedImage {
        var frames = try APNGFrameSource(source, animation: animation, limits: limits, meter: meter)
        defer { frames.close() }
        let canvas = try frames.firstFrame(file: source.displayName).canvas
        let outputTarget = PixelSize(width: min(target.width, canvas.width), height: min(target.height, canvas.height))
        // "First frame only" is the plan's adjustment (`PreparePlan`), reported with the result.
        return RenderedImage(bitmap: try InMemoryResample.resize(canvas, to: outputTarget, meter: meter), warnings: [])
    }
}
