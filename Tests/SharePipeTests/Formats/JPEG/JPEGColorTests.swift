import Foundation
import Testing
@testable import SharePipe

/// CMYK JPEGs through their embedded profile (Little CMS), checked against ImageMagick's profile-based
/// conversion; 12-bit and lossless JPEGs refused as unsupported, not corrupt.
@Suite struct JPEGColorTests {
    static let cmykPath = Fixtures.path("jpeg-color/cmyk-icc.jpg")
    /// The 4×4 grid of 16×16 CMYK patches in cmyk-icc.jpg (TestImages/README.md), as stored ink values.
    static let patches: [[Int]] = [
        [0, 0, 0, 0], [255, 0, 0, 0], [0, 255, 0, 0], [0, 0, 255, 0], [0, 0, 0, 255],
        [255, 255, 0, 0], [0, 255, 255, 0], [255, 0, 255, 0], [128, 0, 0, 0], [0, 128, 0, 0],
        [0, 0, 128, 0], [0, 0, 0, 128], [64, 128, 192, 32], [200, 100, 50, 20],
        [30, 60, 90, 120], [255, 255, 255, 255],
    ]

    static func render(_ source: ImageSource) throws -> RenderedImage {
        let info = try JPEGDecoder().probe(source, limits: ImageLimits())
        return try JPEGDecoder().render(
            source, info: info, target: info.size, limits: ImageLimits(), meter: PixelMemoryMeter())
    }

    static func centre(_ bitmap: Bitmap, patch: Int) -> [Int] {
        let x = (patch % 4) * 16 + 8, y = (patch / 4) * 16 + 8
        return bitmap.pixel(x: x, y: y).map(Int.init)
    }

    /// The naive complement product the decoder uses without a profile, for ink values.
    static func naive(_ cmyk: [Int]) -> [Int] {
        let paper = cmyk.map { 255 - $0 }
        return (0..<3).map { (paper[$0] * paper[3] + 127) / 255 }
    }

    @Test func cmykThroughItsProfileMatchesImageMagick() throws {
        let expected = try Decode.bitmap(try Fixtures.bytes(Fixtures.path("jpeg-color/cmyk-icc-imagemagick.png")))
        let info = try JPEGDecoder().probe(.file(path: Self.cmykPath), limits: ImageLimits())
        #expect(info.colorModel == .cmyk || info.colorModel == .ycck)
        #expect(info.jpegAdobeInverted)  // ImageMagick writes Adobe-inverted CMYK
        let rendered = try Self.render(.file(path: Self.cmykPath))
        #expect(rendered.warnings.isEmpty)
        var farFromNaive = 0
        for patch in 0..<16 {
            let ours = Self.centre(rendered.bitmap, patch: patch)
            let theirs = Array(Self.centre(expected, patch: patch).prefix(3))
            let difference = zip(ours, theirs).map { abs($0 - $1) }.max()!
            #expect(difference <= 3, "patch \(patch): ours \(ours), ImageMagick \(theirs)")
            if zip(ours, Self.naive(Self.patches[patch])).map({ abs($0 - $1) }).max()! > 12 { farFromNaive += 1 }
        }
        // The profile models paper, dot gain and impure inks: most patches are far from the naive product.
        #expect(farFromNaive >= 12, "only \(farFromNaive) patches differ from the naive conversion")
        #expect(Self.centre(rendered.bitmap, patch: 0) != [255, 255, 255])  // paper is not pure white
    }

    @Test func preparedOutputKeepsTheConvertedColoursAndDropsTheCMYKProfile() throws {
        let result = try SharePipe.prepare(.file(path: Self.cmykPath), options: PrepareOptions())
        #expect(result.format == .jpeg)
        let output = try Decode.bitmap(result.bytes)
        let expected = try Decode.bitmap(try Fixtures.bytes(Fixtures.path("jpeg-color/cmyk-icc-imagemagick.png")))
        for patch in 0..<16 {
            let difference = zip(Self.centre(output, patch: patch), Self.centre(expected, patch: patch).prefix(3)).map {
                abs($0 - $1)
            }.max()!
            #expect(difference <= 6, "patch \(patch)")
        }
        let outputInfo = try Decode.info(result.bytes)
        #expect(outputInfo.colorModel == .rgb)
        #expect(!outputInfo.metadataKinds.contains(.icc))  // a CMYK profile on RGB pixels would be wrong
    }

    @Test func anUnusableProfileFallsBackToTheNaiveConversionWithAWarning() throws {
        var bytes = try Fixtures.bytes(Self.cmykPath)
        let signature = Array("acsp".utf8)
        let at = try #require((0..<bytes.count - 4).first { Array(bytes[$0..<$0 + 4]) == signature })
        bytes.replaceSubrange(at..<at + 4, with: Array("xxxx".utf8))  // no longer an ICC profile to lcms
        let rendered = try Self.render(.bytes(bytes))
        #expect(rendered.warnings.contains { $0.contains("CMYK profile is unusable") })
        for patch in [0, 1, 4, 12] {
            let difference = zip(Self.centre(rendered.bitmap, patch: patch), Self.naive(Self.patches[patch])).map {
                abs($0 - $1)
            }.max()!
            #expect(difference <= 3, "patch \(patch)")
        }
    }

    @Test(arguments: [("sof1-12bit.jpg", "12-bit JPEG"), ("sof3-lossless.jpg", "lossless JPEG")])
    func twelveBitAndLosslessAreUnsupportedNotCorrupt(name: String, reason: String) throws {
        let path = Fixtures.path("broken/" + name)
        for source in [ImageSource.file(path: path), .bytes(try Fixtures.bytes(path))] {
            for attempt in [
                { _ = try SharePipe.inspect(source) }, { _ = try SharePipe.prepare(source, options: PrepareOptions()) },
            ] {
                do {
                    try attempt()
                    Issue.record("\(name) was accepted")
                } catch let error as SharePipeError {
                    #expect(error.kind == "unsupportedFormat", "\(error)")
                    #expect(
                        error.description.hasPrefix(source.displayName + ": unsupported format: \(reason)"), "\(error)")
                }
            }
        }
    }

    @Test func frameHeaderWalkReadsTheProcess() throws {
        let baseline = try #require(JPEGFrameHeader.read(.file(path: Fixtures.path("jpeg/orient-1.jpg"))))
        #expect(baseline.marker == 0xC0 && baseline.precision == 8 && baseline.unsupportedReason == nil)
        let progressive = try #require(JPEGFrameHeader.read(.file(path: Fixtures.path("jpeg/progressive.jpg"))))
        #expect(progressive.marker == 0xC2 && progressive.unsupportedReason == nil)
        #expect(JPEGFrameHeader.read(.file(path: Fixtures.path("broken/no-sof.jpg"))) == nil)
        #expect(JPEGFrameHeader.read(.bytes([0xFF, 0xD8, 0xFF])) == nil)
    }
}
