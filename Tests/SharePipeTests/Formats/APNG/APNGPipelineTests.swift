import Foundation
import Testing
@testable import SharePipe

/// APNG end to end through `SharePipe.prepare` and the CLI: an animated GIF where the service takes
/// animation (frames, delays, loop count, pixels, metadata), the first frame as a still elsewhere, reported.
@Suite(.tags(.witness), .skipped(whenListed: "witness")) struct APNGPipelineTests {
    static func path(_ name: String) -> String { Fixtures.path("apng/" + name) }

    /// Options that keep animation and write GIF (X's profile: GIF accepted, animation allowed).
    static var animatedOptions: PrepareOptions { ServiceProfile.x.options() }

    @Test func animationBecomesAGIFWithDelaysLoopAndPixels() throws {
        let result = try SharePipe.prepare(.file(path: Self.path("dispose-blend.png")), options: Self.animatedOptions)
        #expect(result.format == .gif)
        #expect(result.frameCount == 4)
        #expect(result.size == PixelSize(width: 64, height: 48))
        #expect(result.adjustments.contains { $0.contains("GIF") })
        let gif = try DecodedGIF(result.bytes)
        #expect(gif.frames.count == 4)
        #expect(gif.delays == [10, 25, 7, 150])  // centiseconds from 100, 250, 70, 1500 ms
        #expect(gif.container.loopCount == 2)  // num_plays 3 = NETSCAPE loop 2
        let (frames, _, _) = try APNGTests.frames(Self.path("dispose-blend.png"))
        for (index, picture) in gif.pictures.enumerated() {
            let difference = PictureDifference(picture, frames[index].canvas.pixels)
            #expect(difference.meanColorError < 4 && difference.alphaMismatch < 0.01, "frame \(index): \(difference)")
        }
        // Marked corners of frame 0; the transparent part of frame 2's source blend stays transparent.
        let first = Bitmap(size: gif.size, layout: .rgba, pixels: gif.pictures[0])
        #expect(APNGTests.rgba(first, 0, 0) == [255, 0, 0, 255])
        #expect(APNGTests.rgba(first, 63, 47) == [0, 0, 255, 255])
        #expect(gif.pictures[2][(35 * 64 + 41) * 4 + 3] == 0)
    }

    @Test func playCountsAndTheHiddenDefaultImage() throws {
        let hidden = try DecodedGIF(
            try SharePipe.prepare(.file(path: Self.path("hidden-default.png")), options: Self.animatedOptions).bytes)
        #expect(hidden.frames.count == 2)
        #expect(hidden.container.loopCount == 0)  // forever
        #expect(Array(hidden.pictures[0][0..<4]) == [0, 0, 255, 255])  // never the magenta fallback image
        let once = try DecodedGIF(
            try SharePipe.prepare(.file(path: Self.path("palette.png")), options: Self.animatedOptions).bytes)
        #expect(once.frames.count == 3)
        #expect(once.container.loopCount == nil)  // num_plays 1: no loop extension
    }

    @Test func withoutAnimationTheFirstFrameIsKeptAndReported() throws {
        var options = ServiceProfile.bluesky.options()
        options.strip = .all
        options.animation.allowed = false
        let result = try SharePipe.prepare(.file(path: Self.path("hidden-default.png")), options: options)
        #expect(result.frameCount == 1)
        #expect(result.format == .png)
        #expect(result.adjustments.contains { $0.contains("first frame only") })
        let still = try Decode.bitmap(result.bytes)
        #expect(still.pixel(x: 0, y: 0).prefix(3).map(Int.init) == [0, 0, 255])
        #expect(still.pixel(x: 39, y: 29).prefix(3).map(Int.init) == [0, 0, 255])
        #expect(!PNGListing.containsAnimationChunks(result.bytes))
    }

    @Test(arguments: [StripMode.all, .gps])
    func exifOrientationAppliedOnceAndPrivateMetadataGone(mode: StripMode) throws {
        var options = Self.animatedOptions
        options.strip = mode
        let result = try SharePipe.prepare(.file(path: Self.path("exif-gps-orient6.png")), options: options)
        #expect(result.format == .gif)
        #expect(result.frameCount == 2)
        #expect(result.size == PixelSize(width: 40, height: 60))  // displayed size: orientation 6 applied
        let gif = try DecodedGIF(result.bytes)
        let first = Bitmap(size: gif.size, layout: .rgba, pixels: gif.pictures[0])
        // Stored: red top-left, green top-right, blue bottom-right. Turned 90° clockwise: red top-right,
        // green bottom-right, blue bottom-left.
        #expect(APNGTests.rgba(first, 39, 0) == [255, 0, 0, 255])
        #expect(APNGTests.rgba(first, 39, 59) == [0, 255, 0, 255])
        #expect(APNGTests.rgba(first, 0, 59) == [0, 0, 255, 255])
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let output = directory + "/out.gif"
        try Fixtures.write(result.bytes, to: output)
        let witness = try Tool.run("exiftool", ["-a", "-G1", "-s", output]).stdout
        for secret in ["GPS", "secret", "private comment", "SharePipeCam", "Orientation"] {
            #expect(!witness.contains(secret), "\(mode): exiftool still shows \(secret)")
        }
    }

    @Test func animatedOutputFitsTheByteLimit() throws {
        var options = Self.animatedOptions
        options.animation.maxBytes = 1500
        let result = try SharePipe.prepare(.file(path: Self.path("dispose-blend.png")), options: options)
        #expect(result.format == .gif)
        #expect(result.byteCount <= 1500)
        #expect(result.frameCount >= 2)
    }

    @Test func inspectShowsTheFrames() throws {
        let run = try Tool.run(Tool.sharepipe, ["inspect", Self.path("dispose-blend.png"), "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("\"frameCount\":4") || run.stdout.contains("\"frames\":4"), "\(run.stdout)")
    }

    @Test func cliPreparesAnAPNGIntoAGIFAndSaysSo() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let run = try Tool.run(
            Tool.sharepipe, ["prepare", Self.path("dispose-blend.png"), "--out", directory, "--service", "x", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("\"format\":\"gif\""), "\(run.stdout)")
        // With --service the layout is out/<service>/… (docs/cli.md, "Output names").
        #expect(FileManager.default.fileExists(atPath: directory + "/x/dispose-blend.gif"))
    }

    @Test func cliTextSaysFirstFrameOnlyAndWarnsAboutABrokenAnimation() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let still = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", Self.path("hidden-default.png"), "--out", directory + "/a", "--service", "bluesky",
                "--animation", "still",
            ])
        #expect(still.status == 0, "\(still.stderr)")
        #expect(still.stdout.contains("first frame only (of 2; animations written as stills)"), "\(still.stdout)")
        let broken = try Tool.run(
            Tool.sharepipe, ["prepare", Self.path("broken-animation/bad-sequence.png"), "--out", directory + "/b"])
        #expect(broken.status == 0, "\(broken.stderr)")
        #expect(broken.stdout.contains("warnings: animation ignored"), "\(broken.stdout)")
    }
}

extension PNGListing {
    /// Whether PNG bytes still carry APNG chunks.
    static func containsAnimationChunks(_ bytes: [UInt8]) -> Bool {
        guard let listing = try? PNGListing(bytes) else { return false }
        return listing.types.contains { ["acTL", "fcTL", "fdAT"].contains($0) }
    }
}
