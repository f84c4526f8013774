#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Random access to a source's bytes (pread on the file; slices of bytes in memory) for the grid route: the
/// `meta` box, the grid descriptor, one tile's coded data at a time.
final class HEIFFileBytes {
    private let descriptor: Int32
    private let memory: [UInt8]
    let size: Int
    let name: String

    private init(name: String, descriptor: Int32, memory: [UInt8], size: Int) {
        self.name = name
        self.descriptor = descriptor
        self.memory = memory
        self.size = size
    }

    /// Bytes in memory.
    convenience init(memory: [UInt8], name: String = ImageSource.bytes([]).displayName) {
        self.init(name: name, descriptor: -1, memory: memory, size: memory.count)
    }

    /// The file (opened for reading; regular files only) or the bytes of `source`.
    convenience init(_ source: ImageSource) throws {
        switch source {
        case .bytes(let bytes):
            self.init(memory: bytes, name: source.displayName)
        case .file(let path):
            let opened = open(path, O_RDONLY | O_CLOEXEC)
            guard opened >= 0 else { throw SharePipeError.unreadable(file: path, reason: FileIO.errnoText()) }
            var info = stat()
            guard fstat(opened, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
                _ = close(opened)
                throw SharePipeError.unreadable(file: path, reason: "not a regular file")
            }
            self.init(name: path, descriptor: opened, memory: [], size: Int(info.st_size))
        }
    }

    deinit { if descriptor >= 0 { _ = close(descriptor) } }

    /// `count` bytes at `offset`; throws `corrupt` past the end of the file.
    func read(at offset: Int, count: Int) throws -> [UInt8] {
        guard offset >= 0, count >= 0, offset <= size, count <= size - offset else {
            throw SharePipeError.corrupt(
                file: name, phase: .header,
                reason: "HEIF item data at \(offset) (+\(count)) lies past the end of the file")
        }
        if descriptor < 0 { return Array(memory[offset..<(offset + count)]) }
        var out = [UInt8](repeating: 0, count: count)
        try out.withUnsafeMutableBytes { buffer in
            var done = 0
            while done < count {
                let got = pread(descriptor, buffer.baseAddress! + done, count - done, off_t(offset + done))
                if got < 0 && errno == EINTR { continue }
                guard got > 0 else {
                    throw SharePipeError.unreadable(
                        file: name, reason: got < 0 ? FileIO.errnoText() : "file shrank while reading")
                }
                done += got
            }
        }
        return out
    }

    /// Appends `count` bytes at `offset` to `out`.
    func append(at offset: Int, count: Int, to out: inout [UInt8]) throws {
        out += try read(at: offset, count: count)
    }

    /// The body of the top-level `meta` box after its version and flags, nil when there is none or it is
    /// larger than `maxBytes`.
    func metaBody(maxBytes: Int) throws -> [UInt8]? {
        var found: (body: Int, size: Int)?
        try forEachBox(in: 0..<size) { type, body, length in
            if type == "meta" { found = (body, length) }
            return found == nil
        }
        guard let (body, bodySize) = found, bodySize >= 4, bodySize - 4 <= maxBytes else { return nil }
        return try read(at: body + 4, count: bodySize - 4)
    }

    /// Calls `visit` with the type, body offset and body size of each box in `range` (the top level: `0..<size`)
    /// until it returns false. The walk ends at a box that runs past the range: the decoders decide whether the
    /// file is whole.
    func forEachBox(in range: Range<Int>, _ visit: (String, Int, Int) throws -> Bool) throws {
        var position = range.lowerBound
        while position <= range.upperBound - 8 {
            let header = try read(at: position, count: 8)
            var boxSize = header[0..<4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: header[4..<8], as: UTF8.self)
            var headerSize = 8
            if boxSize == 1 {
                guard position <= range.upperBound - 16 else { return }
                boxSize = try read(at: position + 8, count: 8).reduce(0) { ($0 << 8) | Int($1) }
                headerSize = 16
            } else if boxSize == 0 {
                boxSize = range.upperBound - position
            }
            guard boxSize >= headerSize, boxSize <= range.upperBound - position else { return }
            guard try visit(type, position + headerSize, boxSize - headerSize) else { return }
            position += boxSize
        }
    }
}
