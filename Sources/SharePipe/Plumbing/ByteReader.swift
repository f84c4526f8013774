#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a source front to back through a 64 KiB buffer (files are never loaded whole).
final class ByteReader {
    private let file: InputFile?
    private let memory: [UInt8]
    private var buffer: [UInt8]
    private var position = 0
    private var limit = 0
    /// Bytes consumed so far.
    private(set) var offset = 0
    let name: String

    init(_ source: ImageSource, bufferSize: Int = 65536) throws {
        name = source.displayName
        switch source {
        case .file(let path):
            file = try InputFile(path: path)
            memory = []
            buffer = [UInt8](repeating: 0, count: bufferSize)
        case .bytes(let bytes):
            file = nil
            memory = bytes
            buffer = []
            limit = bytes.count
        }
    }

    deinit { file?.close() }

    /// The next byte, or nil at the end.
    @inline(__always)
    func next() throws -> UInt8? {
        if position == limit {
            guard try refill() else { return nil }
        }
        let byte = file == nil ? memory[position] : buffer[position]
        position += 1
        offset += 1
        return byte
    }

    /// The next byte; the end of data is an error (truncated file).
    func byte() throws -> UInt8 {
        guard let value = try next() else { throw truncation() }
        return value
    }

    /// The next `count` bytes; fewer is an error.
    func bytes(_ count: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count)
        try copy(count, into: &out)
        return out
    }

    /// Appends the next `count` bytes to `out`, a buffer at a time; fewer is an error.
    func copy(_ count: Int, into out: inout [UInt8]) throws {
        var remaining = count
        while remaining > 0 {
            if position == limit, try !refill() { throw truncation() }
            let take = min(remaining, limit - position)
            if file == nil {
                out += memory[position..<position + take]
            } else {
                out += buffer[position..<position + take]
            }
            position += take
            offset += take
            remaining -= take
        }
    }

    /// Skips `count` bytes; fewer is an error.
    func skip(_ count: Int) throws {
        var remaining = count
        while remaining > 0 {
            if position == limit, try !refill() { throw truncation() }
            let take = min(remaining, limit - position)
            position += take
            offset += take
            remaining -= take
        }
    }

    /// Skips to just past the next `target` byte, a buffer at a time; false when the data ends first.
    func skip(past target: UInt8) throws -> Bool {
        while true {
            if position == limit, try !refill() { return false }
            let found = (file == nil ? memory : buffer).withUnsafeBufferPointer { bytes -> Int? in
                guard let base = bytes.baseAddress, let hit = memchr(base + position, Int32(target), limit - position)
                else { return nil }
                return UnsafeRawPointer(hit) - UnsafeRawPointer(base)
            }
            guard let found else {
                offset += limit - position
                position = limit
                continue
            }
            offset += found + 1 - position
            position = found + 1
            return true
        }
    }

    /// The error for data that ends where more was needed: names the file and the offset.
    func truncation() -> SharePipeError {
        .corrupt(file: name, phase: .header, reason: "data ends at byte \(offset) (file is truncated)")
    }

    private func refill() throws -> Bool {
        guard let file else { return false }
        let got = try buffer.withUnsafeMutableBytes { try file.read(into: $0) }
        position = 0
        limit = got
        return got > 0
    }
}
