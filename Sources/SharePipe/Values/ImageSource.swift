#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Where an image comes from. Every pipeline step opens the source afresh and closes it when done,
/// so nothing decoded by one step is kept alive into the next.
public enum ImageSource: Sendable, Hashable {
    /// A file on disk, read through a small buffer, never loaded whole.
    case file(path: String)
    /// Bytes already in memory (an upload body, for example).
    case bytes([UInt8])

    /// A file source from a file URL.
    public static func url(_ url: URL) -> ImageSource { .file(path: url.path) }

    /// A name for messages: the path, or "<memory>".
    public var displayName: String {
        switch self {
        case .file(let path): return path
        case .bytes: return "<memory>"
        }
    }

    /// The source's size in bytes.
    public func byteCount() throws -> Int {
        switch self {
        case .bytes(let bytes): return bytes.count
        case .file(let path):
            return try FileIO.size(of: path)
        }
    }

    /// Reads the first `count` bytes (format sniffing), opening and closing the file.
    public func prefix(_ count: Int) throws -> [UInt8] {
        switch self {
        case .bytes(let bytes): return Array(bytes.prefix(count))
        case .file(let path):
            let file = try InputFile(path: path)
            defer { file.close() }
            return try file.read(upTo: count)
        }
    }
}
