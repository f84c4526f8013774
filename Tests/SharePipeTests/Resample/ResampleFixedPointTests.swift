import Foundation
import Testing
@testable import SharePipe

/// The fixed-point resampler (gray, RGB; RGBA along the rows; `sp_resample.h`) against the Float one it
/// replaced, which gray with alpha still uses: on the photos and pictures of TestImages/ and on synthetic edge
/// cases (flat areas, hard edges that overshoot, 16-bit rows, widths that are no multiple of the SIMD width,
/// every alpha from 1 to 255).
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
        let outputs = try Self.resampledFixedAndFloat(rows, from: size, to: target, layout: .rgb)
        #expect(Self.difference(outputs[0], outputs[1]).max <= 1)
        #expect(outputs[0].pixels != [UInt8](repeating: 0, count: target.area * 3))
    }

    /// The same Float rows pushed through the fixed-point resampler and the Float one, in that order.
    static func resampledFixedAndFloat(
        _ rows: [Float], from size: PixelSize, to target: PixelSize, layout: PixelLayout
    ) throws -> [Bitmap] {
        let rowLength = size.width * layout.channels
        return try [true, false].map { fixedPoint in
            var resampler = LanczosResampler(
                from: size, to: target, layout: layout, meter: PixelMemoryMeter(), fixedPoint: fixedPoint)
            try rows.withUnsafeBufferPointer { all in
                for y in 0..<size.height {
                    try resampler.push(row: UnsafeBufferPointer(rebasing: all[y * rowLength..<(y + 1) * rowLength]))
                }
            }
            return try resampler.finish()
        }
    }

    /// The largest colour difference of two RGBA bitmaps by the Float output's alpha (index 0...255), and the
    /// largest alpha difference.
    static func rgbaDifference(_ fixed: Bitmap, _ float: Bitmap) -> (colourByAlpha: [Int], alpha: Int) {
        precondition(fixed.layout == .rgba && float.layout == .rgba && fixed.pixels.count == float.pixels.count)
        var byAlpha = [Int](repeating: 0, count: 256), alpha = 0
        for p in stride(from: 0, to: fixed.pixels.count, by: 4) {
            let a = Int(float.pixels[p + 3])
            for c in 0..<3 {
                byAlpha[a] = max(byAlpha[a], abs(Int(fixed.pixels[p + c]) - Int(float.pixels[p + c])))
            }
            alpha = max(alpha, abs(Int(fixed.pixels[p + 3]) - a))
        }
        return (byAlpha, alpha)
    }

    static let alphaPictures = [
        "png/detail-rgba-8.png", "png/photo-alpha-160x120.png", "png/rgba-8.png", "png/rgba-16.png",
        "png/red-on-clear-green.png", "png/palette-8-trns.png", "webp/lossless-alpha.webp", "heif/alpha.avif",
    ]

    /// RGBA: within one level of the Float resampler on the pictures with alpha of TestImages/ (colours where
    /// the output is visible, alpha everywhere; colours of nearly transparent pixels within 2).
    @Test(arguments: alphaPictures)
    func rgbaWithinOneLevelOfFloatOnTestImages(file: String) throws {
        guard FileManager.default.fileExists(atPath: Fixtures.path(file)) else {
            Issue.record("\(file) is missing")
            return
        }
        let bitmap = try Decode.bitmap(try Fixtures.bytes(Fixtures.path(file)))
        #expect(bitmap.layout == .rgba, "\(file) decodes with alpha")
        guard bitmap.layout == .rgba else { return }
        for factor in [1.05, 2.8] {
            let size = PixelSize(
                width: max(1, Int(Double(bitmap.width) / factor)), height: max(1, Int(Double(bitmap.height) / factor)))
            let fixed = try Self.resize(bitmap, to: size, fixedPoint: true)
            let float = try Self.resize(bitmap, to: size, fixedPoint: false)
            let (largest, mean) = Self.difference(fixed, float)
            let (byAlpha, alpha) = Self.rgbaDifference(fixed, float)
            print(
                "RGBA fixed point vs Float: \(file) \(bitmap.size.width)x\(bitmap.size.height) → \(size.width)x\(size.height): max \(largest), mean \(mean), alpha max \(alpha), colour max at alpha 1-7 \(byAlpha[1...7].max()!), at 8-255 \(byAlpha[8...].max()!)"
            )
            #expect(alpha <= 1, "\(file) ÷\(factor): alpha differs by \(alpha)")
            #expect(byAlpha[8...].max()! <= 1, "\(file) ÷\(factor): colours differ by \(byAlpha[8...].max()!)")
            #expect(byAlpha[1...7].max()! <= 2, "\(file) ÷\(factor): faint colours differ by \(byAlpha[1...7].max()!)")
            #expect(mean < 0.02, "\(file) ÷\(factor): mean difference \(mean)")
        }
    }

    /// The premultiplication is exact (c × a in an int16 sample, sums in int32, a Float ring): at every alpha
    /// from 1 to 255, random colours come back within a level of the Float resampler and alpha exactly, and a
    /// flat colour comes back exactly, even at alpha 1 (an 8-bit or int16 premultiplied sample would lose it).
    @Test func everyAlphaKeepsItsColour() throws {
        let size = PixelSize(width: 67, height: 23), target = PixelSize(width: 29, height: 10)
        var random = GIFRegionFixtures.SplitMix(seed: 22)
        for alpha in 1...255 {
            var pixels = [UInt8](repeating: UInt8(alpha), count: size.area * 4)
            for p in 0..<size.area {
                for c in 0..<3 { pixels[p * 4 + c] = UInt8(random.next(256)) }
            }
            let noisy = Bitmap(size: size, layout: .rgba, pixels: pixels)
            let fixed = try Self.resize(noisy, to: target, fixedPoint: true)
            let float = try Self.resize(noisy, to: target, fixedPoint: false)
            let (byAlpha, alphaDifference) = Self.rgbaDifference(fixed, float)
            #expect(byAlpha.max()! <= 1 && alphaDifference == 0, "alpha \(alpha): colours \(byAlpha.max()!)")
            #expect(stride(from: 3, to: fixed.pixels.count, by: 4).allSatisfy { fixed.pixels[$0] == UInt8(alpha) })
            for colour: [UInt8] in [[200, 3, 97], [255, 255, 255], [1, 0, 254]] {
                let flat = Bitmap(
                    size: size, layout: .rgba,
                    pixels: Array((0..<size.area).map { _ in colour + [UInt8(alpha)] }.joined()))
                let small = try Self.resize(flat, to: target, fixedPoint: true)
                #expect(
                    small.pixels == Array((0..<target.area).map { _ in colour + [UInt8(alpha)] }.joined()),
                    "flat \(colour) at alpha \(alpha)")
            }
        }
    }

    /// Hard edges between transparent and opaque pixels (the transparent ones' colours must not bleed in, and
    /// Lanczos rings into faint alpha beside them): within a level of Float where the output is visible (alpha
    /// 8 and up), alpha within a level. Where the ringing leaves an alpha of about 1, the colour is a ratio of
    /// two sums that nearly cancel, and the weights' rounding (2^-15) moves it by up to 3 levels (measured: 3 at
    /// alpha 1, 2 at alpha 2, none above).
    @Test func transparentEdgesMatchFloat() throws {
        let size = PixelSize(width: 517, height: 389)
        var pixels = [UInt8](repeating: 0, count: size.area * 4)
        for y in 0..<size.height {
            for x in 0..<size.width {
                let p = (y * size.width + x) * 4
                let opaque = (x / 9 + y / 7) % 2 == 0
                pixels[p] = opaque ? UInt8((x * 3) % 256) : 255
                pixels[p + 1] = opaque ? UInt8((y * 5) % 256) : 0
                pixels[p + 2] = opaque ? 40 : 255
                pixels[p + 3] = opaque ? (x % 3 == 0 ? 255 : UInt8(1 + (x * y) % 254)) : 0
            }
        }
        let bitmap = Bitmap(size: size, layout: .rgba, pixels: pixels)
        for target in [
            PixelSize(width: 499, height: 383), PixelSize(width: 173, height: 131), PixelSize(width: 9, height: 7),
        ] {
            let fixed = try Self.resize(bitmap, to: target, fixedPoint: true)
            let float = try Self.resize(bitmap, to: target, fixedPoint: false)
            let (byAlpha, alpha) = Self.rgbaDifference(fixed, float)
            print(
                "RGBA edges → \(target): colour max by alpha \(byAlpha.enumerated().filter { $0.element > 1 }.map { "\($0.offset):\($0.element)" })"
            )
            #expect(alpha <= 1, "→ \(target): alpha \(alpha)")
            #expect(byAlpha[8...].max()! <= 1, "→ \(target): colours \(byAlpha[8...].max()!)")
            #expect(byAlpha[1...7].max()! <= 3, "→ \(target): faint colours \(byAlpha[1...7].max()!)")
        }
    }

    /// Float rows into an RGBA resampler (16-bit sources with alpha) keep the Float path along the rows into
    /// the same Float ring, and the vertical kernel is the Float one bit for bit: the same bytes as Float.
    @Test func rgbaFloatRowsEqualFloat() throws {
        let size = PixelSize(width: 301, height: 203), target = PixelSize(width: 97, height: 65)
        var rows = [Float](repeating: 0, count: size.area * 4)
        for y in 0..<size.height {
            for x in 0..<size.width {
                let i = (y * size.width + x) * 4
                rows[i] = Float(x) * 255 / 300
                rows[i + 1] = Float((x * 31 + y * 17) % 256) + 0.25
                rows[i + 2] = (x / 10 + y / 10) % 2 == 0 ? 255 : 0
                rows[i + 3] = Float((x * 7 + y * 3) % 256) + 0.5
            }
        }
        let outputs = try Self.resampledFixedAndFloat(rows, from: size, to: target, layout: .rgba)
        #expect(outputs[0].pixels == outputs[1].pixels)
        #expect(outputs[0].pixels.contains { $0 != 0 })
    }

    /// The memory estimate counts the vertical filter's taps without making its weights: the same number for
    /// reductions, enlargements, equal sizes and tiny images.
    @Test func memoryEstimateWithoutWeights() {
        var random = GIFRegionFixtures.SplitMix(seed: 7)
        var pairs = [(1, 1), (4000, 1080), (6000, 1080), (600, 480), (1080, 4000), (3, 1), (7, 7), (100, 33), (2, 5)]
        for _ in 0..<300 { pairs.append((1 + random.next(9000), 1 + random.next(3000))) }
        for (input, output) in pairs {
            let built = FilterWeights(inputSize: input, outputSize: output).maxTaps
            #expect(FilterWeights.maxTaps(inputSize: input, outputSize: output) == built, "\(input) → \(output)")
            let source = PixelSize(width: 1 + input / 2, height: input),
                target = PixelSize(width: 1 + output / 3, height: output)
            for channels in 1...4 {
                let floats = (built * target.width + source.width + target.width) * channels
                #expect(
                    LanczosResampler.memoryEstimate(from: source, to: target, channels: channels)
                        == floats * MemoryLayout<Float>.stride + target.area * channels)
            }
        }
    }
}
