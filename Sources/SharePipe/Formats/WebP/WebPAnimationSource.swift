import CSharePipe

/// An animated WebP read frame by frame from the file, composited here the way libwebp's
/// `WebPAnimDecoder` (and so Chrome) does it, without holding the file in memory.
///
/// One pass over the RIFF chunks (`WebPChunkWalker`, 64 KiB reads): each `ANMF` chunk gives the frame's
/// offset, duration, blend and dispose flags; its bitstream (an optional `ALPH` chunk and the `VP8 ` or
/// `VP8L` chunk, as they lie in the file) is streamed through libwebp's incremental still decoder at its
/// stored size, and the decoded frame is composited onto the canvas:
///
/// - a key frame (the first; an opaque or non-blending frame covering the canvas; a frame after one
///   disposed to background that covered the canvas or was itself a key frame) starts from a transparent
///   canvas and is copied in;
/// - otherwise the frame is alpha-blended over the canvas (non-premultiplied, libwebp's integer formula,
///   `blend`) where its blend flag asks for it — except, after a frame disposed to background, inside that
///   frame's rectangle, which libwebp leaves as decoded — or copied where it says "do not blend";
/// - a frame disposed to background has its rectangle cleared to transparent before the next frame.
///
/// The canvases are the same bytes `WebPAnimDecoder` produces (`WebPTests` compares every frame of the
/// committed animations against it). The frame's size is its bitstream's, as libwebp's demuxer takes it.
///
/// Memory: one RGBA canvas (the frame handed out shares it), and while a frame decodes, libwebp's frame
/// buffer and working memory (`frameBytes`) and the frame's compressed bytes (libwebp's input buffer, at
/// most one frame's chunk); the first two are counted in the meter from the moment they exist, until
/// `close`. The canvas size, frame count and `meteredBytes` were checked against the limits before
/// anything is allocated.
final class WebPAnimationSource: AnimationFrameSource {
    /// The canvas size, apart from `canvas` (read while the canvas's pixels are written).
    let canvasSize: PixelSize
    let frameCount: Int
    let loopCount: Int?
    let file: String
    private let walker: WebPChunkWalker
    private let meter: PixelMemoryMeter
    private var canvas: MeteredCanvas
    private var index = 0
    /// The frame before this one (for the key-frame rule and its dispose), if any.
    private var previous: FrameHeader?
    private var previousWasKeyFrame = false

    /// What one `ANMF` chunk says about its frame, with the size and alpha of its bitstream.
    struct FrameHeader {
        var x: Int, y: Int
        var size: PixelSize
        var durationMilliseconds: Int
        /// Alpha-blend over the canvas (false: the frame replaces what it covers).
        var blends: Bool
        /// Clear the frame's rectangle to transparent before the next frame.
        var disposesToBackground: Bool
        /// An `ALPH` chunk, or a `VP8L` bitstream with its alpha hint set.
        var hasAlpha = false

        func covers(_ canvas: PixelSize) -> Bool { size == canvas }
        func contains(x px: Int, y py: Int) -> Bool {
            px >= x && px < x + size.width && py >= y && py < y + size.height
        }
    }

    /// libwebp's memory for decoding one frame of `size`: its RGBA output, plus the whole ARGB image of a
    /// lossless frame (or the alpha plane of a lossy one) and its row caches.
    static func frameBytes(_ size: PixelSize, lossless: Bool) -> Int {
        size.area * 4 + (lossless ? size.area * 4 : size.area) + size.width * 4 * 40
    }

    /// The most a source on a canvas of `size` counts in the meter: the canvas and one frame as large as the
    /// canvas, priced as lossless.
    static func meteredBytes(canvas size: PixelSize) -> Int { size.area * 4 + frameBytes(size, lossless: true) }

    init(_ source: ImageSource, header: WebPHeader, limits: ImageLimits, meter: PixelMemoryMeter) throws {
        file = source.displayName
        try limits.check(width: header.canvas.width, height: header.canvas.height, file: file)
        try WebPScan.checkFrames(header.frameCount, canvas: header.canvas, limits: limits, file: file)
        let needed = Self.meteredBytes(canvas: header.canvas)
        if needed > limits.maxDecoderMemory {
            throw SharePipeError.tooLarge(
                file: file,
                exceeded: ExceededLimit(
                    .decoderMemory, found: needed, limit: limits.maxDecoderMemory,
                    size: header.canvas, detail: "compositing this animation"))
        }
        guard header.isAnimated else { throw SharePipeError.internalError(file: file, reason: "not an animated WebP") }
        walker = try WebPChunkWalker(source)
        frameCount = header.frameCount
        loopCount = Self.gifLoopCount(plays: header.loopCount)
        self.meter = meter
        canvasSize = header.canvas
        canvas = MeteredCanvas(size: header.canvas, countedBytes: header.canvas.area * 4, meter: meter)
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
        try nextAnimationFrame(more: index < frameCount && canvas.isOpen, close: close, decodeNextFrame)
    }

