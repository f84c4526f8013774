import CSharePipe

/// Applies a JPEG's orientation without decoding it: TurboJPEG rotates or flips the DCT blocks (no
/// generational loss, no resampling), then the metadata is written as `JPEGRewriter` writes it (the kept
/// blocks, whose orientation the metadata policy has reset to 1). Used when the image needs no resize and
/// its only change is its orientation.
///
/// Only perfect turns are made. A turn moves the image's right or bottom edge to the left or top; when that
/// edge is a partial MCU (the width or height is not a multiple of 8 or 16 px, depending on the chroma
/// sampling and the turn), its blocks cannot be moved without cropping or re-encoding, so the result is
/// `.impossible` and the caller re-encodes. The output is progressive: libjpeg writes a progressive file
/// with optimal Huffman tables, while TurboJPEG's baseline transform writes the standard ones (up to twice
/// the size). The input is read whole, as TurboJPEG works in memory; it is within the size caps.
enum JPEGTurner {
    static func turn(_ source: ImageSource, info: ImageInfo, keeping blocks: [MetadataBlock]) throws
        -> LosslessTurnOutcome
    {
        let input = try source.prefix(source.byteCount())
        var message = shimMessageBuffer()
        var turned: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = input.withUnsafeBufferPointer { buffer in
            sp_jpeg_turn_losslessly(
                buffer.baseAddress, buffer.count, sp_jpeg_turn(UInt32(info.orientation.rawValue - 1)),
                1, &turned, &length, &message)
        }
        defer { sp_free(turned) }
        switch status {
        case SP_OK:
            break
        case SP_ERR_ARGUMENT:
            return .impossible("\(info.size.width)×\(info.size.height) is not a whole number of MCUs for this turn")
        case SP_ERR_MEMORY:
            try checkShim(status, message, file: source.displayName, phase: .decode)
        default:
            // Damage TurboJPEG will not copy (a libjpeg warning): the re-encode reads what it can and reports it.
            return .impossible("the image data has damage a lossless turn would copy (\(shimText(message)))")
        }
        let bytes = Array(UnsafeBufferPointer(start: turned, count: length))
        do {
            return .turned(try JPEGRewriter.rewrite(.bytes(bytes), keeping: blocks))
        } catch let error as SharePipeError {
            // TurboJPEG refuses damaged data (above), so a turned copy that does not decode is not the input's fault.
            let why = error.description.dropFirst(ImageSource.bytes([]).displayName.count + 2)  // "<memory>: "
            throw SharePipeError.internalError(
                file: source.displayName,
                reason: "the losslessly turned copy does not decode (\(why))")
        }
    }
}
