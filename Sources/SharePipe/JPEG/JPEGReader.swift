import CSharePipe

/// Turns a shim status into a thrown error naming the file; the one place shim failures become Swift errors.
func checkShim(_ status: sp_status, _ message: [CChar], file: String) throws {
    switch status {
    case SP_OK, SP_ERR_END: return
    case SP_ERR_IO: throw SharePipeError.unreadable(file: file, reason: shimText(message))
    case SP_ERR_MEMORY: throw SharePipeError.tooLarge(file: file, width: 0, height: 0, limit: "available memory (\(shimText(message)))")
    default: throw SharePipeError.corrupt(file: file, reason: shimText(message))
    }
}

func shimText(_ message: [CChar]) -> String {
    message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}

func shimMessageBuffer() -> [CChar] { [CChar](repeating: 0, count: Int(SP_MESSAGE_LENGTH)) }

/// A libjpeg decompressor on one source, open for the duration of a closure and closed after it.
final class JPEGReader {
    private let handle: OpaquePointer
    let file: String

    private init(handle: OpaquePointer, file: String) {
        self.handle = handle
        self.file = file
    }

    /// Opens `source`, runs `body`, and always destroys the decompressor and closes the file.
    static func with<T>(_ source: ImageSource, maxMemory: Int, _ body: (JPEGReader) throws -> T) throws -> T {
        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        switch source {
        case .file(let path):
            try checkShim(sp_jpeg_reader_open_file(path, maxMemory, &handle, &message), message, file: path)
            let reader = JPEGReader(handle: handle!, file: path)
            defer { sp_jpeg_reader_free(handle) }
            return try body(reader)
        case .bytes(let bytes):
            return try bytes.withUnsafeBufferPointer { buffer in
                try checkShim(sp_jpeg_reader_open_memory(buffer.baseAddress, buffer.count, maxMemory, &handle, &message),
                              message, file: source.displayName)
                let reader = JPEGReader(handle: handle!, file: source.displayName)
                defer { sp_jpeg_reader_free(handle) }
                return try body(reader)
            }
        }
    }

    func readHeader(saveMarkers: Bool) throws -> sp_jpeg_header {
        var header = sp_jpeg_header()
        var message = shimMessageBuffer()
        try checkShim(sp_jpeg_reader_read_header(handle, saveMarkers ? 1 : 0, &header, &message), message, file: file)
        return header
    }

    /// Saved APPn/COM markers in file order, as (marker code, payload).
    func markers() -> [(code: Int, payload: [UInt8])] {
        (0..<Int(sp_jpeg_reader_marker_count(handle))).map { index in
            let marker = sp_jpeg_reader_marker(handle, Int32(index))
            let payload = marker.data.map { Array(UnsafeBufferPointer(start: $0, count: Int(marker.length))) } ?? []
            return (Int(marker.marker), payload)
        }
    }

    func start(scaleNumerator: Int, space: sp_jpeg_out_space) throws -> (size: PixelSize, components: Int) {
        var width: Int32 = 0, height: Int32 = 0, components: Int32 = 0
        var message = shimMessageBuffer()
        try checkShim(sp_jpeg_reader_start(handle, Int32(scaleNumerator), space, &width, &height, &components, &message),
                      message, file: file)
        return (PixelSize(width: Int(width), height: Int(height)), Int(components))
    }

    /// Reads up to `maxRows` rows into `buffer`; returns how many were read (0 at the end).
    func readRows(into buffer: UnsafeMutablePointer<UInt8>, rowBytes: Int, maxRows: Int) throws -> Int {
        var rows: Int32 = 0
        var message = shimMessageBuffer()
        try checkShim(sp_jpeg_reader_read_rows(handle, buffer, rowBytes, Int32(maxRows), &rows, &message), message, file: file)
        return Int(rows)
    }

    func finish() throws {
        var message = shimMessageBuffer()
        try checkShim(sp_jpeg_reader_finish(handle, &message), message, file: file)
    }

    /// Warnings libjpeg recovered from (corrupt data), with the last one's text.
    func warnings() -> (count: Int, last: String) {
        var message = shimMessageBuffer()
        let count = sp_jpeg_reader_warning_count(handle, &message)
        return (Int(count), shimText(message))
    }
}
