import Testing
@testable import SharePipe

/// A JPEG decoded at a reduced DCT scale M/8 is ceil(W·M/8) pixels wide, its last column covering less than
/// 8/M source pixels when W·M/8 is not whole. The resampler must map the source's true extent (W·M/8) onto
/// the output, not the rounded-up decoded width, or the picture comes out stretched by up to one output pixel
/// (half a pixel at the centre). Checked on generated pictures of thin dark bars at known places, against
/// the library's own Lanczos from the full-size decode of the same file.
struct JPEGScaledDecodeGeometryTests {
    /// Where the bars are, as fractions of the edge; the profiles are measured between 0.3 and 0.5.
    static let barFractions = [0.1, 0.3, 0.5, 0.7, 0.9]
    static let barWidth = 8
    static let background: UInt8 = 180, bar: UInt8 = 40

    /// The bars' first source column (or row) on an edge of `length` pixels.
    static func barStarts(_ length: Int) -> [Int] { barFractions.map { Int($0 * Double(length)) } }

    /// Grey background, vertical and horizontal dark bars `barWidth` pixels thick at `barFractions`.
    static func picture(_ size: PixelSize) -> Bitmap {
        var columnIsBar = [Bool](repeating: false, count: size.width)
        var rowIsBar = [Bool](repeating: false, count: size.height)
        for start in barStarts(size.width) { for x in start..<start + barWidth { columnIsBar[x] = true } }
        for start in barStarts(size.height) { for y in start..<start + barWidth { rowIsBar[y] = true } }
        var pixels = [UInt8](repeating: background, count: size.area * 3)
        pixels.withUnsafeMutableBufferPointer { out in
            for y in 0..<size.height {
                for x in 0..<size.width where rowIsBar[y] || columnIsBar[x] {
                    let i = (y * size.width + x) * 3
                    out[i] = bar; out[i + 1] = bar; out[i + 2] = bar
                }
            }
        }
        return Bitmap(size: size, layout: .rgb, pixels: pixels)
    }

    static func jpeg(_ size: PixelSize, progressive: Bool = false) throws -> [UInt8] {
        try JPEGEncoder().encode(
            picture(size), settings: EncodeSettings(quality: 95, progressive: progressive), metadata: [])
    }

    /// The darkness centroid of each bar in `bitmap` (an output of a `stored` picture), in output pixels
    /// (pixel i spans [i, i + 1)), along x (`vertical` bars, rows 0.3–0.5 down) or y (columns 0.3–0.5 across);
    /// with the bars' true centres scaled to the output.
    static func barCentres(_ bitmap: Bitmap, stored: PixelSize, vertical: Bool) -> [(found: Double, true: Double)] {
        let out = bitmap.size
        let length = vertical ? out.width : out.height, across = vertical ? out.height : out.width
        let storedLength = vertical ? stored.width : stored.height
        let band = Int(0.33 * Double(across))..<Int(0.47 * Double(across))
        let channels = bitmap.layout.channels
        var profile = [Double](repeating: 0, count: length)
        for i in 0..<length {
            var sum = 0
            for j in band {
                let (x, y) = vertical ? (i, j) : (j, i)
                sum += Int(bitmap.pixels[(y * out.width + x) * channels + (channels == 1 ? 0 : 1)])
            }
            profile[i] = Double(sum) / Double(band.count)
        }
        let scale = Double(length) / Double(storedLength)
        return barStarts(storedLength).map { start in
            let expected = (Double(start) + Double(barWidth) / 2) * scale
            let reach = Double(barWidth) / 2 * scale + 6
            var weighted = 0.0, total = 0.0
            for i in max(0, Int(expected - reach))...min(length - 1, Int(expected + reach)) {
                let darkness = Double(background) - profile[i]
                weighted += darkness * (Double(i) + 0.5)
                total += darkness
            }
            return (weighted / total, expected)
        }
    }

    /// The largest distance of a bar from where it belongs, over both axes, in output pixels.
    static func worstShift(_ bitmap: Bitmap, stored: PixelSize) -> Double {
        (barCentres(bitmap, stored: stored, vertical: true) + barCentres(bitmap, stored: stored, vertical: false))
            .map { abs($0.found - $0.true) }.max() ?? .infinity
    }

    static func meanAbsoluteDifference(_ a: Bitmap, _ b: Bitmap) -> Double {
        precondition(a.size == b.size && a.layout == b.layout)
        var sum = 0
        for i in a.pixels.indices { sum += abs(Int(a.pixels[i]) - Int(b.pixels[i])) }
        return Double(sum) / Double(a.pixels.count)
    }

