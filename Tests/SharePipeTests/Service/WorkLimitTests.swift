import Foundation
import Testing
@testable import SharePipe

/// Work priced from the header beside memory (`WorkEstimate`, `ImageLimits.maxWorkPerInputByte`): small files
/// declaring hundreds of megapixels — a HEIC or AVIF grid of thousands of tiles all pointing at one coded tile,
/// a zlib-bomb PNG and APNG, a lossless WebP of one-symbol codes, a GIF of 1×1 frames on a 4096×4096 screen, a
/// JPEG of one-code Huffman tables — are refused from their headers, before anything is decoded. The files are
/// made by scripts/fixtures/make-work-bombs.py, once per test process.
@Suite(.tags(.witness), .skipped(whenListed: "witness"), .serialized) struct WorkLimitTests {
    static let bombs: String = {
        let directory = NSTemporaryDirectory() + "sharepipe-work-bombs-\(getpid())"
        _ = try? Tool.run("python3", [Fixtures.root + "/scripts/fixtures/make-work-bombs.py", directory])
        return directory
    }()

    static let names = [
        "heic-grid.heic", "avif-grid.avif", "png.png", "apng.png", "webp.webp", "gif.gif", "jpeg.jpg",
    ]

    /// Limits under which a bomb's header can be read whole (no pixel or work limit).
    static let unlimited = ImageLimits(maxPixels: .max, maxWorkPerInputByte: .max)

    static func bomb(_ name: String) throws -> ImageSource {
        try Witness.require("heif-enc", "python3")
        let path = bombs + "/" + name
        try #require(
            FileManager.default.fileExists(atPath: path), "scripts/fixtures/make-work-bombs.py did not make \(name)")
        return .file(path: path)
    }

    @Test(arguments: names)
    func aSmallFileDeclaringHundredsOfMegapixelsIsRefusedFromItsHeader(_ name: String) throws {
        let source = try Self.bomb(name)
        #expect(try source.byteCount() <= 1 << 20)
        let info = try SharePipe.inspect(source, limits: Self.unlimited)
        let declared = info.frameCount > 1 ? info.size.area * info.frameCount : info.size.area
        #expect(declared >= 256_000_000, "\(name) declares \(declared) pixels (at least 256 MP)")
        // Refused before the render starts (the admission helper stops an admitted job at its second checkpoint).
        let exceeded = try #require(try LimitsByCostTests.admission(source, PrepareOptions()), "\(name) was admitted")
        #expect([.workPerInputByte, .pixelArea].contains(exceeded.kind), "\(name): \(exceeded)")
        // With every pixel limit out of the way, the work limit refuses each one, naming the limit and the figures.
        var options = PrepareOptions()
        options.limits.maxPixels = .max
        let work = try #require(try LimitsByCostTests.admission(source, options), "\(name) was admitted")
        #expect(work.kind == .workPerInputByte, "\(name): \(work)")
        #expect(work.limit == ImageLimits.defaultMaxWorkPerInputByte)
        #expect((work.found ?? 0) > ImageLimits.defaultMaxWorkPerInputByte)
        #expect(work.description.contains("the work limit of 200 pixels per input byte"), "\(work)")
        #expect(work.description.contains("from \(try source.byteCount()) bytes"), "\(work)")
    }

    /// A grid's tiles are priced from the `meta` box before libheif or libavif reads the items (libheif 1.15
    /// takes seconds to read 10,000): the probe itself refuses the grid bombs, within a fraction of a second.
    @Test(arguments: ["heic-grid.heic", "avif-grid.avif"])
    func gridBombsAreRefusedBeforeTheLibraryReadsTheirItems(_ name: String) throws {
        let source = try Self.bomb(name)
        let started = ContinuousClock.now
        #expect {
            _ = try SharePipe.inspect(source, limits: ImageLimits(maxPixels: .max))
        } throws: { error in
            guard case SharePipeError.tooLarge(_, let exceeded) = error else { return false }
            return exceeded.kind == .workPerInputByte && exceeded.size == nil
                && exceeded.detail?.contains("tiles") == true
        }
        #expect(ContinuousClock.now - started < .seconds(1))
    }

    @Test func gridTilesArePricedOneByOne() throws {
        let source = try Self.bomb("heic-grid.heic")
        let info = try SharePipe.inspect(source, limits: Self.unlimited)
        #expect(info.tileCount == 100 * 100)
        let work = try WorkEstimate(info: info, options: PrepareOptions())
        #expect(work.decodedPixels == 25600 * 25600)
        #expect(work.totalPixels == 25600 * 25600 + 10_000 * WorkEstimate.pixelsPerTile)
        let avif = try SharePipe.inspect(try Self.bomb("avif-grid.avif"), limits: Self.unlimited)
        #expect(avif.tileCount == 63 * 63)
    }

    @Test func animationsArePricedFramesTimesCanvas() throws {
        let info = try SharePipe.inspect(try Self.bomb("gif.gif"))
        let work = try WorkEstimate(info: info, options: PrepareOptions())
        #expect(work.decodedPixels == 16 * 4096 * 4096)
        var still = PrepareOptions()
        still.animation.allowed = false
        #expect(try WorkEstimate(info: info, options: still).decodedPixels == 4096 * 4096)
    }

    @Test func theLimitIsSettable() throws {
        let source = try Self.bomb("jpeg.jpg")
        var options = PrepareOptions()
        options.limits.maxWorkPerInputByte = 1_000
        #expect(try LimitsByCostTests.admission(source, options) == nil)
        options.limits.maxWorkPerInputByte = 250
        #expect(try LimitsByCostTests.admission(source, options)?.kind == .workPerInputByte)
    }

    /// Within `freeWorkPixels` no file is held to the limit, however few bytes it brings: a 6000×6000 PNG of
    /// zero rows (about 100 KB, 340 pixels a byte) is prepared.
    @Test func smallWorkIsNeverHeldToTheLimit() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let png = directory + "/flat.png"
        let script = """
            import struct, sys, zlib
            def chunk(kind, data):
                return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
            rows = zlib.compress(bytes(6000 * (1 + 3 * 6000)), 9)
            open(sys.argv[1], "wb").write(b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 6000, 6000, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", rows) + chunk(b"IEND", b""))
            """
        _ = try Tool.run("python3", ["-c", script, png])
        let source = ImageSource.file(path: png)
        let info = try SharePipe.inspect(source)
        let work = try WorkEstimate(info: info, options: PrepareOptions())
        #expect(work.pixelsPerInputByte > ImageLimits.defaultMaxWorkPerInputByte)
        #expect(work.totalPixels <= ImageLimits.freeWorkPixels)
        let prepared = try SharePipe.prepare(source, options: PrepareOptions())
        #expect(prepared.size == PixelSize(width: 1080, height: 1080))
    }

    /// The 200 MP grid HEIC of `LimitsByCostTests` (768 coded tiles) is within the limit and admitted.
    @Test func aRealSizedGridIsAdmitted() throws {
        let source = try LimitsByCostTests.bigGridSource()
        let info = try SharePipe.inspect(source)
        let work = try WorkEstimate(info: info, options: PrepareOptions())
        #expect(work.pixelsPerInputByte <= ImageLimits.defaultMaxWorkPerInputByte, "\(work)")
        #expect(try LimitsByCostTests.admission(source, PrepareOptions()) == nil)
    }

    /// The 200 MP Galaxy S24 Ultra HEIC of the shared corpus (2.4 MB, 83 pixels a byte) is admitted.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: Fixtures.corpus("heic/200MP.heic"))))
    func theRealTwoHundredMegapixelPhotoIsAdmitted() throws {
        let source = ImageSource.file(path: Fixtures.corpus("heic/200MP.heic"))
        #expect(try LimitsByCostTests.admission(source, PrepareOptions()) == nil)
    }

    @Test func theCLIRefusesEachBombAndGoesOn() throws {
        _ = try Self.bomb("jpeg.jpg")
        let out = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(out) }
        let started = Date()
        let run = try Tool.run(Tool.sharepipe, ["prepare", Self.bombs, "--out", out])
        #expect(run.status == 1)
        #expect(run.stdout.contains("processed 0, failed 7"), "\(run.stdout)")
        #expect(
            run.stderr.contains("jpeg.jpg: image too large: 16384×16000 exceeds the work limit of 200"), "\(run.stderr)"
        )
        #expect(
            run.stderr.contains("heic-grid.heic: too large: exceeds the work limit of 200 pixels per input byte"),
            "\(run.stderr)")
        #expect(Date().timeIntervalSince(started) < 20)
        let raised = try Tool.run(
            Tool.sharepipe, ["prepare", Self.bombs + "/gif.gif", "--out", out, "--max-work-per-byte", "100000000"])
        #expect(raised.status == 0, "\(raised.stderr)")
    }
}
