import CSharePipe

/// Turns a shim status into a thrown error naming the file; the one place shim failures become Swift errors.
func checkShim(_ status: sp_status, _ message: [CChar], file: String) throws {
    switch status {
    case SP_OK, SP_ERR_END: return
    case SP_ERR_IO: throw SharePipeError.unreadable(file: file, reason: shimText(message))
    // A library the shim loads on first use is missing: "libheif not available (…)".
    case SP_ERR_UNAVAILABLE: throw SharePipeError.unsupportedFormat(file: file, reason: shimText(message))
    // The file needs a feature the library lacks: the message names the feature.
    case SP_ERR_UNSUPPORTED: throw SharePipeError.unsupportedFormat(file: file, reason: shimText(message))
    // A limit the caller handed the library; readers that know which one report it themselves.
    case SP_ERR_LIMIT:
        throw SharePipeError.tooLarge(file: file, exceeded: ExceededLimit(.pixelArea, found: nil, limit: nil, detail: shimText(message)))
    case SP_ERR_MEMORY:
        throw SharePipeError.tooLarge(file: file, exceeded: ExceededLimit(.availableMemory, found: nil, limit: nil,
                                                                           detail: shimText(message)))
    default: throw SharePipeError.corrupt(file: file, reason: shimText(message))
    }
}

/// The message a shim wrote, without the trailing newline some libraries end theirs with.
func shimText(_ message: [CChar]) -> String {
    var text = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    while let last = text.last, last.isWhitespace { text.removeLast() }
    return text
}

func shimMessageBuffer() -> [CChar] { [CChar](repeating: 0, count: Int(SP_MESSAGE_LENGTH)) }
