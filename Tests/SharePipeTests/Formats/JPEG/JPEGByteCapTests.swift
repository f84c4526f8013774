import Testing

@testable import SharePipe

/// The JPEG quality ladder under a byte limit that bites (`QualityLadder`): the ceiling as requested first,
/// then, on a sharp render, progressive scans, then a 4:4:4 search kept where it is closer to the render than
/// the 4:2:0 fit.
struct JPEGByteCapTests {
    /// Each component's sampling factors (horizontal, vertical) and whether the frame is progressive, read
    /// from the file's SOF0 or SOF2 segment.
    static func frame(_ jpeg: [UInt8]) -> (factors: [(Int, Int)], progressive: Bool)? {
        var at = 2
        while at + 4 <= jpeg.count, jpeg[at] == 0xFF {
            let marker = jpeg[at + 1]
            let length = Int(jpeg[at + 2]) << 8 | Int(jpeg[at + 3])
            if marker == 0xC0 || marker == 0xC2 {
                let count = Int(jpeg[at + 9])
                let factors = (0..<count).map { i -> (Int, Int) in
                    let byte = Int(jpeg[at + 11 + 3 * i])
                    return (byte >> 4, byte & 15)
                }
                return (factors, marker == 0xC2)
            }
            at += 2 + length
        }
        return nil
    }

    /// A photo-like scene, reproducible: grass (green, noisy) under a sky gradient, crossed by thin saturated
    /// red, blue and magenta strokes (petals, sign lettering) when `saturatedEdges`; otherwise grey stones
    /// whose detail is all in luma.
    static func scene(_ size: PixelSize, saturatedEdges: Bool, seed: UInt64) -> Bitmap {
        var state = seed
        var pixels = [UInt8](repeating: 0, count: size.area * 3)
        let strokes: [(Int, Int, Int)] = [(225, 20, 35), (30, 45, 220), (210, 25, 200)]
        for y in 0..<size.height {
            for x in 0..<size.width {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                let noise = Int(state >> 59) - 16  // -16...15
                var rgb: (Int, Int, Int)
                if y < size.height / 3 {
                    rgb = (90 + y * 60 / size.height, 140 + y * 60 / size.height, 230)
                } else if saturatedEdges {
                    rgb = (40 + noise, 150 + noise, 50 + noise)
                    // Strokes 3 pixels wide along two diagonals, a new colour every 40 pixels.
                    let d1 = (x + y) % 40, d2 = (x - y + 4000) % 52
                    if d1 < 3 {
                        rgb = strokes[((x + y) / 40) % 3]
                    } else if d2 < 3 {
                        rgb = strokes[((x - y + 4000) / 52 + 1) % 3]
                    }
                } else {
                    let stone = ((x / 23) * 7 + (y / 17) * 13) % 90
                    rgb = (100 + stone + noise, 98 + stone + noise, 95 + stone + noise)
                }
                let p = (y * size.width + x) * 3
                pixels[p] = UInt8(clamping: rgb.0)
                pixels[p + 1] = UInt8(clamping: rgb.1)
                pixels[p + 2] = UInt8(clamping: rgb.2)
            }
        }
        return Bitmap(size: size, layout: .rgb, pixels: pixels)
    }

    /// The scene as a camera would write it (4:4:4, quality 95).
    static func cameraJPEG(_ bitmap: Bitmap) throws -> [UInt8] {
        try JPEGEncoder(subsample420: false).encode(
            bitmap, settings: EncodeSettings(quality: 95, progressive: false), metadata: [])
    }

    static func prepare(_ input: [UInt8], maxBytes: Int?) throws -> PreparedImage {
        var options = PrepareOptions()
        options.maxBytes = maxBytes
        return try SharePipe.prepare(.bytes(input), options: options)
    }

    @Test func saturatedEdgesAreWrittenAt444UnderABitingLimitAnd420Without() throws {
        let input = try Self.cameraJPEG(Self.scene(PixelSize(width: 1800, height: 1200), saturatedEdges: true, seed: 7))
        let free = try Self.prepare(input, maxBytes: nil)
        let freeFrame = try #require(Self.frame(free.bytes))
        #expect(freeFrame.factors.map(\.0) == [2, 1, 1] && freeFrame.factors.map(\.1) == [2, 1, 1])
        #expect(!freeFrame.progressive && free.quality == 85)
        #expect(!free.adjustments.contains(QualityLadder.fullChromaNote))

        let limit = free.byteCount * 3 / 4
        let capped = try Self.prepare(input, maxBytes: limit)
        #expect(capped.byteCount <= limit)
        #expect(capped.size == PixelSize(width: 1620, height: 1080))
        let cappedFrame = try #require(Self.frame(capped.bytes))
        #expect(cappedFrame.factors.map(\.0) == [1, 1, 1] && cappedFrame.factors.map(\.1) == [1, 1, 1])
        #expect(cappedFrame.progressive)
        #expect(capped.adjustments.contains(QualityLadder.fullChromaNote), "\(capped.adjustments)")
        #expect(capped.adjustments.contains(QualityLadder.progressiveNote), "\(capped.adjustments)")
        // The written encode is the 4:4:4 search's highest fit: one step up did not fit.
        let quality = try #require(capped.quality)
        let note = QualityLadder.fullChromaNote + ", " + QualityLadder.progressiveNote
        let fullChroma = capped.attempts.filter { $0.note == note }
        #expect(fullChroma.contains { $0.quality == quality && $0.fits && $0.bytes == capped.byteCount })
        #expect(fullChroma.contains { $0.quality == quality + 1 && !$0.fits } || quality == 85)
        // The 4:2:0 fit it was weighed against got at least as high a quality.
        let subsampled = capped.attempts.filter { $0.note == QualityLadder.progressiveNote && $0.fits }
        #expect(subsampled.contains { ($0.quality ?? 0) >= quality })
    }