    /// Frees the canvas and uncounts it; later `nextFrame` calls return nil.
    func close() { canvas.release() }

    // MARK: - One frame

    private func decodeNextFrame() throws -> AnimationFrame {
        // The previous frame's dispose, now that the canvas it was handed out in is no longer needed.
        if let previous, previous.disposesToBackground { clear(previous) }
        guard var frame = try nextFrameChunk() else {
            throw SharePipeError.unreadable(
                file: file,
                reason: "frame \(index + 1) of \(frameCount) is missing (the file changed since it was read?)")
        }
        // libwebp's input buffer holds the bytes fed so far (at most the frame's chunk); its frame buffer is
        // allocated once the bitstream's header arrives, and counted from there.
        let decoder = try WebPStillDecoder(output: PixelSize(width: 0, height: 0), channels: 4, file: file)
        var complete = false
        func feed(_ bytes: [UInt8]) throws {
            guard !complete, !bytes.isEmpty else { return }  // bytes past the end of the bitstream are not libwebp's
            complete = try bytes.withUnsafeBytes { try decoder.append($0).complete }
        }
        let (lossless, bitstreamLeft) = try readBitstreamStart(&frame, feed: feed)
        let keyFrame = isKeyFrame(frame)
        try meter.holding(Self.frameBytes(frame.size, lossless: lossless)) {
            try walker.stream(bitstreamLeft, feed)
            guard complete else {
                throw SharePipeError.corrupt(
                    file: file, phase: .decode,
                    reason: "frame \(index + 1): WebP data ends early")
            }
            guard decoder.outputSize == frame.size else {
                throw SharePipeError.corrupt(
                    file: file, phase: .decode,
                    reason: "frame \(index + 1): the bitstream's size does not match its chunk")
            }
            if keyFrame {
                canvas.pixels.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
            }
            decoder.withRows { rows, stride in composite(rows, stride: stride, frame: frame, keyFrame: keyFrame) }
        }
        previous = frame
        previousWasKeyFrame = keyFrame
        index += 1
        return canvas.frame(durationMilliseconds: frame.durationMilliseconds)
    }

    /// Walks to the next `ANMF` chunk and reads its 16-byte frame header; nil when the RIFF data ends.
    private func nextFrameChunk() throws -> FrameHeader? {
        while let chunk = try walker.next() {
            guard chunk.fourCC == "ANMF" else { continue }
            guard chunk.size >= 24 else {
                throw SharePipeError.corrupt(
                    file: file, phase: .header,
                    reason: "frame \(index + 1): short ANMF chunk")
            }
            let header = try walker.read(16)
            let flags = header[15]
            return FrameHeader(
                x: 2 * WebPBytes.u24(header, 0), y: 2 * WebPBytes.u24(header, 3),
                size: PixelSize(width: 1 + WebPBytes.u24(header, 6), height: 1 + WebPBytes.u24(header, 9)),
                durationMilliseconds: WebPBytes.u24(header, 12),
                blends: flags & 0x02 == 0, disposesToBackground: flags & 0x01 != 0)
        }
        return nil
    }

