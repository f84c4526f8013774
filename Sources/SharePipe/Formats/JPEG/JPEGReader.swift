import CSharePipe

/// A libjpeg decompressor on one source, open for the duration of a closure and closed after it.
final class JPEGReader {
    /// Most APPn/COM segments one header may hold. Real files have a handful; the largest legitimate use,
    /// a 16 MiB ICC profile, takes 255. Each saved segment costs a node and a Swift array, so a file of
    /// millions of empty segments must stop early rather than at `maxMetadataBytes`.
    static let maxSegments = 10_000
    /// Most scans of a progressive file. Encoders write about 10; each extra scan makes libjpeg pass over
    /// every coefficient again, so thousands of tiny scans make a small file take minutes (libjpeg-turbo's
    /// own fuzzers stop at 500).
    static let maxScans = 500

    private let handle: OpaquePointer
    private let limits: ImageLimits
    let file: String
    /// The stored size, once the header is read (for limit errors).
    private var size = PixelSize(width: 0, height: 0)

    private init(handle: OpaquePointer, file: String, limits: ImageLimits) {
        self.handle = handle
        self.file = file
        self.limits = limits
    }

    /// Opens `source`, runs `body`, and always destroys the decompressor and closes the file. The reader
    /// enforces `limits.maxDecoderMemory` (libjpeg's `max_memory_to_use` and the compact coefficient store's
    /// bound), `limits.maxMetadataBytes`,
    /// `maxSegments` and `maxScans`; past one it throws `tooLarge`.
    /// A file libjpeg-turbo refuses because of its coding process (12-bit, lossless, hierarchical) throws
    /// `unsupportedFormat` with that reason instead of `corrupt` (see `JPEGFrameHeader`).
    static func with<T>(_ source: ImageSource, limits: ImageLimits, _ body: (JPEGReader) throws -> T) throws -> T {
        do {
            return try open(source, limits: limits, body)
        } catch SharePipeError.corrupt(let file, let phase, let reason) {
            if let unsupported = JPEGFrameHeader.read(source)?.unsupportedReason {
                throw SharePipeError.unsupportedFormat(file: file, missing: .feature, reason: unsupported)
            }
            throw SharePipeError.corrupt(file: file, phase: phase, reason: reason)
        }
    }

    private static func open<T>(_ source: ImageSource, limits: ImageLimits, _ body: (JPEGReader) throws -> T) throws
        -> T
    {
        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        let shimLimits = sp_jpeg_limits(
            max_memory: limits.maxDecoderMemory, max_metadata: limits.maxMetadataBytes,
            max_segments: Int32(maxSegments), max_scans: Int32(maxScans))
        switch source {
        case .file(let path):
            try checkShim(
                sp_jpeg_reader_open_file(path, shimLimits, &handle, &message), message, file: path, phase: .header)
            let reader = JPEGReader(handle: handle!, file: path, limits: limits)
            defer { sp_jpeg_reader_free(handle) }
            return try body(reader)
        case .bytes(let bytes):
            return try bytes.withUnsafeBufferPointer { buffer in
                try checkShim(
                    sp_jpeg_reader_open_memory(buffer.baseAddress, buffer.count, shimLimits, &handle, &message),
                    message, file: source.displayName, phase: .header)
                let reader = JPEGReader(handle: handle!, file: source.displayName, limits: limits)
                defer { sp_jpeg_reader_free(handle) }
                return try body(reader)
            }
        }
    }

