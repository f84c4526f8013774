#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An upload after it was received: small ones as bytes, larger ones in a temporary file.
enum ReceivedUpload: Sendable {
    case memory([UInt8])
    case spooled(SpoolFile)
}

/// A temporary file made with `mkstemp` (mode 0600) holding an upload; removed with `remove()` when the
/// job ends, or at the latest when the last reference goes.
final class SpoolFile: @unchecked Sendable {
    /// The file's path.
    let path: String
    private let removed = Locked(false)

    private init(path: String) {
        self.path = path
        TemporaryFiles.shared.register(path)
    }

    /// Creates an empty, exclusively owned file in `directory`; returns it with an open descriptor.
    static func create(in directory: String) throws -> (file: SpoolFile, descriptor: Int32) {
        let base = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        var template = Array("\(base.isEmpty ? "." : base)/sharepipe-upload-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else {
            throw SharePipeError.unwritable(
                file: directory, reason: "cannot create a spool file: \(FileIO.errnoText())")
        }
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return (SpoolFile(path: path), descriptor)
    }

    /// Unlinks the file (idempotent).
    func remove() {
        let first = removed.withLock { removed in
            defer { removed = true }
            return !removed
        }
        guard first else { return }
        unlink(path)
        TemporaryFiles.shared.unregister(path)
    }

    deinit { remove() }
}

/// Receives an upload body chunk by chunk: bytes accumulate in memory up to `threshold`; past it they go
/// to a spool file, so an upload of any size holds little more than `threshold` bytes in memory (the
/// accumulating array grows by doubling and is copied once to its exact size: at most 2 × `threshold`,
/// which `MemoryEstimate.receiving(spoolThreshold:)` reserves).
struct UploadReceiver {
    /// Uploads of at most this many bytes stay in memory.
    var threshold: Int
    /// Where spool files are made.
    var directory: String
    /// Largest upload accepted (`ImageLimits.maxInputBytes`): past it, receiving stops with `tooLarge`.
    var maxBytes: Int
    /// The upload's name for errors.
    var name: String

    func receive<Chunks: AsyncSequence>(_ chunks: Chunks) async throws -> ReceivedUpload
    where Chunks.Element: Sequence, Chunks.Element.Element == UInt8 {
        var pending: [UInt8] = []
        var spool: (file: SpoolFile, descriptor: Int32)?
        var total = 0
        defer { if let spool { close(spool.descriptor) } }

        func take(_ buffer: UnsafeBufferPointer<UInt8>) throws {
            total += buffer.count
            if total > maxBytes {
                throw SharePipeError.tooLarge(
                    file: name, exceeded: ExceededLimit(.inputBytes, found: total, limit: maxBytes))
            }
            if spool == nil && total > threshold {
                spool = try SpoolFile.create(in: directory)
                try pending.withUnsafeBufferPointer { try writeAll($0, to: spool!) }
                pending = []
            }
            if let spool {
                try writeAll(buffer, to: spool)
            } else {
                pending.append(contentsOf: buffer)
            }
        }

        do {
            var iterator = chunks.makeAsyncIterator()
            while true {
                let next: Chunks.Element?
                do {
                    next = try await iterator.next()
                } catch {
                    if error is CancellationError { throw SharePipeError.cancelled(file: name) }
                    throw SharePipeError.unreadable(file: name, reason: "the upload stopped: \(error)")
                }
                guard let chunk = next else { break }
                if Task.isCancelled { throw SharePipeError.cancelled(file: name) }
                let handled: Void? = try chunk.withContiguousStorageIfAvailable { try take($0) }
                if handled == nil { try Array(chunk).withUnsafeBufferPointer { try take($0) } }
            }
        } catch {
            spool?.file.remove()
            throw error
        }
        if let spool { return .spooled(spool.file) }
        // The array grew by doubling; keep an exact copy so the job's estimate (input size) holds.
        return .memory(
            pending.count == pending.capacity
                ? pending
                : Array(unsafeUninitializedCapacity: pending.count) {
                    buffer, count in
                    _ = buffer.initialize(from: pending)
                    count = pending.count
                })
    }

    /// Writes a whole buffer, retrying short writes and interruptions.
    fileprivate func writeAll(_ buffer: UnsafeBufferPointer<UInt8>, to spool: (file: SpoolFile, descriptor: Int32))
        throws
    {
        var offset = 0
        while offset < buffer.count {
            let written = write(spool.descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw SharePipeError.unwritable(file: spool.file.path, reason: FileIO.errnoText())
            }
            offset += written
        }
    }

    /// Writes bytes already received to a new spool file (an in-memory upload that must wait for memory).
    static func spool(_ bytes: [UInt8], in directory: String) throws -> SpoolFile {
        let (file, descriptor) = try SpoolFile.create(in: directory)
        defer { close(descriptor) }
        do {
            let receiver = UploadReceiver(threshold: 0, directory: directory, maxBytes: .max, name: file.path)
            try bytes.withUnsafeBufferPointer { try receiver.writeAll($0, to: (file, descriptor)) }
        } catch {
            file.remove()
            throw error
        }
        return file
    }
}
