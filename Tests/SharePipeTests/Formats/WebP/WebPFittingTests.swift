import Foundation
import Testing
@testable import SharePipe

/// `WebPQuality`: the quality a lossy WebP was encoded with, read back from its VP8 header, and the cap it
/// puts on a WebP written from it (as JPEG's source quality does).
@Suite struct WebPQualityTests {
    /// The committed 200×150 photo (jpeg/icc-p3.jpg) as a lossy WebP at `quality`, through libwebp.
    static func photo(quality: Int) throws -> [UInt8] {
        let bitmap = try Decode.bitmap(try Fixtures.bytes(Fixtures.path("jpeg/icc-p3.jpg")))
        return try WebPEncoder().encode(
            bitmap, settings: EncodeSettings(quality: quality, progressive: false), metadata: [])
    }

    /// Never below the source's quality (a cap there would throw detail away), and close above it: libwebp's
    /// finest segment sits at or a few indices under the base quantizer (`WebPQuality.baseCompression`).
    @Test(arguments: [10, 30, 50, 60, 75, 85, 90, 95, 100])
    func qualityIsReadBackFromTheQuantizers(_ quality: Int) throws {
        let estimate = try #require(try WebPQuality.estimate(.bytes(try Self.photo(quality: quality))))
        #expect(estimate >= quality && estimate <= quality + 8, "q\(quality) estimated as q\(estimate)")
    }

    @Test func losslessAndAnimatedFilesHaveNoSourceQuality() throws {
        #expect(try WebPQuality.estimate(WebPFixtures.source("lossless-alpha.webp")) == nil)
        #expect(try WebPQuality.estimate(WebPFixtures.source("animated.webp")) == nil)
        #expect(try WebPQuality.estimate(WebPFixtures.source("icc.webp")) != nil)  // lossy, after an ICCP chunk
        #expect(WebPQuality.estimate(vp8: [0x9D, 0x01, 0x2A]) == nil)  // not a key frame header
    }

    /// A q50 WebP resized for a service that takes WebP at a fixed quality is written at no more than its own
    /// quality, and the report says so; a q95 one gets the ceiling. (Under auto, X's default, no cap applies.)
    @Test func reencodingAWebPNeverUsesMoreQualityThanTheSourceHad() throws {
        var options = ServiceProfile.x.options()
        options.quality = 85
        options.maxShortEdge = 100
        let source = try Self.photo(quality: 50)
        let estimate = try #require(try WebPQuality.estimate(.bytes(source)))
        #expect(estimate < options.quality)
        let result = try SharePipe.prepare(.bytes(source), options: options)
        #expect(result.format == .webp && result.method == .reencoded)
        #expect(result.size == PixelSize(width: 133, height: 100))
        #expect(result.quality == estimate)
        #expect(result.adjustments.contains("quality capped at the source's q\(estimate)"), "\(result.adjustments)")
        let uncapped = try WebPEncoder().encode(
            try Decode.bitmap(result.bytes),
            settings: EncodeSettings(quality: options.quality, progressive: false), metadata: [])
        #expect(result.byteCount < uncapped.count)
        let fine = try SharePipe.prepare(.bytes(try Self.photo(quality: 95)), options: options)
        #expect(fine.quality == options.quality)
        #expect(!fine.adjustments.contains { $0.hasPrefix("quality capped") })
    }
}

/// A lossless WebP written as WebP: lossless first, lossy only over the byte limit (`LosslessFirstLadder`).
@Suite struct WebPLosslessFirstTests {
    /// X takes WebP; a 100-pixel short edge makes every fixture resize (so it is re-encoded).
    static var options: PrepareOptions {
        var options = ServiceProfile.x.options()
        options.maxShortEdge = 100
        return options
    }

