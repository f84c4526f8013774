import Foundation
import Testing
@testable import SharePipe

/// Limits before allocation: every limit refuses with `tooLarge` and its number, from the library and the
/// CLI; the defaults admit a 100 MP photo.
@Suite struct HardeningLimitsTests {
    static func expectTooLarge(
        _ source: ImageSource, _ options: PrepareOptions, _ phrase: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            let result = try SharePipe.prepare(source, options: options)
            Issue.record("prepared \(result.size) but expected tooLarge", sourceLocation: sourceLocation)
        } catch let error as SharePipeError {
            #expect(error.kind == "tooLarge", "\(error)", sourceLocation: sourceLocation)
            #expect(error.description.hasPrefix(source.displayName + ": "), "\(error)", sourceLocation: sourceLocation)
            #expect(error.description.contains(phrase), "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("not a SharePipeError: \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func defaultsAdmitA100MPPhotoAndRefuseA100000SquareHeader() throws {
        let limits = ImageLimits()
        try limits.check(width: 12_240, height: 8_160, file: "100mp.jpg")  // 99.9 MP
        let square = PixelSize(width: 100_000, height: 100_000)
        #expect(
            throws: SharePipeError.tooLarge(
                file: "h.png",
                exceeded: ExceededLimit(
                    .dimension, found: 100_000,
                    limit: 65_500, size: square))
        ) {
            try limits.check(width: 100_000, height: 100_000, file: "h.png")
        }
        let big = PixelSize(width: 60_000, height: 60_000)
        #expect(
            throws: SharePipeError.tooLarge(
                file: "w.jpg",
                exceeded: ExceededLimit(
                    .pixelArea, found: 3_600_000_000,
                    limit: 120_000_000, size: big))
        ) {
            try limits.check(width: 60_000, height: 60_000, file: "w.jpg")
        }
        #expect(
            SharePipeError.tooLarge(
                file: "w.jpg",
                exceeded: ExceededLimit(
                    .pixelArea, found: 3_600_000_000,
                    limit: 120_000_000, size: big)
            ).description
                == "w.jpg: image too large: 60000×60000 exceeds the pixel limit of 120000000 px")
        // A header whose area overflows is refused, not wrapped round to a small number.
        var wide = ImageLimits()
        wide.maxDimension = .max
        #expect(throws: SharePipeError.self) { try wide.check(width: Int.max / 2, height: 3, file: "x") }

        // A real 100 MP JPEG header: inspect reads it under the default limits.
        let header = HardeningJPEG.withSize(
            try Fixtures.bytes(Fixtures.path("jpeg/tiny-16x16.jpg")), width: 12_240, height: 8_160)
        #expect(try SharePipe.inspect(.bytes(header)).size == PixelSize(width: 12_240, height: 8_160))
    }

    @Test func pixelAndDimensionLimitsRefuseBeforeDecoding() throws {
        let source = ImageSource.file(path: Fixtures.path("jpeg/large-4000x3000.jpg"))
        var options = PrepareOptions()
        options.limits.maxPixels = 10_000_000
        Self.expectTooLarge(source, options, "4000×3000 exceeds the pixel limit of 10000000 px")
        options = PrepareOptions()
        options.limits.maxDimension = 3999
        Self.expectTooLarge(source, options, "4000×3000 exceeds the dimension limit of 3999 px")
        options = PrepareOptions()
        options.limits.maxPixels = 100
        Self.expectTooLarge(
            .file(path: Fixtures.path("png/photo-160x120.png")), options, "160×120 exceeds the pixel limit of 100 px")
        Self.expectTooLarge(.file(path: Fixtures.path("gif/loop3.gif")), options, "exceeds the pixel limit of 100 px")
    }

    @Test func inputBytesLimitRefusesBeforeReading() {
        var options = PrepareOptions()
        options.limits.maxInputBytes = 1000
        let path = Fixtures.path("jpeg/orient-1.jpg")
        Self.expectTooLarge(.file(path: path), options, "exceeds the input limit of 1000 bytes (file has 5067)")
        Self.expectTooLarge(.bytes([UInt8](repeating: 0, count: 1001)), options, "input limit of 1000 bytes")
    }

    @Test func frameLimitsRefuseAnimations() throws {
        let path = Fixtures.path("gif/loop3.gif")
        let info = try SharePipe.inspect(.file(path: path))
        #expect(info.frameCount > 1)
        var options = PrepareOptions()
        options.limits.maxFrames = info.frameCount - 1
        Self.expectTooLarge(.file(path: path), options, "frame limit of \(info.frameCount - 1)")
        options = PrepareOptions()
        options.limits.maxTotalFramePixels = info.size.area * info.frameCount - 1
        Self.expectTooLarge(.file(path: path), options, "\(info.size.area * info.frameCount - 1)")
    }

    /// libjpeg's `max_memory_to_use`: a progressive JPEG keeps every coefficient (1600×1200 → ~5.8 MB), the
    /// compact store about 1 MB at 8/8, in bands 0.5 MB; within 256 KB not even the non-zero map of every block
    /// (about 200 KB) and the smallest band fit.
    @Test func decoderMemoryLimitRefusesAProgressiveJPEG() throws {
        var options = PrepareOptions()
        options.limits.maxDecoderMemory = 256 << 10
        Self.expectTooLarge(
            .file(path: Fixtures.path("jpeg/progressive.jpg")), options,
            "1600×1200 exceeds the decoder memory limit of 262144 bytes")
        // Within 1 MB it decodes in bands (the store's band budget is half the limit).
        options.limits.maxDecoderMemory = 1 << 20
        _ = try SharePipe.prepare(.file(path: Fixtures.path("jpeg/progressive.jpg")), options: options)
        // The same file within the default limit decodes.
        _ = try SharePipe.prepare(
            .file(path: Fixtures.path("jpeg/progressive.jpg")), options: PrepareOptions(maxShortEdge: 100))
    }

    @Test func metadataLimitRefusesBeforeTheHeaderIsKept() throws {
        var options = PrepareOptions()
        options.limits.maxMetadataBytes = 64 << 10
        // icc-multichunk.jpg carries a 144 768-byte ICC profile in three APP2 segments.
        Self.expectTooLarge(
            .file(path: Fixtures.path("jpeg/icc-multichunk.jpg")), options,
            "exceeds the metadata limit of 65536 bytes (APPn/COM segments)")
        _ = try SharePipe.prepare(
            .file(path: Fixtures.path("jpeg/icc-multichunk.jpg")), options: PrepareOptions(maxShortEdge: 100))
    }

    @Test func nonPositiveLimitsAreInvalidOptions() {
        let limits: [(WritableKeyPath<ImageLimits, Int>, String)] = [
            (\.maxInputBytes, "maxInputBytes"), (\.maxFrames, "maxFrames"),
            (\.maxTotalFramePixels, "maxTotalFramePixels"),
            (\.maxDecoderMemory, "maxDecoderMemory"), (\.maxMetadataBytes, "maxMetadataBytes"),
            (\.maxPixels, "maxPixels"),
            (\.maxDimension, "maxDimension"),
        ]
        for (keyPath, name) in limits {
            var options = PrepareOptions()
            options.limits[keyPath: keyPath] = 0
            #expect(
                throws: SharePipeError.invalidOptions(
                    InvalidOption("limits." + name, expected: "a positive limit", found: "0"))
            ) {
                try options.validate()
            }
        }
    }

    @Test func cliLimitOptions() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let jpeg = Fixtures.path("jpeg/orient-1.jpg"), gif = Fixtures.path("gif/loop3.gif")
        let bytes = try Tool.run(Tool.sharepipe, ["prepare", jpeg, "--out", directory, "--max-input-bytes", "1000"])
        #expect(bytes.status == 1)
        #expect(
            bytes.stderr.contains("FAILED \(jpeg): too large: exceeds the input limit of 1000 bytes (file has 5067)"),
            "\(bytes.stderr)")

        let frames = try SharePipe.inspect(.file(path: gif)).frameCount
        let few = try Tool.run(
            Tool.sharepipe, ["prepare", gif, "--out", directory, "--max-frames", String(frames - 1)])
        #expect(few.status == 1)
        #expect(few.stderr.contains("frame limit of \(frames - 1)"), "\(few.stderr)")
        let enough = try Tool.run(Tool.sharepipe, ["prepare", gif, "--out", directory, "--max-frames", String(frames)])
        #expect(enough.status == 0, "\(enough.stderr)")

        let area = try Tool.run(
            Tool.sharepipe, ["prepare", gif, "--out", directory + "/2", "--max-frame-pixels", "100"])
        #expect(area.status == 1)
        #expect(area.stderr.contains("tooLarge") || area.stderr.contains("too large"), "\(area.stderr)")

        let pixels = try Tool.run(
            Tool.sharepipe, ["prepare", jpeg, "--out", directory + "/3", "--max-pixels", "1000", "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(pixels.stdout.utf8)) as? [String: Any]
        #expect(object?["errorKind"] as? String == "tooLarge")
        #expect((object?["error"] as? String)?.contains("600×400 exceeds the pixel limit of 1000 px") == true)
        let limit = object?["errorLimit"] as? [String: Any]
        #expect(
            limit?["kind"] as? String == "pixelArea" && limit?["found"] as? Int == 240_000
                && limit?["limit"] as? Int == 1000,
            "\(pixels.stdout)")

        let invalid = try Tool.run(Tool.sharepipe, ["prepare", jpeg, "--out", directory, "--max-input-bytes", "0"])
        #expect(invalid.status == 2)
        #expect(invalid.stderr.contains("--max-input-bytes"), "\(invalid.stderr)")
    }
}
