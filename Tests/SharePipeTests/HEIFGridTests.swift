import CSharePipe
import Foundation
import Testing
@testable import SharePipe

/// The grid route (HEIFGrid, HEIFTileDecoding): grid HEICs of HEVC tiles decoded one row of tiles at a time
/// with libde265, against the libheif route on the same files.
@Suite struct HEIFGridTests {
    /// Per-channel differences between two bitmaps of one size: the largest and the mean.
    static func difference(_ a: Bitmap, _ b: Bitmap) -> (max: Int, mean: Double) {
        precondition(a.size == b.size && a.layout == b.layout)
        var largest = 0, total = 0
        for i in 0..<a.pixels.count {
            let d = abs(Int(a.pixels[i]) - Int(b.pixels[i]))
            largest = max(largest, d)
            total += d
        }
        return (largest, Double(total) / Double(a.pixels.count))
    }

    static func bothRoutes(_ path: String, target: PixelSize? = nil) throws -> (tiles: Bitmap, libheif: Bitmap) {
        let source = ImageSource.file(path: path)
        let probe = try HEIFDecoding.probe(source, limits: ImageLimits())
        let size = target ?? probe.size
        let tiles = try HEIFDecoding.render(source, target: size, limits: ImageLimits(), meter: PixelMemoryMeter()).bitmap
        let libheif = try HEIFDecoding.render(source, target: size, limits: ImageLimits(), meter: PixelMemoryMeter(),
                                              tileRoute: false).bitmap
        return (tiles, libheif)
    }

    @Test func scratch() throws {
        guard let path = ProcessInfo.processInfo.environment["GRID_FILE"] else { return }
        let (tiles, libheif) = try Self.bothRoutes(path)
        let d = Self.difference(tiles, libheif)
        print("GRID diff max \(d.max) mean \(d.mean) size \(tiles.size)")
        var worst = (0, 0, 0)
        for y in 0..<tiles.height { for x in 0..<tiles.width {
            let a = tiles.rgb(x, y), b = libheif.rgb(x, y)
            let m = zip(a, b).map { abs($0 - $1) }.max()!
            if m > worst.0 { worst = (m, x, y) }
        } }
        print("GRID worst \(worst) tiles \(tiles.rgb(worst.1, worst.2)) libheif \(libheif.rgb(worst.1, worst.2))")
        var rows = [Int](repeating: 0, count: tiles.height)
        for y in 0..<tiles.height { for x in 0..<tiles.width where tiles.rgb(x, y) != libheif.rgb(x, y) { rows[y] += 1 } }
        if let ref = FileManager.default.contents(atPath: "/tmp/gt/ref.rgb") {
            let r = Bitmap(size: tiles.size, layout: .rgb, pixels: [UInt8](ref))
            print("GRID vs heif-convert: tiles \(Self.difference(tiles, r)) libheif \(Self.difference(libheif, r))")
        }
        print("GRID differing rows: \(rows.enumerated().filter { $0.element > 0 }.prefix(20).map { "\($0.offset):\($0.element)" })")
    }
}
