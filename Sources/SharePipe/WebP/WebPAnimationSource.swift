import CSharePipe

/// An animated WebP read frame by frame through libwebp's `WebPAnimDecoder`, which applies each frame's
/// rectangle, blending and disposal and hands out the composited canvas (straight-alpha RGBA).
///
/// Memory: the animation decoder needs the whole file in memory (it demuxes every frame's bytes from one
/// buffer), and allocates two canvases — the current frame and the previous one after disposal; each
/// `nextFrame` copies the current canvas into one `Bitmap`. All three canvases are counted in the meter
/// from `init` to `close`, and the canvas and frame count were checked against the limits by the header
/// walk before libwebp allocates anything. (The animation route opens a source without a meter; it then
/// counts in a meter of its own, and `MemoryEstimate.webp` prices the canvases for the plan.)
final class WebPAnimationSource: AnimationFrameSource {
    let canvasSize: PixelSize
    let frameCount: Int
    let loopCount: Int?
    let file: String
    private let bytes: [UInt8]
    private var handle: OpaquePointer?
    private var previousEnd = 0
    private let meter: PixelMemoryMeter
    private var countedBytes: Int

    /// What libwebp's animation decoder and the canvas handed out take for a canvas of `size`.
    static func memoryBytes(canvas size: PixelSize) -> Int { 3 * size.area * 4 }

    init(_ source: ImageSource, header: WebPHeader, limits: ImageLimits, meter: PixelMemoryMeter = PixelMemoryMeter()) throws {
        file = source.displayName
        try limits.check(width: header.canvas.width, height: header.canvas.height, file: file)
        try WebPScan.checkFrames(header.frameCount, canvas: header.canvas, limits: limits, file: file)
        let needed = Self.memoryBytes(canvas: header.canvas)
        if needed > limits.maxDecoderMemory {
            throw SharePipeError.tooLarge(file: file, exceeded: ExceededLimit(.decoderMemory, found: needed, limit: limits.maxDecoderMemory,
                                                                               size: header.canvas, detail: "compositing this animation"))
        }
        bytes = try WebPInput.wholeBytes(source)
        var message = shimMessageBuffer()
        var info = sp_webp_animation_info()
        var handle: OpaquePointer?
        meter.allocate(needed)
        countedBytes = needed
        self.meter = meter
        let status = bytes.withUnsafeBufferPointer { buffer in
            sp_webp_animation_open(buffer.baseAddress, buffer.count, &handle, &info, &message)
        }
        canvasSize = PixelSize(width: Int(info.canvas_width), height: Int(info.canvas_height))
        frameCount = Int(info.frame_count)
        loopCount = Self.gifLoopCount(plays: Int(info.loop_count))
        self.handle = handle
        if status != SP_OK {
            close()
            try checkShim(status, message, file: file)
        }
        // The demuxer validated the file; it must agree with the header walk the limits were checked on.
        if canvasSize != header.canvas || frameCount != header.frameCount {
            close()
            throw SharePipeError.corrupt(file: file, reason: "the animation's canvas or frame count does not match its chunks")
        }
    }

    deinit { close() }

    /// Converts WebP's `loop_count` (total plays, 0 = forever) to GIF's NETSCAPE repeat count.
    static func gifLoopCount(plays: Int) -> Int? {
        switch plays {
        case 0: return 0
        case 1: return nil
        default: return plays - 1
        }
    }

    func nextFrame() throws -> AnimationFrame? {
        guard let handle else { return nil }
        var message = shimMessageBuffer()
        var canvas: UnsafePointer<UInt8>?
        var end: Int32 = 0
        let status = sp_webp_animation_next(handle, &canvas, &end, &message)
        if status == SP_ERR_END {
            close()   // the last frame was handed out: free libwebp's canvases now
            return nil
        }
        try checkShim(status, message, file: file)
        guard let canvas else { throw SharePipeError.corrupt(file: file, reason: "libwebp returned no canvas") }
        let pixels = Array(UnsafeBufferPointer(start: canvas, count: canvasSize.area * 4))
        let duration = max(0, Int(end) - previousEnd)
        previousEnd = Int(end)
        return AnimationFrame(canvas: Bitmap(size: canvasSize, layout: .rgba, pixels: pixels), durationMilliseconds: duration)
    }

    /// Deletes libwebp's decoder and releases what the meter counted; later `nextFrame` calls return nil.
    func close() {
        if let handle { sp_webp_animation_free(handle) }
        handle = nil
        meter.release(countedBytes)
        countedBytes = 0
    }
}
