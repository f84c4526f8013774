import CSharePipe

/// Turns a shim status into a thrown error naming the file; the one place a decoder's shim failures become
/// Swift errors. `phase` is where the caller is: reading the header, or decoding the image data; a library
/// error there makes the input `corrupt` in that phase. Every status is mapped here (encoders use
/// `EncoderFailure.check`):
///
/// | status | error |
/// |---|---|
/// | `SP_OK`, `SP_ERR_END` | none |
/// | `SP_ERR_LIBRARY` | `corrupt(phase)`: the library found the data damaged |
/// | `SP_ERR_IO` | `unreadable` |
/// | `SP_ERR_MEMORY` | `tooLarge` (available memory) |
/// | `SP_ERR_LIMIT` | `tooLarge` (pixel area; readers that know which limit report it themselves) |
/// | `SP_ERR_UNAVAILABLE` | `unsupportedFormat(.library)`: "libheif not available (…)" |
/// | `SP_ERR_UNSUPPORTED` | `unsupportedFormat(.feature)`: the message names the feature |
/// | `SP_ERR_ARGUMENT` | `internalError`: SharePipe passed the shim something it cannot use |
/// | any other | `internalError` |
func checkShim(_ status: sp_status, _ message: [CChar], file: String, phase: SharePipeError.ReadPhase) throws {
    switch status {
    case SP_OK, SP_ERR_END: return
    case SP_ERR_LIBRARY: throw SharePipeError.corrupt(file: file, phase: phase, reason: shimText(message))
    case SP_ERR_IO: throw SharePipeError.unreadable(file: file, reason: shimText(message))
    case SP_ERR_MEMORY:
        throw SharePipeError.tooLarge(
            file: file,
            exceeded: ExceededLimit(
                .availableMemory, found: nil, limit: nil,
                detail: shimText(message)))
    case SP_ERR_LIMIT:
        throw SharePipeError.tooLarge(
            file: file, exceeded: ExceededLimit(.pixelArea, found: nil, limit: nil, detail: shimText(message)))
    case SP_ERR_UNAVAILABLE:
        throw SharePipeError.unsupportedFormat(file: file, missing: .library, reason: shimText(message))
    case SP_ERR_UNSUPPORTED:
        throw SharePipeError.unsupportedFormat(file: file, missing: .feature, reason: shimText(message))
    case SP_ERR_ARGUMENT:
        throw SharePipeError.internalError(
            file: file,
            reason: "the shim refused its arguments while "
                + (phase == .header ? "reading the header" : "decoding") + ": \(shimText(message))")
    default:
        throw SharePipeError.internalError(
            file: file, reason: "unknown shim status \(status.rawValue): \(shimText(message))")
    }
}

/// The message a shim wrote, without the trailing newline some libraries end theirs with.
func shimText(_ message: [CChar]) -> String {
    var text = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    while let last = text.last, last.isWhitespace { text.removeLast() }
    return text
}

func shimMessageBuffer() -> [CChar] { [CChar](repeating: 0, count: Int(SP_MESSAGE_LENGTH)) }