    /// The reference: the file decoded whole (8/8) and reduced by the library's Lanczos at the exact scale.
    static func reference(_ bytes: [UInt8], to size: PixelSize) throws -> Bitmap {
        try InMemoryResample.resize(try Decode.bitmap(bytes), to: size, meter: PixelMemoryMeter())
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var stored: PixelSize
        var shortEdge: Int
        /// `renderSharp` (the byte-limit ladder's decode, leaving the resampler a factor of two).
        var sharp = false
        var progressive = false
        /// Decoder memory small enough that the progressive file is decoded in bands.
        var decoderMemory: Int?
        /// The most mean absolute difference from the reference, per sample. The DCT-scaled decode is a little
        /// softer than Lanczos from the whole image, most where the resampler has almost nothing left to do
        /// (1001×603 at 4/8 to 300: 0.90 in place, 2.59 stretched); the others measured 0.24–0.44 in place and
        /// 0.73–2.48 stretched.
        var maxMeanDifference = 0.5
        var testDescription: String {
            "\(stored.width)×\(stored.height) to \(shortEdge)" + (sharp ? ", sharp" : "")
                + (progressive ? ", progressive" : "") + (decoderMemory != nil ? " in bands" : "")
        }
    }

    static let cases: [Case] = [
        Case(stored: PixelSize(width: 2659, height: 1773), shortEdge: 1080),
        Case(stored: PixelSize(width: 2656, height: 1773), shortEdge: 1080),
        Case(stored: PixelSize(width: 1773, height: 2659), shortEdge: 1080),
        Case(stored: PixelSize(width: 2660, height: 1774), shortEdge: 1080),
        Case(stored: PixelSize(width: 1001, height: 603), shortEdge: 300, maxMeanDifference: 1.2),
        Case(stored: PixelSize(width: 603, height: 1001), shortEdge: 150, sharp: true),
        Case(stored: PixelSize(width: 2659, height: 1773), shortEdge: 400, sharp: true),
        Case(
            stored: PixelSize(width: 2659, height: 1773), shortEdge: 1080, progressive: true,
            decoderMemory: 4 << 20),
    ]

    @Test("a reduced-scale decode keeps every bar in place", arguments: cases)
    func reducedScaleDecodeKeepsFeaturesInPlace(_ testCase: Case) throws {
        let stored = testCase.stored
        let target = ScalePlan.targetSize(for: stored, maxShortEdge: testCase.shortEdge)
        let numerator =
            testCase.sharp
            ? ScalePlan.sharpJPEGScaleNumerator(stored: stored, target: target)
            : ScalePlan.jpegScaleNumerator(stored: stored, target: target)
        // The case exercises a partial last column or row: some edge is not a whole number at M/8.
        try #require(numerator < 8 && (stored.width * numerator % 8 != 0 || stored.height * numerator % 8 != 0))

        let bytes = try Self.jpeg(stored, progressive: testCase.progressive)
        let source = ImageSource.bytes(bytes)
        var limits = ImageLimits()
        if let memory = testCase.decoderMemory { limits.maxDecoderMemory = memory }
        let decoder = JPEGDecoder()
        let info = try decoder.probe(source, limits: limits)
        let rendered =
            try testCase.sharp
            ? decoder.renderSharp(source, info: info, target: target, limits: limits, meter: PixelMemoryMeter())
            : decoder.render(source, info: info, target: target, limits: limits, meter: PixelMemoryMeter())
        #expect(rendered.bitmap.size == target)

        let reference = try Self.reference(bytes, to: target)
        let referenceShift = Self.worstShift(reference, stored: stored)
        let shift = Self.worstShift(rendered.bitmap, stored: stored)
        let difference = Self.meanAbsoluteDifference(rendered.bitmap, reference)
        // The measure itself: the whole-image reference has its bars where they belong.
        #expect(referenceShift <= 0.05, "reference bars off by \(referenceShift) px")
        #expect(shift <= 0.1, "\(testCase.testDescription) at \(numerator)/8: bars off by \(shift) px")
        #expect(
            difference <= testCase.maxMeanDifference,
            "\(testCase.testDescription) at \(numerator)/8: mean |Δ| \(difference)")
    }

    /// The whole route: an odd-size photo prepared to a 1080 px short edge keeps its bars where they belong.
    @Test func preparedOddSizeJPEGKeepsFeaturesInPlace() throws {
        let stored = PixelSize(width: 2659, height: 1773)
        let result = try SharePipe.prepare(.bytes(try Self.jpeg(stored)))
        let output = try Decode.bitmap(result.bytes)
        #expect(output.size == PixelSize(width: 1620, height: 1080))
        let shift = Self.worstShift(output, stored: stored)
        #expect(shift <= 0.1, "bars off by \(shift) px")
    }
}
