import CSharePipe

/// Everything that can go wrong preparing an image. Each case names the file (or "<memory>") and says why.
///
/// The cases follow the phases of a job: the header and the image data (`corrupt`, with the `ReadPhase`),
/// what SharePipe cannot read (`unsupportedFormat`, with what is missing), the limits (`tooLarge`,
/// `cannotMeetLimit`), the encoder (`encodingFailed`), I/O (`unreadable`, `unwritable`), the options
/// (`invalidOptions`), the scheduler (`cancelled`, `timedOut`, `overloaded`) and SharePipe's own bugs
/// (`internalError`).
public enum SharePipeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// SharePipe cannot read the input: not an image format it knows, a feature of the format its library
    /// lacks (12-bit JPEG, a HEIF colour no ICC profile describes), or a library not installed here;
    /// `missing` says which.
    case unsupportedFormat(file: String, missing: MissingSupport, reason: String)
    /// The input is damaged or not what its header claims: `phase` says whether its structure (signature,
    /// chunks, boxes, markers, frame headers) or its compressed image data was found wrong.
    case corrupt(file: String, phase: ReadPhase, reason: String)
    /// The header asks for more than the configured limits; refused before any pixel memory is allocated.
    /// `exceeded` says which limit, the value found, the limit's number and, once the header was read, the size.
    case tooLarge(file: String, exceeded: ExceededLimit)
    /// Nothing within the quality and dimension floors fits under the byte limit.
    case cannotMeetLimit(file: String, limit: Int, bestBytes: Int)
    /// The input could not be opened or read (or changed while it was being read).
    case unreadable(file: String, reason: String)
    /// The output could not be written.
    case unwritable(file: String, reason: String)
    /// An encoder (libjpeg, libpng, giflib, libwebp) failed while writing the output: not a fault of the input.
    case encodingFailed(file: String, reason: String)
    /// Options that cannot work together (reported before any decoding). `option` names the option, what
    /// a valid value is and the value given.
    case invalidOptions(InvalidOption)
    /// The job was cancelled; nothing was written.
    case cancelled(file: String)
    /// The job ran past its deadline (`PrepareOptions.timeout`, the server's `--job-timeout`) and was stopped
    /// at its next checkpoint; nothing was written. `seconds` is the deadline the job had.
    case timedOut(file: String, seconds: Double)
    /// The pipeline is too busy to take the input now: its admission queue was full, or the input waited
    /// too long for memory (`MemoryBudget.maxWaitingRequests`, `maxWait`). Nothing was decoded; a later
    /// try may succeed.
    case overloaded(file: String, reason: OverloadReason)
    /// A bug in SharePipe, not a fault of the input: an error that is not a `SharePipeError` reached the
    /// top, or the pipeline found its own state inconsistent (a library call refused arguments SharePipe
    /// passed, a library returned rows in a layout SharePipe did not ask for). Please report it.
    case internalError(file: String, reason: String)

    /// Where reading the input found it damaged.
    public enum ReadPhase: String, Sendable, Equatable, Codable, CaseIterable {
        /// The file's structure, read before any pixel: signature, chunks, boxes, markers, image and frame
        /// headers, the sizes and offsets they give.
        case header
        /// The compressed image data, while decoding: damaged, cut short, or not the size its header gave.
        case decode
    }

    /// What SharePipe lacks to read an input.
    public enum MissingSupport: String, Sendable, Equatable, Codable, CaseIterable {
        /// The bytes are not a JPEG, PNG, GIF, WebP, HEIC or AVIF (detected by magic bytes, not by name).
        case format
        /// A format SharePipe reads, using a feature its library cannot decode; `reason` names the feature.
        case feature
        /// The library for this format (libheif, libavif, Little CMS), loaded on first use, is not
        /// installed on this machine; another machine may read the file.
        case library
        /// A format SharePipe reads, in a family the operator turned off (`ImageLimits.disabledFormats`,
        /// `--disable`); `reason` names the switch.
        case disabled
    }

    public var description: String {
        guard let file else { return reason }
        return "\(file): \(reason)"
    }

    /// The file the error is about; nil for options.
    public var file: String? {
        switch self {
        case .unsupportedFormat(let file, _, _), .corrupt(let file, _, _), .tooLarge(let file, _),
            .cannotMeetLimit(let file, _, _), .unreadable(let file, _), .unwritable(let file, _),
            .encodingFailed(let file, _), .cancelled(let file), .timedOut(let file, _), .overloaded(let file, _),
            .internalError(let file, _):
            return file
        case .invalidOptions:
            return nil
        }
    }

    /// What went wrong, without the file name (for errors that quote another error).
    public var reason: String {
        switch self {
        case .unsupportedFormat(_, _, let reason): return "unsupported format: \(reason)"
        case .corrupt(_, _, let reason): return "corrupt image: \(reason)"
        case .tooLarge(_, let exceeded): return exceeded.description
        case .cannotMeetLimit(_, let limit, let best):
            return "cannot fit under \(limit) bytes: smallest output reached was \(best) bytes"
        case .unreadable(_, let reason): return "cannot read: \(reason)"
        case .unwritable(_, let reason): return "cannot write: \(reason)"
        case .encodingFailed(_, let reason): return "encoding the output failed: \(reason)"
        case .invalidOptions(let option): return "invalid options: \(option)"
        case .cancelled: return "cancelled"
        case .timedOut(_, let seconds):
            return "timed out: the job ran past its deadline of \(Self.secondsText(seconds)) s and was stopped"
        case .overloaded(_, let reason): return reason.description
        case .internalError(_, let reason):
            return "internal error (a SharePipe bug, not a fault of the input; please report it): \(reason)"
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
        case .timedOut: return "timedOut"
        case .overloaded: return "overloaded"
        case .internalError: return "internal"
        }
    }

    /// The same error naming `file` where it named `old` (a spool file's path replaced by the upload's name).
    func renamingFile(_ old: String, to file: String) -> SharePipeError {
        func rename(_ name: String) -> String { name == old ? file : name }
        switch self {
        case .unsupportedFormat(let name, let missing, let reason):
            return .unsupportedFormat(file: rename(name), missing: missing, reason: reason)
        case .corrupt(let name, let phase, let reason):
            return .corrupt(file: rename(name), phase: phase, reason: reason)
        case .tooLarge(let name, let exceeded): return .tooLarge(file: rename(name), exceeded: exceeded)
        case .cannotMeetLimit(let name, let limit, let best):
            return .cannotMeetLimit(file: rename(name), limit: limit, bestBytes: best)
        case .unreadable(let name, let reason): return .unreadable(file: rename(name), reason: reason)
        case .unwritable(let name, let reason): return .unwritable(file: rename(name), reason: reason)
        case .encodingFailed(let name, let reason): return .encodingFailed(file: rename(name), reason: reason)
        case .invalidOptions: return self
        case .cancelled(let name): return .cancelled(file: rename(name))
        case .timedOut(let name, let seconds): return .timedOut(file: rename(name), seconds: seconds)
        case .overloaded(let name, let reason): return .overloaded(file: rename(name), reason: reason)
        case .internalError(let name, let reason): return .internalError(file: rename(name), reason: reason)
        }
    }

    /// Seconds as messages write them: "30", "0.5".
    static func secondsText(_ seconds: Double) -> String {
        seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int(seconds)) : String(seconds)
    }

    /// Any error as a `SharePipeError` about `file`: a `SharePipeError` as it is, Swift's
    /// `CancellationError` as `cancelled`, anything else as `internalError` (SharePipe's code threw
    /// something it never documents: a bug, not a fault of the input).
    static func from(_ error: any Error, file: String) -> SharePipeError {
        if let error = error as? SharePipeError { return error }
        if error is CancellationError { return .cancelled(file: file) }
        return .internalError(file: file, reason: "\(type(of: error)): \(error)")
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
        outOfMemory
            ? .tooLarge(
                file: file,
                exceeded: ExceededLimit(.availableMemory, found: nil, limit: nil, detail: "while encoding: \(reason)"))
            : .encodingFailed(file: file, reason: reason)
    }
}

extension SharePipeError {
    /// This error, thrown while checking a copy SharePipe made of `file`'s image data (the metadata-only
    /// copy), as an error about `file`: damage the check finds is the input's, in the same phase (the copy
    /// carries the input's image data unchanged); anything else means the copy is wrong, a SharePipe bug.
    func aboutCopy(_ what: String, of file: String) -> SharePipeError {
        if case .corrupt(_, let phase, _) = self {
            return .corrupt(file: file, phase: phase, reason: "\(what) (\(reason))")
        }
        return .internalError(file: file, reason: "\(what) (\(reason))")
    }
}
