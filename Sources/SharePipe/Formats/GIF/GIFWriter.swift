import CSharePipe

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A giflib encoder writing frame by frame (EGifPutImageDesc / EGifPutLine) into memory or, through a 64 KiB
/// buffer, into an unlinked temporary file (`toTemporaryFile()`: an animation's output is then never held
/// whole). The container is written once by `begin`: screen descriptor, global palette, the NETSCAPE2.0 loop
/// extension right after the header (only when the container has a loop count), then the kept metadata. Each
/// frame then gets its Graphics Control Extension (when it has one), its descriptor and its rows.
final class GIFWriter {
    private let handle: OpaquePointer
    /// The temporary file written to (owned until `finishOutput` hands it over); nil: in memory.
    private var descriptor: Int32?
    private var finished = false

    /// A writer into memory.
    init() throws {
        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        try EncoderFailure.check(sp_gif_writer_open(&handle, &message), message)
        self.handle = handle!
    }

    private init(descriptor: Int32) throws {
        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        let status = sp_gif_writer_open_descriptor(descriptor, &handle, &message)
        guard status == SP_OK, let handle else {
            _ = close(descriptor)
            try EncoderFailure.check(status, message)
            preconditionFailure("sp_gif_writer_open_descriptor returned no writer")
        }
        self.handle = handle
        self.descriptor = descriptor
    }

    /// A writer into an unlinked temporary file in `directory` (nil: `$TMPDIR`, else `/tmp`), or into memory when
    /// none can be made there (the output is the same; only where it is held differs).
    static func toTemporaryFile(in directory: String? = nil) throws -> GIFWriter {
        guard let descriptor = UnlinkedTemporaryFile.make(prefix: "sharepipe-output", in: directory) else {
            return try GIFWriter()
        }
        return try GIFWriter(descriptor: descriptor)
    }

    deinit {
        sp_gif_writer_free(handle)
        if let descriptor { _ = close(descriptor) }  // never finished: the unlinked file goes with it
    }

    /// Writes the container: screen, global palette, loop extension, metadata (in that order).
    func begin(_ container: GIFContainer) throws {
        var message = shimMessageBuffer()
        let palette = container.globalPalette
        let table = palette?.paddedForFile ?? []
        let status = table.withUnsafeBufferPointer { colors in
            sp_gif_writer_put_screen(
                handle, Int32(container.screenSize.width), Int32(container.screenSize.height),
                Int32(container.colorResolution), Int32(container.backgroundIndex),
                Int32(container.aspectByte), colors.baseAddress, Int32(table.count / 3),
                palette?.sorted == true ? 1 : 0, &message)
        }
        try check(status, message)
        if let loop = container.loopCount {
            let count = min(max(loop, 0), 0xFFFF)
            try putExtension(
                label: 0xFF,
                stream: GIFApplication.subBlockStream([
                    GIFApplication.netscape,
                    [1, UInt8(count & 0xFF), UInt8(count >> 8)],
                ]))
        }
        for block in container.metadata {
            if let (label, stream) = GIFApplication.extensionFor(block) {
                try putExtension(label: label, stream: stream)
            }
        }
    }

    /// Writes one extension from its sub-block stream.
    func putExtension(label: Int, stream: [UInt8]) throws {
        var message = shimMessageBuffer()
        let status = stream.withUnsafeBufferPointer {
            sp_gif_writer_put_extension(handle, Int32(label), $0.baseAddress, $0.count, &message)
        }
        try check(status, message)
    }

    /// Writes a frame: its control extension (if any), descriptor, local palette and `indices` (rows of
    /// `frame.rect.width`, top to bottom; reordered into passes here when the frame is interlaced).
    func putFrame(_ frame: GIFFrame, indices: inout [UInt8]) throws {
        precondition(indices.count == frame.rect.area, "index buffer does not match the frame")
        if let control = frame.control { try putExtension(label: 0xF9, stream: [4] + control.payload) }
        var message = shimMessageBuffer()
        let table = frame.localPalette?.paddedForFile ?? []
        let status = table.withUnsafeBufferPointer { colors in
            sp_gif_writer_put_image(
                handle, Int32(frame.rect.left), Int32(frame.rect.top), Int32(frame.rect.width),
                Int32(frame.rect.height), frame.interlaced ? 1 : 0, colors.baseAddress,
                Int32(table.count / 3), frame.localPalette?.sorted == true ? 1 : 0, &message)
        }
        try check(status, message)
        let width = frame.rect.width
        let order = frame.interlaced ? GIFInterlace.rows(height: frame.rect.height) : Array(0..<frame.rect.height)
        try indices.withUnsafeMutableBufferPointer { all in
            for y in order {
                let status = sp_gif_writer_put_line(handle, all.baseAddress! + y * width, Int32(width), &message)
                try check(status, message)
            }
        }
    }

    /// Writes the trailer and returns the whole file (a writer into memory).
    func finish() throws -> [UInt8] {
        precondition(descriptor == nil, "finish() is for a writer into memory: use finishOutput()")
        return try finishOutput().bytes
    }

    /// Writes the trailer and returns the output: in its temporary file (`bytes` empty) when written to one,
    /// else the bytes.
    func finishOutput() throws -> (bytes: [UInt8], file: EncodedFile?) {
        precondition(!finished, "finish called twice")
        finished = true
        var message = shimMessageBuffer()
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        try check(sp_gif_writer_finish(handle, &output, &length, &message), message)
        defer { sp_free(output) }
        if let descriptor {
            self.descriptor = nil
            return ([], EncodedFile(descriptor: descriptor, byteCount: length))
        }
        return (Array(UnsafeBufferPointer(start: output, count: length)), nil)
    }

    private func check(_ status: sp_status, _ message: [CChar]) throws {
        try EncoderFailure.check(status, message)
    }
}
