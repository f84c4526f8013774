/// Walks a WebP file's RIFF chunks front to back through a `ByteReader` (the file is never loaded whole).
///
/// A WebP is `RIFF <size> WEBP` followed by chunks: a four-character code, a little-endian 32-bit payload
/// size, the payload and a pad byte when the size is odd. Anything after the RIFF size is ignored, as
/// libwebp and browsers do.
final class WebPChunkWalker {
    /// One chunk header; the payload follows in the reader.
    struct Chunk {
        var fourCC: String
        var size: Int
        /// The payload plus its pad byte.
        var paddedSize: Int { size + (size & 1) }
    }

    let reader: ByteReader
    /// Where the RIFF data ends, by its size field.
    let end: Int
    private var pendingSkip = 0

    init(_ source: ImageSource) throws {
        reader = try ByteReader(source)
        let header = try reader.bytes(12)
        guard header[0..<4].elementsEqual("RIFF".utf8), header[8..<12].elementsEqual("WEBP".utf8) else {
            throw SharePipeError.unsupportedFormat(
                file: reader.name, missing: .format,
                reason: "not a WebP file (no RIFF/WEBP header)")
        }
        let riffSize = WebPBytes.u32(header, 4)
        guard riffSize >= 12 else {
            throw SharePipeError.corrupt(
                file: reader.name, phase: .header,
                reason: "RIFF size \(riffSize) is too small")
        }
        end = 8 + riffSize
    }

    var name: String { reader.name }

    /// The next chunk's header, skipping whatever of the previous payload was not read; nil at the end of
    /// the RIFF data. A chunk that runs past the end of the file makes the file truncated.
    func next() throws -> Chunk? {
        try reader.skip(pendingSkip)
        pendingSkip = 0
        guard reader.offset + 8 <= end else { return nil }
        guard let first = try reader.next() else { return nil }  // the file ends on a chunk boundary (see missingBytes)
        let header = [first] + (try reader.bytes(7))
        let fourCC = String(decoding: header[0..<4], as: UTF8.self)
        let size = WebPBytes.u32(header, 4)
        guard reader.offset + size <= end else {
            throw SharePipeError.corrupt(
                file: name, phase: .header,
                reason: "\(fourCC) chunk of \(size) bytes runs past the RIFF data")
        }
        let chunk = Chunk(fourCC: fourCC, size: size)
        pendingSkip = chunk.paddedSize
        return chunk
    }

    /// Reads the first `count` bytes of the current chunk's payload (the rest is skipped by `next`).
    func readPayload(_ chunk: Chunk, prefix count: Int? = nil) throws -> [UInt8] {
        let take = min(count ?? chunk.size, chunk.size)
        let bytes = try reader.bytes(take)
        pendingSkip -= take
        return bytes
    }

    /// Bytes of the current chunk not read yet (its pad byte included).
    var remainingInChunk: Int { pendingSkip }

    /// The next `count` bytes of the current chunk; a chunk with fewer left is corrupt.
    func read(_ count: Int) throws -> [UInt8] {
        guard count <= pendingSkip else {
            throw SharePipeError.corrupt(
                file: name, phase: .header,
                reason: "a chunk ends inside its own data")
        }
        let bytes = try reader.bytes(count)
        pendingSkip -= count
        return bytes
    }

    /// Hands the next `count` bytes of the current chunk to `consume`, at most `piece` bytes at a time (a
    /// large payload is never held whole).
    func stream(_ count: Int, piece: Int = 64 << 10, _ consume: ([UInt8]) throws -> Void) throws {
        guard count <= pendingSkip else {
            throw SharePipeError.corrupt(
                file: name, phase: .header,
                reason: "a chunk ends inside its own data")
        }
        var left = count
        var buffer: [UInt8] = []
        buffer.reserveCapacity(min(count, piece))
        while left > 0 {
            let take = min(left, piece)
            buffer.removeAll(keepingCapacity: true)
            try reader.copy(take, into: &buffer)
            pendingSkip -= take
            left -= take
            try consume(buffer)
        }
    }

    /// Appends the whole current chunk (header, payload and pad byte), byte for byte, to `out`.
    func copyChunk(_ chunk: Chunk, into out: inout [UInt8]) throws {
        out += WebPBytes.chunkHeader(chunk.fourCC, size: chunk.size)
        try reader.copy(chunk.paddedSize, into: &out)
        pendingSkip = 0
    }
}

/// Little-endian helpers shared by the walker, the scan and the rewriter.
enum WebPBytes {
    static func u16(_ bytes: [UInt8], _ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
    static func u24(_ bytes: [UInt8], _ at: Int) -> Int { u16(bytes, at) | Int(bytes[at + 2]) << 16 }
    static func u32(_ bytes: [UInt8], _ at: Int) -> Int { u24(bytes, at) | Int(bytes[at + 3]) << 24 }

    static func le24(_ value: Int) -> [UInt8] {
        [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF)]
    }
    static func le32(_ value: Int) -> [UInt8] { le24(value) + [UInt8(value >> 24 & 0xFF)] }

