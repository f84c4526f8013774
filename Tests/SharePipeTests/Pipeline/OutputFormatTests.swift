import Foundation
import Testing
@testable import SharePipe

/// What format comes out, and at what quality: accepted formats per service, the source-quality cap.
@Suite struct OutputFormatTests {
    static func photo(quality: Int, size: PixelSize = PixelSize(width: 1600, height: 1200)) throws -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: size.area * 3)
        for y in 0..<size.height {
            for x in 0..<size.width {
                let i = (y * size.width + x) * 3
                pixels[i] = UInt8((x * 7 + y * 3) & 0xFF); pixels[i + 1] = UInt8((x ^ y) & 0xFF);
                pixels[i + 2] = UInt8(y & 0xFF)
            }
        }
        return try JPEGEncoder().encode(
            Bitmap(size: size, layout: .rgb, pixels: pixels),
            settings: EncodeSettings(quality: quality, progressive: false), metadata: [])
    }

    @Test(arguments: [20, 50, 73, 90, 97])
    func sourceQualityIsEstimatedFromTheQuantizationTable(_ quality: Int) throws {
        let bytes = try Self.photo(quality: quality, size: PixelSize(width: 64, height: 64))
        let estimate = try #require(try JPEGQuality.estimate(.bytes(bytes)))
        #expect(abs(estimate - quality) <= 1, "q\(quality) estimated as q\(estimate)")
    }

    @Test func reencodingNeverUsesMoreQualityThanTheSourceHad() throws {
        let source = try Self.photo(quality: 60)
        let result = try SharePipe.prepare(.bytes(source))
        #expect(result.size == PixelSize(width: 1440, height: 1080))
        #expect(result.quality == 60)
        #expect(result.adjustments.contains("quality capped at the source's q60"))
        let uncapped = try JPEGEncoder().encode(
            try Decode.bitmap(result.bytes),
            settings: EncodeSettings(quality: 85, progressive: false), metadata: [])
        #expect(result.byteCount < uncapped.count)
        // A high-quality source still gets the ceiling.
        let fine = try SharePipe.prepare(.bytes(try Self.photo(quality: 95)))
        #expect(fine.quality == 85)
        #expect(!fine.adjustments.contains { $0.hasPrefix("quality capped") })
    }

    @Test func aServiceThatTakesOnlyJPEGGetsAJPEGFromAPNG() throws {
        let result = try SharePipe.prepare(
            .file(path: Fixtures.path("png/photo-160x120.png")),
            options: ServiceProfile.instagram.options())
        #expect(result.format == .jpeg)
        #expect(try ImageFormat.detect(.bytes(result.bytes)) == .jpeg)
        #expect(result.adjustments.contains("PNG → JPEG (accepted formats)"))
    }

    @Test func aServiceWithoutAnimationGetsTheFirstFrameAsAStill() throws {
        var options = ServiceProfile.bluesky.options()
        options.animation.allowed = false
        let result = try SharePipe.prepare(.file(path: Fixtures.path("gif/delays-loop0.gif")), options: options)
        #expect(result.format == .png)
        #expect(result.frameCount == 1)
        let info = try Decode.info(result.bytes)
        #expect(info.format == .png && info.frameCount == 1)
    }

    @Test func aServiceWithAnimationKeepsItAnimated() throws {
        let result = try SharePipe.prepare(
            .file(path: Fixtures.path("gif/delays-loop0.gif")),
            options: ServiceProfile.x.options())
        #expect(result.format == .gif)
        #expect(result.frameCount > 1)
    }
}
