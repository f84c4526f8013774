import Foundation
import Testing

@testable import SharePipe

/// The source-quality cap of a JPEG re-encoded as JPEG (`JPEGQuality.ceiling`, `SourceQuality`): another encoder's
/// tables are compared with SharePipe's on SharePipe's scale, not read as the same quality number; SharePipe's own
/// tables cap at the quality they were written at; the auto search's guess keeps the saved (Annex K) number.
struct JPEGSourceCapTests {
    /// libjpeg's luminance table at `quality` (Annex K scaled as `jpeg_quality_scaling` does).
    static func annexK(_ quality: Int) -> [Int] {
        JPEGQuantTablesTests.scaled(JPEGQuality.standardLuminance, quality: quality)
    }

    /// Σ ln(ours / source) over the 64 positions of SharePipe's luminance table at `quality` against `source`:
    /// at most 0 when ours is as fine (geometric mean of the steps no larger).
    static func logRatio(_ quality: Int, _ source: [Int]) -> Double {
        zip(JPEGQuantTables.jpegliDistance3.table(component: 0, quality: quality), source)
            .reduce(0.0) { $0 + log(Double($1.0) / Double($1.1)) }
    }

    /// The lowest SharePipe quality as fine as `source`, by a linear search over the definition.
    static func expectedCeiling(_ source: [Int]) -> Int {
        (1...100).first { logRatio($0, source) <= 1e-9 } ?? 100
    }

    @Test func anAnnexKSourceCapsAtTheLowestQualityWithTablesAsFine() throws {
        var previous = 0
        for quality in 1...100 {
            let table = Self.annexK(quality)
            let ceiling = try #require(JPEGQuality.ceiling(table: table))
            #expect(ceiling == Self.expectedCeiling(table), "Annex K q\(quality)")
            // As fine at the ceiling, coarser one step below.
            #expect(Self.logRatio(ceiling, table) <= 1e-9, "q\(quality) → \(ceiling)")
            if ceiling > 1 { #expect(Self.logRatio(ceiling - 1, table) > 0, "q\(quality) → \(ceiling)") }
            // Monotone: a finer source never caps lower.
            #expect(ceiling >= previous, "q\(quality) → \(ceiling) after \(previous)")
            previous = ceiling
            // The saved number stays the Annex K estimate (auto's first guess is fitted on it). Annex K's q1 (every
            // step 255) and q100 (every step 1) are also Klein–Silverstein–Carney's, so read as SharePipe wrote them.
            let read = try #require(JPEGQuality.sourceQuality(table: table))
            if quality == 1 || quality == 100 {
                #expect(table == JPEGQuantTables.kleinSilversteinCarney.table(component: 0, quality: quality))
                #expect(read == SourceQuality(sameScale: quality) && ceiling == quality)
            } else {
                #expect(read == SourceQuality(saved: JPEGQuality.estimate(table: table)!, ceiling: ceiling))
            }
        }
        #expect(previous == 100)
    }

    /// The numbers, as computed apart from SharePipe (Python, the luminance tables only): SharePipe's quality is
    /// jpegli's shape at a lower libjpeg quality for most of the range (q95 → 88), and Annex K's steps are coarser
    /// at high frequencies, so the ceiling is below the saved number low down and above it high up.
    @Test(arguments: [(50, 39), (70, 64), (75, 72), (80, 78), (85, 84), (90, 91), (95, 97), (97, 99)])
    func theCeilingsOfCommonQualities(_ saved: Int, _ ceiling: Int) throws {
        let read = try #require(JPEGQuality.sourceQuality(table: Self.annexK(saved)))
        #expect(read.saved == saved && read.ceiling == ceiling)
        #expect(read.capNote == "quality capped at q\(ceiling), as fine as the source's q\(saved) tables")
    }

    @Test func aTableSharePipeWroteCapsAtItsOwnQuality() throws {
        for tables in JPEGQuality.writtenTables {
            for quality in [30, 60, 73, 85, 95] {
                let read = JPEGQuality.sourceQuality(table: tables.table(component: 0, quality: quality))
                #expect(read == SourceQuality(sameScale: quality), "\(tables) q\(quality)")
                #expect(read?.capNote == "quality capped at the source's q\(quality)")
            }
        }
        // Today's tables would also compare to themselves.
        for quality in 1...100 {
            let table = JPEGQuantTables.jpegliDistance3.table(component: 0, quality: quality)
            let ceiling = try #require(JPEGQuality.ceiling(table: table))
            #expect(table == JPEGQuantTables.jpegliDistance3.table(component: 0, quality: ceiling), "q\(quality)")
        }
        #expect(JPEGQuality.sourceQuality(table: [Int](repeating: 16, count: 63)) == nil)
    }

    /// A photo-like picture written by libjpeg with its own tables (Annex K) at `quality`.
    static func libjpegPhoto(quality: Int, size: PixelSize = PixelSize(width: 480, height: 320)) throws -> [UInt8] {
        let bitmap = JPEGByteCapTests.scene(size, saturatedEdges: false, seed: 11)
        return try JPEGEncoder(tables: .annexK).encode(
            bitmap, settings: EncodeSettings(quality: quality, progressive: false), metadata: [])
    }

    @Test func aLibjpegQ95SourceIsCappedAtTheNewCeiling() throws {
        let source = try Self.libjpegPhoto(quality: 95)
        #expect(JPEGQuantTablesTests.tables(source)[0] == Self.annexK(95))
        // Asked for q100, downscaled (the same size would be a metadata-only copy).
        let options = PrepareOptions(maxShortEdge: 240, quality: 100)
        let plan = try Pipeline.plan(.bytes(source), options: options.checked()).plan
        let read = SourceQuality(saved: 95, ceiling: 97)
        #expect(plan.ladder == .quality(range: 40...97, sourceQualityCap: read, minShortEdge: options.minShortEdge))
        let result = try SharePipe.prepare(.bytes(source), options: options)
        #expect(result.quality == 97)
        #expect(result.adjustments.contains("quality capped at q97, as fine as the source's q95 tables"))
        let written = JPEGQuantTablesTests.tables(result.bytes)[0]
        #expect(written == JPEGQuantTables.jpegliDistance3.table(component: 0, quality: 97))
        // Saved at q75: capped under the default ceiling, lower than the saved number.
        let q75 = try SharePipe.prepare(
            .bytes(try Self.libjpegPhoto(quality: 75)), options: PrepareOptions(maxShortEdge: 240))
        #expect(q75.quality == 72)
        #expect(q75.adjustments.contains("quality capped at q72, as fine as the source's q75 tables"))
    }

    @Test func theAutoSearchStillGuessesFromTheSavedQuality() throws {
        var auto = PrepareOptions(maxShortEdge: 240)
        auto.qualitySetting = .auto(target: 80)
        let plan = try Pipeline.plan(.bytes(try Self.libjpegPhoto(quality: 60)), options: auto.checked()).plan
        #expect(plan.sourceQualityForGuess == 60)
    }
}
