#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Unlinked temporary files: made with `mkstemp` in `$TMPDIR` (else `/tmp`) and removed from the directory at
/// once, so nothing is left behind whatever happens (an error, a cancelled job, a crash); the space goes back
/// when the descriptor is closed.
enum UnlinkedTemporaryFile {
    /// `$TMPDIR` when set and not empty, else `/tmp`.
    static var defaultDirectory: String {
        getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }

    /// A new file's descriptor (open for reading and writing, already unlinked), or nil when none can be made.
    static func make(prefix: String, in directory: String? = nil) -> Int32? {
        let directory = directory ?? defaultDirectory
        let base = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { return nil }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        return descriptor
    }
}

/// An encoded output held in an unlinked temporary file instead of memory (an animated GIF, written frame by
/// frame as it is encoded): its size is known without reading it, and the file goes with the last reference.
/// A caller reads it (`readAll`) or copies it to where it belongs (`copy(to:)`, the batch's temporary name
/// that is then renamed).
final class EncodedFile: Sendable {
    /// The open, unlinked file (owned: closed on deinit).
    let descriptor: Int32
    /// The output's length in bytes.
    let byteCount: Int

    /// Takes ownership of `descriptor`, which holds `byteCount` bytes of output from offset 0.
    init(descriptor: Int32, byteCount: Int) {
        self.descriptor = descriptor
        self.byteCount = byteCount
    }

    deinit { _ = close(descriptor) }

    /// A read that failed, with the system's reason.
    struct ReadFailure: Error {
        var reason: String
    }

    /// The whole output, read into memory.
    func readAll() throws(ReadFailure) -> [UInt8] {
        guard byteCount > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: byteCount)
        let failure = bytes.withUnsafeMutableBytes { read(byteCount, at: 0, into: $0.baseAddress!) }
        if let failure { throw failure }
        return bytes
    }

    /// Copies the output to `handle` through a 64 KiB buffer; the system's reason when a read or write failed.
    func copy(to handle: UnsafeMutablePointer<FILE>) -> String? {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        return buffer.withUnsafeMutableBytes { buffer -> String? in
            var offset = 0
            while offset < byteCount {
                let count = min(buffer.count, byteCount - offset)
                if let failure = read(count, at: offset, into: buffer.baseAddress!) { return failure.reason }
                guard fwrite(buffer.baseAddress!, 1, count, handle) == count else { return FileIO.errnoText() }
                offset += count
            }
            return nil
        }
    }

    /// Reads exactly `count` bytes at `offset` into `target`; nil, or the failure.
    private func read(_ count: Int, at offset: Int, into target: UnsafeMutableRawPointer) -> ReadFailure? {
        var done = 0
        while done < count {
            let got = pread(descriptor, target + done, count - done, off_t(offset + done))
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else {
                return ReadFailure(
                    reason: got < 0 ? FileIO.errnoText() : "the temporary output ended after \(offset + done) bytes")
            }
            done += got
        }
        return nil
    }
}