    /// `checkShim`, but a reader limit becomes `tooLarge` with the number that was passed.
    private func check(_ status: sp_status, _ message: [CChar], phase: SharePipeError.ReadPhase) throws {
        if status == SP_ERR_MEMORY {
            let known = size.width > 0 && size.height > 0 ? size : nil
            let exceeded: ExceededLimit?
            switch sp_jpeg_reader_limit_hit(handle) {
            case SP_JPEG_LIMIT_MEMORY:
                exceeded = ExceededLimit(
                    .decoderMemory, found: nil, limit: limits.maxDecoderMemory, size: known,
                    detail: "libjpeg: \(shimText(message))")
            case SP_JPEG_LIMIT_METADATA:
                exceeded = ExceededLimit(.metadataBytes, found: nil, limit: limits.maxMetadataBytes, size: known)
            case SP_JPEG_LIMIT_SEGMENTS:
                exceeded = ExceededLimit(
                    .metadataSegments, found: JPEGReader.maxSegments + 1, limit: JPEGReader.maxSegments, size: known)
            case SP_JPEG_LIMIT_SCANS:
                exceeded = ExceededLimit(
                    .progressiveScans, found: JPEGReader.maxScans + 1, limit: JPEGReader.maxScans, size: known)
            default:
                exceeded = nil
            }
            if let exceeded { throw SharePipeError.tooLarge(file: file, exceeded: exceeded) }
        }
        try checkShim(status, message, file: file, phase: phase)
    }

    func readHeader(saveMarkers: Bool) throws -> sp_jpeg_header {
        var header = sp_jpeg_header()
        var message = shimMessageBuffer()
        try check(sp_jpeg_reader_read_header(handle, saveMarkers ? 1 : 0, &header, &message), message, phase: .header)
        size = PixelSize(width: Int(header.width), height: Int(header.height))
        return header
    }

    /// Saved APPn/COM markers in file order, as (marker code, payload).
    func markers() -> [(code: Int, payload: [UInt8])] {
        let count = Int(sp_jpeg_reader_marker_count(handle))
        var found = [sp_jpeg_marker](repeating: sp_jpeg_marker(), count: count)
        let copied = Int(sp_jpeg_reader_markers(handle, &found, Int32(count)))
        return found.prefix(copied).map { marker in
            let payload = marker.data.map { Array(UnsafeBufferPointer(start: $0, count: Int(marker.length))) } ?? []
            return (Int(marker.marker), payload)
        }
    }

    /// Starts the DCT-scaled decode. A multi-scan file whose compact coefficient store would exceed
    /// `JPEGDecoder.storeBudget` (or half of `maxDecoderMemory`, if smaller) is decoded in bands of rows, the
    /// file read once per band (at most `JPEGDecoder.maxBands`; a Huffman-coded file's reads decode only their
    /// band's rows of each scan); `readRows` returns the rows as from one decode.
    func start(scaleNumerator: Int, space: sp_jpeg_out_space) throws -> (size: PixelSize, components: Int) {
        var width: Int32 = 0, height: Int32 = 0, components: Int32 = 0
        var message = shimMessageBuffer()
        sp_jpeg_reader_set_band_budget(
            handle, min(JPEGDecoder.storeBudget, limits.maxDecoderMemory / 2),
            Int32(JPEGDecoder.maxBands))
        try check(
            sp_jpeg_reader_start(handle, Int32(scaleNumerator), space, &width, &height, &components, &message), message,
            phase: .decode)
        return (PixelSize(width: Int(width), height: Int(height)), Int(components))
    }

    /// Reads up to `maxRows` rows into `buffer`; returns how many were read (0 at the end).
    func readRows(into buffer: UnsafeMutablePointer<UInt8>, rowBytes: Int, maxRows: Int) throws -> Int {
        var rows: Int32 = 0
        var message = shimMessageBuffer()
        try check(
            sp_jpeg_reader_read_rows(handle, buffer, rowBytes, Int32(maxRows), &rows, &message), message, phase: .decode
        )
        return Int(rows)
    }

    func finish() throws {
        var message = shimMessageBuffer()
        try check(sp_jpeg_reader_finish(handle, &message), message, phase: .decode)
    }

    /// Warnings libjpeg recovered from (corrupt data), with the last one's text.
    func warnings() -> (count: Int, last: String) {
        var message = shimMessageBuffer()
        let count = sp_jpeg_reader_warning_count(handle, &message)
        return (Int(count), shimText(message))
    }
}
