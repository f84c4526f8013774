import Foundation
import Testing
@testable import SharePipe

/// Service profiles: every built-in profile met on a hard input, user profile files, several services at once.
@Suite(.serialized) struct ProfileTests {
    /// A noisy 24 MP JPEG (6000×4000, quality 92), made once: noise is what byte limits find hardest.
    /// The noise comes in 3×3 blocks so that it survives the 3.7× reduction to 1080 lines.
    static let noisy24MP: String = {
        // Deterministic, so one copy in the temporary directory serves every run.
        let path = NSTemporaryDirectory() + "sharepipe-test-noisy-24mp-v2.jpg"
        if FileManager.default.fileExists(atPath: path) { return path }
        let size = PixelSize(width: 6000, height: 4000)
        var pixels = [UInt8](repeating: 0, count: size.area * 3)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        pixels.withUnsafeMutableBufferPointer { buffer in
            // Independent noise per channel in 3×3 blocks, full amplitude.
            var blockNoise = [UInt8](repeating: 0, count: (size.width / 3 + 1) * 3)
            for y in 0..<size.height {
                if y % 3 == 0 {
                    for b in blockNoise.indices {
                        state = state &* 6364136223846793005 &+ 1442695040888963407
                        blockNoise[b] = UInt8(truncatingIfNeeded: state >> 56)
                    }
                }
                for x in 0..<size.width {
                    let i = (y * size.width + x) * 3, b = (x / 3) * 3
                    buffer[i] = blockNoise[b]
                    buffer[i + 1] = blockNoise[b + 1]
                    buffer[i + 2] = blockNoise[b + 2]
                }
            }
        }
        let bytes = try! JPEGEncoder().encode(
            Bitmap(size: size, layout: .rgb, pixels: pixels),
            settings: EncodeSettings(quality: 92, progressive: false), metadata: [])
        try! Fixtures.write(bytes, to: path + ".partial")
        try! FileManager.default.moveItem(atPath: path + ".partial", toPath: path)
        return path
    }()

    @Test(arguments: ServiceProfile.builtIn.map(\.name))
    func builtInProfileIsMetOnANoisy24MPJPEG(_ name: String) throws {
        let profile = try #require(ServiceProfile.named(name))
        let result = try SharePipe.prepare(.file(path: Self.noisy24MP), options: profile.options())
        #expect(result.byteCount <= profile.maxStillBytes, "\(result.byteCount) > \(profile.maxStillBytes)")
        #expect(profile.caps.admits(result.size), "\(result.size) breaks \(profile.caps)")
        #expect(profile.formats.contains(result.format))
        let decoded = try Decode.bitmap(result.bytes)
        #expect(decoded.size == result.size)
        #expect(abs(Double(decoded.width) / Double(decoded.height) - 1.5) < 0.01)
        // The highest quality that fits: one step up was measured at the same size and did not fit.
        if let quality = result.quality, quality < profile.maxQuality {
            let higher = result.attempts.first { $0.quality == quality + 1 && $0.size == result.size }
            #expect(higher.map { $0.bytes > profile.maxStillBytes } == true, "q\(quality + 1) not shown to miss")
        }
    }

    @Test func aTightLimitIsMetByQualityThenDimensions() throws {
        var profile = ServiceProfile.bluesky
        profile.maxStillBytes = 400_000
        let result = try SharePipe.prepare(.file(path: Self.noisy24MP), options: profile.options())
        #expect(result.byteCount <= 400_000)
        #expect(result.attempts.contains { !$0.fits })
        // Bluesky searches auto:80: at the first size at most two probes, `autoMeasures` scored candidates and
        // the recode's two files before the fixed-quality ladder (20 at most) takes over below their quality.
        let bound = 20 + 2 + QualityLadder.autoMeasures + 2
        #expect(result.attempts.count <= bound, "bounded search: \(result.attempts.count) encodes")
    }