    /// Feeds the frame's sub-chunks to `feed` up to its bitstream's first 10 bytes (an `ALPH` chunk streamed
    /// whole, pad byte included: libwebp needs it before the image), takes the frame's size and alpha from
    /// the bitstream and checks that the frame lies on the canvas. Returns whether the bitstream is lossless
    /// and how many of its bytes are still to stream.
    private func readBitstreamStart(_ frame: inout FrameHeader, feed: ([UInt8]) throws -> Void) throws
        -> (lossless: Bool, left: Int)
    {
        var sawAlpha = false
        while true {
            guard walker.remainingInChunk >= 8 else {
                throw SharePipeError.corrupt(file: file, phase: .header, reason: "frame \(index + 1) has no image data")
            }
            let header = try walker.read(8)
            let fourCC = String(decoding: header[0..<4], as: UTF8.self)
            let size = WebPBytes.u32(header, 4)
            switch fourCC {
            case "ALPH" where !sawAlpha:
                let padded = size + (size & 1)
                guard padded <= walker.remainingInChunk else { throw damagedChunk(fourCC) }
                try feed(header)
                try walker.stream(padded, feed)
                sawAlpha = true
                frame.hasAlpha = true
            case "VP8 ", "VP8L":
                guard size <= walker.remainingInChunk, size >= 10 else { throw damagedChunk(fourCC) }
                let start = try walker.read(10)
                guard let bitstream = WebPBitstreamHeader(fourCC: fourCC, payload: start) else {
                    throw damagedChunk(fourCC)
                }
                if fourCC == "VP8L" && sawAlpha {
                    throw SharePipeError.corrupt(
                        file: file, phase: .header,
                        reason: "frame \(index + 1): an ALPH chunk before a lossless bitstream")
                }
                frame.size = bitstream.size
                if bitstream.alpha { frame.hasAlpha = true }
                if frame.x + frame.size.width > canvasSize.width || frame.y + frame.size.height > canvasSize.height {
                    throw SharePipeError.corrupt(
                        file: file, phase: .header,
                        reason: "frame \(index + 1) (\(frame.size) at \(frame.x),\(frame.y)) "
                            + "lies outside the \(canvasSize) canvas")
                }
                try feed(header + start)
                return (bitstream.lossless, size - 10)
            default:
                throw damagedChunk(fourCC)
            }
        }
    }

    private func damagedChunk(_ fourCC: String) -> SharePipeError {
        .corrupt(file: file, phase: .header, reason: "frame \(index + 1): damaged or unexpected '\(fourCC)' chunk")
    }

    /// libwebp's rule (`IsKeyFrame` in anim_decode.c): a frame that does not depend on the canvas before it.
    private func isKeyFrame(_ frame: FrameHeader) -> Bool {
        guard let previous else { return true }
        if (!frame.hasAlpha || !frame.blends) && frame.covers(canvasSize) { return true }
        return previous.disposesToBackground && (previous.covers(canvasSize) || previousWasKeyFrame)
    }

    /// Clears a disposed frame's rectangle to transparent.
    private func clear(_ frame: FrameHeader) {
        let rowBytes = frame.size.width * 4
        canvas.pixels.withUnsafeMutableBytes { pixels in
            for row in 0..<frame.size.height {
                let start = ((frame.y + row) * canvasSize.width + frame.x) * 4
                UnsafeMutableRawBufferPointer(rebasing: pixels[start..<start + rowBytes]).initializeMemory(
                    as: UInt8.self, repeating: 0)
            }
        }
    }

    /// Puts the decoded frame onto the canvas: copied on a key frame or where the frame does not blend;
    /// else each pixel that is not opaque blended over the canvas, but inside the rectangle of a previous
    /// frame disposed to background, where libwebp leaves it as decoded.
    private func composite(_ rows: UnsafePointer<UInt8>, stride: Int, frame: FrameHeader, keyFrame: Bool) {
        let width = frame.size.width
        let blends = frame.blends && !keyFrame
        let cleared = blends && previous?.disposesToBackground == true ? previous : nil
        canvas.pixels.withUnsafeMutableBufferPointer { pixels in
            for row in 0..<frame.size.height {
                let source = rows + row * stride
                let y = frame.y + row
                let start = (y * canvasSize.width + frame.x) * 4
                guard blends else {
                    UnsafeMutableRawPointer(pixels.baseAddress! + start).copyMemory(from: source, byteCount: width * 4)
                    continue
                }
                for p in 0..<width {
                    let s = p * 4, d = start + p * 4
                    if source[s + 3] == 255 || cleared?.contains(x: frame.x + p, y: y) == true {
                        for c in 0..<4 { pixels[d + c] = source[s + c] }
                    } else {
                        Self.blend(source + s, over: pixels.baseAddress! + d)
                    }
                }
            }
        }
    }

    /// libwebp's `BlendPixelNonPremult` (anim_decode.c), bit for bit: `source` (straight alpha, not opaque)
    /// over `destination`, written to `destination`.
    @inline(__always)
    static func blend(_ source: UnsafePointer<UInt8>, over destination: UnsafeMutablePointer<UInt8>) {
        let sourceAlpha = UInt32(source[3])
        guard sourceAlpha != 0 else { return }
        let destinationFactor = (UInt32(destination[3]) * (256 - sourceAlpha)) >> 8
        let alpha = sourceAlpha + destinationFactor
        let scale = (UInt32(1) << 24) / alpha
        for c in 0..<3 {
            let unscaled = UInt32(source[c]) * sourceAlpha + UInt32(destination[c]) * destinationFactor
            destination[c] = UInt8(truncatingIfNeeded: (unscaled &* scale) >> 24)
        }
        destination[3] = UInt8(truncatingIfNeeded: alpha)
    }
}
