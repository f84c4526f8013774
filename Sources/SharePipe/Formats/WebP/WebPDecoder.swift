import CSharePipe

/// Reads WebP, still and animated: a Swift walk over the RIFF chunks for the header and metadata, then
/// libwebp's incremental decoder fed the file 64 KiB at a time, its rows streamed into the resampler.
///
/// Memory: libwebp scales while it decodes (`use_scaling`, its row rescaler), so the only output buffer it
/// allocates is the intermediate size `decodeSize(stored:target:)` — about twice the target — and the
/// Lanczos resampler takes it the rest of the way, as JPEG's shrink-on-load does. What libwebp holds
/// besides (counted by `libraryBytes`): a lossy (VP8) image needs a few macroblock rows plus, with
/// alpha, the whole alpha plane (width × height bytes); a lossless (VP8L) image is always decoded whole
/// into a 32-bit ARGB buffer (width × height × 4 bytes) before rows are emitted, so scaling saves only the
/// output. The compressed bytes are copied into libwebp's input buffer as they arrive (at most the file).
///
/// An animated WebP rendered as a still is its first composited frame (`WebPAnimationSource`).
struct WebPDecoder: ImageDecoder {
    var format: ImageFormat { .webp }

    /// The intermediate size is at least `intermediateFactor` × the target (never above the stored size), so
    /// libwebp's area-averaging rescaler does the coarse reduction and Lanczos-3 the last factor of two.
    static let intermediateFactor = 2

    func probe(_ source: ImageSource, limits: ImageLimits) throws -> ImageInfo {
        let byteCount = try source.byteCount()
        let header = try WebPScan.read(source, limits: limits)
        var storedOrientation: Int?
        for case .exif(let tiff) in header.metadata {
            storedOrientation = (try? ExifEditor(tiff: tiff))?.orientation
            break
        }
        var info = ImageInfo(
            format: .webp, size: header.canvas, colorModel: header.hasAlpha ? .rgba : .rgb, bitDepth: 8,
            progressive: false, orientation: Orientation(exifValue: storedOrientation),
            storedOrientationValue: storedOrientation, frameCount: header.frameCount,
            hasAlpha: header.hasAlpha, metadata: header.metadata, byteCount: byteCount)
        info.webp = header
        // The still render reports it itself; the animation route reports the probe's warnings.
        info.probeWarnings = Self.warnings(header)
        return info
    }

    func render(
        _ source: ImageSource, info: ImageInfo, target: PixelSize, limits: ImageLimits,
        meter: PixelMemoryMeter
    ) throws -> RenderedImage {
        var header = info.webp
        if header == nil { header = try WebPScan.read(source, limits: limits) }
        guard let header else {
            throw SharePipeError.corrupt(file: source.displayName, phase: .header, reason: "no WebP header")
        }
        let stored = header.canvas
        let outputTarget = PixelSize(
            width: max(1, min(target.width, stored.width)), height: max(1, min(target.height, stored.height)))
        if header.isAnimated {
            return try renderFirstFrame(source, header: header, target: outputTarget, limits: limits, meter: meter)
        }
        let decoded = Self.decodeSize(stored: stored, target: outputTarget)
        let channels = header.hasAlpha ? 4 : 3
        let libraryBytes = Self.libraryBytes(header, decoded: decoded)
        if libraryBytes > limits.maxDecoderMemory {
            throw SharePipeError.tooLarge(
                file: source.displayName,
                exceeded: ExceededLimit(
                    .decoderMemory, found: libraryBytes,
                    limit: limits.maxDecoderMemory, size: stored, detail: "libwebp"))
        }
        return try meter.holding(libraryBytes) {
            // At the stored size, no rescaler: it would round partly transparent pixels (alpha premultiplied
            // and back) and turn off libwebp's fancy chroma upsampling.
            let decoder = try WebPStillDecoder(
                output: decoded == stored ? PixelSize(width: 0, height: 0) : decoded,
                channels: channels, file: source.displayName)
            var resampler = LanczosResampler(
                from: decoded, to: outputTarget, layout: channels == 4 ? .rgba : .rgb, meter: meter)
            var rowsPushed = 0
            let complete = try WebPInput.stream(source) { chunk in
                let (done, rowsReady) = try decoder.append(chunk)
                try decoder.withRows { rows, stride in
                    while rowsPushed < min(rowsReady, decoded.height) {
                        try resampler.push(
                            row: UnsafeBufferPointer(start: rows + rowsPushed * stride, count: decoded.width * channels)
                        )
                        rowsPushed += 1
                    }
                }
                return done
            }
            guard complete, rowsPushed == decoded.height else {
                _ = try? resampler.finish()
                throw SharePipeError.corrupt(
                    file: source.displayName, phase: .decode,
                    reason: "WebP data ends early (file is truncated)")
            }
            return RenderedImage(bitmap: try resampler.finish(), warnings: Self.warnings(header))
        }
    }