    static func chunkHeader(_ fourCC: String, size: Int) -> [UInt8] { Array(fourCC.utf8) + le32(size) }

    /// A whole chunk with its pad byte.
    static func chunk(_ fourCC: String, _ payload: [UInt8]) -> [UInt8] {
        chunkHeader(fourCC, size: payload.count) + payload + (payload.count & 1 == 1 ? [0] : [])
    }
}

/// The size and kind a VP8 key frame or VP8L header declares, from the first 10 bytes of the chunk payload.
struct WebPBitstreamHeader {
    var size: PixelSize
    var lossless: Bool
    /// VP8L's alpha hint (a VP8 bitstream carries alpha in a separate ALPH chunk).
    var alpha: Bool

    init?(fourCC: String, payload: [UInt8]) {
        if fourCC == "VP8 ", payload.count >= 10, payload[3] == 0x9D, payload[4] == 0x01, payload[5] == 0x2A {
            size = PixelSize(width: WebPBytes.u16(payload, 6) & 0x3FFF, height: WebPBytes.u16(payload, 8) & 0x3FFF)
            lossless = false
            alpha = false
        } else if fourCC == "VP8L", payload.count >= 5, payload[0] == 0x2F {
            let bits = WebPBytes.u32(payload, 1)
            size = PixelSize(width: 1 + bits & 0x3FFF, height: 1 + (bits >> 14) & 0x3FFF)
            lossless = true
            alpha = bits >> 28 & 1 == 1
        } else {
            return nil
        }
    }
}

/// The VP8X flags byte.
struct WebPFeatureFlags: OptionSet, Sendable, Equatable {
    let rawValue: UInt8
    static let animation = WebPFeatureFlags(rawValue: 0x02)
    static let xmp = WebPFeatureFlags(rawValue: 0x04)
    static let exif = WebPFeatureFlags(rawValue: 0x08)
    static let alpha = WebPFeatureFlags(rawValue: 0x10)
    static let icc = WebPFeatureFlags(rawValue: 0x20)
}

/// What a header walk over a WebP found: sizes, kind of bitstream, animation, metadata. No pixels.
struct WebPHeader: Sendable, Equatable {
    /// The canvas (VP8X) or, for a simple file, the bitstream's size.
    var canvas: PixelSize
    /// Every image bitstream is VP8L (lossless).
    var lossless: Bool
    /// An ALPH chunk, a VP8L alpha bit or the VP8X alpha flag.
    var hasAlpha: Bool
    var isAnimated: Bool
    /// ANMF chunks (1 for a still).
    var frameCount: Int
    /// ANIM loop count as stored: 0 = forever, N = N plays.
    var loopCount: Int
    /// Metadata chunks in file order: ICCP → .icc, EXIF → .exif (a "Exif\0\0" prefix some writers add is
    /// removed), "XMP " → .xmp, unknown chunks → .other.
    var metadata: [MetadataBlock]
    /// Bytes the RIFF size promises beyond the end of the file. When the image still decodes whole (the file
    /// ends after the bitstream, or inside bytes libwebp does not need), this is reported as a warning.
    var missingBytes = 0
}

/// Reads a WebP's header and metadata chunks, checking sizes and frame counts against the limits.
enum WebPScan {
    /// Chunks that make up the image (copied by a metadata-only rewrite); everything else is metadata.
    static let imageChunks: Set<String> = ["VP8X", "VP8 ", "VP8L", "ALPH", "ANIM", "ANMF"]

