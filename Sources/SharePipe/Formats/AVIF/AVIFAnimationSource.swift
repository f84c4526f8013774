import CSharePipe

/// An AVIF image sequence (`avis`) read frame by frame, each frame converted onto one RGBA canvas as
/// Chromium shows it: libavif walks the track's samples (and the alpha track's) and dav1d decodes one
/// frame at a time, so only dav1d's pictures and the canvas are held, never the sequence.
///
/// Every AV1 frame of a sequence covers the whole canvas (no rectangles, no blending), so each canvas is
/// the frame's pixels: YCbCr converted with the frame's own CICP (`HEIFRowConverter`), rounded to 8 bits,
/// straight alpha (premultiplied frames divided out). Durations come from the track's sample table; the
/// animation loops forever, as Chromium plays an AVIF sequence with this libavif (0.11 does not read the
/// edit list's repetitions).
///
/// Memory: the canvas, dav1d's pictures (`AVIFDecoding.decodeMemory`) and one Float row, counted in the
/// meter from the start until `close`; the frame count and the canvas were checked against the limits by
/// the probe, and again here before anything is allocated.
final class AVIFAnimationSource: AnimationFrameSource {
    /// The canvas size, apart from `canvas` (read while the canvas's pixels are written).
    let canvasSize: PixelSize
    let frameCount: Int
    let loopCount: Int? = 0
    private let reader: AVIFReader
    private let header: sp_avif_info
    /// What the file's boxes say about HDR (a PQ or HLG sequence is tone-mapped frame by frame).
    private let hdr: HEIFHDRBoxes
    private var canvas: MeteredCanvas
    private var row: [Float]
    private var index = 0

    /// The most a source on `info` counts in the meter.
    static func meteredBytes(_ info: ImageInfo) -> Int {
        let size = info.size
        let planes = HEIFDecoding.decodeMemory(
            size: size, bitDepth: info.bitDepth, hasAlpha: info.hasAlpha,
            monochrome: info.colorModel == .gray || info.colorModel == .grayAlpha,
            chroma444: true)
        return size.area * 4 + planes + size.width * 4 * MemoryLayout<Float>.stride
    }

    init(_ source: ImageSource, info: ImageInfo, limits: ImageLimits, meter: PixelMemoryMeter) throws {
        reader = try AVIFReader(source, limits: limits)
        header = try reader.info()
        let size = PixelSize(width: Int(header.width), height: Int(header.height))
        try limits.check(width: size.width, height: size.height, file: reader.file)
        hdr = try HEIFHDRBoxes.readAVIF(try HEIFFileBytes(source), maxBytes: limits.maxMetadataBytes)
        frameCount = max(Int(header.image_count), 1)
        try limits.checkAnimation(frames: frameCount, canvas: size, file: reader.file)
        let needed = Self.meteredBytes(info)
        if needed > limits.maxDecoderMemory {
            throw SharePipeError.tooLarge(
                file: reader.file,
                exceeded: ExceededLimit(
                    .decoderMemory, found: needed, limit: limits.maxDecoderMemory, size: size,
                    detail: "decoding this AVIF sequence"))
        }
        canvasSize = size
        canvas = MeteredCanvas(size: size, countedBytes: needed, meter: meter)
        row = [Float](repeating: 0, count: size.width * 4)
    }

    deinit { close() }

    func nextFrame() throws -> AnimationFrame? {
        try nextAnimationFrame(more: index < frameCount && canvas.isOpen, close: close) {
            // Fewer samples than the parse counted: the frames so far are the animation.
            guard let image = try reader.nextImage() else { return nil }
            index += 1
            try draw(image.planes)
            return canvas.frame(durationMilliseconds: image.durationMilliseconds)
        }
    }

    /// Frees the canvas and uncounts it; later `nextFrame` calls return nil.
    func close() {
        canvas.release()
        row = []
    }

    /// Converts the decoded frame into the canvas (RGBA8, straight alpha, opaque without alpha).
    private func draw(_ planes: sp_heif_planes) throws {
        let converter = try AVIFDecoding.converter(planes, header: header, hdr: hdr, file: reader.file)
        let width = canvasSize.width
        let channels = converter.layout.channels
        @inline(__always) func byte(_ value: Float) -> UInt8 { UInt8(min(max(value + 0.5, 0), 255)) }
        canvas.pixels.withUnsafeMutableBufferPointer { out in
            row.withUnsafeMutableBufferPointer { floats in
                for y in 0..<canvasSize.height {
                    converter.convertRow(y, into: floats.baseAddress!)
                    var o = y * width * 4
                    for x in 0..<width {
                        let i = x * channels
                        switch channels {
                        case 1, 2:
                            let gray = byte(floats[i])
                            out[o] = gray; out[o + 1] = gray; out[o + 2] = gray
                            out[o + 3] = channels == 2 ? byte(floats[i + 1]) : 255
                        default:
                            out[o] = byte(floats[i]); out[o + 1] = byte(floats[i + 1]); out[o + 2] = byte(floats[i + 2])
                            out[o + 3] = channels == 4 ? byte(floats[i + 3]) : 255
                        }
                        o += 4
                    }
                }
            }
        }
    }
}