    /// The committed 200×150 photo as a lossless WebP (a photo: lossless is several times lossy's size).
    static func losslessPhoto() throws -> [UInt8] {
        let bitmap = try Decode.bitmap(try Fixtures.bytes(Fixtures.path("jpeg/icc-p3.jpg")))
        return try WebPEncoder(lossless: true).encode(
            bitmap, settings: EncodeSettings(quality: 85, progressive: false), metadata: [])
    }

    @Test func aLosslessWebPStaysLosslessWhereItFits() throws {
        let source = WebPFixtures.source("lossless-alpha.webp")
        let info = try SharePipe.inspect(source)
        let options = Self.options
        #expect(
            PreparePlan(info: info, options: options).ladder
                == .losslessFirst(range: options.minQuality...options.quality, minShortEdge: options.minShortEdge))
        let result = try SharePipe.prepare(source, options: options)
        #expect(result.format == .webp && result.quality == nil && result.size == PixelSize(width: 133, height: 100))
        #expect(try WebPFixtures.chunkList(result.bytes).contains("VP8L"))
        #expect(result.attempts.map(\.note) == ["lossless"])
        #expect(!result.adjustments.contains { $0.contains("lossy") })
        // Exact: the output decodes to the resampled source, every visible pixel and every alpha value.
        let rendered = try WebPDecoder().render(
            source, info: info, target: result.size, limits: ImageLimits(),
            meter: PixelMemoryMeter()
        ).bitmap
        let decoded = try WebPFixtures.witnessDecode(result.bytes)  // dwebp: no rescaler, exact
        #expect(decoded.size == rendered.size && decoded.layout == .rgba && rendered.layout == .rgba)
        var mismatches = 0
        for i in stride(from: 0, to: min(decoded.pixels.count, rendered.pixels.count), by: 4) {
            let alpha = rendered.pixels[i + 3]
            if decoded.pixels[i + 3] != alpha || (alpha > 0 && decoded.pixels[i..<i + 3] != rendered.pixels[i..<i + 3])
            {
                mismatches += 1
            }
        }
        #expect(mismatches == 0)
        // A lossy source still goes straight to the quality search.
        let lossy = try SharePipe.prepare(.bytes(try WebPQualityTests.photo(quality: 90)), options: options)
        #expect(lossy.quality != nil && !lossy.attempts.contains { $0.note == "lossless" })
    }

    /// libwebp's lossless encoder needs about twice the lossy one's memory (MemoryEstimate.webp).
    @Test func theEstimatePricesTheLosslessEncoder() throws {
        let info = try SharePipe.inspect(.bytes(try Self.losslessPhoto()))
        let out = PixelSize(width: 133, height: 100)
        #expect(try MemoryEstimate(info: info, options: Self.options).encoderLibraryBytes == out.area * 32 + (1 << 20))
        var lossy = info
        lossy.webp?.lossless = false
        #expect(try MemoryEstimate(info: lossy, options: Self.options).encoderLibraryBytes == out.area * 16 + (1 << 20))
    }

    @Test func overTheLimitItBecomesLossyAndTheReportSaysSo() throws {
        let photo = try Self.losslessPhoto()
        let unlimited = try SharePipe.prepare(.bytes(photo), options: Self.options)
        #expect(unlimited.quality == nil && unlimited.attempts.map(\.note) == ["lossless"])
        var options = Self.options
        options.maxBytes = unlimited.byteCount / 2
        let result = try SharePipe.prepare(.bytes(photo), options: options)
        #expect(result.byteCount <= options.maxBytes!)
        #expect(result.format == .webp && result.quality != nil && result.size == unlimited.size)
        #expect(try WebPFixtures.chunkList(result.bytes).contains("VP8 "))
        #expect(result.attempts.first?.note == "lossless" && result.attempts.first?.fits == false)
        #expect(
            result.adjustments.contains(
                "lossless WEBP written lossy: lossless was \(unlimited.byteCount) bytes, "
                    + "over the \(options.maxBytes!)-byte limit"), "\(result.adjustments)")
    }
}
