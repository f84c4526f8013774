/// A PNG chunk type: four ASCII letters whose case bits carry meaning (PNG spec, 5.4).
struct PNGChunkType: Hashable, Sendable, CustomStringConvertible {
    /// The four type bytes as a big-endian number ('IHDR' is 0x49484452).
    let code: UInt32

    init(code: UInt32) { self.code = code }

    /// Where damage to a chunk of this type is found: the image data (IDAT) while decoding, any other chunk
    /// in the file's structure.
    var damagePhase: SharePipeError.ReadPhase { self == .IDAT ? .decode : .header }

    /// A type from its four-letter name; nil unless it is exactly four ASCII letters.
    init?(name: String) {
        let bytes = Array(name.utf8)
        guard bytes.count == 4, bytes.allSatisfy(PNGChunkType.isLetter) else { return nil }
        self.init(bytes: bytes[0], bytes[1], bytes[2], bytes[3])
    }

    init(bytes b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) {
        code = UInt32(b0) << 24 | UInt32(b1) << 16 | UInt32(b2) << 8 | UInt32(b3)
    }

    var bytes: [UInt8] {
        [UInt8(code >> 24), UInt8((code >> 16) & 0xFF), UInt8((code >> 8) & 0xFF), UInt8(code & 0xFF)]
    }
    var name: String { String(decoding: bytes, as: UTF8.self) }
    var description: String { name }

    /// Whether every byte is an ASCII letter, as the spec requires.
    var isWellFormed: Bool { bytes.allSatisfy(PNGChunkType.isLetter) }
    /// Critical chunks (first letter upper case) must be understood to show the image.
    var isCritical: Bool { code & 0x2000_0000 == 0 }
    /// Safe-to-copy chunks (fourth letter lower case) may be carried into a file whose image data changed.
    var isSafeToCopy: Bool { code & 0x20 != 0 }

    static func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }

    static let IHDR = PNGChunkType(name: "IHDR")!, PLTE = PNGChunkType(name: "PLTE")!
    static let IDAT = PNGChunkType(name: "IDAT")!, IEND = PNGChunkType(name: "IEND")!
    static let tRNS = PNGChunkType(name: "tRNS")!
    static let gAMA = PNGChunkType(name: "gAMA")!, cHRM = PNGChunkType(name: "cHRM")!
    static let sRGB = PNGChunkType(name: "sRGB")!, iCCP = PNGChunkType(name: "iCCP")!
    static let cICP = PNGChunkType(name: "cICP")!, mDCV = PNGChunkType(name: "mDCV")!,
        cLLI = PNGChunkType(name: "cLLI")!
    static let pHYs = PNGChunkType(name: "pHYs")!, sBIT = PNGChunkType(name: "sBIT")!
    static let bKGD = PNGChunkType(name: "bKGD")!, hIST = PNGChunkType(name: "hIST")!
    static let eXIf = PNGChunkType(name: "eXIf")!, tIME = PNGChunkType(name: "tIME")!
    static let tEXt = PNGChunkType(name: "tEXt")!, zTXt = PNGChunkType(name: "zTXt")!,
        iTXt = PNGChunkType(name: "iTXt")!
    static let acTL = PNGChunkType(name: "acTL")!, fcTL = PNGChunkType(name: "fcTL")!,
        fdAT = PNGChunkType(name: "fdAT")!
    static let iDOT = PNGChunkType(name: "iDOT")!, dSIG = PNGChunkType(name: "dSIG")!
}

/// What a chunk is to SharePipe, which decides where it goes.
enum PNGChunkRole: Equatable {
    /// IHDR, PLTE, IDAT, IEND, tRNS: the image itself.
    case image
    /// Colour interpretation and physical size (gAMA, cHRM, sRGB, cICP, mDCV, cLLI, pHYs): not metadata;
    /// kept in every mode, copied by the rewriter and written again by the encoder.
    case structural
    /// Facts about the stored samples or palette (sBIT, bKGD, hIST): copied when the image data is copied,
    /// meaningless once the pixels are re-encoded.
    case sampleDescription
    /// iCCP: the colour profile, metadata block `.icc` (kept in every mode, like JPEG's).
    case iccProfile
    /// eXIf, tEXt/zTXt/iTXt, tIME and any other ancillary chunk: metadata, subject to the strip mode.
    case metadata
    /// Chunks that would be wrong in any output: APNG animation (acTL, fcTL, fdAT; the default image is
    /// prepared as a still), Apple's iDOT (IDAT offsets that change), dSIG (a signature over the old file).
    case dropped

    init(_ type: PNGChunkType) {
        switch type {
        case .IHDR, .PLTE, .IDAT, .IEND, .tRNS: self = .image
        case .gAMA, .cHRM, .sRGB, .cICP, .mDCV, .cLLI, .pHYs: self = .structural
        case .sBIT, .bKGD, .hIST: self = .sampleDescription
        case .iCCP: self = .iccProfile
        case .acTL, .fcTL, .fdAT, .iDOT, .dSIG: self = .dropped
        default: self = .metadata
        }
    }
}

