import Foundation
import Testing
@testable import SharePipe

/// Default limits follow what a job costs: an image over the default pixel limit (120 MP)
/// is taken when its still route streams it — priced by `MemoryEstimate` from the header under one byte per
/// pixel and within `maxStreamedMemory` — and refused as before when its route holds a full-resolution bitmap;
/// a set `maxPixels` applies as given. Every decision is made on the header, before anything is decoded:
/// these tests stop each admitted job at the pipeline's checkpoint just before the render.
@Suite(.tags(.witness), .skipped(whenListed: "witness"), .serialized) struct LimitsByCostTests {
    /// A 200 MP grid HEIC as a Galaxy S24 Ultra stores one (16320×12240 in 32×24 tiles of 512×512), every tile
    /// the same heif-enc tile (a blurred plasma: about 4.5 KB coded, near the 3 KB a tile of a real S24 Ultra
    /// photo, so the file brings as many bytes per pixel as a real one: `ImageLimits.maxWorkPerInputByte`),
    /// assembled by scripts/fixtures/make-grid-heic.py; made once per test process.
    static let bigGrid: String = {
        let directory = NSTemporaryDirectory() + "sharepipe-limits-by-cost-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        _ = try? Tool.run(
            Witness.convert,
            ["-seed", "7", "-size", "512x512", "plasma:fractal", "-blur", "0x8", "PNG24:" + directory + "/tile.png"])
        _ = try? Tool.run("heif-enc", ["-q", "50", directory + "/tile.png", "-o", directory + "/tile.heic"])
        let tiles = [String](repeating: directory + "/tile.heic", count: 32 * 24)
        _ = try? Tool.run(
            "python3",
            [
                Fixtures.root + "/scripts/fixtures/make-grid-heic.py", directory + "/grid-200mp.heic",
                "16320", "12240", "32", "24",
            ] + tiles + ["--iphone"])
        return directory + "/grid-200mp.heic"
    }()

    static func bigGridSource() throws -> ImageSource {
        try Witness.require(Witness.convert, "heif-enc", "python3")
        try #require(FileManager.default.fileExists(atPath: bigGrid), "the 200 MP grid HEIC was not made")
        return .file(path: bigGrid)
    }

    /// Stops a job at the pipeline's second checkpoint (after the probe, the plan and the cost check, just
    /// before the still render starts): reaching it means the job was admitted.
    struct Admitted: Error {}

    /// Whether `prepare` gets past every limit to the render, or the `tooLarge` it throws first.
    static func admission(_ source: ImageSource, _ options: PrepareOptions) throws -> ExceededLimit? {
        var calls = 0
        do {
            _ = try Pipeline.prepare(
                source, options: try options.checked(),
                checkpoint: {
                    calls += 1
                    if calls == 2 { throw Admitted() }
                })
            Issue.record("the job ran to the end without its checkpoint")
            return nil
        } catch is Admitted {
            return nil
        } catch SharePipeError.tooLarge(_, let exceeded) {
            return exceeded
        }
    }

    /// A PNG of `width`×`height` with no image data: only its header is read before the limits decide.
    static func pngHeader(width: Int, height: Int, interlaced: Bool) -> [UInt8] {
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            let body = Array(type.utf8) + data
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in body {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
            }
            crc = ~crc
            return [
                UInt8(data.count >> 24), UInt8(data.count >> 16 & 255), UInt8(data.count >> 8 & 255),
                UInt8(data.count & 255),
            ]
                + body + [UInt8(crc >> 24), UInt8(crc >> 16 & 255), UInt8(crc >> 8 & 255), UInt8(crc & 255)]
        }
        let be32 = { (value: Int) in
            [UInt8(value >> 24), UInt8(value >> 16 & 255), UInt8(value >> 8 & 255), UInt8(value & 255)]
        }
        let ihdr = be32(width) + be32(height) + [8, 2, 0, 0, interlaced ? 1 : 0]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", ihdr)
            + chunk("IDAT", [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])
            + chunk("IEND", [])
    }

    @Test func a200MPGridHEICIsTakenByDefaultAndPricedAsItStreams() throws {
        let source = try Self.bigGridSource()
        let info = try SharePipe.inspect(source)
        #expect(info.size == PixelSize(width: 16_320, height: 12_240) && info.heifGrid?.columns == 32)
        let options = ServiceProfile.x.options()
        #expect(!options.limits.isPixelLimitSet && options.limits.maxPixels == 120_000_000)
        let estimate = try MemoryEstimate(info: info, options: options)
        // About 60 MB: one row of tiles (16320×512 at 4:2:0), two tile decoders, the resampler's window.
        #expect(
            estimate.totalBytes < info.size.area && estimate.totalBytes <= options.limits.maxStreamedMemory,
            "\(estimate)")
        #expect(estimate.totalBytes < 100_000_000, "\(estimate)")
        #expect(try Self.admission(source, options) == nil)
    }

    @Test func aStreamedJobOverTheMemoryCeilingIsRefusedBeforeDecoding() throws {
        let source = try Self.bigGridSource()
        var options = ServiceProfile.x.options()
        let priced = try MemoryEstimate(info: try SharePipe.inspect(source), options: options).totalBytes
        options.limits.maxStreamedMemory = priced - 1
        let exceeded = try #require(try Self.admission(source, options))
        #expect(exceeded.kind == .streamedMemory && exceeded.found == priced && exceeded.limit == priced - 1)
        #expect(
            exceeded.description.contains(
                "exceeds the memory limit of \(priced - 1) bytes for images over the default pixel limit"),
            "\(exceeded)")
        // Through the public entry: the error names the file.
        #expect {
            _ = try SharePipe.prepare(source, options: options)
        } throws: { error in
            "\(error)".hasPrefix(Self.bigGrid + ": image too large: 16320×12240 exceeds the memory limit")
        }
    }

    @Test func aSetPixelLimitAppliesToStreamedRoutesAsGiven() throws {
        let source = try Self.bigGridSource()
        for limit in [120_000_000, 199_000_000] {
            var options = ServiceProfile.x.options()
            options.limits.maxPixels = limit
            #expect(options.limits.isPixelLimitSet)
            let exceeded = try #require(try Self.admission(source, options))
            #expect(exceeded.kind == .pixelArea && exceeded.limit == limit && exceeded.found == 16_320 * 12_240)
        }
        var options = ServiceProfile.x.options()
        options.limits.maxPixels = 200_000_000
        #expect(try Self.admission(source, options) == nil)
    }

    /// Routes that hold the whole image stay under the default pixel limit, with the message they had.
    @Test func fullResolutionRoutesKeepTheDefaultPixelLimit() throws {
        let big = PixelSize(width: 16_320, height: 12_240)
        // An interlaced PNG keeps every even row (Adam7): priced over a byte per pixel.
        let interlaced = try #require(
            try Self.admission(
                .bytes(Self.pngHeader(width: big.width, height: big.height, interlaced: true)),
                ServiceProfile.x.options()))
        #expect(interlaced.kind == .pixelArea && interlaced.limit == 120_000_000 && interlaced.size == big)
        #expect(
            interlaced.description.hasPrefix("image too large: 16320×12240 exceeds the pixel limit of 120000000 px"),
            "\(interlaced)")
        // A GIF's canvas is whole: a screen that size is refused on its header, as before.
        let gif: [UInt8] =
            Array("GIF89a".utf8) + [
                UInt8(big.width & 255), UInt8(big.width >> 8), UInt8(big.height & 255),
                UInt8(big.height >> 8), 0, 0, 0, 0x3B,
            ]
        let screen = try #require(try Self.admission(.bytes(gif), ServiceProfile.x.options()))
        #expect(screen.kind == .pixelArea && screen.limit == 120_000_000 && screen.size == big)
        // A baseline JPEG shrunk on load, a progressive one (only the coefficients its DCT scale reads, banded)
        // and a non-interlaced PNG stream: taken by the memory model. (These headers bring a few bytes for
        // 200 MP, which the work limit refuses by default, `WorkLimitTests`: it is lifted here.)
        var streaming = ServiceProfile.x.options()
        streaming.limits.maxWorkPerInputByte = .max
        #expect(
            try Self.admission(
                .bytes(Self.pngHeader(width: big.width, height: big.height, interlaced: false)),
                ServiceProfile.x.options())?.kind == .workPerInputByte)
        let progressive = HardeningJPEG.withSize(
            try Fixtures.bytes(Fixtures.path("jpeg/progressive.jpg")), width: big.width, height: big.height)
        #expect(try Self.admission(.bytes(progressive), streaming) == nil)
        let baseline = HardeningJPEG.withSize(
            try Fixtures.bytes(Fixtures.path("jpeg/tiny-16x16.jpg")), width: big.width, height: big.height)
        #expect(try Self.admission(.bytes(baseline), streaming) == nil)
        #expect(
            try Self.admission(
                .bytes(Self.pngHeader(width: big.width, height: big.height, interlaced: false)), streaming) == nil)
    }

    /// Bombs are refused on their headers as before: past the streamed routes' ceiling (1 GP), the refusal
    /// names the pixel limit.
    @Test func bombsPastTheStreamedCeilingAreRefusedOnTheHeader() throws {
        let limits = ImageLimits()
        try limits.checkHeader(width: 40_000, height: 25_000, file: "1gp.jpg")  // exactly 1 GP
        #expect(
            throws: SharePipeError.tooLarge(
                file: "w.jpg",
                exceeded: ExceededLimit(
                    .pixelArea, found: 1_000_025_000, limit: 120_000_000,
                    size: PixelSize(width: 40_001, height: 25_000)))
        ) {
            try limits.checkHeader(width: 40_001, height: 25_000, file: "w.jpg")
        }
        let header = HardeningJPEG.withSize(
            try Fixtures.bytes(Fixtures.path("jpeg/tiny-16x16.jpg")), width: 60_000, height: 60_000)
        let start = Date()
        let exceeded = try #require(try Self.admission(.bytes(header), ServiceProfile.x.options()))
        #expect(exceeded.kind == .pixelArea && exceeded.limit == 120_000_000 && exceeded.found == 3_600_000_000)
        #expect(Date().timeIntervalSince(start) < 1)
    }

    /// The limits encode `maxPixels` only when it is set; reading them back keeps it unset.
    @Test func unsetPixelLimitSurvivesCoding() throws {
        let defaults = ImageLimits()
        let text = String(decoding: try JSONEncoder().encode(defaults), as: UTF8.self)
        #expect(!text.contains("maxPixels") && text.contains("maxStreamedMemory"))
        #expect(try JSONDecoder().decode(ImageLimits.self, from: Data(text.utf8)) == defaults)
        var set = ImageLimits()
        set.maxPixels = 5
        #expect(try JSONDecoder().decode(ImageLimits.self, from: JSONEncoder().encode(set)) == set)
        #expect(OptionTable.limitsMaxStreamedMemory.flag == "--max-streamed-memory")
        #expect(OptionTable.limitsMaxPixels.defaultValue == "120000000")
    }
}
