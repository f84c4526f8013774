import Glibc

/// Reads a JPEG's quality from its luminance quantization table, so a re-encode does not spend more bytes than
/// the source ever had: a q73 photo downscaled and saved at q85 comes out larger than it went in, for no visible
/// gain.
///
/// Two numbers (`SourceQuality`): the quality the source was saved at, on libjpeg's scale (`estimate`:
/// `jpeg_quality_scaling` scales the standard table, ITU T.81 Annex K, by 5000/q below 50 and by 200 − 2q above;
/// the estimate inverts that from the ratio of the file's table to the standard one), and the ceiling on
/// SharePipe's scale (`ceiling`: the lowest SharePipe quality whose table is as fine as the file's). SharePipe's
/// quality is not Annex K's: its tables are jpegli's shape at a mapped libjpeg quality (SharePipe q95 is that
/// shape at libjpeg q88), so the two numbers differ, and capping at the first would cap at a coarser table than
/// the source's (bench/results/2026-11-29-source-cap.md).
enum JPEGQuality {
    /// ITU T.81 Annex K luminance table, in natural (row-major) order.
    static let standardLuminance: [Int] = [
        16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55,
        14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
        18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
        49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
    ]

    /// The table sets SharePipe writes or wrote, recognised by `estimate(table:)`: today's first.
    static let writtenTables: [JPEGQuantTables] = [.jpegliDistance3, .kleinSilversteinCarney]

    /// Zig-zag position → natural position.
    static let zigzag: [Int] = [
        0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14,
        21,
        28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61,
        54, 47, 55, 62, 63,
    ]

    /// The quality (1...100) of the luminance table 0 of `source`, or nil when there is none.
    static func estimate(_ source: ImageSource) throws -> Int? {
        guard let table = try luminanceTable(source) else { return nil }
        return estimate(table: table)
    }

    /// The saved quality and the ceiling on SharePipe's scale of the luminance table 0 of `source`
    /// (`sourceQuality(table:)`), or nil when there is none.
    static func sourceQuality(_ source: ImageSource) throws -> SourceQuality? {
        guard let table = try luminanceTable(source) else { return nil }
        return sourceQuality(table: table)
    }

    /// `table`'s saved quality (`estimate(table:)`) and its ceiling on SharePipe's scale (`ceiling(table:)`); a
    /// table SharePipe writes or wrote is on SharePipe's scale already and caps at the quality it was written at.
    static func sourceQuality(table: [Int]) -> SourceQuality? {
        guard table.count == 64 else { return nil }
        if let written = writtenQuality(table: table) { return SourceQuality(sameScale: written) }
        guard let saved = estimate(table: table), let ceiling = ceiling(table: table) else { return nil }
        return SourceQuality(saved: saved, ceiling: ceiling)
    }

    /// The lowest SharePipe quality whose luminance table is as fine as `table` (64 values, natural order): the
    /// geometric mean of its step sizes no larger than `table`'s, i.e. the mean over the 64 positions of
    /// ln(ours / source) at most 0. The geometric mean weighs each frequency's step ratio alike, so the few large
    /// high-frequency steps (Annex K's 100–121 against jpegli's 28–39 at q50) do not decide the comparison as
    /// they would a sum; for an Annex K source at q50/75/85/90/95/97 it gives SharePipe q39/72/84/91/97/99
    /// (a sum of the steps would give 31/63/80/88/96/98). Non-decreasing in the source's quality; 100 for a
    /// table of ones. nil when `table` is not 64 values.
    static func ceiling(table: [Int]) -> Int? {
        guard table.count == 64 else { return nil }
        let source = meanLogStep(table)
        // Our tables only get finer as the quality rises (`ownMeanLogSteps` is non-increasing); the tolerance
        // keeps an exact equal (the same values summed in the same order) from losing to rounding.
        return ownMeanLogSteps.firstIndex { $0 <= source + 1e-9 }.map { $0 + 1 } ?? 100
    }

    /// The mean of ln(step) over `table`'s 64 values (a value below 1, invalid in a JPEG, counts as 1).
    static func meanLogStep(_ table: [Int]) -> Double {
        table.reduce(0.0) { $0 + log(Double(max($1, 1))) } / Double(table.count)
    }

    /// `meanLogStep` of the luminance table SharePipe writes at each quality 1...100 (index 0 is q1).
    static let ownMeanLogSteps: [Double] = (1...100).map {
        meanLogStep(JPEGQuantTables.jpegliDistance3.table(component: 0, quality: $0))
    }

    /// The quality `table` was written at when it is exactly one SharePipe writes or wrote
    /// (`JPEGQuantTables.jpegliDistance3`, `.kleinSilversteinCarney`), nil otherwise.
    static func writtenQuality(table: [Int]) -> Int? {
        for tables in writtenTables {
            if let written = (1...100).last(where: { tables.table(component: 0, quality: $0) == table }) {
                return written
            }
        }
        return nil
    }

    /// The quality whose scaled standard table is closest to `table` (64 values, natural order); a table that is
    /// exactly one SharePipe writes or wrote (`JPEGQuantTables.jpegliDistance3`, `.kleinSilversteinCarney`, each
    /// about as good as Annex K at the same quality number) reads as the quality it was written at.
    static func estimate(table: [Int]) -> Int? {
        guard table.count == 64 else { return nil }
        if let written = writtenQuality(table: table) { return written }
        let total = table.reduce(0, +), standard = standardLuminance.reduce(0, +)
        guard total > 0 else { return nil }
        let scale = Double(total) * 100 / Double(standard)
        let quality = scale <= 100 ? (200 - scale) / 2 : 5000 / scale
        return min(100, max(1, Int(quality.rounded())))
    }

    /// Reads marker segments up to the first scan and returns quantization table 0, if defined there.
    static func luminanceTable(_ source: ImageSource) throws -> [Int]? {
        let reader = try ByteReader(source)
        guard var walk = try JPEGMarkerWalk(reader) else { return nil }
        while let code = try walk.nextMarker() {
            // No table 0 before the image data.
            if code == JPEGMarkerWalk.startOfScan || code == JPEGMarkerWalk.endOfImage { return nil }
            if JPEGMarkerWalk.isStandalone(code) { continue }
            guard let length = try walk.segmentLength() else { return nil }
            if length < 2 && JPEGMarkers.isMetadataMarker(code) { continue }  // bogus length: libjpeg skips 2 bytes
            guard length >= 2 else { return nil }
            guard code == 0xDB else { try reader.skip(length - 2); continue }
            var remaining = length - 2
            while remaining > 0 {
                let header = try reader.byte()
                let sixteenBit = header >> 4 != 0, id = header & 0x0F
                let size = sixteenBit ? 128 : 64
                guard remaining >= 1 + size else { return nil }
                var values = [Int](repeating: 0, count: 64)
                for position in 0..<64 {
                    let value =
                        sixteenBit ? Int(try reader.byte()) << 8 | Int(try reader.byte()) : Int(try reader.byte())
                    values[zigzag[position]] = value
                }
                if id == 0 { return values }
                remaining -= 1 + size
            }
        }
        return nil
    }
}
