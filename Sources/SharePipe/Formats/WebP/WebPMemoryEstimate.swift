extension MemoryEstimate {
    /// WebP (`WebPDecoder.render`): libwebp's incremental decode scaled to twice the target, its rows streamed
    /// into the resampler, or for an animation shown as a still its first composited frame; then libwebp's
    /// encoder. The animation route is priced by `animatedGIF`, with the source's part from
    /// `WebPAnimationSource.meteredBytes`.
    static func webp(_ info: ImageInfo, plan: PreparePlan, options: PrepareOptions.Checked, keptMetadata: Int) -> Parts
    {
        let stored = info.size
        let target = plan.renderTarget
        let output = PixelSize(width: min(target.width, stored.width), height: min(target.height, stored.height))
        let header =
            info.webp
            ?? WebPHeader(
                canvas: stored, lossless: false, hasAlpha: info.hasAlpha,
                isAnimated: info.frameCount > 1, frameCount: info.frameCount,
                loopCount: 0, metadata: [])
        let channels = info.hasAlpha || header.isAnimated ? 4 : 3
        func render(_ wanted: PixelSize) -> (decoded: PixelSize, metered: Int) {
            let out = PixelSize(width: min(wanted.width, stored.width), height: min(wanted.height, stored.height))
            if header.isAnimated {
                return (
                    stored,
                    WebPAnimationSource.meteredBytes(canvas: stored)
                        + LanczosResampler.memoryEstimate(from: stored, to: out, channels: 4)
                )
            }
            let decoded = WebPDecoder.decodeSize(stored: stored, target: out)
            return (
                decoded,
                WebPDecoder.libraryBytes(header, decoded: decoded)
                    + LanczosResampler.memoryEstimate(from: decoded, to: out, channels: channels)
            )
        }
        let main = render(target)
        var metered = main.metered
        var rewriteOutput = 0
        if plan.route == .metadataRewrite {
            metered = max(metered, render(ScalePlan.scaled(stored, by: 0.125)).metered)
            rewriteOutput = rewriteOutputBytes(info, keptMetadata: keptMetadata)
        }
        // libwebp's encoder: the picture (YUVA for lossy, ARGB for lossless) and its working buffers (VP8's
        // per-macroblock state), bounded by 16 bytes per pixel; a lossless-first plan's VP8L encode (the ARGB
        // picture, its transformed copy, the hash chain and backward references) by 32: cwebp -lossless on a
        // 1440×1080 photo peaked 43 MB (28 bytes per pixel) above its lossy run.
        var encoderBytesPerPixel = 16
        if case .losslessFirst = plan.ladder { encoderBytesPerPixel = 32 }
        let encoder = output.area * encoderBytesPerPixel + (1 << 20)
        // A WebP is at most about 4 bytes per pixel (incompressible); the memory writer and the mux copy
        // hold it twice, and the Swift copy once more.
        let oneWebP = output.area * 4 + 4096 + keptMetadata
        // libwebp keeps the compressed bytes it was given (the incremental decoder's input buffer, for an
        // animation one frame's): at most the file, plus its decoder state.
        let decoder = info.byteCount + (1 << 20)
        return Parts(
            decodedSize: main.decoded, renderedSize: output, channels: channels, metered: metered, unmetered: 0,
            decoder: decoder, encoder: encoder, output: max(3 * oneWebP, rewriteOutput))
    }
}