/// A whole chunk: type and payload (length and CRC are derived when it is written).
struct PNGChunk: Sendable, Equatable {
    var type: PNGChunkType
    var data: [UInt8]

    /// The chunk as stored: length, type, data, CRC.
    var serialized: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 12)
        let length = UInt32(data.count)
        out += [UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)]
        out += type.bytes
        out += data
        let crc = PNGCRC.checksum(type: type, data: data)
        out += [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)]
        return out
    }
}

/// The CRC-32 of PNG chunks (ISO 3309, as zlib's crc32), over the type and data.
enum PNGCRC {
    private static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum(type: PNGChunkType, data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { table in
            for byte in type.bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
            for byte in data { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
        return crc ^ 0xFFFF_FFFF
    }
}

/// Size limits of the chunk layer (the pixel limits are `ImageLimits`).
enum PNGLimits {
    /// Largest non-image chunk loaded into memory, and the cap libpng gets for its own chunk allocations
    /// (an inflated iCCP profile included). Real profiles and text are far smaller.
    static let maxChunkBytes = 16 << 20
    /// Largest number of metadata chunks accepted (libpng's own default cache limit is 1000).
    static let maxMetadataChunks = 1000
}

/// Walks a PNG's chunks front to back through a 64 KiB buffer: the signature, then each chunk's header,
/// whose payload the caller loads (CRC checked), skips or copies verbatim. Image data is never inflated
/// here and never held whole unless the caller copies it.
final class PNGChunkWalker {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// A chunk's length and type, read before its payload.
    struct Header {
        var type: PNGChunkType
        var length: Int
        /// Offset of the chunk's length field in the file (for messages).
        var offset: Int
    }

    private let reader: ByteReader
    var name: String { reader.name }
    /// Bytes consumed so far.
    var offset: Int { reader.offset }
    /// The current chunk's payload + CRC bytes not yet consumed.
    private var pendingBytes = 0

    /// Opens `source` and checks the PNG signature.
    init(_ source: ImageSource) throws {
        reader = try ByteReader(source)
        guard try reader.bytes(8) == PNGChunkWalker.signature else {
            throw SharePipeError.corrupt(file: reader.name, phase: .header, reason: "missing PNG signature")
        }
    }

    /// The next chunk's header (skipping whatever is left of the previous chunk).
    func nextChunk() throws -> Header {
        if pendingBytes > 0 { try reader.skip(pendingBytes) }
        let start = offset
        let fields = try reader.bytes(8)
        let length = Int(fields[0]) << 24 | Int(fields[1]) << 16 | Int(fields[2]) << 8 | Int(fields[3])
        let type = PNGChunkType(bytes: fields[4], fields[5], fields[6], fields[7])
        guard type.isWellFormed else {
            throw SharePipeError.corrupt(file: name, phase: .header, reason: "invalid chunk type at byte \(start)")
        }
        guard length <= 0x7FFF_FFFF else {
            throw SharePipeError.corrupt(
                file: name, phase: .header,
                reason: "\(type) chunk at byte \(start) claims \(length) bytes")
        }
        pendingBytes = length + 4
        return Header(type: type, length: length, offset: start)
    }

    /// Loads the current chunk's payload and checks its CRC.
    func payload(of header: Header) throws -> (data: [UInt8], crcMatches: Bool) {
        guard header.length <= PNGLimits.maxChunkBytes else {
            throw SharePipeError.tooLarge(
                file: name,
                exceeded: ExceededLimit(
                    .chunkBytes, found: header.length,
                    limit: PNGLimits.maxChunkBytes, detail: "\(header.type) chunk"))
        }
        let data = try reader.bytes(header.length)
        let stored = try reader.bytes(4)
        pendingBytes = 0
        let crc = UInt32(stored[0]) << 24 | UInt32(stored[1]) << 16 | UInt32(stored[2]) << 8 | UInt32(stored[3])
        return (data, crc == PNGCRC.checksum(type: header.type, data: data))
    }

    /// The first `count` bytes of the current chunk's payload (no CRC check); the rest is skipped by the
    /// next `nextChunk()`.
    func prefix(of header: Header, count: Int) throws -> [UInt8] {
        precondition(count <= pendingBytes - 4, "prefix longer than the payload")
        let data = try reader.bytes(count)
        pendingBytes -= count
        return data
    }

    /// Appends the current chunk exactly as stored (length, type, payload, CRC) to `out`.
    func copyChunk(_ header: Header, into out: inout [UInt8]) throws {
        out += [
            UInt8(header.length >> 24), UInt8((header.length >> 16) & 0xFF),
            UInt8((header.length >> 8) & 0xFF), UInt8(header.length & 0xFF),
        ]
        out += header.type.bytes
        try reader.copy(header.length + 4, into: &out)
        pendingBytes = 0
    }
}