    /// Root mean square difference of two RGB bitmaps of one size, in levels.
    static func rms(_ a: Bitmap, _ b: Bitmap) -> Double {
        precondition(a.size == b.size && a.layout == b.layout)
        var sum = 0.0
        for i in 0..<a.pixels.count {
            let d = Double(a.pixels[i]) - Double(b.pixels[i])
            sum += d * d
        }
        return (sum / Double(a.pixels.count)).squareRoot()
    }

    /// The render under a biting limit (`JPEGDecoder.renderSharp`) decodes at twice the target or more (here
    /// 6/8 where the plain render takes 3/8), so the Lanczos resampler makes the reduction, not the DCT
    /// scale: against the whole image reduced by the same resampler it is much closer than the plain render.
    @Test func theSharpRenderIsCloserToTheWholeImageReduced() throws {
        let size = PixelSize(width: 1800, height: 1200)
        let input = try Self.cameraJPEG(Self.scene(size, saturatedEdges: true, seed: 5))
        let source = ImageSource.bytes(input)
        let info = try SharePipe.inspect(source)
        let target = PixelSize(width: 600, height: 400)
        #expect(ScalePlan.jpegScaleNumerator(stored: size, target: target) == 3)
        #expect(ScalePlan.sharpJPEGScaleNumerator(stored: size, target: target) == 6)
        let meter = PixelMemoryMeter()
        let decoder = JPEGDecoder()
        let plain = try decoder.render(source, info: info, target: target, limits: ImageLimits(), meter: meter)
        let sharp = try decoder.renderSharp(source, info: info, target: target, limits: ImageLimits(), meter: meter)
        #expect(plain.bitmap.size == target && sharp.bitmap.size == target)
        let reference = try InMemoryResample.resize(try Decode.bitmap(input), to: target, meter: meter)
        let plainDistance = Self.rms(plain.bitmap, reference), sharpDistance = Self.rms(sharp.bitmap, reference)
        print("rms to the whole image reduced: plain \(plainDistance), sharp \(sharpDistance)")
        #expect(sharpDistance < 0.5 * plainDistance, "plain \(plainDistance), sharp \(sharpDistance)")
    }

    /// Sharp only where a DCT scale is chosen: a source under twice the target decodes whole either way.
    @Test func theSharpScaleLeavesAFactorOfTwo() {
        let camera = PixelSize(width: 4000, height: 3000)
        #expect(ScalePlan.jpegScaleNumerator(stored: camera, target: PixelSize(width: 1440, height: 1080)) == 3)
        #expect(ScalePlan.sharpJPEGScaleNumerator(stored: camera, target: PixelSize(width: 1440, height: 1080)) == 6)
        #expect(ScalePlan.sharpJPEGScaleNumerator(stored: camera, target: PixelSize(width: 400, height: 300)) == 2)
        let photo = PixelSize(width: 3600, height: 2400)
        #expect(ScalePlan.jpegScaleNumerator(stored: photo, target: PixelSize(width: 1620, height: 1080)) == 4)
        #expect(ScalePlan.sharpJPEGScaleNumerator(stored: photo, target: PixelSize(width: 1620, height: 1080)) == 8)
        let small = PixelSize(width: 1800, height: 1200)
        #expect(ScalePlan.sharpJPEGScaleNumerator(stored: small, target: PixelSize(width: 1620, height: 1080)) == 8)
    }

    @Test func aLimitThatDoesNotBiteWritesTheSameBytes() throws {
        let input = try Self.cameraJPEG(Self.scene(PixelSize(width: 1800, height: 1200), saturatedEdges: true, seed: 3))
        let free = try Self.prepare(input, maxBytes: nil)
        let loose = try Self.prepare(input, maxBytes: free.byteCount)
        #expect(loose.bytes == free.bytes)
        #expect(loose.attempts.count == 1 && loose.adjustments.isEmpty)
    }

    /// Generated photos under limits from "just under the ceiling" to "dimensions must go": every output at or
    /// under its limit, a baseline or progressive JPEG whose sampling agrees with the report, the aspect kept.
    @Test(arguments: [true, false])
    func theLimitIsMetOnGeneratedPhotos(saturatedEdges: Bool) throws {
        let size = PixelSize(width: 1800, height: 1200)
        let input = try Self.cameraJPEG(Self.scene(size, saturatedEdges: saturatedEdges, seed: 11))
        let free = try Self.prepare(input, maxBytes: nil)
        for fraction in [0.9, 0.5, 0.2, 0.06] {
            let limit = Int(Double(free.byteCount) * fraction)
            let result = try Self.prepare(input, maxBytes: limit)
            #expect(result.byteCount <= limit, "\(fraction): \(result.byteCount) > \(limit)")
            let frame = try #require(Self.frame(result.bytes))
            let full = result.adjustments.contains(QualityLadder.fullChromaNote)
            #expect(frame.factors.map(\.0) == (full ? [1, 1, 1] : [2, 1, 1]), "\(fraction) \(result.adjustments)")
            #expect(frame.progressive)
            let bitmap = try Decode.bitmap(result.bytes)
            #expect(bitmap.size == result.size)
            #expect(abs(Double(bitmap.width) / Double(bitmap.height) - 1.5) < 0.01)
            #expect(result.attempts.contains { $0.fits && $0.bytes == result.byteCount && $0.size == result.size })
            if fraction == 0.06 { #expect(result.size.shortEdge < 1080, "\(result.size)") }
        }
    }
}
