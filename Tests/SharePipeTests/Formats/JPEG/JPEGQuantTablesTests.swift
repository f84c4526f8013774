import Testing

@testable import SharePipe

/// The quantisation tables the JPEG encoder writes (`JPEGQuantTables`): Klein–Silverstein–Carney by default,
/// read back from the files' DQT segments, monotone in the quality, and decoding to the picture.
struct JPEGQuantTablesTests {
    /// The published table (Klein, Silverstein and Carney 1992), natural order, as given at quality 50.
    static let kleinSilversteinCarney: [Int] = [
        10, 12, 14, 19, 26, 38, 57, 86, 12, 18, 21, 28, 35, 41, 54, 76,
        14, 21, 25, 32, 44, 63, 92, 136, 19, 28, 32, 41, 54, 75, 107, 157,
        26, 35, 44, 54, 70, 95, 132, 190, 38, 41, 63, 75, 95, 125, 170, 239,
        57, 54, 92, 107, 132, 170, 227, 312, 86, 76, 136, 157, 190, 239, 312, 419,
    ]

    /// Every 8-bit quantisation table a file defines before its first scan, by table id, in natural order.
    static func tables(_ jpeg: [UInt8]) -> [Int: [Int]] {
        var found: [Int: [Int]] = [:]
        var at = 2
        while at + 4 <= jpeg.count, jpeg[at] == 0xFF, jpeg[at + 1] != 0xDA {
            let length = Int(jpeg[at + 2]) << 8 | Int(jpeg[at + 3])
            if jpeg[at + 1] == 0xDB {
                var table = at + 4
                while table + 65 <= at + 2 + length {
                    let id = Int(jpeg[table] & 0x0F)
                    var values = [Int](repeating: 0, count: 64)
                    for position in 0..<64 {
                        values[JPEGQuality.zigzag[position]] = Int(jpeg[table + 1 + position])
                    }
                    found[id] = values
                    table += 65
                }
            }
            at += 2 + length
        }
        return found
    }

    /// libjpeg's scaling of a table given at quality 50, clamped to baseline's 1...255.
    static func scaled(_ table: [Int], quality: Int) -> [Int] {
        let scale = quality < 50 ? 5000 / quality : 200 - 2 * quality
        return table.map { min(255, max(1, ($0 * scale + 50) / 100)) }
    }

    @Test(arguments: [30, 60, 73, 85, 95])
    func theFileCarriesThePublishedTableScaledByItsQuality(_ quality: Int) throws {
        let bitmap = JPEGByteCapTests.scene(PixelSize(width: 96, height: 64), saturatedEdges: true, seed: 4)
        for encoder in [JPEGEncoder(), JPEGEncoder(subsample420: false)] {
            for progressive in [false, true] {
                let jpeg = try encoder.encode(
                    bitmap, settings: EncodeSettings(quality: quality, progressive: progressive), metadata: [])
                let written = Self.tables(jpeg)
                let expected = Self.scaled(Self.kleinSilversteinCarney, quality: quality)
                #expect(written[0] == expected, "luminance at q\(quality)")
                #expect(written[1] == expected, "chrominance at q\(quality)")
                #expect(JPEGQuantTables.kleinSilversteinCarney.table(chroma: false, quality: quality) == expected)
                // Read back as the quality it was written at (the source-quality cap and auto's first guess).
                #expect(JPEGQuality.estimate(table: written[0]!) == quality)
            }
        }
    }

    @Test func annexKIsStillLibjpegsOwn() throws {
        let bitmap = JPEGByteCapTests.scene(PixelSize(width: 64, height: 48), saturatedEdges: false, seed: 2)
        let jpeg = try JPEGEncoder(tables: .annexK).encode(
            bitmap, settings: EncodeSettings(quality: 85, progressive: false), metadata: [])
        let written = Self.tables(jpeg)
        #expect(written[0] == Self.scaled(JPEGQuality.standardLuminance, quality: 85))
        #expect(written[1] == JPEGQuantTables.annexK.table(chroma: true, quality: 85))
        #expect(written[1]?.first == (17 * 30 + 50) / 100)
        #expect(JPEGQuality.estimate(table: written[0]!) == 85)
    }

    @Test func aHigherQualityNeverQuantisesCoarserNorWritesFewerBytes() throws {
        let bitmap = JPEGByteCapTests.scene(PixelSize(width: 160, height: 120), saturatedEdges: true, seed: 7)
        var previousBytes = 0
        var previousTables: [Int]? = nil
        for quality in stride(from: 40, through: 100, by: 4) {
            let table = JPEGQuantTables.kleinSilversteinCarney.table(chroma: false, quality: quality)
            if let previousTables {
                #expect(zip(table, previousTables).allSatisfy { $0 <= $1 }, "q\(quality)")
            }
            previousTables = table
            let jpeg = try JPEGEncoder().encode(
                bitmap, settings: EncodeSettings(quality: quality, progressive: false), metadata: [])
            #expect(jpeg.count >= previousBytes, "q\(quality): \(jpeg.count) bytes, fewer than the step below")
            previousBytes = jpeg.count
        }
    }

    @Test func theDecodedPictureIsThePictureInFewerBytesThanAnnexK() throws {
        // Grey stones (detail in luma), both chroma layouts at the default quality, progressive: the decode is
        // close to the picture per sample and by SSIMULACRA2, scores at least as Annex K's file at the same quality
        // (within a point), and takes fewer bytes.
        let bitmap = JPEGByteCapTests.scene(PixelSize(width: 240, height: 160), saturatedEdges: false, seed: 3)
        let settings = EncodeSettings(quality: 85, progressive: true)
        for subsample420 in [true, false] {
            let jpeg = try JPEGEncoder(subsample420: subsample420).encode(bitmap, settings: settings, metadata: [])
            let annexK = try JPEGEncoder(subsample420: subsample420, tables: .annexK).encode(
                bitmap, settings: settings, metadata: [])
            let decoded = try Decode.bitmap(jpeg)
            #expect(decoded.size == bitmap.size && decoded.layout == .rgb)
            let error = zip(decoded.pixels, bitmap.pixels).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
            #expect(Double(error) / Double(bitmap.pixels.count) < 8, "4:2:0 \(subsample420)")
            let score = try SSIMULACRA2.score(decoded, against: bitmap)
            let annexKScore = try SSIMULACRA2.score(try Decode.bitmap(annexK), against: bitmap)
            #expect(score > (subsample420 ? 60 : 80), "4:2:0 \(subsample420): \(score)")
            #expect(score >= annexKScore - 1, "4:2:0 \(subsample420): \(score) against Annex K's \(annexKScore)")
            #expect(jpeg.count < annexK.count, "4:2:0 \(subsample420): \(jpeg.count) against \(annexK.count) bytes")
        }
    }
}
