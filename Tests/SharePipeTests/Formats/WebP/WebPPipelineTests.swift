import Foundation
import Testing
@testable import SharePipe

/// WebP through the whole pipeline (`SharePipe.prepare` and the CLI): outputs decoded by libwebp's `dwebp`,
/// metadata checked with exiftool.
@Suite("WebP end to end", .tags(.witness), .skipped(whenListed: "witness"))
struct WebPPipelineTests {
    private func prepare(_ name: String, _ options: PrepareOptions) throws -> PreparedImage {
        try SharePipe.prepare(WebPFixtures.source(name), options: options)
    }

    @Test("strip all: Exif, GPS and XMP gone (exiftool), orientation 6 applied once to the pixels")
    func stripAll() throws {
        let result = try prepare("gps-orient6.webp", PrepareOptions(strip: .all))
        #expect(result.format == .webp && result.method == .reencoded)
        #expect(result.appliedOrientation.rawValue == 6)
        #expect(result.size == PixelSize(width: 320, height: 240))
        #expect(result.removedMetadata == [.exif, .gps, .xmp])
        let tags = try WebPFixtures.exiftool(result.bytes)
        #expect(
            !tags.contains("GPS") && !tags.contains("[IFD0]") && !tags.contains("XMP") && !tags.contains("EXIF"),
            "\(tags)")
        let bitmap = try WebPFixtures.witnessDecode(result.bytes)
        #expect(bitmap.size == PixelSize(width: 320, height: 240))
        #expect(close(bitmap.rgb(16, 16), [255, 0, 0, 255], tolerance: 16))  // red top-left, as displayed
        #expect(close(bitmap.rgb(303, 16), [0, 255, 0, 255], tolerance: 16))  // green top-right
        #expect(close(bitmap.rgb(303, 223), [0, 0, 255, 255], tolerance: 16))  // blue bottom-right
        #expect(close(bitmap.rgb(16, 223), [128, 128, 128, 255], tolerance: 8))  // grey bottom-left
    }

    @Test("strip gps: Exif stays without GPS, orientation 1; XMP goes. strip none: everything stays, orientation 1")
    func stripGPSAndNone() throws {
        let gps = try prepare("gps-orient6.webp", PrepareOptions(strip: .gps))
        let gpsTags = try WebPFixtures.exiftool(gps.bytes)
        #expect(gpsTags.contains("SharePipeCam"), "\(gpsTags)")
        #expect(!gpsTags.contains("GPSLatitude") && !gpsTags.contains("XMP"), "\(gpsTags)")
        #expect(gpsTags.contains("Orientation                     : 1"), "\(gpsTags)")
        #expect(gps.removedMetadata == [.gps, .xmp])

        let none = try prepare("gps-orient6.webp", PrepareOptions(strip: .none))
        let noneTags = try WebPFixtures.exiftool(none.bytes)
        #expect(noneTags.contains("[GPS]") && noneTags.contains("[XMP-dc]"), "\(noneTags)")
        #expect(noneTags.contains("Orientation                     : 1"), "\(noneTags)")
        #expect(none.size == PixelSize(width: 320, height: 240))
    }

    @Test("the ICC profile is kept in every mode; with nothing to change the bitstream is copied byte for byte")
    func iccAndMetadataRewrite() throws {
        let original = try Fixtures.bytes(WebPFixtures.path("icc.webp"))
        for mode in StripMode.allCases {
            let result = try prepare("icc.webp", PrepareOptions(strip: mode))
            #expect(result.method == .metadataRewrite)
            #expect(result.bytes == original)  // only an ICC profile: nothing to remove
            #expect(result.keptMetadata == [.icc])
        }
        let resized = try prepare("icc.webp", PrepareOptions(maxShortEdge: 75))
        #expect(resized.method == .reencoded && resized.size == PixelSize(width: 100, height: 75))
        #expect(try WebPFixtures.exiftool(resized.bytes).contains("Display P3 (SharePipe test profile)"))
    }

    @Test("alpha survives: the transparent quarter and the half-transparent square")
    func alpha() throws {
        let result = try prepare("lossless-alpha.webp", PrepareOptions(maxShortEdge: 75))
        #expect(result.format == .webp && result.size == PixelSize(width: 100, height: 75))
        let bitmap = try WebPFixtures.witnessDecode(result.bytes)
        #expect(bitmap.rgb(20, 60)[3] == 0)
        #expect(abs(bitmap.rgb(60, 30)[3] - 128) <= 4)
        #expect(close(bitmap.rgb(3, 3), [255, 0, 0, 255], tolerance: 24))
    }

    @Test("a byte limit is met by the quality search, then by dimensions; every attempt is under or reported")
    func byteLimit() throws {
        // A noisy 900×600 photo-like WebP made here (large for its size), prepared under 20 kB.
        var bitmap = Bitmap(size: PixelSize(width: 900, height: 600), layout: .rgb)
        var seed: UInt32 = 12345
        for i in 0..<bitmap.pixels.count {
            seed = seed &* 1_103_515_245 &+ 12345
            bitmap.pixels[i] = UInt8(truncatingIfNeeded: (i / 3 % 900) / 4 + Int(seed >> 27))
        }
        let input = try WebPEncoder().encode(
            bitmap, settings: EncodeSettings(quality: 95, progressive: false), metadata: [])
        let limit = 20_000
        let result = try SharePipe.prepare(.bytes(input), options: PrepareOptions(maxBytes: limit))
        #expect(result.byteCount <= limit)
        #expect(result.format == .webp)
        #expect(result.attempts.count > 1)
        #expect(result.attempts.contains { !$0.fits })
        #expect(try WebPFixtures.witnessDecode(result.bytes).size == result.size)
    }

    @Test("the CLI prepares WebP, reports the format, and a truncated WebP fails naming the file")
    func cli() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let run = try Tool.run(
            Tool.sharepipe, ["prepare", WebPFixtures.path("gps-orient6.webp"), "--out", directory, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            run.stdout.contains("\"format\":\"webp\"") && run.stdout.contains("\"orientationApplied\":6"),
            "\(run.stdout)")
        let output = try Fixtures.bytes(directory + "/gps-orient6.webp")
        #expect(try WebPFixtures.witnessDecode(output).size == PixelSize(width: 320, height: 240))

        let inspect = try Tool.run(Tool.sharepipe, ["inspect", WebPFixtures.path("animated.webp")])
        #expect(inspect.stdout.contains("WEBP 160×120") && inspect.stdout.contains("4 frames"), "\(inspect.stdout)")

        let broken = try Tool.run(
            Tool.sharepipe, ["prepare", Fixtures.path("broken/truncated.webp"), "--out", directory])
        #expect(broken.status == 1)
        #expect(broken.stderr.contains("truncated.webp: corrupt image"), "\(broken.stderr)")
    }

    @Test("an animated WebP becomes an animated GIF where the service takes GIF: frames, delays, loop count, pixels")
    func animationToGIF() throws {
        let result = try prepare("animated.webp", ServiceProfile.x.options())
        #expect(result.format == .gif && result.frameCount == 4)
        #expect(result.adjustments.contains("WEBP → GIF (animation)"))
        #expect(result.removedMetadata.isSuperset(of: [.exif, .gps]))
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let path = directory + "/animated.gif"
        try Fixtures.write(result.bytes, to: path)
        let info = try GIFWitness.gifsicleInfo(path)
        #expect(info.frames == 4 && info.loop == "2")  // 3 plays in WebP = the first + 2 repeats
        #expect(try GIFWitness.delaysAndDisposals(path).map(\.delay) == [10, 25, 4, 50])
        let frames = try GIFWitness.coalesced(path, size: PixelSize(width: 160, height: 120))
        #expect(frames.count == 4)
        let centre = (60 * 160 + 80) * 4, corner = (4 * 160 + 4) * 4
        let expected: [[Int]] = [[255, 255, 255], [0, 0, 0], [255, 255, 0], [0, 255, 255]]
        for (index, frame) in frames.enumerated() where frame.count == 160 * 120 * 4 {
            #expect(close(frame[centre..<centre + 3].map(Int.init), expected[index], tolerance: 12), "frame \(index)")
            #expect(close(frame[corner..<corner + 3].map(Int.init), [255, 0, 0], tolerance: 12), "frame \(index)")
        }
        #expect(!(try WebPFixtures.exiftool(result.bytes)).contains("GPS"))
    }

    @Test("where the service shows no animation: the first frame as a still, and the report says so (text and JSON)")
    func animationFirstFrame() throws {
        var options = ServiceProfile.bluesky.options()
        options.animationOutput = .still
        let result = try prepare("animated.webp", options)
        #expect(result.frameCount == 1 && result.format == .jpeg)
        #expect(result.adjustments.contains { $0.hasPrefix("first frame only (of 4") })
        #expect(result.adjustments.contains("WEBP → JPEG (accepted formats)"))
        let bitmap = try Decode.bitmap(result.bytes)
        #expect(close(bitmap.rgb(80, 60), [255, 255, 255], tolerance: 8))

        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let run = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", WebPFixtures.path("animated.webp"), "--out", directory,
                "--service", "bluesky", "--animation", "still", "--json",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("first frame only (of 4"), "\(run.stdout)")
        let text = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", WebPFixtures.path("animated.webp"), "--out", directory + "/text",
                "--service", "bluesky", "--animation", "still",
            ])
        #expect(text.stdout.contains("first frame only (of 4"), "\(text.stdout)")
    }

    @Test("services without WebP: JPEG for an opaque WebP, PNG where alpha matters; services with WebP keep it")
    func outputFormats() throws {
        let opaque = try prepare("gps-orient6.webp", ServiceProfile.bluesky.options())
        #expect(opaque.format == .jpeg && opaque.size == PixelSize(width: 320, height: 240))
        #expect(!(try WebPFixtures.exiftool(opaque.bytes)).contains("GPS"))
        let jpeg = try Decode.bitmap(opaque.bytes)
        #expect(
            close(jpeg.rgb(16, 16), [255, 0, 0], tolerance: 16)
                && close(jpeg.rgb(303, 223), [0, 0, 255], tolerance: 16))

        let transparent = try prepare("lossless-alpha.webp", ServiceProfile.bluesky.options())
        #expect(transparent.format == .png)
        let png = try Decode.bitmap(transparent.bytes)
        #expect(png.layout == .rgba && png.rgb(50, 100)[3] == 0 && abs(png.rgb(120, 60)[3] - 128) <= 1)

        for profile in [ServiceProfile.x, .mastodon, .telegram, .reddit, .tumblr, .discord] {
            #expect(profile.formats.contains(.webp), "\(profile.name)")
            #expect(try prepare("gps-orient6.webp", profile.options()).format == .webp, "\(profile.name)")
        }
        for profile in [ServiceProfile.bluesky, .instagram, .threads] {
            #expect(!profile.formats.contains(.webp), "\(profile.name)")
        }
    }

    @Test("memory: the pipeline's peak counts libwebp's scaled output buffer and stays under the estimate")
    func memory() throws {
        let options = PrepareOptions(maxShortEdge: 60)
        let info = try SharePipe.inspect(WebPFixtures.source("gps-orient6.webp"))
        let result = try prepare("gps-orient6.webp", options)
        let header = try #require(info.webp)
        let decoded = WebPDecoder.decodeSize(stored: info.size, target: PixelSize(width: 60, height: 80))
        #expect(decoded == PixelSize(width: 120, height: 160))
        #expect(result.peakPixelBytes >= WebPDecoder.libraryBytes(header, decoded: decoded))
        let estimate = try MemoryEstimate(info: info, options: options)
        #expect(
            estimate.meteredPixelBytes >= result.peakPixelBytes,
            "\(estimate.meteredPixelBytes) < \(result.peakPixelBytes)")
    }
}
