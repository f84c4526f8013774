import CSharePipe

/// A libavif decoder on one source, parsed, open for the duration of a closure and freed after it. Files are
/// read through libavif's file reader one request at a time (never loaded whole); bytes in memory are read
/// in place. libavif checks the image size, dimensions and frame count while it parses: a file over them is
/// refused as `tooLarge` before any pixel exists.
final class AVIFReader {
    private let handle: OpaquePointer
    /// A copy of the bytes of an in-memory source, which libavif reads in place for the reader's life.
    private let ownedBytes: UnsafeMutableRawBufferPointer?
    let file: String

    /// AV1 decoding threads (dav1d), as HEIF's tile threads: two.
    static let decodingThreads: Int32 = 2

    /// Opens and parses `source`. An in-memory source is copied once, so the reader may outlive the caller's
    /// array (an animation source keeps its reader between frames).
    init(_ source: ImageSource, limits: ImageLimits) throws {
        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        // libavif stops reading a sequence's sample table one past the frame limit, so the count it reports is
        // exact up to the limit and `ImageLimits.checkAnimation` names the limit with the numbers.
        let options = sp_avif_options(
            max_pixels: UInt32(clamping: limits.maxPixels),
            max_dimension: UInt32(clamping: limits.maxDimension),
            max_images: UInt32(clamping: limits.maxFrames + 1), threads: Self.decodingThreads)
        file = source.displayName
        switch source {
        case .file(let path):
            ownedBytes = nil
            try Self.check(
                sp_avif_reader_open_file(path, options, &handle, &message), message, file: file, limits: limits)
        case .bytes(let bytes):
            let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
            bytes.withUnsafeBytes { copy.copyMemory(from: $0) }
            do {
                try Self.check(
                    sp_avif_reader_open_memory(
                        copy.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count,
                        options, &handle, &message), message, file: file, limits: limits)
            } catch {
                copy.deallocate()
                throw error
            }
            ownedBytes = copy
        }
        self.handle = handle!
    }

    deinit {
        sp_avif_reader_free(handle)
        ownedBytes?.deallocate()
    }

    /// Opens `source`, runs `body`, and frees the decoder and closes the file when `body` returns.
    static func with<T>(_ source: ImageSource, limits: ImageLimits, _ body: (AVIFReader) throws -> T) throws -> T {
        let reader = try AVIFReader(source, limits: limits)
        return try withExtendedLifetime(reader) { try body(reader) }
    }

    /// `checkShim`, but a limit libavif enforced while parsing becomes `tooLarge`: "Exceeded avifDecoder's
    /// imageCountLimit", or "Item ID [1] dimensions are too large [70000x70000]" (the size is read back).
    private static func check(_ status: sp_status, _ message: [CChar], file: String, limits: ImageLimits) throws {
        guard status == SP_ERR_LIMIT else { return try checkShim(status, message, file: file, phase: .header) }
        let text = shimText(message)
        if text.contains("imageCountLimit") {
            throw SharePipeError.tooLarge(
                file: file,
                exceeded: ExceededLimit(
                    .frameCount, found: nil, limit: limits.maxFrames,
                    detail: "libavif: \(text)"))
        }
        if let size = reportedSize(text) {
            // Our own check names the limit with the numbers.
            try limits.check(width: size.width, height: size.height, file: file)
        }
        throw SharePipeError.tooLarge(
            file: file,
            exceeded: ExceededLimit(
                .pixelArea, found: nil, limit: limits.maxPixels,
                detail: "libavif: \(text)"))
    }

    /// The "[W x H]" at the end of libavif's size message.
    static func reportedSize(_ text: String) -> PixelSize? {
        guard let open = text.lastIndex(of: "["), let close = text.lastIndex(of: "]"), open < close else { return nil }
        let parts = text[text.index(after: open)..<close].split(separator: "x").compactMap { Int($0) }
        return parts.count == 2 ? PixelSize(width: parts[0], height: parts[1]) : nil
    }

    /// The parse's facts.
    func info() throws -> sp_avif_info {
        var info = sp_avif_info()
        var message = shimMessageBuffer()
        try checkShim(sp_avif_reader_info(handle, &info, &message), message, file: file, phase: .header)
        return info
    }

    /// The payloads libavif read with the image.
    enum Payload: Int32 {
        case icc = 0, exif = 1, xmp = 2
    }

    /// A payload's bytes as stored (`length` as `info()` gave it); nil when it is empty.
    func payload(_ which: Payload, length: Int) throws -> [UInt8]? {
        guard length > 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: length)
        var message = shimMessageBuffer()
        try checkShim(
            sp_avif_reader_copy_payload(handle, which.rawValue, &bytes, length, &message), message, file: file,
            phase: .header)
        return bytes
    }

    /// Decodes the next image (frame): its planes, valid until the next call or the end of `with`, and its
    /// duration in milliseconds; nil after the last one.
    func nextImage() throws -> (planes: sp_heif_planes, durationMilliseconds: Int)? {
        var planes = sp_heif_planes()
        var duration: Int32 = 0
        var message = shimMessageBuffer()
        let status = sp_avif_reader_next_image(handle, &planes, &duration, &message)
        if status == SP_ERR_END { return nil }
        try checkShim(status, message, file: file, phase: .decode)
        return (planes, Int(duration))
    }
}
