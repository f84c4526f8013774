#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file opened read-only and read through a small buffer. Inputs are never opened for writing.
final class InputFile {
    private var handle: UnsafeMutablePointer<FILE>?
    let path: String

    /// Opens `path` for reading. Only regular files are accepted: a FIFO would block the job until some
    /// writer appeared (it is opened non-blocking so the check itself cannot hang), and a device such as
    /// /dev/zero would never end.
    init(path: String) throws {
        self.path = path
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw SharePipeError.unreadable(file: path, reason: FileIO.errnoText()) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let reason = FileIO.errnoText()
            closeDescriptor(descriptor)
            throw SharePipeError.unreadable(file: path, reason: reason)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            closeDescriptor(descriptor)
            throw SharePipeError.unreadable(
                file: path,
                reason: (info.st_mode & S_IFMT) == S_IFDIR
                    ? "is a directory" : "not a regular file")
        }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        guard let handle = fdopen(descriptor, "rb") else {
            let reason = FileIO.errnoText()
            closeDescriptor(descriptor)
            throw SharePipeError.unreadable(file: path, reason: reason)
        }
        self.handle = handle
    }

    /// Reads up to `count` bytes; fewer only at end of file.
    func read(upTo count: Int) throws -> [UInt8] {
        guard let handle else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let got = bytes.withUnsafeMutableBytes { fread($0.baseAddress, 1, count, handle) }
        if got < count && ferror(handle) != 0 {
            throw SharePipeError.unreadable(file: path, reason: FileIO.errnoText())
        }
        bytes.removeLast(count - got)
        return bytes
    }

    /// Reads into a caller's buffer; returns the number of bytes read (0 at end).
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard let handle, let base = buffer.baseAddress else { return 0 }
        let got = fread(base, 1, buffer.count, handle)
        if got < buffer.count && ferror(handle) != 0 {
            throw SharePipeError.unreadable(file: path, reason: FileIO.errnoText())
        }
        return got
    }

    func close() {
        if let handle { fclose(handle) }
        handle = nil
    }

    deinit { close() }
}

/// Small file-system helpers on top of the C library (FoundationEssentials keeps the baseline RSS low).
enum FileIO {
    static func errnoText() -> String { String(cString: strerror(errno)) }

