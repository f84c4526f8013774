#if canImport(Glibc)
    import Glibc
#endif

/// A file that lines are appended to (the CLI's `--report`): created with its parent folders if missing,
/// opened `O_APPEND`, and written with one `write(2)` per line, so lines from several processes appending to
/// one local file never interleave, and every line is on disk as soon as its file is done.
public final class AppendOnlyFile: @unchecked Sendable {
    private let descriptor: Int32
    public let path: String

    public init(path: String) throws {
        self.path = path
        try FileIO.makeDirectories(FileIO.parentDirectory(of: path))
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw SharePipeError.unwritable(file: path, reason: FileIO.errnoText()) }
    }

    deinit { close(descriptor) }

    /// Appends `line` and a newline in one write.
    public func append(_ line: String) throws {
        var bytes = Array((line + "\n").utf8)
        let written = bytes.withUnsafeMutableBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written != bytes.count {
            throw SharePipeError.unwritable(file: path, reason: written < 0 ? FileIO.errnoText() : "short write")
        }
    }
}
