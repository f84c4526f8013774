import Foundation
import Testing

@testable import SharePipe

/// Animations written as H.264 MP4 (the video route), checked by outside witnesses: ffprobe reads each file
/// (codec, pixel format, frame count, every frame's duration), ffmpeg decodes its frames back for comparison with
/// the source's frames as ImageMagick composites them, and headless Chromium plays one. The inputs are made here:
/// a GIF of mixed delays (0 and 1 cs among them), disposals, local palettes and transparency; an APNG; an
/// animated WebP; an AVIF sequence.
@Suite(.tags(.witness), .skipped(whenListed: "witness"), .serialized) struct VideoRouteTests {
    /// The folder of generated inputs (made once per test process).
    static let fixtures: String = {
        let directory = NSTemporaryDirectory() + "sharepipe-video-fixtures-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func run(_ tool: String, _ arguments: [String]) {
            _ = try? Tool.run(tool, arguments)
        }
        // 64×48: red (0 cs), a lime patch disposed to previous (1 cs), a blue patch disposed to background
        // (7 cs), a gradient with its own palette (25 cs) disposed to background, so the white disc after it
        // (12 cs) shows on a transparent canvas.
        run(
            Witness.convert,
            [
                "-size", "64x48", "-delay", "0", "xc:red", "-dispose", "Previous", "-delay", "1", "-page", "+0+0",
                "(", "-size", "32x24", "xc:lime", ")", "-dispose", "Background", "-delay", "7", "-page", "+32+24",
                "(", "-size", "32x24", "xc:blue", ")", "-dispose", "Background", "-delay", "25", "-page", "+0+0",
                "(", "-size", "64x48", "gradient:yellow-purple", ")", "-dispose", "None", "-delay", "12",
                "-page", "+8+8",
                "(", "-size", "16x16", "xc:none", "-fill", "white", "-draw", "circle 8,8 8,2", ")",
                "-loop", "0", directory + "/mixed.gif",
            ])
        // Frames that repeat the one before: red (10 cs, then 20 cs), blue (30 cs, then 5 cs), red (40 cs).
        run(
            Witness.convert,
            [
                "-size", "48x32", "-delay", "10", "xc:red", "-delay", "20", "xc:red", "-delay", "30", "xc:blue",
                "-delay", "5", "xc:blue", "-delay", "40", "xc:red", "-loop", "0", directory + "/repeats.gif",
            ])
        // Red (10 cs), blue (2 cs), then red twice (10 cs each): at 30 frames a second the first red after blue
        // is dropped, so the second red follows blue on screen and must be written.
        run(
            Witness.convert,
            [
                "-size", "48x32", "-delay", "10", "xc:red", "-delay", "2", "xc:blue", "-delay", "10", "xc:red",
                "-delay", "10", "xc:red", "-loop", "0", directory + "/dropped-then-repeated.gif",
            ])
        for (name, colour) in [("red", "red"), ("green", "lime"), ("blue", "blue")] {
            run(Witness.convert, ["-size", "48x32", "xc:" + colour, "PNG24:" + directory + "/\(name).png"])
        }
        run(
            "img2webp",
            [
                "-lossless", "-loop", "0", "-d", "80", directory + "/red.png", "-d", "160", directory + "/green.png",
                "-d", "40", directory + "/blue.png", "-o", directory + "/anim.webp",
            ])
        // Half-transparent blue after opaque red: partial alpha, which GIF cannot hold and MP4 composites.
        run(Witness.convert, ["-size", "48x32", "xc:rgba(0,0,255,0.5)", "PNG32:" + directory + "/half.png"])
        run(
            "img2webp",
            [
                "-lossless", "-loop", "0", "-d", "100", directory + "/red.png", "-d", "100", directory + "/half.png",
                "-o", directory + "/alpha.webp",
            ])
        let exact = ["-s", "10", "-y", "444", "--min", "0", "--max", "0"]
        run(
            "avifenc",
            exact + [
                "--timescale", "10", "--duration", "1", directory + "/red.png", "--duration", "2",
                directory + "/green.png", "--duration", "3", directory + "/blue.png", directory + "/sequence.avif",
            ])
        FileManager.default.createFile(atPath: directory + "/anim.png", contents: Data(apng()))
        return directory
    }()

    static func path(_ name: String) -> String { fixtures + "/" + name }

    static let red: [Int] = [255, 0, 0], green: [Int] = [0, 255, 0], blue: [Int] = [0, 0, 255]

    /// An APNG of three 48×32 frames, red, green and blue, shown for 1/100 s (played as 100 ms), 33 ms and 1/4 s;
    /// the default image is the first frame.
    static func apng() -> [UInt8] {
        apng(size: PixelSize(width: 48, height: 32), frames: [(red, (1, 100)), (green, (33, 1000)), (blue, (1, 4))])
    }

    /// An APNG of flat frames of `size`: each an RGB colour and a delay (numerator, denominator in seconds).
    static func apng(size: PixelSize, frames: [([Int], (Int, Int))]) -> [UInt8] {
        func u32(_ value: Int) -> [UInt8] { APNGDefaultImageTests.u32(value) }
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            PNGChunk(type: PNGChunkType(name: type)!, data: data).serialized
        }
        func data(_ rgb: [Int]) -> [UInt8] {
            var raw: [UInt8] = []
            for _ in 0..<size.height {
                raw.append(0)
                for _ in 0..<size.width { raw += rgb.map(UInt8.init) }
            }
            return APNGDefaultImageTests.zlibStored(raw)
        }
        var out = PNGChunkWalker.signature
        out += chunk("IHDR", u32(size.width) + u32(size.height) + [8, 2, 0, 0, 0])
        out += chunk("acTL", u32(frames.count) + u32(0))
        var sequence = 0
        for (index, (colour, delay)) in frames.enumerated() {
            let delayBytes: [UInt8] = [
                UInt8(delay.0 >> 8), UInt8(delay.0 & 0xFF), UInt8(delay.1 >> 8), UInt8(delay.1 & 0xFF),
            ]
            out += chunk(
                "fcTL", u32(sequence) + u32(size.width) + u32(size.height) + u32(0) + u32(0) + delayBytes + [0, 0])
            sequence += 1
            if index == 0 {
                out += chunk("IDAT", data(colour))
            } else {
                out += chunk("fdAT", u32(sequence) + data(colour))
                sequence += 1
            }
        }
        return out + chunk("IEND", [])
    }

    /// What ffprobe says about a video file.
    struct Probe {
        var codec: String
        var pixelFormat: String
        var profile: String
        var size: PixelSize
        var frames: Int
        var colour: [String]
        var durationsMilliseconds: [Int]
    }

    static func probe(_ file: String) throws -> Probe {
        let output = try Tool.run(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries",
                "stream=codec_name,profile,pix_fmt,width,height,nb_frames,nb_read_frames,color_primaries,"
                    + "color_transfer,color_space:packet=duration_time", "-of", "json", file,
            ])
        #expect(output.status == 0, "ffprobe: \(output.stderr)")
        let json = try #require(JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        let stream = try #require((json["streams"] as? [[String: Any]])?.first)
        let packets = json["packets"] as? [[String: Any]] ?? []
        let read = Int(stream["nb_read_frames"] as? String ?? "") ?? -1
        #expect(Int(stream["nb_frames"] as? String ?? "") == read, "nb_frames and the frames decoded differ")
        return Probe(
            codec: stream["codec_name"] as? String ?? "", pixelFormat: stream["pix_fmt"] as? String ?? "",
            profile: stream["profile"] as? String ?? "",
            size: PixelSize(width: stream["width"] as? Int ?? 0, height: stream["height"] as? Int ?? 0),
            frames: read,
            colour: ["color_primaries", "color_transfer", "color_space"].map { stream[$0] as? String ?? "" },
            durationsMilliseconds: packets.map {
                Int(((Double($0["duration_time"] as? String ?? "") ?? -1) * 1000).rounded())
            })
    }

    /// The video's frames as ffmpeg decodes them, RGB24.
    static func decodedFrames(_ file: String, size: PixelSize) throws -> [[UInt8]] {
        let raw = file + ".rgb"
        let output = try Tool.run(
            "ffmpeg",
            ["-v", "error", "-y", "-i", file, "-vsync", "passthrough", "-f", "rawvideo", "-pix_fmt", "rgb24", raw])
        #expect(output.status == 0, "ffmpeg: \(output.stderr)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
        let frame = size.area * 3
        return stride(from: 0, to: bytes.count - frame + 1, by: frame).map { Array(bytes[$0..<$0 + frame]) }
    }

    /// The GIF's frames as ImageMagick composites them, flattened on white, RGB24.
    static func gifFrames(_ file: String, size: PixelSize) throws -> [[UInt8]] {
        let raw = file + ".coalesced.rgb"
        let output = try Tool.run(
            Witness.convert,
            [
                file, "-coalesce", "-background", "white", "-alpha", "remove", "-alpha", "off", "-depth", "8",
                "rgb:" + raw,
            ])
        #expect(output.status == 0, "convert: \(output.stderr)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
        let frame = size.area * 3
        return stride(from: 0, to: bytes.count - frame + 1, by: frame).map { Array(bytes[$0..<$0 + frame]) }
    }

    /// Mean absolute difference per channel between two RGB24 pictures.
    static func meanDifference(_ a: [UInt8], _ b: [UInt8]) -> Double {
        zip(a, b).reduce(0.0) { $0 + Double(abs(Int($1.0) - Int($1.1))) } / Double(max(1, a.count))
    }

    static func centre(_ frame: [UInt8], size: PixelSize) -> [Int] {
        let offset = ((size.height / 2) * size.width + size.width / 2) * 3
        return (0..<3).map { Int(frame[offset + $0]) }
    }

    static func close(_ a: [Int], _ b: [Int], _ tolerance: Int) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { abs($0 - $1) <= tolerance }
    }

    /// Prepares `name` for Bluesky and writes the MP4 beside the fixtures (named after `name` and `tag`).
    static func prepareForBluesky(
        _ name: String, options: PrepareOptions = ServiceProfile.bluesky.options(), tag: String = #function
    ) throws -> (result: PreparedImage, file: String) {
        try Witness.require(Witness.convert, "img2webp", "avifenc", "ffprobe", "ffmpeg")
        let result = try SharePipe.prepare(.file(path: path(name)), options: options)
        let file = path(name + "-" + tag.filter { $0.isLetter || $0.isNumber } + ".mp4")
        try Fixtures.write(result.bytes, to: file)
        return (result, file)
    }

    @Test func aGIFOfMixedDelaysDisposalsAndTransparencyBecomesAnMP4OfTheSameFramesAndTimes() throws {
        let (result, file) = try Self.prepareForBluesky("mixed.gif")
        #expect(result.format == .mp4 && result.size == PixelSize(width: 64, height: 48))
        #expect(result.adjustments.contains("animated GIF → MP4 (the service shows animation only as video)"))
        #expect(result.adjustments.contains { $0.hasPrefix("loop count not kept (the source looped forever") })
        #expect(
            result.adjustments.contains { $0.hasPrefix("transparency composited on #FFFFFF in 1 of 5 frames") },
            "\(result.adjustments)")
        let probe = try Self.probe(file)
        #expect(probe.codec == "h264" && probe.pixelFormat == "yuv420p" && probe.profile == "Main")
        #expect(probe.colour == ["bt709", "bt709", "bt709"])
        #expect(probe.size == result.size && probe.frames == 5)
        // Delays 0 and 1 cs play as 100 ms, as in Chromium; the others as stored.
        #expect(probe.durationsMilliseconds == [100, 100, 70, 250, 120], "\(probe.durationsMilliseconds)")
        // MP4 starts with ftyp, then moov (fast start), then mdat.
        let types = Self.topLevelBoxes(result.bytes)
        #expect(types == ["ftyp", "moov", "mdat"], "\(types)")
        // Each decoded frame matches ImageMagick's composite of the GIF's frame on white (H.264 at QP 23 on flat
        // colours and a gradient: a mean difference under 4 levels; a wrong frame, colour or disposal is 40+).
        let decoded = try Self.decodedFrames(file, size: probe.size)
        let expected = try Self.gifFrames(Self.path("mixed.gif"), size: probe.size)
        #expect(decoded.count == 5 && expected.count == 5)
        for (index, (got, want)) in zip(decoded, expected).enumerated() {
            let difference = Self.meanDifference(got, want)
            #expect(difference < 4, "frame \(index): mean difference \(difference)")
        }
    }

    @Test(arguments: [
        ("anim.png", [100, 33, 250]), ("anim.webp", [80, 160, 40]), ("sequence.avif", [100, 200, 300]),
    ])
    func otherAnimatedFormatsKeepEveryFrameAndDuration(_ name: String, durations: [Int]) throws {
        let (result, file) = try Self.prepareForBluesky(name)
        #expect(result.format == .mp4 && result.size == PixelSize(width: 48, height: 32), "\(name)")
        let probe = try Self.probe(file)
        #expect(probe.codec == "h264" && probe.pixelFormat == "yuv420p", "\(name)")
        #expect(
            probe.frames == 3 && probe.durationsMilliseconds == durations, "\(name): \(probe.durationsMilliseconds)")
        let decoded = try Self.decodedFrames(file, size: probe.size)
        try #require(decoded.count == 3, "\(name): \(decoded.count) frames decoded")
        for (index, colour) in [Self.red, Self.green, Self.blue].enumerated() {
            let got = Self.centre(decoded[index], size: probe.size)
            #expect(Self.close(got, colour, 6), "\(name) frame \(index): \(got), expected \(colour)")
        }
    }

    @Test func chromiumPlaysTheVideoWithTheSourcesFramesAtTheirTimes() throws {
        try Witness.require("chromium")
        let (_, file) = try Self.prepareForBluesky("anim.webp")
        // anim.webp: red 0–80 ms, green 80–240 ms, blue 240–280 ms.
        let played = try ChromiumVideo.sample(file, at: [0.04, 0.16, 0.26])
        #expect(abs(played.duration - 0.28) < 0.0105, "duration \(played.duration)")
        #expect(played.size == PixelSize(width: 48, height: 32))
        // The frames shown: red from 0, green from 80 ms, blue from 240 ms.
        #expect(
            played.mediaTimes.count == 3
                && zip(played.mediaTimes, [0, 0.08, 0.24]).allSatisfy { abs($0 - $1) < 0.0015 })
        for (index, colour) in [Self.red, Self.green, Self.blue].enumerated() {
            // Within 16 levels per channel: H.264 4:2:0 of a saturated flat colour at QP 23, converted back to RGB
            // by Chromium (measured: 12 on blue's blue, 11 on green's blue).
            #expect(Self.close(played.centres[index], colour, 16), "sample \(index): \(played.centres[index])")
        }
    }

    @Test func theWritersOwnEdgeCasesDecode() throws {
        try Witness.require(Witness.convert, "ffprobe")
        let directory = Self.fixtures
        // 1×1 (enlarged to 16×16), odd sizes (rounded down to even), 4096 wide (OpenH264's widest).
        for (size, expected) in [
            ("1x1", PixelSize(width: 16, height: 16)), ("33x17", PixelSize(width: 32, height: 16)),
            ("4096x18", PixelSize(width: 4096, height: 18)),
        ] {
            let gif = directory + "/edge-\(size).gif"
            _ = try Tool.run(
                Witness.convert, ["-size", size, "-delay", "5", "xc:red", "-delay", "5", "xc:blue", "-loop", "0", gif])
            var options = ServiceProfile.bluesky.options()
            options.maxShortEdge = 4096
            options.maxLongEdge = nil
            let result = try SharePipe.prepare(.file(path: gif), options: options)
            #expect(result.format == .mp4 && result.size == expected, "\(size): \(result.size)")
            let file = gif + ".mp4"
            try Fixtures.write(result.bytes, to: file)
            let probe = try Self.probe(file)
            #expect(probe.size == expected && probe.frames == 2 && probe.durationsMilliseconds == [50, 50], "\(size)")
            if size == "1x1" {
                #expect(result.adjustments.contains { $0.hasPrefix("enlarged to 16×16") }, "\(result.adjustments)")
            }
        }
    }

    @Test func longDurationsUseSixtyFourBitBoxesAndSurviveExactly() throws {
        try Witness.require("ffprobe")
        let meter = PixelMemoryMeter()
        let size = PixelSize(width: 32, height: 16)
        let encoder = try H264Encoder(size: size, quantizer: 23, frameRate: 1, keyInterval: 0, meter: meter)
        let writer = MP4Writer(size: size)
        // Four frames: 1 ms, then twice 4,000,000 s (each under 2^32 ms, stts's widest; over it in all), then
        // 655.35 s (GIF's longest delay).
        let starts = [0, 1, 4_000_000_001, 8_000_000_001]
        let total = starts[3] + 655_350
        for (index, start) in starts.enumerated() {
            let pixels = [UInt8](repeating: UInt8(80 * index), count: size.area * 4)
            let sample = try encoder.encode(pixels, timestampMilliseconds: start, background: 0xFFFFFF)
            try writer.append(sample.bytes, isKey: sample.isKey, startMilliseconds: start)
        }
        let (sps, pps) = try encoder.parameterSets()
        let written = try writer.finish(sps: sps, pps: pps, totalMilliseconds: total)
        let bytes = try written.file?.readAll() ?? written.bytes
        let file = Self.fixtures + "/long.mp4"
        try Fixtures.write(bytes, to: file)
        let probe = try Self.probe(file)
        #expect(probe.frames == 4)
        #expect(
            probe.durationsMilliseconds == [1, 4_000_000_000, 4_000_000_000, 655_350], "\(probe.durationsMilliseconds)")
    }

    @Test func aShortAnimationIsRepeatedUpToTheShortestVideoAndALongOneIsCut() throws {
        var options = ServiceProfile.bluesky.options()
        options.video.minDurationMilliseconds = 1000
        let (short, shortFile) = try Self.prepareForBluesky("anim.webp", options: options)
        // 280 ms × 4 = 1.12 s: the samples are stored once, listed four times.
        let probe = try Self.probe(shortFile)
        #expect(probe.frames == 12 && probe.durationsMilliseconds.reduce(0, +) == 1120)
        #expect(short.adjustments.contains { $0.hasPrefix("played 4 times in a row") }, "\(short.adjustments)")
        options.video.minDurationMilliseconds = nil
        options.video.maxDurationMilliseconds = 200
        let (cut, cutFile) = try Self.prepareForBluesky("anim.webp", options: options, tag: "cut")
        #expect(try Self.probe(cutFile).durationsMilliseconds == [80, 120])
        #expect(cut.adjustments.contains { $0.hasPrefix("cut at 0.2 s") }, "\(cut.adjustments)")
    }

    @Test func framesShorterThanTheFrameRateLimitAllowAreDroppedKeepingTheDuration() throws {
        var options = ServiceProfile.bluesky.options()
        options.video.maxFrameRate = 10  // 100 ms at least
        let (result, file) = try Self.prepareForBluesky("anim.png", options: options)
        let probe = try Self.probe(file)
        // Red 0–100 ms (1/100 s plays as 100 ms), green from 100 ms, blue from 133 ms: blue comes 33 ms after green
        // and is dropped, green shows until the end.
        #expect(probe.durationsMilliseconds == [100, 283], "\(probe.durationsMilliseconds)")
        #expect(result.adjustments.contains { $0.hasPrefix("1 of 3 frames dropped for the video frame-rate limit") })
    }

    @Test func framesRepeatingTheOneBeforeAreMergedIntoItsSampleWithExactDurations() throws {
        let (result, file) = try Self.prepareForBluesky("repeats.gif")
        let probe = try Self.probe(file)
        // Red 0–300 ms, blue 300–650 ms, red 650–1050 ms: three samples, the total unchanged.
        #expect(probe.frames == 3 && probe.durationsMilliseconds == [300, 350, 400], "\(probe.durationsMilliseconds)")
        // Five frames shown (two merged into the samples before them): none is reported as lost.
        #expect(result.frameCount == 5 && result.inputFrameCount == 5)
        #expect(
            result.adjustments.contains { $0.hasPrefix("2 of 5 frames identical to the frame before them merged") },
            "\(result.adjustments)")
        let decoded = try Self.decodedFrames(file, size: probe.size)
        try #require(decoded.count == 3)
        for (index, colour) in [Self.red, Self.blue, Self.red].enumerated() {
            let got = Self.centre(decoded[index], size: probe.size)
            #expect(Self.close(got, colour, 6), "frame \(index): \(got), expected \(colour)")
        }
    }

    @Test func aFrameRepeatingADroppedFrameIsWrittenNotMerged() throws {
        var options = ServiceProfile.bluesky.options()
        options.video.maxFrameRate = 30  // 34 ms at least
        let (result, file) = try Self.prepareForBluesky("dropped-then-repeated.gif", options: options)
        let probe = try Self.probe(file)
        // Red 0–100 ms, blue from 100 ms; the red at 120 ms is dropped (20 ms after blue), so blue shows until the
        // red at 220 ms, which is written although it repeats the dropped frame.
        #expect(probe.durationsMilliseconds == [100, 120, 100], "\(probe.durationsMilliseconds)")
        #expect(result.adjustments.contains { $0.hasPrefix("1 of 4 frames dropped for the video frame-rate limit") })
        #expect(!result.adjustments.contains { $0.contains("merged") }, "\(result.adjustments)")
        let decoded = try Self.decodedFrames(file, size: probe.size)
        try #require(decoded.count == 3)
        #expect(Self.close(Self.centre(decoded[2], size: probe.size), Self.red, 6))
    }

    @Test func keyFramesComeEveryTwoHundredFiftySamplesNotEverySecondsOfTime() throws {
        // 260 frames of 100 ms, one level of red (then of blue) apart: no scene change, none repeats the one
        // before; 26 s.
        let frames = (0..<260).map { ([min($0, 255), 0, max(0, $0 - 255)], (1, 10)) }
        try Fixtures.write(Self.apng(size: PixelSize(width: 32, height: 16), frames: frames), to: Self.path("reds.png"))
        let (_, video) = try Self.prepareForBluesky("reds.png")
        let output = try Tool.run(
            "ffprobe",
            ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=flags", "-of", "csv=p=0", video])
        let flags = output.stdout.split(separator: "\n").map(String.init)
        #expect(flags.count == 260)
        let keys = flags.indices.filter { flags[$0].hasPrefix("K") }
        #expect(keys == [0, 250], "\(keys)")
    }

    @Test func partialTransparencyIsReportedOnBothRoutes() throws {
        try Witness.require(Witness.convert, "img2webp")
        // GIF (X): the half-transparent frame cannot stay so, and the report says it.
        let gif = try SharePipe.prepare(.file(path: Self.path("alpha.webp")), options: ServiceProfile.x.options())
        #expect(gif.format == .gif)
        #expect(
            gif.adjustments.contains { $0.hasPrefix("partial transparency in 1 of 2 frames not kept") },
            "\(gif.adjustments)")
        // MP4 (Bluesky): composited on white, reported; half blue over white is (128, 128, 255).
        let (video, file) = try Self.prepareForBluesky("alpha.webp")
        #expect(video.adjustments.contains { $0.hasPrefix("transparency composited on #FFFFFF in 1 of 2 frames") })
        let decoded = try Self.decodedFrames(file, size: video.size)
        try #require(decoded.count == 2)
        let got = Self.centre(decoded[1], size: video.size)
        #expect(Self.close(got, [128, 128, 255], 6), "\(got)")
    }

    @Test func theAnimationOptionChoosesTheRoute() throws {
        try Witness.require(Witness.convert)
        let source = ImageSource.file(path: Self.path("mixed.gif"))
        var options = ServiceProfile.x.options()
        #expect(try SharePipe.prepare(source, options: options).format == .gif)
        options.animationOutput = .video
        let video = try SharePipe.prepare(source, options: options)
        #expect(video.format == .mp4 && video.adjustments.first == "animated GIF → MP4 (animation written as video)")
        options.animationOutput = .still
        let still = try SharePipe.prepare(source, options: options)
        #expect(still.format == .gif && still.frameCount == 1)
        #expect(still.adjustments.contains { $0.contains("animations written as stills") }, "\(still.adjustments)")
        let parsed = try PrepareOptions().applying(textValues: [("animation", "video")])
        #expect(parsed.animationOutput == .video)
    }

    /// The types of the top-level boxes.
    static func topLevelBoxes(_ bytes: [UInt8]) -> [String] {
        var types: [String] = []
        var offset = 0
        while offset + 8 <= bytes.count {
            var size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            types.append(String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self))
            if size == 1, offset + 16 <= bytes.count {
                size = bytes[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) }
            }
            guard size >= 8 else { break }
            offset += size
        }
        return types
    }
}

/// Headless Chromium playing a video (scripts/witnesses/video_frames.py, over the DevTools protocol): its duration
/// and size, and the centre pixel of the frame shown at each time asked for (seeked to, then read through
/// `requestVideoFrameCallback` and a canvas).
enum ChromiumVideo {
    struct Played {
        var duration: Double
        var size: PixelSize
        var centres: [[Int]]
        var mediaTimes: [Double]
    }

    static func sample(_ video: String, at times: [Double]) throws -> Played {
        let script = Fixtures.root + "/scripts/witnesses/video_frames.py"
        let output = try Tool.run("python3", [script, video] + times.map { "\($0)" })
        try #require(output.status == 0, "video_frames.py: \(output.stderr)")
        let object = try #require(JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        let frames = object["frames"] as? [[String: Any]] ?? []
        return Played(
            duration: object["duration"] as? Double ?? 0,
            size: PixelSize(width: object["width"] as? Int ?? 0, height: object["height"] as? Int ?? 0),
            centres: frames.map { $0["centre"] as? [Int] ?? [] },
            mediaTimes: frames.map { $0["mediaTime"] as? Double ?? -1 })
    }
}
