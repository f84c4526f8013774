import Foundation
import Testing
@testable import SharePipe

/// The fixed-point resampler of opaque layouts (gray, RGB; `sp_resample.h`) against the Float one it
/// replaced, which the layouts with alpha still use: on the photos and pictures of TestImages/ and on
/// synthetic edge cases (flat areas, hard edges that overshoot, 16-bit rows, widths that are no multiple of
/// the SIMD width).
@Suite struct ResampleFixedPointTests {
    static func resize(_ bitmap: Bitmap, to size: PixelSize, fixedPoint: Bool) throws -> Bitmap {
        var resampler = LanczosResampler(
            from: bitmap.size, to: size, layout: bitmap.layout, meter: PixelMemoryMeter(), fixedPoint: fixedPoint)
        let rowBytes = bitmap.width * bitmap.layout.channels
        try bitmap.pixels.withUnsafeBufferPointer { all in
            for y in 0..<bitmap.height {
                try resampler.push(row: UnsafeBufferPointer(rebasing: all[y * rowBytes..<(y + 1) * rowBytes]))
            }
        }
        return try resampler.finish()
    }

    /// The largest and the mean absolute difference of two bitmaps' samples.
    static func difference(_ a: Bitmap, _ b: Bitmap) -> (max: Int, mean: Double) {
        precondition(a.pixels.count == b.pixels.count)
        var largest = 0, total = 0
        for i in a.pixels.indices {
            let d = abs(Int(a.pixels[i]) - Int(b.pixels[i]))
            total += d
            largest = max(largest, d)
        }
        return (largest, Double(total) / Double(a.pixels.count))
    }

    static let photos = [
        "jpeg/large-4000x3000.jpg", "jpeg/noisy-2000x1500.jpg", "jpeg/gray.jpg", "jpeg/landscape-orient0.jpg",
        "jpeg/icc-p3.jpg", "png/detail-gray-1.png", "png/rgb-8.png", "png/detail-rgb-16.png",
    ]

    /// Within one level of the Float resampler everywhere, and off by one on few samples, at the reductions
    /// the pipeline makes (a photo to 1080 short edge after DCT scaling: about 1.05×; without it: about 2.8×).
    @Test(arguments: photos)
    func withinOneLevelOfFloatOnTestImages(file: String) throws {
        let bitmap = try Decode.bitmap(try Fixtures.bytes(Fixtures.path(file)))
        #expect(!bitmap.layout.hasAlpha)
        for factor in [1.05, 2.8] {
            let size = PixelSize(
                width: max(1, Int(Double(bitmap.width) / factor)), height: max(1, Int(Double(bitmap.height) / factor)))
            let fixed = try Self.resize(bitmap, to: size, fixedPoint: true)
            let float = try Self.resize(bitmap, to: size, fixedPoint: false)
            let (largest, mean) = Self.difference(fixed, float)
            print(
                "fixed point vs Float: \(file) \(bitmap.size.width)x\(bitmap.size.height) → \(size.width)x\(size.height): max \(largest), mean \(mean)"
            )
            #expect(largest <= 1, "\(file) ÷\(factor): max difference \(largest)")
            #expect(mean < 0.02, "\(file) ÷\(factor): mean difference \(mean)")
        }
    }

    @Test(arguments: [PixelLayout.gray, .rgb])
    func flatAreasStayExactlyFlat(layout: PixelLayout) throws {
        for value: UInt8 in [0, 1, 137, 254, 255] {
            let size = PixelSize(width: 333, height: 101)
            let bitmap = Bitmap(
                size: size, layout: layout,
                pixels: [UInt8](repeating: value, count: size.area * layout.channels))
            let small = try Self.resize(bitmap, to: PixelSize(width: 119, height: 37), fixedPoint: true)
            #expect(small.pixels.allSatisfy { $0 == value }, "\(layout) \(value)")
        }
    }

    /// Hard black and white stripes make Lanczos overshoot past 0 and 255 between the passes (the int16 ring
    /// keeps it, as the Float sums do; only the output is clamped): within a level of Float; odd widths
    /// exercise the kernels' scalar tails.
    @Test(arguments: [PixelLayout.gray, .rgb])
    func hardEdgesMatchFloatWithinOneLevel(layout: PixelLayout) throws {
        let size = PixelSize(width: 517, height: 389)
        var pixels = [UInt8](repeating: 0, count: size.area * layout.channels)
        for y in 0..<size.height {
            for x in 0..<size.width where (x / 7 + y / 5) % 2 == 0 {
                for c in 0..<layout.channels { pixels[(y * size.width + x) * layout.channels + c] = 255 }
            }
        }
        let bitmap = Bitmap(size: size, layout: layout, pixels: pixels)
        for target in [
            PixelSize(width: 499, height: 383), PixelSize(width: 173, height: 131), PixelSize(width: 9, height: 7),
        ] {
            let fixed = try Self.resize(bitmap, to: target, fixedPoint: true)
            let float = try Self.resize(bitmap, to: target, fixedPoint: false)
            #expect(Self.difference(fixed, float).max <= 1, "\(layout) → \(target)")
        }
    }

    /// Float rows (16-bit sources) into an opaque resampler: the horizontal pass in Float, rounded into the
    /// fixed-point ring; within a level of the all-Float resampler.
    @Test func floatRowsMatchFloatWithinOneLevel() throws {
        let size = PixelSize(width: 301, height: 203), target = PixelSize(width: 97, height: 65)
        var rows = [Float](repeating: 0, count: size.area * 3)
        for y in 0..<size.height {
            for x in 0..<size.width {
                let i = (y * size.width + x) * 3
                rows[i] = Float(x) * 255 / 300
                rows[i + 1] = Float((x * 31 + y * 17) % 256) + 0.25
                rows[i + 2] = (x / 10 + y / 10) % 2 == 0 ? 255 : 0
            }
        }
        var outputs: [Bitmap] = []
        for fixedPoint in [true, false] {
            var resampler = LanczosResampler(
                from: size, to: target, layout: .rgb, meter: PixelMemoryMeter(), fixedPoint: fixedPoint)
            try rows.withUnsafeBufferPointer { all in
                for y in 0..<size.height {
                    let rowLength = size.width * 3
                    try resampler.push(row: UnsafeBufferPointer(rebasing: all[y * rowLength..<(y + 1) * rowLength]))
                }
            }
            outputs.append(try resampler.finish())
        }
        #expect(Self.difference(outputs[0], outputs[1]).max <= 1)
        #expect(outputs[0].pixels != [UInt8](repeating: 0, count: target.area * 3))
    }
}