    static func size(of path: String) throws -> Int {
        var info = stat()
        guard stat(path, &info) == 0 else { throw SharePipeError.unreadable(file: path, reason: errnoText()) }
        return Int(info.st_size)
    }

    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Writes `bytes` to a temporary name in the destination's directory, flushes it to the disk, and renames
    /// it into place, so a reader never sees a half-written output, an interrupted run leaves no partial
    /// file, and a crash right after the rename cannot leave an empty one. A full disk or a failing write
    /// removes the temporary file and throws `unwritable` with the system's reason.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws {
        try writeAtomically(to: path) { handle in
            bytes.withUnsafeBytes({ fwrite($0.baseAddress, 1, $0.count, handle) }) == bytes.count ? nil : errnoText()
        }
    }

    /// The same for a prepared image's output, from its temporary file when it is in one (copied through a
    /// small buffer: the output is never held whole), else from its bytes.
    static func writeAtomically(_ prepared: PreparedImage, to path: String) throws {
        guard let file = prepared.outputFile else { return try writeAtomically(prepared.bytes, to: path) }
        try writeAtomically(to: path) { file.copy(to: $0) }
    }

    /// Creates the temporary name, lets `write` fill it (nil, or the reason it failed), flushes, syncs and
    /// renames it into place; removes it on any failure.
    private static func writeAtomically(to path: String, _ write: (UnsafeMutablePointer<FILE>) -> String?) throws {
        let temporary = "\(path).sharepipe-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).tmp"
        let handle = try TemporaryFiles.shared.create(temporary, for: path)
        defer { TemporaryFiles.shared.unregister(temporary) }
        var failure = write(handle)
        if failure == nil, fflush(handle) != 0 { failure = errnoText() }
        if failure == nil, fsync(fileno(handle)) != 0 { failure = errnoText() }
        if fclose(handle) != 0, failure == nil { failure = errnoText() }
        if let failure {
            unlink(temporary)
            throw SharePipeError.unwritable(file: path, reason: failure)
        }
        guard rename(temporary, path) == 0 else {
            let reason = errnoText()
            unlink(temporary)
            throw SharePipeError.unwritable(file: path, reason: reason)
        }
    }

    /// Creates a directory and its parents (mode 0755).
    static func makeDirectories(_ path: String) throws {
        if path.isEmpty || isDirectory(path) { return }
        let parent = parentDirectory(of: path)
        if parent != path { try makeDirectories(parent) }
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw SharePipeError.unwritable(file: path, reason: errnoText())
        }
    }

    static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// Files below `path` (sorted, hidden entries skipped); with `recursive` false only its direct children.
    /// Symbolic links to directories are followed, but each directory is listed once: a link back up the
    /// tree cannot make the walk list the same photos again and again.
    static func listFiles(in path: String, recursive: Bool) -> [String] {
        var visited = Set<[UInt64]>()
        return listFiles(in: path, recursive: recursive, visited: &visited)
    }

    private static func listFiles(in path: String, recursive: Bool, visited: inout Set<[UInt64]>) -> [String] {
        var info = stat()
        guard stat(path, &info) == 0, visited.insert([UInt64(info.st_dev), UInt64(info.st_ino)]).inserted else {
            return []
        }
        guard let directory = opendir(path) else { return [] }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name.hasPrefix(".") { continue }
            names.append(name)
        }
        closedir(directory)
        var files: [String] = []
        for name in names.sorted() {
            let child = path.hasSuffix("/") ? path + name : path + "/" + name
            if isDirectory(child) {
                if recursive { files += listFiles(in: child, recursive: true, visited: &visited) }
            } else {
                files.append(child)
            }
        }
        return files
    }
}

private func closeDescriptor(_ descriptor: Int32) { _ = close(descriptor) }

/// Temporary output names in flight, so a SIGINT/SIGTERM handler can remove them before exiting
/// (`SharePipe.removeTemporaryOutputs()`).
final class TemporaryFiles: @unchecked Sendable {
    static let shared = TemporaryFiles()
    /// The paths in flight, and `closed`, set by `removeAll`: the process is exiting and no new temporary
    /// output may appear.
    private let state = Locked((paths: Set<String>(), closed: false))

    private init() {}

    /// Creates `path` (exclusively, for writing) and registers it in one step under the lock, so a
    /// `removeAll` running on another thread either removes the new file or stops it being made: a worker
    /// thread cannot create a temporary file just after the signal handler cleaned up and before the
    /// process exits.
    func create(_ path: String, for output: String) throws -> UnsafeMutablePointer<FILE> {
        try state.withLock { state in
            if state.closed { throw SharePipeError.cancelled(file: output) }
            guard let handle = fopen(path, "wbx") else {
                let reason = FileIO.errnoText()
                throw SharePipeError.unwritable(
                    file: output, reason: "cannot create a file in \(FileIO.parentDirectory(of: output)): \(reason)")
            }
            state.paths.insert(path)
            return handle
        }
    }

    func register(_ path: String) { state.withLock { _ = $0.paths.insert(path) } }

    func unregister(_ path: String) { state.withLock { _ = $0.paths.remove(path) } }

    /// Removes every temporary file still in flight and refuses new temporary outputs from then on
    /// (called from the signal handler path, before exit).
    func removeAll() {
        state.withLock { state in
            state.closed = true
            for path in state.paths { unlink(path) }
            state.paths.removeAll()
        }
    }
}

/// Removes every temporary output still being written and refuses new ones from then on: for a
/// SIGINT/SIGTERM handler, just before the process exits.
public func removeTemporaryOutputs() { TemporaryFiles.shared.removeAll() }
