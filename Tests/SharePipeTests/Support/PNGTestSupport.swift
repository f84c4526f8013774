import Testing
@testable import SharePipe

/// An outside view of a PNG for the tests: its chunks, parsed here independently of the library's walker
/// (with its own bitwise CRC), so a bug there cannot hide itself.
struct PNGListing {
    struct Chunk: Equatable {
        var type: String
        var data: [UInt8]
        var crcMatches: Bool
    }

    var chunks: [Chunk]

    init(_ bytes: [UInt8]) throws {
        try #require(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "not a PNG")
        var position = 8
        chunks = []
        while position + 12 <= bytes.count {
            let length = bytes[position..<position + 4].reduce(0) { $0 << 8 | Int($1) }
            try #require(position + 12 + length <= bytes.count, "chunk runs past the end")
            let typeAndData = Array(bytes[position + 4..<position + 8 + length])
            let stored = bytes[position + 8 + length..<position + 12 + length].reduce(UInt32(0)) {
                $0 << 8 | UInt32($1)
            }
            chunks.append(
                Chunk(
                    type: String(decoding: typeAndData.prefix(4), as: UTF8.self),
                    data: Array(typeAndData.dropFirst(4)), crcMatches: PNGListing.crc(typeAndData) == stored))
            position += 12 + length
        }
    }

    var types: [String] { chunks.map(\.type) }

    /// Whether every chunk's stored CRC is right.
    var allCRCsMatch: Bool { chunks.allSatisfy { $0.crcMatches } }

    func data(_ type: String) -> [UInt8]? { chunks.first { $0.type == type }?.data }

    func all(_ type: String) -> [[UInt8]] { chunks.filter { $0.type == type }.map(\.data) }

    /// IHDR colour type (0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA).
    var colorType: Int? { data("IHDR").map { Int($0[9]) } }
    var bitDepth: Int? { data("IHDR").map { Int($0[8]) } }

    /// Keywords of the tEXt/zTXt/iTXt chunks.
    var textKeywords: [String] {
        chunks.filter { ["tEXt", "zTXt", "iTXt"].contains($0.type) }
            .map { String(decoding: $0.data.prefix { $0 != 0 }, as: UTF8.self) }
    }

    private static func crc(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}

enum PNGFixtures {
    static func path(_ name: String) -> String { Fixtures.path("png/" + name) }
    static func source(_ name: String) -> ImageSource { .file(path: path(name)) }
    static func bytes(_ name: String) throws -> [UInt8] { try Fixtures.bytes(path(name)) }
    /// A deliberately broken input, in TestImages/broken/.
    static func broken(_ name: String) -> String { Fixtures.path("broken/" + name) }

    /// Centres of the four quadrants of the 61×47 colour-type pictures: TL, TR, BL, BR.
    static let quadrantCentres = [(15, 12), (45, 12), (15, 35), (45, 35)]
}
