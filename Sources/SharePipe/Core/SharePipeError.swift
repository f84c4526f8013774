/// Everything that can go wrong preparing an image. Each case names the file (or "<memory>") and says why.
public enum SharePipeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes are not a JPEG, PNG or GIF (detected by magic bytes, not by name).
    case unsupportedFormat(file: String, reason: String)
    /// The data is damaged or not what its header claims.
    case corrupt(file: String, reason: String)
    /// The header asks for more than the configured limits; refused before any pixel memory is allocated.
    /// Width and height are 0 when the limit was reached before the header's size was known.
    case tooLarge(file: String, width: Int, height: Int, limit: String)
    /// Nothing within the quality and dimension floors fits under the byte limit.
    case cannotMeetLimit(file: String, limit: Int, bestBytes: Int)
    /// The input could not be opened or read.
    case unreadable(file: String, reason: String)
    /// The output could not be written.
    case unwritable(file: String, reason: String)
    /// Options that cannot work together (reported before any decoding).
    case invalidOptions(String)
    /// The job was cancelled; nothing was written.
    case cancelled(file: String)

    public var description: String {
        switch self {
        case .unsupportedFormat(let file, let reason): return "\(file): unsupported format: \(reason)"
        case .corrupt(let file, let reason): return "\(file): corrupt image: \(reason)"
        case .tooLarge(let file, let width, let height, let limit):
            // Limits checked before the header is read (input bytes) have no size to show.
            if width <= 0 || height <= 0 { return "\(file): too large: exceeds \(limit)" }
            return "\(file): image too large: \(width)×\(height) exceeds \(limit)"
        case .cannotMeetLimit(let file, let limit, let best):
            return "\(file): cannot fit under \(limit) bytes: smallest output reached was \(best) bytes"
        case .unreadable(let file, let reason): return "\(file): cannot read: \(reason)"
        case .unwritable(let file, let reason): return "\(file): cannot write: \(reason)"
        case .invalidOptions(let reason): return "invalid options: \(reason)"
        case .cancelled(let file): return "\(file): cancelled"
        }
    }

    /// A short machine-readable name of the case, for JSON reports.
    public var kind: String {
        switch self {
        case .unsupportedFormat: return "unsupportedFormat"
        case .corrupt: return "corrupt"
        case .tooLarge: return "tooLarge"
        case .cannotMeetLimit: return "cannotMeetLimit"
        case .unreadable: return "unreadable"
        case .unwritable: return "unwritable"
        case .invalidOptions: return "invalidOptions"
        case .cancelled: return "cancelled"
        }
    }
}