    static func read(_ source: ImageSource, limits: ImageLimits) throws -> WebPHeader {
        let walker = try WebPChunkWalker(source)
        let file = walker.name
        let fileBytes = try source.byteCount()
        var canvas: PixelSize?
        var flags = WebPFeatureFlags()
        var bitstreamSize: PixelSize?
        var lossless = true
        var alpha = false
        var frames = 0
        var loopCount = 0
        var metadata: [MetadataBlock] = []
        var metadataBytes = 0
        var sawImage = false

        func checkMetadataBudget(_ size: Int) throws {
            metadataBytes += size + 64
            if metadataBytes > limits.maxMetadataBytes {
                throw SharePipeError.tooLarge(
                    file: file,
                    exceeded: ExceededLimit(
                        .metadataBytes, found: metadataBytes,
                        limit: limits.maxMetadataBytes, detail: "WebP metadata chunks"))
            }
        }

        while let chunk = try walker.next() {
            switch chunk.fourCC {
            case "VP8X":
                guard canvas == nil, !sawImage, chunk.size >= 10 else {
                    throw SharePipeError.corrupt(file: file, phase: .header, reason: "misplaced or short VP8X chunk")
                }
                let payload = try walker.readPayload(chunk, prefix: 10)
                flags = WebPFeatureFlags(rawValue: payload[0])
                let size = PixelSize(width: 1 + WebPBytes.u24(payload, 4), height: 1 + WebPBytes.u24(payload, 7))
                try limits.check(width: size.width, height: size.height, file: file)
                canvas = size
            case "ANIM":
                guard chunk.size >= 6 else {
                    throw SharePipeError.corrupt(file: file, phase: .header, reason: "short ANIM chunk")
                }
                loopCount = WebPBytes.u16(try walker.readPayload(chunk, prefix: 6), 4)
            case "ANMF":
                guard flags.contains(.animation), let canvas, chunk.size >= 24 else {
                    throw SharePipeError.corrupt(file: file, phase: .header, reason: "ANMF chunk outside an animation")
                }
                let payload = try walker.readPayload(chunk, prefix: 24)
                let x = 2 * WebPBytes.u24(payload, 0), y = 2 * WebPBytes.u24(payload, 3)
                let width = 1 + WebPBytes.u24(payload, 6), height = 1 + WebPBytes.u24(payload, 9)
                if x + width > canvas.width || y + height > canvas.height {
                    throw SharePipeError.corrupt(
                        file: file, phase: .header,
                        reason:
                            "frame \(frames + 1) (\(width)×\(height) at \(x),\(y)) lies outside the \(canvas) canvas")
                }
                let first = String(decoding: payload[16..<20], as: UTF8.self)
                if first != "VP8L" { lossless = false }
                if first == "ALPH" { alpha = true }
                frames += 1
                try checkFrames(frames, canvas: canvas, limits: limits, file: file)
                sawImage = true
            case "ALPH":
                alpha = true
            case "VP8 ", "VP8L":
                guard
                    let bitstream = WebPBitstreamHeader(
                        fourCC: chunk.fourCC, payload: try walker.readPayload(chunk, prefix: 10))
                else {
                    throw SharePipeError.corrupt(
                        file: file, phase: .header,
                        reason: "\(chunk.fourCC) chunk without a valid bitstream header")
                }
                bitstreamSize = bitstream.size
                if !bitstream.lossless { lossless = false }
                if bitstream.alpha { alpha = true }
                sawImage = true
            case "ICCP":
                try checkMetadataBudget(chunk.size)
                metadata.append(.icc(try walker.readPayload(chunk)))
            case "EXIF":
                try checkMetadataBudget(chunk.size)
                var exif = try walker.readPayload(chunk)
                if exif.starts(with: Array("Exif\0\0".utf8)) { exif.removeFirst(6) }
                metadata.append(.exif(exif))
            case "XMP ":
                try checkMetadataBudget(chunk.size)
                metadata.append(.xmp(try walker.readPayload(chunk)))
            default:
                try checkMetadataBudget(chunk.size)
                metadata.append(.other(tag: "WebP " + chunk.fourCC, data: try walker.readPayload(chunk)))
            }
            // A simple file is one bitstream chunk; libwebp reads nothing after it.
            if canvas == nil && bitstreamSize != nil { break }
        }

        if flags.contains(.animation) {
            guard let canvas, frames > 0 else {
                throw SharePipeError.corrupt(
                    file: file, phase: .header,
                    reason: "animation without frames")
            }
            return WebPHeader(
                canvas: canvas, lossless: lossless, hasAlpha: alpha || flags.contains(.alpha), isAnimated: true,
                frameCount: frames, loopCount: loopCount, metadata: metadata,
                missingBytes: max(0, walker.end - fileBytes))
        }
        guard let bitstreamSize else {
            throw SharePipeError.corrupt(
                file: file, phase: .header,
                reason: "no image data (VP8 or VP8L chunk)")
        }
        try limits.check(width: bitstreamSize.width, height: bitstreamSize.height, file: file)
        if let canvas, canvas != bitstreamSize {
            throw SharePipeError.corrupt(
                file: file, phase: .header,
                reason: "canvas \(canvas) does not match the image's \(bitstreamSize)")
        }
        return WebPHeader(
            canvas: bitstreamSize, lossless: lossless, hasAlpha: alpha, isAnimated: false,
            frameCount: 1, loopCount: 0, metadata: metadata,
            missingBytes: max(0, walker.end - fileBytes))
    }

    /// Refuses an animation whose frame count or total frame area (every frame composited onto the whole
    /// canvas, as the animation decoder does) is over the limits.
    static func checkFrames(_ frames: Int, canvas: PixelSize, limits: ImageLimits, file: String) throws {
        try limits.checkAnimation(frames: frames, canvas: canvas, file: file)
    }
}