    @Test func userProfileFileOverridesAndAdds() throws {
        let json = """
            {"profiles": [
              {"name": "discord", "maxStillBytes": 20971520},
              {"name": "myforum", "maxStillBytes": 300000, "maxShortEdge": 720, "strip": "gps",
               "animated": {"maxBytes": 1000000, "maxFrames": 50}}
            ]}
            """
        let catalog = try ProfileCatalog.builtIn.applying(json: Array(json.utf8), file: "profiles.json")
        #expect(catalog.named("discord")?.maxStillBytes == 20_971_520)
        #expect(catalog.named("discord")?.caps == ServiceProfile.discord.caps)  // untouched fields stay
        let forum = try #require(catalog.named("myforum"))
        #expect(forum.caps.shortEdge == 720 && forum.strip == .gps && forum.animation.maxFrames == 50)
        let result = try SharePipe.prepare(
            .file(path: Fixtures.path("jpeg/large-4000x3000.jpg")), options: forum.options())
        #expect(result.size.shortEdge == 720 && result.byteCount <= 300_000)
    }

    @Test(arguments: [
        (#"{"profiles": [{"name": "x", "maxStilBytes": 1}]}"#, "unknown field `profiles[0].maxStilBytes`"),
        (
            #"{"profiles": [{"name": "x", "maxStillBytes": "5MB"}]}"#,
            "field `profiles[0].maxStillBytes`: expected a whole number"
        ),
        (#"{"profiles": [{"name": "newsite"}]}"#, "missing field `profiles[0].maxStillBytes`"),
        (#"{"profiles": [{"name": "x", "maxShortEdge": 0}]}"#, "maxShortEdge"),
        (#"{"profiles": [{"name": "x", "strip": "some"}]}"#, "profiles[0].strip"),
        (#"{"profile": []}"#, "unknown field `profile`"),
        (#"{"profiles": [ "#, "not valid JSON"),
    ])
    func badProfileFilesNameTheField(_ json: String, _ expected: String) {
        #expect {
            try ProfileCatalog.builtIn.applying(json: Array(json.utf8), file: "bad.json")
        } throws: { error in
            let text = "\(error)"
            return text.contains("bad.json") && text.contains(expected)
        }
    }

    @Test func severalServicesInOneRunGiveOneCorrectOutputEach() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let services = ["x", "bluesky", "mastodon"]
        let run = try Tool.run(
            Tool.sharepipe,
            ["prepare", Self.noisy24MP, "--out", directory, "--json"]
                + services.flatMap { ["--service", $0] })
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.split(separator: "\n").count == 3)
        let name = URL(fileURLWithPath: Self.noisy24MP).lastPathComponent
        for service in services {
            let profile = try #require(ServiceProfile.named(service))
            let output = try Fixtures.bytes(directory + "/" + service + "/" + name)
            #expect(output.count <= profile.maxStillBytes)
            #expect(profile.caps.admits(try Decode.bitmap(output).size))
        }
    }

    /// A smooth JPEG of `size` (made once per size in the temporary directory).
    static func gradient(_ size: PixelSize) throws -> String {
        let path = NSTemporaryDirectory() + "sharepipe-test-gradient-\(size.width)x\(size.height).jpg"
        if FileManager.default.fileExists(atPath: path) { return path }
        var pixels = [UInt8](repeating: 0, count: size.area * 3)
        for y in 0..<size.height {
            for x in 0..<size.width {
                let i = (y * size.width + x) * 3
                pixels[i] = UInt8(x * 255 / size.width); pixels[i + 1] = UInt8(y * 255 / size.height);
                pixels[i + 2] = 128
            }
        }
        let bytes = try JPEGEncoder().encode(
            Bitmap(size: size, layout: .rgb, pixels: pixels),
            settings: EncodeSettings(quality: 90, progressive: false), metadata: [])
        try Fixtures.write(bytes, to: path + ".partial-\(getpid())")
        try? FileManager.default.moveItem(atPath: path + ".partial-\(getpid())", toPath: path)
        return path
    }

    /// The revision of 2026-11-26 (SERVICES.md): the numbers each profile carries.
    @Test func profilesCarryTheNumbersOf2026() throws {
        #expect(ServiceProfile.bluesky.maxStillBytes == 2_000_000 && ServiceProfile.bluesky.caps.longEdge == 4000)
        #expect(
            ServiceProfile.tumblr.maxStillBytes == 10_000_000 && ServiceProfile.tumblr.animation.maxBytes == 10_000_000)
        #expect(ServiceProfile.facebook.maxStillBytes == 4_000_000)
        #expect(
            ServiceProfile.discord.maxStillBytes == 10_485_760
                && ServiceProfile.discord.animation.maxBytes == 10_485_760)
        #expect(ServiceProfile.reddit.animation.maxBytes == 20_000_000)
        #expect(ServiceProfile.mastodon.formats.contains(.heif) && ServiceProfile.mastodon.formats.contains(.avif))
        let pixelfed = try #require(ServiceProfile.named("pixelfed"))
        #expect(pixelfed.maxStillBytes == 15_360_000 && !pixelfed.formats.contains(.webp))
        let lemmy = try #require(ServiceProfile.named("lemmy"))
        #expect(
            lemmy.maxStillBytes == 40_000_000 && lemmy.animation.maxFrames == 900
                && lemmy.animation.maxPixels == 2_073_600)
        // Formats SharePipe only reads are never handed to the pipeline as outputs.
        #expect(ServiceProfile.mastodon.options().acceptedFormats == [.jpeg, .png, .gif, .webp])
        #expect(lemmy.options().acceptedFormats == [.jpeg, .png, .gif, .webp])
    }

