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
        // Long delays for a minimum frame rate: ten frames of 100 ms (red, lime, blue, ...); three of 1 s; and
        // mixed ones: red 0 cs (plays 100 ms), lime 4 cs, blue 1 s, red 7 cs then red again 30 cs (merged into
        // one sample of 370 ms), blue 2.5 s.
        let tenths = (0..<10).flatMap { ["-delay", "10", "xc:" + ["red", "lime", "blue"][$0 % 3]] }
        run(Witness.convert, ["-size", "48x32"] + tenths + ["-loop", "0", directory + "/tenths.gif"])
        run(
            Witness.convert,
            [
                "-size", "48x32", "-delay", "100", "xc:red", "-delay", "100", "xc:lime", "-delay", "100", "xc:blue",
                "-loop", "0", directory + "/seconds.gif",
            ])
        run(
            Witness.convert,
            [
                "-size", "48x32", "-delay", "0", "xc:red", "-delay", "4", "xc:lime", "-delay", "100", "xc:blue",
                "-delay", "7", "xc:red", "-delay", "30", "xc:red", "-delay", "250", "xc:blue", "-loop", "0",
                directory + "/slow-mixed.gif",
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
            try writer.append(sample.bytes, isKey: sample.isKey, start: start)
        }
        let (sps, pps) = try encoder.parameterSets()
        let written = try writer.finish(sps: sps, pps: pps, total: total)
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

    /// What ffprobe says about a video's timing: the stream's average frame rate, its time base, and each
    /// packet's duration (in the time base), size and key flag.
    struct Timing {
        var averageFrameRate: Double
        var timeBase: (Int, Int)
        var durations: [Int]
        var sizes: [Int]
        var keys: [Bool]

        /// A packet's duration in seconds.
        func seconds(_ ticks: Int) -> Double { Double(ticks * timeBase.0) / Double(timeBase.1) }
    }

    static func timing(_ file: String) throws -> Timing {
        let output = try Tool.run(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-show_entries",
                "stream=avg_frame_rate,time_base:packet=duration,size,flags", "-of", "json", file,
            ])
        #expect(output.status == 0, "ffprobe: \(output.stderr)")
        let json = try #require(JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
        let stream = try #require((json["streams"] as? [[String: Any]])?.first)
        func ratio(_ text: String?) -> (Int, Int) {
            let parts = (text ?? "").split(separator: "/").compactMap { Int($0) }
            return parts.count == 2 ? (parts[0], parts[1]) : (0, 1)
        }
        let rate = ratio(stream["avg_frame_rate"] as? String)
        let packets = json["packets"] as? [[String: Any]] ?? []
        return Timing(
            averageFrameRate: rate.1 == 0 ? 0 : Double(rate.0) / Double(rate.1),
            timeBase: ratio(stream["time_base"] as? String),
            durations: packets.map { $0["duration"] as? Int ?? Int($0["duration"] as? String ?? "") ?? -1 },
            sizes: packets.map { Int($0["size"] as? String ?? "") ?? $0["size"] as? Int ?? -1 },
            keys: packets.map { ($0["flags"] as? String ?? "").hasPrefix("K") })
    }

    @Test(arguments: [
        // GIF, its frames' colours, how long each sample shows (ms, identical frames merged), and the parts each
        // sample becomes at 23 fps (⌈ms · 23 / 1000⌉).
        (
            "tenths.gif", (0..<10).map { [VideoRouteTests.red, VideoRouteTests.green, VideoRouteTests.blue][$0 % 3] },
            Array(repeating: 100, count: 10), Array(repeating: 3, count: 10)
        ),
        (
            "seconds.gif", [VideoRouteTests.red, VideoRouteTests.green, VideoRouteTests.blue], [1000, 1000, 1000],
            [23, 23, 23]
        ),
        (
            "slow-mixed.gif",
            [
                VideoRouteTests.red, VideoRouteTests.green, VideoRouteTests.blue, VideoRouteTests.red,
                VideoRouteTests.blue,
            ], [100, 40, 1000, 370, 2500], [3, 1, 23, 9, 58]
        ),
    ])
    func aMinimumFrameRateRepeatsLongFramesKeepingTheirPicturesAndExactTimes(
        _ name: String, colours: [[Int]], milliseconds: [Int], parts: [Int]
    ) throws {
        let (result, file) = try Self.prepareForBluesky(
            name, options: ServiceProfile.threads.options(), tag: "threads")
        #expect(result.format == .mp4, "\(name)")
        let timing = try Self.timing(file)
        let samples = parts.reduce(0, +)
        let total = milliseconds.reduce(0, +)
        #expect(timing.durations.count == samples, "\(name): \(timing.durations.count) samples")
        // At least 23 frames a second on average and in every sample; the durations add up to the source's.
        #expect(timing.averageFrameRate >= 23, "\(name): \(timing.averageFrameRate) fps")
        let longest = timing.durations.map(timing.seconds).max() ?? 1
        #expect(longest <= 1.0 / 23 + 1e-9, "\(name): a sample of \(longest) s")
        let sum = timing.seconds(timing.durations.reduce(0, +))
        #expect(abs(sum - Double(total) / 1000) < 0.010, "\(name): \(sum) s, the source \(total) ms")
        // Exactly, in the video's time base (23,000 ticks a second: milliseconds and 1/23 s are whole ticks).
        #expect(timing.timeBase == (1, 23000), "\(name): \(timing.timeBase)")
        #expect(timing.durations.reduce(0, +) == total * 23, "\(name)")
        // Each source sample's parts are equal to a tick and add up to its duration.
        var index = 0
        for (duration, count) in zip(milliseconds, parts) {
            let own = Array(timing.durations[index..<min(index + count, timing.durations.count)])
            #expect(own.reduce(0, +) == duration * 23, "\(name): \(own)")
            #expect((own.max() ?? 0) - (own.min() ?? 0) <= 1, "\(name): \(own)")
            index += count
        }
        // The repeats are P pictures of a few bytes; the pictures are the source's, each for its time.
        var first = 0
        for count in parts {
            for repeatIndex in first + 1..<first + count {
                #expect(!timing.keys[repeatIndex] && timing.sizes[repeatIndex] <= 64, "\(name): \(timing.sizes)")
            }
            first += count
        }
        let decoded = try Self.decodedFrames(file, size: result.size)
        try #require(decoded.count == samples, "\(name): \(decoded.count) frames decoded")
        let expected = zip(colours, parts).flatMap { Array(repeating: $0.0, count: $0.1) }
        for (index, (frame, colour)) in zip(decoded, expected).enumerated() {
            let got = Self.centre(frame, size: result.size)
            #expect(Self.close(got, colour, 6), "\(name) frame \(index): \(got), expected \(colour)")
        }
        #expect(
            result.adjustments.contains {
                $0.hasPrefix(
                    "frame rate raised to at least 23 fps by repeating frames (the service asks for at least 23)")
            }, "\(result.adjustments)")
        // The frames shown are the source's (the repeats are not counted as frames).
        #expect(result.frameCount == colours.count + (name == "slow-mixed.gif" ? 1 : 0), "\(result.frameCount)")
    }

    @Test func onlyInstagramAndThreadsAskForAMinimumFrameRateAndOthersKeepMergedSamples() throws {
        for profile in ServiceProfile.builtIn {
            let expected = ["instagram", "threads"].contains(profile.name) ? 23 : nil
            #expect(profile.video.minFrameRate == expected, "\(profile.name)")
        }
        // Without a minimum a second-long frame stays one sample, and a report says nothing of frame rates.
        let (result, file) = try Self.prepareForBluesky("seconds.gif")
        let timing = try Self.timing(file)
        #expect(timing.durations.count == 3 && timing.timeBase == (1, 1000), "\(timing.durations)")
        #expect(!result.adjustments.contains { $0.contains("frame rate") }, "\(result.adjustments)")
    }

    @Test func theRepeatsCostTensOfBytesAtTenEightyLines() throws {
        try Witness.require(Witness.convert, "ffprobe")
        // A photo-like frame (plasma noise) shown for 1 s, then a second one: 1440×1080 (Threads' widest).
        let gif = Self.path("plasma-1080.gif")
        _ = try Tool.run(
            Witness.convert,
            [
                "-seed", "7", "-size", "1440x1080", "-delay", "100", "plasma:", "-delay", "100", "plasma:", "-loop",
                "0", gif,
            ])
        var options = ServiceProfile.threads.options()
        options.maxShortEdge = 1080
        options.maxBytes = nil
        let repeated = try SharePipe.prepare(.file(path: gif), options: options)
        options.video.minFrameRate = nil
        let plain = try SharePipe.prepare(.file(path: gif), options: options)
        #expect(repeated.size == PixelSize(width: 1440, height: 1080) && plain.size == repeated.size)
        // 44 repeats (22 a frame): the video grows by at most 200 bytes a repeat (measured: 65; OpenH264's first
        // repeat after a picture refines it a little, 159 bytes; the others are skipped macroblocks, 57 bytes, plus
        // 8 bytes of sample tables).
        let growth = repeated.byteCount - plain.byteCount
        #expect(growth > 0 && growth <= 44 * 200, "\(growth) bytes for 44 repeats")
        let file = gif + ".mp4"
        try Fixtures.write(repeated.bytes, to: file)
        let timing = try Self.timing(file)
        #expect(timing.durations.count == 46)
        let repeats = timing.sizes.indices.filter { $0 != 0 && $0 != 23 }.map { timing.sizes[$0] }
        let sorted = repeats.sorted()
        #expect(sorted[sorted.count / 2] <= 100, "median repeat \(sorted[sorted.count / 2]) bytes: \(repeats)")
    }

    @Test func chromiumPlaysTheRepeatedSamplesWithTheSourcesPicturesAndDuration() throws {
        try Witness.require("chromium")
        let (_, file) = try Self.prepareForBluesky(
            "slow-mixed.gif", options: ServiceProfile.threads.options(), tag: "chromium")
        // slow-mixed.gif: red 0–100 ms, lime to 140 ms, blue to 1140 ms, red to 1510 ms, blue to 4010 ms.
        let times = [0.05, 0.12, 0.6, 1.3, 3.0]
        let played = try ChromiumVideo.sample(file, at: times)
        #expect(abs(played.duration - 4.01) < 0.0105, "duration \(played.duration)")
        try #require(played.mediaTimes.count == times.count && played.centres.count == times.count)
        for (index, (time, colour)) in zip(times, [Self.red, Self.green, Self.blue, Self.red, Self.blue]).enumerated() {
            // The frame shown is a sample that started at most 1/23 s before: the repeats are played as samples.
            let shown = played.mediaTimes[index]
            #expect(shown <= time + 0.0015 && time - shown < 1.0 / 23 + 0.0015, "at \(time) s: frame of \(shown) s")
            #expect(Self.close(played.centres[index], colour, 16), "at \(time) s: \(played.centres[index])")
        }
    }

    @Test func repeatsAddNoKeyFrames() throws {
        // Two frames of 10 s, one level of red apart (no scene change): 460 samples at 23 fps, one key frame (the
        // interval counts the source's pictures, not their repeats).
        let frames = [([200, 0, 0], (10, 1)), ([201, 0, 0], (10, 1))]
        try Fixtures.write(Self.apng(size: PixelSize(width: 32, height: 16), frames: frames), to: Self.path("tens.png"))
        let (_, video) = try Self.prepareForBluesky("tens.png", options: ServiceProfile.threads.options())
        let timing = try Self.timing(video)
        #expect(timing.durations.count == 460 && timing.durations.allSatisfy { $0 == 1000 })
        #expect(timing.keys.indices.filter { timing.keys[$0] } == [0])
    }

    @Test func theFrameRateNoteIsInTheCommandLinesTextAndJSON() throws {
        try Witness.require(Witness.convert)
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        _ = Self.fixtures
        let gif = Self.path("seconds.gif")
        let text = try Tool.run(Tool.sharepipe, ["prepare", gif, "--out", directory + "/t", "--service", "instagram"])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("frame rate raised to at least 23 fps by repeating frames"), "\(text.stdout)")
        let json = try Tool.run(
            Tool.sharepipe, ["prepare", gif, "--out", directory + "/j", "--service", "instagram", "--json"])
        let object = try #require(
            JSONSerialization.jsonObject(with: Data((json.stdout.split(separator: "\n").first ?? "").utf8))
                as? [String: Any])
        #expect(
            (object["adjustments"] as? [String])?.contains {
                $0.hasPrefix("frame rate raised to at least 23 fps by repeating frames")
            } == true, "\(object)")
    }

    @Test func aRepeatBeforeAnyPictureIsAnErrorNotACrash() throws {
        let encoder = try H264Encoder(
            size: PixelSize(width: 16, height: 16), quantizer: 28, frameRate: 30, keyInterval: 0,
            meter: PixelMemoryMeter())
        #expect(throws: EncoderFailure.self) { try encoder.encodeRepeat(timestampMilliseconds: 0) }
        let first = try encoder.encode(
            [UInt8](repeating: 200, count: 16 * 16 * 4), timestampMilliseconds: 0, background: 0xFFFFFF)
        #expect(first.isKey && !first.bytes.isEmpty)
        let again = try encoder.encodeRepeat(timestampMilliseconds: 40)
        #expect(!again.isKey && !again.bytes.isEmpty && again.bytes.count < 32, "\(again.bytes.count) bytes")
    }

    @Test func framePacingKeepsMillisecondsAndTheLongestSampleWhole() {
        for (rate, timescale) in [(23, 23_000), (30, 3000), (24, 3000), (60, 3000), (25, 1000), (120, 3000), (7, 7000)]
        {
            let pacing = FramePacing(minFrameRate: rate)
            #expect(pacing.timescale == timescale && pacing.longestSample == timescale / rate, "\(rate)")
            #expect(pacing.timescale % 1000 == 0 && pacing.timescale % rate == 0)
            for milliseconds in [1, 10, 33, 43, 44, 100, 370, 1000, 2500, 655_350] {
                let ticks = pacing.ticks(milliseconds)
                let count = pacing.parts(ticks)
                let starts = (0..<count).map { FramePacing.offset(part: $0, of: count, ticks: ticks) } + [ticks]
                let lengths = zip(starts.dropFirst(), starts).map { $0 - $1 }
                #expect(lengths.reduce(0, +) == ticks && lengths.allSatisfy { $0 > 0 && $0 <= timescale / rate })
                // As few parts as the rate allows, each longer than half the longest when split.
                #expect(count == 1 || (ticks + count - 2) / (count - 1) > timescale / rate)
                #expect(count == 1 || lengths.allSatisfy { 2 * $0 >= timescale / rate })
            }
        }
        #expect(
            FramePacing(minFrameRate: nil).timescale == 1000 && FramePacing(minFrameRate: nil).parts(1_000_000) == 1)
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
