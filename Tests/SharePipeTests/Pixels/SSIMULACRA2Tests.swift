import Foundation
import SharePipeTestSupport
import Testing

@testable import SharePipe

/// SharePipe's SSIMULACRA2 (`sp_ssimulacra2.c`) against the PyPI `ssimulacra2` package
/// (`scripts/witnesses/ssimulacra2-score.py`) on generated pictures and their JPEG encodes, and what needs no witness.
@Suite(.tags(.witness), .skipped(whenListed: "witness"))
struct SSIMULACRA2Tests {
    /// How far SharePipe's score may be from the package's: the metric runs in float, the package in double.
    static let tolerance = 1.0

    struct Case: Encodable {
        var reference: String
        var distorted: String
    }

    struct Answer: Decodable { var score: Double }

    static func witness(_ cases: [Case], in directory: String) throws -> [Answer] {
        try Witness.require("python3")
        let path = directory + "/cases.json"
        try JSONEncoder().encode(cases).write(to: URL(fileURLWithPath: path))
        let output = try Tool.run("python3", [Fixtures.root + "/scripts/witnesses/ssimulacra2-score.py", path])
        try #require(output.status == 0, "ssimulacra2 witness failed: \(output.stderr)")
        let answers = try JSONDecoder().decode([Answer].self, from: Data(output.stdout.utf8))
        try #require(answers.count == cases.count)
        return answers
    }

    /// A binary PPM (RGB) or PGM (gray): Pillow reads both as they are.
    static func netpbm(_ bitmap: Bitmap) -> [UInt8] {
        let magic = bitmap.layout == .gray ? "P5" : "P6"
        return Array("\(magic)\n\(bitmap.width) \(bitmap.height)\n255\n".utf8) + bitmap.pixels
    }

    static func make(_ width: Int, _ height: Int, _ layout: PixelLayout, _ pixel: (Int, Int) -> [Int]) -> Bitmap {
        var pixels = [UInt8]()
        pixels.reserveCapacity(width * height * layout.channels)
        for y in 0..<height { for x in 0..<width { pixels += pixel(x, y).map { UInt8(clamping: $0) } } }
        return Bitmap(size: PixelSize(width: width, height: height), layout: layout, pixels: pixels)
    }

    /// Gradients, noise, hard colour edges, text-like lines, a gray picture and odd sizes (one scale fewer where
    /// a side goes under 8 pixels).
    static func pictures() -> [(name: String, bitmap: Bitmap)] {
        var random = SeededGenerator(state: 0x55_1A_C2)
        let noise = (0..<(211 * 143 * 3)).map { _ in Int.random(in: 0...255, using: &random) }
        let grain = (0..<(160 * 120)).map { _ in Int.random(in: -24...24, using: &random) }
        return [
            ("gradient", make(256, 192, .rgb) { x, y in [x, y * 255 / 191, 255 - x / 2] }),
            ("noise", make(211, 143, .rgb) { x, y in Array(noise[(y * 211 + x) * 3..<(y * 211 + x) * 3 + 3]) }),
            (
                "edges",
                make(200, 150, .rgb) { x, y in
                    x < 70
                        ? [230, 20, 30] : y < 60 ? [20, 40, 220] : (x + y) % 40 < 20 ? [250, 250, 250] : [10, 10, 10]
                }
            ),
            (
                "text",
                make(240, 160, .rgb) { x, y in
                    let line = y % 14 < 2 && x > 12 && x < 228 - (y * 7) % 50
                    let stroke = y % 14 >= 4 && y % 14 < 11 && (x / 3) % 5 == 0 && x > 12 && x < 200
                    return line || stroke ? [25, 25, 40] : [245, 240, 230]
                }
            ),
            ("gray-grain", make(160, 120, .gray) { x, y in [96 + x / 2 + grain[y * 160 + x]] }),
            ("odd-small", make(37, 9, .rgb) { x, y in [x * 7, (x * y) % 256, y * 28] }),
        ]
    }

    @Test func scoresAreThePackagesOnJPEGEncodes() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        var cases: [Case] = []
        var ours: [(name: String, score: Double, streamed: Double)] = []
        for (name, bitmap) in Self.pictures() {
            let reference = "\(directory)/\(name).pnm"
            try Fixtures.write(Self.netpbm(bitmap), to: reference)
            for quality in [15, 40, 70, 90, 98] {
                let encoded = try JPEGEncoder().encode(
                    bitmap, settings: EncodeSettings(quality: quality, progressive: false), metadata: [])
                let decoded = try Decode.bitmap(encoded)
                try #require(decoded.size == bitmap.size && decoded.layout == bitmap.layout)
                let distorted = "\(directory)/\(name)-q\(quality).pnm"
                try Fixtures.write(Self.netpbm(decoded), to: distorted)
                cases.append(Case(reference: reference, distorted: distorted))
                ours.append(
                    (
                        "\(name) q\(quality)", try SSIMULACRA2.score(decoded, against: bitmap),
                        try JPEGEncoder.ssimulacra2(encoded, against: bitmap)
                    ))
            }
        }
        let answers = try Self.witness(cases, in: directory)
        var spread = Set<Int>()
        for (answer, mine) in zip(answers, ours) {
            #expect(
                abs(mine.score - answer.score) <= Self.tolerance,
                "\(mine.name): SharePipe \(mine.score), package \(answer.score)")
            // The streamed decode (8 rows at a time) scores the same pixels as the whole decode.
            #expect(
                abs(mine.streamed - mine.score) < 1e-9, "\(mine.name): streamed \(mine.streamed), whole \(mine.score)")
            spread.insert(Int(answer.score / 10))
        }
        // The cases span the scale, not one corner of it.
        #expect(spread.count >= 5, "scores bunch together: \(answers.map(\.score))")
    }

    @Test func theSamePixelsScore100AndAnythingElseLess() throws {
        for (name, bitmap) in Self.pictures() {
            #expect(try SSIMULACRA2.score(bitmap, against: bitmap) == 100, "\(name)")
            var changed = bitmap
            changed.pixels[changed.pixels.count / 2] ^= 0x40
            #expect(try SSIMULACRA2.score(changed, against: bitmap) < 100, "\(name)")
        }
        // Under 8 pixels on a side there is no scale to measure: the reference tools say 100.
        let tiny = Self.make(7, 30, .rgb) { x, y in [x * 30, y * 8, 0] }
        #expect(try SSIMULACRA2.score(Self.make(7, 30, .rgb) { _, _ in [0, 0, 0] }, against: tiny) == 100)
    }

    @Test func theScorerHoldsRowsNotPictures() {
        // About 0.9 KiB per pixel of width (1.4 MiB at 1620 × 1080), never a whole-picture plane (6.7 MiB a plane).
        let bytes = SSIMULACRA2.workingBytes(PixelSize(width: 1620, height: 1080))
        #expect(bytes > 1620 * 11 * 21 * 4 && bytes < 4 << 20, "\(bytes)")
        #expect(SSIMULACRA2.workingBytes(PixelSize(width: 1620, height: 20_000)) == bytes)
    }
}