    @Test func revisedCapsShapeTheOutputs() throws {
        // A 6000×1000 panorama: the short edge is under 1080, so Bluesky's long edge decides (4000, was 2000).
        let panorama = try Self.gradient(PixelSize(width: 6000, height: 1000))
        let bluesky = try SharePipe.prepare(.file(path: panorama), options: ServiceProfile.bluesky.options())
        #expect(bluesky.size.width == 4000 && abs(bluesky.size.height - 667) <= 1, "\(bluesky.size)")
        #expect(bluesky.byteCount <= 2_000_000)
        // A 1200×1800 portrait: Pixelfed's 1080×1350 portrait box, Lemmy's 1024 px resize.
        let portrait = try Self.gradient(PixelSize(width: 1200, height: 1800))
        let pixelfed = try SharePipe.prepare(
            .file(path: portrait), options: try #require(ServiceProfile.named("pixelfed")).options())
        #expect(pixelfed.size == PixelSize(width: 900, height: 1350), "\(pixelfed.size)")
        let lemmy = try SharePipe.prepare(
            .file(path: portrait), options: try #require(ServiceProfile.named("lemmy")).options())
        #expect(lemmy.size.height == 1024 && abs(lemmy.size.width - 683) <= 1, "\(lemmy.size)")
        // Mastodon takes HEIC and AVIF, but SharePipe writes them as JPEG (PNG with alpha), as before.
        let heic = try SharePipe.prepare(
            .file(path: Fixtures.path("heif/p3-nclx.heic")), options: ServiceProfile.mastodon.options())
        #expect(heic.format == .jpeg)
        let avif = try SharePipe.prepare(
            .file(path: Fixtures.path("heif/alpha.avif")), options: ServiceProfile.mastodon.options())
        #expect(avif.format == .png)
    }

    @Test func servicesCommandListsEveryProfile() throws {
        let text = try Tool.run(Tool.sharepipe, ["services"])
        for profile in ServiceProfile.builtIn { #expect(text.stdout.contains(profile.name + " ")) }
        // A video's lowest frame rate shows in the text (Threads: ≤ 300 s, ≥ 23 fps) and the JSON.
        let threadsLine = text.stdout.split(separator: "\n").first { $0.hasPrefix("threads ") } ?? ""
        #expect(threadsLine.contains("≤ 300 s ≥ 23 fps"), "\(threadsLine)")
        let json = try Tool.run(Tool.sharepipe, ["services", "--json"])
        let list = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as! [[String: Any]]
        #expect(list.count == ServiceProfile.builtIn.count)
        #expect(list.first { $0["name"] as? String == "bluesky" }?["maxStillBytes"] as? Int == 2_000_000)
        let threads = list.first { $0["name"] as? String == "threads" }?["video"] as? [String: Any]
        #expect(threads?["minFrameRate"] as? Int == 23, "\(String(describing: threads))")
    }
}
