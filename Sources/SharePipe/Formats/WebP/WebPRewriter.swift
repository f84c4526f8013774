/// Strips or replaces a WebP's metadata without touching its image data: the bitstream chunks (VP8, VP8L,
/// ALPH, ANIM, and ANMF with only its image chunks) are copied byte for byte, every metadata chunk of the
/// source and any byte VP8X does not define are dropped, and the kept
/// blocks are written where the container wants them (ICCP after VP8X; EXIF, XMP and kept unknown chunks
/// after the image). The VP8X flags are recomputed; a simple file that gains metadata gets a VP8X header.
/// Used when the image needs no resize and no rotation.
enum WebPRewriter {
    static func rewrite(_ source: ImageSource, keeping blocks: [MetadataBlock]) throws -> [UInt8] {
        let walker = try WebPChunkWalker(source)
        let metadata = WebPEncoder.chunks(for: blocks, unknown: true)
        let icc = metadata.first { $0.fourCC == "ICCP" }
        let trailing = metadata.filter { $0.fourCC != "ICCP" }
        var vp8x: [UInt8]?
        var image: [UInt8] = []
        var bitstream: WebPBitstreamHeader?
        while let chunk = try walker.next() {
            switch chunk.fourCC {
            case "VP8X":
                // The ten bytes the container defines (flags, reserved, canvas); anything after them goes.
                let payload = try walker.readPayload(chunk)
                guard payload.count >= Self.vp8xLength else {
                    throw SharePipeError.corrupt(
                        file: walker.name, phase: .header, reason: "VP8X chunk of \(payload.count) bytes")
                }
                vp8x = [payload[0], 0, 0, 0] + payload[4..<Self.vp8xLength]
            case "VP8 ", "VP8L":
                let start = image.count
                try walker.copyChunk(chunk, into: &image)
                bitstream = WebPBitstreamHeader(
                    fourCC: chunk.fourCC, payload: Array(image[(start + 8)..<min(image.count, start + 18)]))
            case "ALPH", "ANIM":
                try walker.copyChunk(chunk, into: &image)
            case "ANMF":
                image += WebPBytes.chunk(
                    "ANMF", try Self.frameWithImageDataOnly(try walker.readPayload(chunk), file: walker.name))
            default:
                continue  // ICCP, EXIF, XMP and unknown chunks: replaced by the kept blocks
            }
            if vp8x == nil && bitstream != nil { break }  // a simple file ends with its bitstream
        }
        guard !image.isEmpty else {
            throw SharePipeError.corrupt(file: walker.name, phase: .header, reason: "no image data")
        }

        var body: [UInt8] = []
        if vp8x != nil || !metadata.isEmpty {
            var header = try vp8x ?? Self.extendedHeader(for: bitstream, file: walker.name)
            var flags = WebPFeatureFlags(rawValue: header[0]).intersection([.alpha, .animation])
            if icc != nil { flags.insert(.icc) }
            if trailing.contains(where: { $0.fourCC == "EXIF" }) { flags.insert(.exif) }
            if trailing.contains(where: { $0.fourCC == "XMP " }) { flags.insert(.xmp) }
            header[0] = flags.rawValue
            body += WebPBytes.chunk("VP8X", header)
            if let icc { body += WebPBytes.chunk("ICCP", icc.data) }
        }
        body += image
        for chunk in trailing { body += WebPBytes.chunk(chunk.fourCC, chunk.data) }
        return Array("RIFF".utf8) + WebPBytes.le32(body.count + 4) + Array("WEBP".utf8) + body
    }

    /// Bytes of a VP8X payload: flags, three reserved bytes, canvas width and height less one.
    static let vp8xLength = 10
    /// Bytes of an ANMF payload before its frame data: offsets, size, duration, flags.
    static let frameHeaderLength = 16

    /// An ANMF payload with its 16-byte header and only the frame's image chunks (ALPH, VP8, VP8L): an unknown
    /// chunk inside a frame goes as one outside it does.
    static func frameWithImageDataOnly(_ payload: [UInt8], file: String) throws -> [UInt8] {
        guard payload.count >= frameHeaderLength else {
            throw SharePipeError.corrupt(file: file, phase: .header, reason: "ANMF chunk of \(payload.count) bytes")
        }
        var frame = Array(payload[..<frameHeaderLength])
        var position = frameHeaderLength
        while position + 8 <= payload.count {
            let fourCC = String(decoding: payload[position..<position + 4], as: UTF8.self)
            let size = WebPBytes.u32(payload, position + 4)
            let end = position + 8 + size
            guard end <= payload.count else {
                throw SharePipeError.corrupt(
                    file: file, phase: .header, reason: "\(fourCC) chunk inside ANMF runs past the frame")
            }
            if ["ALPH", "VP8 ", "VP8L"].contains(fourCC) {
                frame += WebPBytes.chunk(fourCC, Array(payload[(position + 8)..<end]))
            }
            position = end + (size & 1)
        }
        return frame
    }

    /// A VP8X payload for a simple file that gains metadata: its canvas is the bitstream's size.
    private static func extendedHeader(for bitstream: WebPBitstreamHeader?, file: String) throws -> [UInt8] {
        guard let bitstream else {
            throw SharePipeError.corrupt(file: file, phase: .header, reason: "unreadable bitstream header")
        }
        let flags: WebPFeatureFlags = bitstream.alpha ? [.alpha] : []
        return [flags.rawValue, 0, 0, 0] + WebPBytes.le24(bitstream.size.width - 1)
            + WebPBytes.le24(bitstream.size.height - 1)
    }
}
