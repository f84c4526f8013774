import CSharePipe

/// Turns a shim status into a thrown error naming the file; the one place shim failures become Swift errors.
func checkShim(_ status: sp_status, _ message: [CChar], file: String) throws {
    switch status {
    case SP_OK, SP_ERR_END: return
    case SP_ERR_IO: throw SharePipeError.unreadable(file: file, reason: shimText(message))
    // A library the shim loads on first use is missing: "libheif not available (…)".
    case SP_ERR_UNAVAILABLE: throw SharePipeError.unsupportedFormat(file: file, reason: shimText(message))
    case SP_ERR_MEMORY:
        throw SharePipeError.tooLarge(file: file, exceeded: ExceededLimit(.availableMemory, found: nil, limit: nil,
                                                                           detail: shimText(message)))
    default: throw SharePipeError.corrupt(file: file, reason: shimText(message))
    }
}

func shimText(_ message: [CChar]) -> String {
    message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}

func shimMessageBuffer() -> [CChar] { [CChar](repeating: 0, count: Int(SP_MESSAGE_LENGTH)) }
