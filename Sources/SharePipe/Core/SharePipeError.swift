import CSharePipe

/// Everything that can go wrong preparing an image. Each case names the file (or "<memory>") and says why.
public enum SharePipeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes are not a JPEG, PNG, GIF, WebP, HEIC or AVIF (detected by magic bytes, not by name).
    case unsupportedFormat(file: String, reason: String)
    /// The data is damaged or not what its header claims.
    case corrupt(file: String, reason: String)
    /// The header asks for more than the configured limits; refused before any pixel memory is allocated.
    /// `exceeded` says which limit, the value found, the limit's number and, once the header was read, the size.
    case tooLarge(file: String, exceeded: ExceededLimit)
    /// Nothing within the quality and dimension floors fits under the byte limit.
    case cannotMeetLimit(file: String, limit: Int, bestBytes: Int)
    /// The input could not be opened or read.
    case unreadable(file: String, reason: String)
    /// The output could not be written.
    case unwritable(file: String, reason: String)
    /// An encoder (libjpeg, libpng, giflib) failed while writing the output: not a fault of the input.
    case encodingFailed(file: String, reason: String)
    /// Options that cannot work together (reported before any decoding). `option` names the option, what
    /// a valid value is and the value given.
    case invalidOptions(InvalidOption)
    /// The job was cancelled; nothing was written.
    case cancelled(file: String)
    /// The pipeline is too busy to take the input now: its admission queue was full, or the input waited
    /// too long for memory (`MemoryBudget.maxWaitingRequests`, `maxWait`). Nothing was decoded; a later
    /// try may succeed.
    case overloaded(file: String, reason: OverloadReason)

    public var description: String {
        guard let file else { return reason }
        return "\(file): \(reason)"
    }

    /// The file the error is about; nil for options.
    public var file: String? {
        switch self {
        case .unsupportedFormat(let file, _), .corrupt(let file, _), .tooLarge(let file, _),
             .cannotMeetLimit(let file, _, _), .unreadable(let file, _), .unwritable(let file, _),
             .encodingFailed(let file, _), .cancelled(let file), .overloaded(let file, _):
            return file
        case .invalidOptions:
            return nil
        }
    }

    /// What went wrong, without the file name (for errors that quote another error).
    public var reason: String {
        switch self {
        case .unsupportedFormat(_, let reason): return "unsupported format: \(reason)"
        case .corrupt(_, let reason): return "corrupt image: \(reason)"
        case .tooLarge(_, let exceeded): return exceeded.description
        case .cannotMeetLimit(_, let limit, let best):
            return "cannot fit under \(limit) bytes: smallest output reached was \(best) bytes"
        case .unreadable(_, let reason): return "cannot read: \(reason)"
        case .unwritable(_, let reason): return "cannot write: \(reason)"
        case .encodingFailed(_, let reason): return "encoding the output failed: \(reason)"
        case .invalidOptions(let option): return "invalid options: \(option)"
        case .cancelled: return "cancelled"
        case .overloaded(_, let reason): return reason.description
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
        case .encodingFailed: return "encodingFailed"
        case .invalidOptions: return "invalidOptions"
        case .cancelled: return "cancelled"
        case .overloaded: return "overloaded"
        }
    }
}

/// An encoder's failure, thrown where the input's name is not known (encoders see only pixels);
/// `Pipeline.prepare` turns it into `SharePipeError.encodingFailed` (or `tooLarge` when memory ran out)
/// naming the input file.
struct EncoderFailure: Error {
    var reason: String
    var outOfMemory: Bool

    /// Throws for any shim status but `SP_OK` / `SP_ERR_END`, with the shim's message.
    static func check(_ status: sp_status, _ message: [CChar]) throws {
        guard status != SP_OK, status != SP_ERR_END else { return }
        throw EncoderFailure(reason: shimText(message), outOfMemory: status == SP_ERR_MEMORY)
    }

    /// The error naming `file`.
    func error(file: String) -> SharePipeError {
        outOfMemory ? .tooLarge(file: file, exceeded: ExceededLimit(.availableMemory, found: nil, limit: nil, detail: "while encoding: \(reason)"))
                    : .encodingFailed(file: file, reason: reason)
    }
}
