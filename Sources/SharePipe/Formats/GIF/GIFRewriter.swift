/// Strips a GIF's metadata without touching its image data: the screen descriptor, colour tables, Graphics
/// Control Extensions, image descriptors and LZW data of every frame are copied byte for byte; only the
/// extensions the strip mode removes (comments, XMP, ICC and other application extensions, plain text) are
/// left out, with loop extensions after the first (which SharePipe, like the re-encoder, ignores). Used for a
/// still or an animation that needs no resize, no frame change and already fits: the output is never larger
/// than the input, unless the input lacked its one-byte trailer.
///
/// A GIF that decoders show differently is not copied (`rewrite` returns nil) but re-encoded, which writes
/// it portably: a frame without any colour table (browsers draw it opaque black), a frame reaching outside
/// the logical screen (re-encoding clips it) or an empty one (re-encoding writes a 1×1 frame).
///
/// The walk stops where `GIFStream` stops: at the trailer, at the end of the data, or at a byte that starts
/// no block after a frame (junk, an appended GIF); the output always ends with a trailer. The output is then
/// decoded whole (every frame's LZW data) before it is returned, so damage the header walk cannot see ends
/// in an error, never in an output that does not decode.
enum GIFRewriter {
    static func rewrite(_ source: ImageSource, keeping blocks: [MetadataBlock]) throws -> [UInt8]? {
        guard let out = try copy(source, keeping: blocks) else { return nil }
        do {
            try GIFReader.with(.bytes(out)) { reader in
                let stream = GIFStream(reader)
                while try stream.nextFrame() != nil { try stream.readRows { _, _ in } }
            }
        } catch let error as SharePipeError {
            throw error.aboutCopy("the metadata-only copy does not decode", of: source.displayName)
        }
        return out
    }

    private static func copy(_ source: ImageSource, keeping blocks: [MetadataBlock]) throws -> [UInt8]? {
        let reader = try ByteReader(source)
        var out: [UInt8] = []
        if case .bytes(let bytes) = source { out.reserveCapacity(bytes.count) }
        let header = try reader.bytes(13)  // signature, version, logical screen descriptor
        guard header.starts(with: Array("GIF".utf8)) else {
            throw SharePipeError.corrupt(file: reader.name, phase: .header, reason: "not a GIF file (no GIF signature)")
        }
        out += header
        let screenWidth = Int(header[6]) | Int(header[7]) << 8, screenHeight = Int(header[8]) | Int(header[9]) << 8
        let hasGlobalTable = header[10] & 0x80 != 0
        if hasGlobalTable { try reader.copy(3 << (Int(header[10] & 7) + 1), into: &out) }
        var frames = 0, loopExtensions = 0
        while true {
            guard let introducer = try reader.next() else { break }  // no trailer: one is added below
            switch introducer {
            case 0x2C:  // image descriptor, local table, LZW code size, data sub-blocks
                out.append(introducer)
                let descriptor = try reader.bytes(9)
                let field = { (at: Int) in Int(descriptor[at]) | Int(descriptor[at + 1]) << 8 }
                let (left, top, width, height) = (field(0), field(2), field(4), field(6))
                if width == 0 || height == 0 || left + width > screenWidth || top + height > screenHeight {
                    return nil
                }
                out += descriptor
                if descriptor[8] & 0x80 != 0 {
                    try reader.copy(3 << (Int(descriptor[8] & 7) + 1), into: &out)
                } else if !hasGlobalTable {
                    return nil
                }
                out.append(try reader.byte())
                try copySubBlocks(reader, into: &out)
                frames += 1
            case 0x21:
                let label = try reader.byte()
                let (raw, payloads) = try readSubBlocks(reader)
                if keeps(label: Int(label), payloads, blocks, loopExtensions: &loopExtensions) {
                    out += [introducer, label] + raw
                }
            case 0x3B:
                out.append(introducer)
                return out
            default:
                guard frames > 0 else {
                    let hex = String(introducer, radix: 16, uppercase: true)
                    throw SharePipeError.corrupt(
                        file: reader.name, phase: .header,
                        reason: "unknown block type 0x\(hex.count < 2 ? "0" + hex : hex) "
                            + "at byte \(reader.offset - 1) (expected an image, extension or trailer)")
                }
                out.append(0x3B)  // what follows the frames is not GIF: end here, as GIFStream does
                return out
            }
        }
        guard frames > 0 else {
            throw SharePipeError.corrupt(
                file: reader.name, phase: .header,
                reason: "the GIF contains no image")
        }
        out.append(0x3B)
        return out
    }

    /// Whether an extension stays: the Graphics Control Extension and the first loop extension always; any
    /// other as the metadata block `GIFStream` reads it as, when that block is kept.
    private static func keeps(
        label: Int, _ payloads: [[UInt8]], _ blocks: [MetadataBlock],
        loopExtensions: inout Int
    ) -> Bool {
        let block: MetadataBlock
        switch label {
        case 0xF9:
            return true
        case 0xFE:
            block = .comment(payloads.flatMap { $0 })
        case 0xFF:
            let identifier = payloads.first ?? []
            if GIFApplication.isLoop(identifier) {
                loopExtensions += 1
                return loopExtensions == 1
            }
            block = GIFApplication.metadata(identifier: identifier, data: Array(payloads.dropFirst()))
        default:
            block = .other(
                tag: GIFApplication.otherTag(label: label, identifier: nil),
                data: GIFApplication.subBlockStream(payloads))
        }
        return blocks.contains(block)
    }

    /// Copies data sub-blocks up to and including the terminator.
    private static func copySubBlocks(_ reader: ByteReader, into out: inout [UInt8]) throws {
        while true {
            let length = try reader.byte()
            out.append(length)
            if length == 0 { return }
            try reader.copy(Int(length), into: &out)
        }
    }

    /// Reads data sub-blocks up to and including the terminator: the raw bytes, and each block's payload.
    private static func readSubBlocks(_ reader: ByteReader) throws -> (raw: [UInt8], payloads: [[UInt8]]) {
        var raw: [UInt8] = [], payloads: [[UInt8]] = []
        while true {
            let length = try reader.byte()
            raw.append(length)
            if length == 0 { return (raw, payloads) }
            let payload = try reader.bytes(Int(length))
            raw += payload
            payloads.append(payload)
        }
    }
}
