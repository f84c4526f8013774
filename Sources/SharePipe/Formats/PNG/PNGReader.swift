import CSharePipe

/// A libpng read struct on one source, open for the duration of a closure and destroyed after it.
final class PNGReader {
    private let handle: OpaquePointer
    let file: String

    private init(handle: OpaquePointer, file: String) {
        self.handle = handle
        self.file = file
    }

    /// Opens `source`, runs `body`, and always destroys the read struct and closes the file.
    /// `readICC`: let libpng parse (inflate) iCCP; otherwise it skips every ancillary chunk but tRNS.
    static func with<T>(
        _ source: ImageSource, limits: ImageLimits, readICC: Bool = false,
        _ body: (PNGReader) throws -> T
    ) throws -> T {
        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        let maxDimension = UInt32(clamping: min(limits.maxDimension, 0x7FFF_FFFF))
        let readerLimits = sp_png_reader_limits(
            max_width: maxDimension, max_height: maxDimension,
            max_chunk_bytes: PNGLimits.maxChunkBytes)
        let mode = readICC ? SP_PNG_READ_ICC : SP_PNG_READ_PIXELS
        switch source {
        case .file(let path):
            try checkShim(
                sp_png_reader_open_file(path, readerLimits, mode, &handle, &message), message, file: path,
                phase: .header)
            let reader = PNGReader(handle: handle!, file: path)
            defer { sp_png_reader_free(handle) }
            return try body(reader)
        case .bytes(let bytes):
            return try bytes.withUnsafeBufferPointer { buffer in
                try checkShim(
                    sp_png_reader_open_memory(buffer.baseAddress, buffer.count, readerLimits, mode, &handle, &message),
                    message, file: source.displayName, phase: .header)
                let reader = PNGReader(handle: handle!, file: source.displayName)
                defer { sp_png_reader_free(handle) }
                return try body(reader)
            }
        }
    }

    /// Reads the chunks up to the image data; no pixel memory is allocated.
    func readInfo() throws -> sp_png_header {
        var header = sp_png_header()
        var message = shimMessageBuffer()
        try checkShim(sp_png_reader_read_info(handle, &header, &message), message, file: file, phase: .header)
        return header
    }

    /// The inflated ICC profile, if libpng read (and accepted) an iCCP chunk.
    func iccProfile() -> [UInt8]? {
        var profile: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        guard sp_png_reader_icc(handle, &profile, &length) != 0, let profile, length > 0 else { return nil }
        return Array(UnsafeBufferPointer(start: profile, count: Int(length)))
    }

    /// Sets up the expansions and sizes libpng's row buffers; call after the header passed the limits.
    func start() throws -> sp_png_output {
        var output = sp_png_output()
        var message = shimMessageBuffer()
        try checkShim(sp_png_reader_start(handle, &output, &message), message, file: file, phase: .decode)
        return output
    }

    /// Reads the next row (of the current pass, for interlaced images) into `row`, which may be nil for
    /// rows the pass does not touch.
    func readRow(into row: UnsafeMutablePointer<UInt8>?) throws {
        var message = shimMessageBuffer()
        let status = sp_png_reader_read_row(handle, row, &message)
        if status == SP_ERR_END {
            throw SharePipeError.internalError(file: file, reason: "read past the last row")
        }
        try checkShim(status, message, file: file, phase: .decode)
    }

    /// Reads the chunks after the image data, up to IEND.
    func finish() throws {
        var message = shimMessageBuffer()
        try checkShim(sp_png_reader_finish(handle, &message), message, file: file, phase: .decode)
    }

    /// Whether the zlib stream went on after the last row and was left unread there (the rows are whole).
    var imageDataGoesOn: Bool { sp_png_reader_tail_cut(handle) != 0 }

    /// Warnings libpng recovered from, with the last one's text.
    func warnings() -> (count: Int, last: String) {
        var message = shimMessageBuffer()
        let count = sp_png_reader_warning_count(handle, &message)
        return (Int(count), shimText(message))
    }
}