    /// The size libwebp decodes to: the target scaled by `intermediateFactor`, within the stored size, keeping
    /// the aspect ratio of the target.
    static func decodeSize(stored: PixelSize, target: PixelSize) -> PixelSize {
        let width = min(stored.width, target.width * intermediateFactor)
        let height = min(stored.height, target.height * intermediateFactor)
        return PixelSize(width: max(width, 1), height: max(height, 1))
    }

    /// What libwebp allocates for pixels while decoding a still to `decoded`: its output buffer, plus the
    /// whole ARGB image for lossless or the whole alpha plane for lossy with alpha, plus its row caches.
    static func libraryBytes(_ header: WebPHeader, decoded: PixelSize) -> Int {
        let stored = header.canvas
        let output = decoded.area * (header.hasAlpha ? 4 : 3)
        let rowCaches = stored.width * 4 * 32 + decoded.width * 4 * 8  // macroblock / ARGB cache rows, rescaler rows
        if header.lossless { return output + stored.area * 4 + rowCaches }
        return output + (header.hasAlpha ? stored.area : 0) + rowCaches
    }

    /// The first composited frame of an animation, resampled to `target`.
    private func renderFirstFrame(
        _ source: ImageSource, header: WebPHeader, target: PixelSize, limits: ImageLimits,
        meter: PixelMemoryMeter
    ) throws -> RenderedImage {
        var animation = try WebPAnimationSource(source, header: header, limits: limits, meter: meter)
        defer { animation.close() }
        let frame = try animation.firstFrame(file: source.displayName)
        return RenderedImage(
            bitmap: try InMemoryResample.resize(frame.canvas, to: target, meter: meter),
            warnings: Self.warnings(header))
    }

    /// Recoverable damage the header walk found.
    static func warnings(_ header: WebPHeader) -> [String] {
        header.missingBytes > 0
            ? ["the file ends \(header.missingBytes) bytes before its RIFF size says (trailing chunks missing)"] : []
    }
}

/// libwebp's incremental decoder on one image, deleted with this object.
final class WebPStillDecoder {
    private let handle: OpaquePointer
    let file: String

    /// Decodes to `output` (0 × 0: the stored size, without libwebp's rescaler).
    init(output: PixelSize, channels: Int, file: String) throws {
        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        try checkShim(
            sp_webp_decoder_new(Int32(output.width), Int32(output.height), Int32(channels), &handle, &message),
            message, file: file, phase: .decode)
        self.handle = handle!
        self.file = file
    }

    deinit { sp_webp_decoder_free(handle) }

    /// Feeds the next bytes; returns whether the image is complete and how many output rows are final.
    func append(_ bytes: UnsafeRawBufferPointer) throws -> (complete: Bool, rows: Int) {
        var message = shimMessageBuffer()
        var complete: Int32 = 0, rows: Int32 = 0
        try checkShim(
            sp_webp_decoder_append(
                handle, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count,
                &complete, &rows, &message), message, file: file, phase: .decode)
        return (complete != 0, Int(rows))
    }

    /// The size of the output rows, once libwebp has read the header.
    var outputSize: PixelSize? {
        var width: Int32 = 0, height: Int32 = 0, stride: Int32 = 0
        guard sp_webp_decoder_rows(handle, &width, &height, &stride) != nil else { return nil }
        return PixelSize(width: Int(width), height: Int(height))
    }

    /// Calls `body` with the output rows decoded so far and their stride (nothing before the header is read).
    func withRows(_ body: (UnsafePointer<UInt8>, Int) throws -> Void) rethrows {
        var width: Int32 = 0, height: Int32 = 0, stride: Int32 = 0
        guard let rows = sp_webp_decoder_rows(handle, &width, &height, &stride) else { return }
        try body(rows, Int(stride))
    }
}

/// Hands a source to a consumer in 64 KiB pieces (files are read through one buffer, never loaded whole).
enum WebPInput {
    static let chunkBytes = 64 << 10

    /// Calls `consume` with successive pieces until it returns true (done) or the data ends; returns whether
    /// the consumer finished.
    static func stream(_ source: ImageSource, _ consume: (UnsafeRawBufferPointer) throws -> Bool) throws -> Bool {
        switch source {
        case .bytes(let bytes):
            return try bytes.withUnsafeBytes { all in
                var offset = 0
                while offset < all.count {
                    let end = min(all.count, offset + chunkBytes)
                    if try consume(UnsafeRawBufferPointer(rebasing: all[offset..<end])) { return true }
                    offset = end
                }
                return false
            }
        case .file(let path):
            let file = try InputFile(path: path)
            defer { file.close() }
            var buffer = [UInt8](repeating: 0, count: chunkBytes)
            while true {
                let got = try buffer.withUnsafeMutableBytes { try file.read(into: $0) }
                if got == 0 { return false }
                if try buffer.withUnsafeBytes({ try consume(UnsafeRawBufferPointer(rebasing: $0[0..<got])) }) {
                    return true
                }
            }
        }
    }
}

extension ImageInfo {
    /// WebP: what the container walk found (bitstream kind, animation, loop count).
    var webp: WebPHeader? {
        get { formatDetail as? WebPHeader }
        set { formatDetail = newValue.map { $0 as any Sendable } }
    }
}
