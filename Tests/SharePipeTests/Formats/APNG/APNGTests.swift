import Foundation
import Testing
@testable import SharePipe

/// APNG reading: the animation chunks found by the probe, and the frames composited by `APNGFrameSource`,
/// checked against hand-computed pixels and against ffmpeg's APNG decoder as an outside witness.
@Suite(.tags(.witness), .skipped(whenListed: "witness")) struct APNGTests {
    static func path(_ name: String) -> String { Fixtures.path("apng/" + name) }

    static func probe(_ path: String, limits: ImageLimits = ImageLimits()) throws -> ImageInfo {
        try PNGDecoder().probe(.file(path: path), limits: limits)
    }

    /// Every frame of an APNG, through the frame source, with the meter it counted in.
    static func frames(_ path: String) throws -> (
        frames: [AnimationFrame], source: APNGFrameSource, meter: PixelMemoryMeter
    ) {
        let info = try probe(path)
        let animation = try #require(info.pngAnimation)
        let meter = PixelMemoryMeter()
        var source = try APNGFrameSource(.file(path: path), animation: animation, limits: ImageLimits(), meter: meter)
        var frames: [AnimationFrame] = []
        while let frame = try source.nextFrame() { frames.append(frame) }
        return (frames, source, meter)
    }

    static func rgba(_ bitmap: Bitmap, _ x: Int, _ y: Int) -> [Int] { bitmap.pixel(x: x, y: y).map(Int.init) }

    @Test func probeReadsFramesPlaysAndDelays() throws {
        let info = try Self.probe(Self.path("dispose-blend.png"))
        #expect(info.format == .png)
        #expect(info.frameCount == 4)
        #expect(info.size == PixelSize(width: 64, height: 48))
        let animation = try #require(info.pngAnimation)
        #expect(animation.plays == 3)
        #expect(animation.loopCount == 2)  // 3 plays = GIF loop count 2
        #expect(animation.defaultImageIsFirstFrame)
        #expect(animation.frames.map(\.durationMilliseconds) == [100, 250, 70, 1500])
        #expect(animation.frames.map(\.dispose) == [.none, .previous, .background, .none])
        #expect(animation.frames.map(\.blend) == [.source, .over, .source, .over])
        #expect(info.probeWarnings.isEmpty)
    }

    @Test func disposeAndBlendCompositeAsTheSpecSays() throws {
        let (frames, source, meter) = try Self.frames(Self.path("dispose-blend.png"))
        #expect(frames.count == 4)
        #expect(source.loopCount == 2)
        #expect(frames.map(\.durationMilliseconds) == [100, 250, 70, 1500])
        for frame in frames {
            #expect(frame.canvas.size == PixelSize(width: 64, height: 48) && frame.canvas.layout == .rgba)
        }
        // Frame 0: marked corners on grey.
        let f0 = frames[0].canvas
        #expect(Self.rgba(f0, 0, 0) == [255, 0, 0, 255])
        #expect(Self.rgba(f0, 63, 0) == [0, 255, 0, 255])
        #expect(Self.rgba(f0, 63, 47) == [0, 0, 255, 255])
        #expect(Self.rgba(f0, 0, 47) == [128, 128, 128, 255])
        // Frame 1: red at α 128 over grey in 16×16 at (8,8): 255·128/255 + 128·127/255 ≈ 192, 128·127/255 ≈ 64.
        #expect(Self.rgba(frames[1].canvas, 10, 10) == [192, 64, 64, 255])
        #expect(Self.rgba(frames[1].canvas, 24, 24) == [128, 128, 128, 255])
        // Frame 2: frame 1 disposed to previous (grey again); source blend writes yellow and transparency.
        let f2 = frames[2].canvas
        #expect(Self.rgba(f2, 10, 10) == [128, 128, 128, 255])
        #expect(Self.rgba(f2, 50, 35) == [255, 255, 0, 255])
        #expect(Self.rgba(f2, 41, 35) == [0, 0, 0, 0])
        // Frame 3: frame 2's rectangle cleared (background); white at α 64 over grey at (0,38).
        let f3 = frames[3].canvas
        #expect(Self.rgba(f3, 50, 35) == [0, 0, 0, 0])
        #expect(Self.rgba(f3, 2, 40) == [160, 160, 160, 255])
        #expect(Self.rgba(f3, 63, 47) == [0, 0, 255, 255])  // outside every rectangle since frame 0
        // Everything counted is released after the last frame.
        #expect(meter.currentBytes == 0)
        #expect(meter.peakBytes >= 64 * 48 * 4)
        #expect(meter.peakBytes <= 64 * 48 * 4 + 16 * 16 * 4 + 64 * 8 * 2)
    }

    @Test func defaultImageOutsideTheAnimationIsNotAFrame() throws {
        let info = try Self.probe(Self.path("hidden-default.png"))
        #expect(info.frameCount == 2)
        #expect(info.pngAnimation?.defaultImageIsFirstFrame == false)
        let (frames, source, _) = try Self.frames(Self.path("hidden-default.png"))
        #expect(source.loopCount == 0)  // num_plays 0: forever
        #expect(frames.map(\.durationMilliseconds) == [200, 300])
        #expect(Self.rgba(frames[0].canvas, 0, 0) == [0, 0, 255, 255])  // never the magenta default image
        #expect(Self.rgba(frames[0].canvas, 39, 29) == [0, 0, 255, 255])
        #expect(Self.rgba(frames[1].canvas, 5, 5) == [0, 0, 255, 255])
        #expect(Self.rgba(frames[1].canvas, 30, 20) == [0, 255, 0, 255])
    }

    @Test func paletteFramesShareThePaletteAndTransparency() throws {
        let (frames, source, _) = try Self.frames(Self.path("palette.png"))
        #expect(source.loopCount == nil)  // num_plays 1: play once
        #expect(frames.count == 3)
        #expect(Self.rgba(frames[0].canvas, 3, 3) == [255, 0, 0, 255])
        #expect(Self.rgba(frames[0].canvas, 20, 3)[3] == 0)
        #expect(Self.rgba(frames[1].canvas, 28, 28) == [0, 255, 0, 255])
        #expect(Self.rgba(frames[2].canvas, 2, 28) == [0, 0, 255, 255])
        #expect(Self.rgba(frames[2].canvas, 28, 28) == [0, 255, 0, 255])
    }

    @Test func sixteenBitFramesAreReducedAndBlended() throws {
        let (frames, _, _) = try Self.frames(Self.path("rgba16.png"))
        #expect(frames.count == 2)
        #expect(Self.rgba(frames[0].canvas, 0, 0) == [128, 0, 0, 255])
        // blue at α 128 (0x8000) over (128, 0, 0): 128·127/255 ≈ 64, 255·128/255 = 128.
        #expect(Self.rgba(frames[1].canvas, 5, 5) == [64, 0, 128, 255])
        #expect(Self.rgba(frames[1].canvas, 20, 5) == [128, 0, 0, 255])
    }

    /// ffmpeg's APNG decoder as an outside witness: every composited frame equals its output.
    @Test(arguments: ["dispose-blend.png", "hidden-default.png", "palette.png", "exif-gps-orient6.png"])
    func framesMatchFFmpeg(name: String) throws {
        try Witness.require("ffmpeg")
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let raw = directory + "/frames.rgba"
        let run = try Tool.run(
            "ffmpeg",
            [
                "-v", "error", "-ignore_loop", "1", "-i", Self.path(name),
                "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "rgba", raw,
            ])
        try #require(run.status == 0, "ffmpeg: \(run.stderr)")
        let witness = try Fixtures.bytes(raw)
        let (frames, _, _) = try Self.frames(Self.path(name))
        let frameBytes = frames[0].canvas.byteCount
        #expect(witness.count == frameBytes * frames.count)
        for (index, frame) in frames.enumerated() where witness.count >= (index + 1) * frameBytes {
            let expected = witness[index * frameBytes..<(index + 1) * frameBytes]
            var worst = 0
            for (ours, theirs) in zip(frame.canvas.pixels.chunks4, Array(expected).chunks4) {
                // Fully transparent pixels may differ in colour: compare them by alpha only.
                let channels = ours[3] == 0 && theirs[3] == 0 ? [3] : [0, 1, 2, 3]
                for c in channels { worst = max(worst, abs(Int(ours[c]) - Int(theirs[c]))) }
            }
            #expect(worst <= 1, "frame \(index) differs from ffmpeg by up to \(worst)")
        }
    }

    @Test(arguments: ["bad-sequence.png", "frame-outside.png", "missing-fdat.png"])
    func brokenAnimationFallsBackToTheDefaultImage(name: String) throws {
        let path = Self.path("broken-animation/" + name)
        let info = try Self.probe(path)
        #expect(info.frameCount == 1)
        #expect(info.pngAnimation == nil)
        #expect(info.probeWarnings.contains { $0.hasPrefix("animation ignored") })
        let rendered = try PNGDecoder().render(
            .file(path: path), info: info, target: info.size, limits: ImageLimits(),
            meter: PixelMemoryMeter())
        #expect(rendered.bitmap.pixel(x: 3, y: 3).prefix(3).map(Int.init) == [0, 0, 255])
    }

    @Test func framesOverTheLimitsAreRefusedAtProbe() throws {
        let path = Self.path("dispose-blend.png")
        #expect(throws: SharePipeError.self) { try Self.probe(path, limits: ImageLimits(maxFrames: 3)) }
        do {
            _ = try Self.probe(path, limits: ImageLimits(maxTotalFramePixels: 64 * 48 * 3))
            Issue.record("4 frames of 64×48 passed a 3-canvas limit")
        } catch let SharePipeError.tooLarge(file, exceeded) {
            #expect(file == path)
            #expect(exceeded.kind == .totalFramePixels && exceeded.found == 64 * 48 * 4)
        }
        #expect(
            try Self.probe(path, limits: ImageLimits(maxFrames: 4, maxTotalFramePixels: 64 * 48 * 4)).frameCount == 4)
    }

    @Test func exifOrientationAndMetadataAreFound() throws {
        let info = try Self.probe(Self.path("exif-gps-orient6.png"))
        #expect(info.frameCount == 2)
        #expect(info.storedOrientationValue == 6)
        #expect(info.orientedSize == PixelSize(width: 40, height: 60))
        #expect(info.metadataKinds.contains(.exif))
        var hasGPS = false
        for case .exif(let tiff) in info.metadata { hasGPS = (try ExifEditor(tiff: tiff)).hasGPS }
        #expect(hasGPS)
    }

    @Test func truncatedFrameDataIsAnErrorNamingTheFile() throws {
        let bytes = try Fixtures.bytes(Self.path("dispose-blend.png"))
        // Cut inside the last fdAT: the probe's walk already fails on the truncated chunk.
        let cut = Array(bytes.prefix(bytes.count - 30))
        #expect(throws: SharePipeError.self) { try PNGDecoder().probe(.bytes(cut), limits: ImageLimits()) }
        // A frame whose data is damaged after a valid probe: a corrupt error naming the source.
        var damaged = bytes
        let info = try PNGDecoder().probe(.bytes(bytes), limits: ImageLimits())
        let fdat = try #require(Self.offset(of: "fdAT", in: bytes))
        damaged[fdat + 12] ^= 0xFF  // inside the payload: CRC no longer matches
        var source = try APNGFrameSource(
            .bytes(damaged), animation: try #require(info.pngAnimation),
            limits: ImageLimits(), meter: PixelMemoryMeter())
        _ = try source.nextFrame()
        #expect {
            _ = try source.nextFrame()
        } throws: { error in
            guard case SharePipeError.corrupt(let file, _, let reason)? = error as? SharePipeError else { return false }
            return file == "<memory>" && reason.contains("fdAT")
        }
    }

    @Test func aStillIsTheFirstAnimationFrameNotTheFallbackImage() throws {
        let path = Self.path("hidden-default.png")
        let info = try Self.probe(path)
        let meter = PixelMemoryMeter()
        let rendered = try PNGDecoder().render(
            .file(path: path), info: info, target: PixelSize(width: 20, height: 15),
            limits: ImageLimits(), meter: meter)
        #expect(rendered.bitmap.size == PixelSize(width: 20, height: 15))
        for (x, y) in [(0, 0), (19, 0), (0, 14), (19, 14)] {
            // Blue, not magenta.
            #expect(rendered.bitmap.pixel(x: x, y: y).map(Int.init) == [0, 0, 255, 255], "(\(x),\(y))")
        }
        #expect(meter.currentBytes == rendered.bitmap.byteCount || meter.currentBytes == 0)
        // With the default image as frame 0, the still is that image, corners in place.
        let marked = try PNGDecoder().render(
            .file(path: Self.path("dispose-blend.png")), info: try Self.probe(Self.path("dispose-blend.png")),
            target: PixelSize(width: 64, height: 48), limits: ImageLimits(), meter: PixelMemoryMeter())
        #expect(marked.bitmap.pixel(x: 0, y: 0).prefix(3).map(Int.init) == [255, 0, 0])
        #expect(marked.bitmap.pixel(x: 63, y: 47).prefix(3).map(Int.init) == [0, 0, 255])
    }

    @Test func aBrokenAnimationsWarningReachesTheRender() throws {
        let path = Self.path("broken-animation/bad-sequence.png")
        let info = try Self.probe(path)
        let rendered = try PNGDecoder().render(
            .file(path: path), info: info, target: info.size, limits: ImageLimits(),
            meter: PixelMemoryMeter())
        #expect(rendered.warnings.contains { $0.contains("sequence number 7 where 2 was expected") })
    }

    static func offset(of type: String, in bytes: [UInt8]) -> Int? {
        let pattern = Array(type.utf8)
        guard bytes.count >= 4 else { return nil }
        for i in 0..<(bytes.count - 4) where Array(bytes[i..<i + 4]) == pattern { return i - 4 }
        return nil
    }
}

private extension Array where Element == UInt8 {
    /// The bytes in groups of four (RGBA pixels).
    var chunks4: [[UInt8]] { stride(from: 0, to: count, by: 4).map { Array(self[$0..<$0 + 4]) } }
}
