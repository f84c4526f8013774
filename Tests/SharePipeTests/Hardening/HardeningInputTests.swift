import Foundation
import Testing
@testable import SharePipe

/// Bad input of every kind: a clear error naming the file and the reason, never a crash, a hang or an
/// output; recoverable damage is reported in `warnings` and the image is still prepared.
@Suite struct HardeningInputTests {
    /// Every committed broken input, with the error kind and a phrase its message must contain.
    static let broken: [(file: String, kind: String, reason: String)] = [
        ("empty.jpg", "unsupportedFormat", "file is empty"),
        ("not-an-image.png", "unsupportedFormat", "not a JPEG, PNG, GIF, WebP, HEIC or AVIF"),
        ("no-sof.jpg", "corrupt", "no image"),
        ("sos-before-sof.jpg", "corrupt", "SOS before SOF"),
        ("huge-header.jpg", "tooLarge", "65000×65000 exceeds the pixel limit of 120000000"),
        ("lying-header.jpg", "corrupt", "image data ends before the last row"),
        ("cut-with-eoi.jpg", "corrupt", "image data ends before the last row"),
        ("truncated.jpg", "corrupt", "truncated"),
        ("many-segments.jpg", "tooLarge", "limit of 10000 metadata segments"),
        ("many-scans.jpg", "tooLarge", "limit of 500 progressive scans"),
        ("bad-crc-ihdr.png", "corrupt", "CRC"),
        ("idat-before-ihdr.png", "corrupt", "IHDR"),
        ("plte-after-idat.png", "corrupt", "PLTE"),
        ("no-iend.png", "corrupt", "truncated"),
        ("truncated.png", "corrupt", "truncated"),
        ("huge-ihdr.png", "tooLarge", "100000×100000"),
        ("gif-no-frames.gif", "corrupt", "no image"),
        ("gif-huge-screen.gif", "tooLarge", "65535×65535"),
        ("truncated.webp", "corrupt", "truncated"),
        ("canvas-bomb.webp", "tooLarge", "16000×16000 exceeds the pixel limit"),
    ]

    /// Every file in TestImages/broken/, including those other sections add.
    static let brokenFiles: [String] =
        ((try? FileManager.default.contentsOfDirectory(atPath: Fixtures.path("broken"))) ?? []).filter {
            !$0.hasPrefix(".")
        }.sorted()

    @Test func everyFileInTheTableIsInBroken() {
        for entry in Self.broken {
            #expect(Self.brokenFiles.contains(entry.file), "TestImages/broken/\(entry.file) is missing")
        }
    }

    /// Each broken input fails, from a file and from memory, with an error naming the source; those in the
    /// table above with their exact kind and reason.
    @Test(arguments: brokenFiles)
    func brokenInputFailsWithItsNameAndReason(_ name: String) throws {
        let expected = Self.broken.first { $0.file == name }
        let path = Fixtures.path("broken/" + name)
        for source in [ImageSource.file(path: path), .bytes(try Fixtures.bytes(path))] {
            do {
                let result = try SharePipe.prepare(source, options: PrepareOptions())
                Issue.record("\(name) was prepared (\(result.size), \(result.byteCount) bytes) but must fail")
            } catch let error as SharePipeError {
                #expect(error.description.hasPrefix(source.displayName + ": "), "\(error)")
                if let expected {
                    #expect(error.kind == expected.kind, "\(error)")
                    #expect(error.description.contains(expected.reason), "\(error)")
                } else {
                    #expect(["corrupt", "unsupportedFormat", "tooLarge"].contains(error.kind), "\(error)")
                }
            }
        }
    }

    /// Inputs cut at many offsets: every cut JPEG fails (JPEG needs its end), every cut PNG and GIF either
    /// fails or, where the format allows, is prepared whole with a warning; never a crash, never an error
    /// that does not name the file.
    @Test(arguments: [
        "jpeg/tiny-16x16.jpg", "jpeg/gps-orient6.jpg", "jpeg/progressive.jpg", "jpeg/cmyk-adobe.jpg",
        "png/palette-8.png", "png/detail-rgba-8-interlaced.png", "gif/loop3.gif", "gif/interlaced.gif",
        "webp/gps-orient6.webp", "webp/lossless-alpha.webp", "webp/animated.webp",
    ])
    func truncatedAtManyOffsets(_ relative: String) throws {
        let whole = try Fixtures.bytes(Fixtures.path(relative))
        var options = PrepareOptions(maxShortEdge: 64)
        options.limits.maxDecoderMemory = 64 << 20
        // Every offset in the first 300 bytes (headers, metadata), then 30 spread over the rest.
        let step = max(1, (whole.count - 300) / 30)
        let cuts =
            Array(0..<min(300, whole.count - 1)) + Array(stride(from: 300, to: whole.count - 1, by: step)) + [
                whole.count - 1
            ]
        var prepared = 0
        for cut in cuts {
            let source = ImageSource.bytes(Array(whole.prefix(cut)))
            do {
                let result = try SharePipe.prepare(source, options: options)
                prepared += 1
                #expect(!relative.hasPrefix("jpeg/"), "a JPEG cut at \(cut) of \(whole.count) bytes was prepared")
                #expect(!result.warnings.isEmpty, "\(relative) cut at \(cut) was prepared without a warning")
                _ = try Decode.info(result.bytes)
            } catch let error as SharePipeError {
                #expect(error.description.hasPrefix("<memory>: "), "\(error)")
                #expect(["corrupt", "unsupportedFormat"].contains(error.kind), "cut at \(cut): \(error)")
            }
        }
        // A file cut anywhere before its last bytes is almost always an error.
        #expect(prepared <= cuts.count / 10, "\(prepared) of \(cuts.count) cuts of \(relative) were prepared")
    }

    @Test func imagesAreRecognisedByTheirBytesNotTheirNames() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try FileManager.default.createDirectory(atPath: directory + "/in", withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: Fixtures.path("png/palette-8.png"), toPath: directory + "/in/photo.jpg")
        try FileManager.default.copyItem(
            atPath: Fixtures.path("jpeg/orient-3.jpg"), toPath: directory + "/in/picture.gif")
        try FileManager.default.copyItem(atPath: Fixtures.path("gif/loop3.gif"), toPath: directory + "/in/anim.png")
        try FileManager.default.copyItem(
            atPath: Fixtures.path("jpeg/tiny-16x16.jpg"), toPath: directory + "/in/noextension")
        let run = try Tool.run(Tool.sharepipe, ["prepare", directory + "/in", "--out", directory + "/out"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let outputs = try FileManager.default.contentsOfDirectory(atPath: directory + "/out/in").sorted()
        #expect(outputs == ["anim.gif", "noextension.jpg", "photo.png", "picture.jpg"])
        #expect(try Decode.info(Fixtures.bytes(directory + "/out/in/photo.png")).format == .png)
        #expect(try Decode.info(Fixtures.bytes(directory + "/out/in/picture.jpg")).format == .jpeg)
    }

    @Test func zeroByteFileFailsInTheCLIWithItsName() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        _ = FileManager.default.createFile(atPath: directory + "/empty.png", contents: Data())
        let run = try Tool.run(Tool.sharepipe, ["prepare", directory + "/empty.png", "--out", directory + "/out"])
        #expect(run.status == 1)
        #expect(
            run.stderr.contains("FAILED \(directory)/empty.png: unsupported format: file is empty"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/out/empty.png"))
    }

    /// Garbage between two segments is a warning libjpeg recovers from: the image is prepared and the
    /// warning is in the result, on the re-encoding path and on the metadata-only path.
    @Test func recoverableJPEGDamageIsReportedAndPrepared() throws {
        var jpeg = try Fixtures.bytes(Fixtures.path("jpeg/orient-6.jpg"))
        let sof = try #require((0..<jpeg.count - 1).first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 })
        jpeg.insert(contentsOf: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], at: sof)
        let result = try SharePipe.prepare(.bytes(jpeg), options: PrepareOptions())
        #expect(result.method == .reencoded)
        #expect(result.size == PixelSize(width: 600, height: 400))
        #expect(
            result.warnings.contains { $0.contains("10 extraneous bytes before marker 0xc0") }, "\(result.warnings)")

        // No resize or rotation: the image data is copied, and the rewriter skips the garbage as libjpeg did.
        var tiny = try Fixtures.bytes(Fixtures.path("jpeg/tiny-16x16.jpg"))
        let tinySOF = try #require((0..<tiny.count - 1).first { tiny[$0] == 0xFF && tiny[$0 + 1] == 0xC0 })
        tiny.insert(contentsOf: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], at: tinySOF)
        let copied = try SharePipe.prepare(.bytes(tiny), options: PrepareOptions())
        #expect(copied.method == .metadataRewrite)
        #expect(try Decode.bitmap(copied.bytes).size == PixelSize(width: 16, height: 16))
        #expect(!copied.bytes.contains(bytes: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]))
        #expect(copied.warnings.contains { $0.contains("extraneous bytes") }, "\(copied.warnings)")
    }

    /// Found by the JPEG fuzzer: a stuffed 0xFF 0x00 between segments is garbage to libjpeg, and the
    /// metadata-only copy read it as a marker and wrote a JPEG nothing could decode.
    @Test func stuffedZeroBetweenSegmentsIsSkippedLikeLibjpegDoes() throws {
        var tiny = try Fixtures.bytes(Fixtures.path("jpeg/tiny-16x16.jpg"))
        let sof = try #require((0..<tiny.count - 1).first { tiny[$0] == 0xFF && tiny[$0 + 1] == 0xC0 })
        tiny.insert(contentsOf: [0xFF, 0x00, 0x02, 0xFF, 0xFF, 0x00], at: sof)
        for strip in StripMode.allCases {
            let result = try SharePipe.prepare(.bytes(tiny), options: PrepareOptions(strip: strip))
            #expect(result.method == .metadataRewrite)
            #expect(try Decode.bitmap(result.bytes).size == PixelSize(width: 16, height: 16))
            #expect(!result.warnings.isEmpty)
        }
    }

    @Test func recoverablePNGDamageIsReportedAndPrepared() throws {
        // A tEXt chunk with a bad CRC: libpng drops the chunk with a warning (ancillary chunks are benign).
        let png = try Fixtures.bytes(Fixtures.path("png/photo-160x120.png"))
        let ihdrEnd = 8 + 12 + 13
        let text: [UInt8] = [0, 0, 0, 13] + Array("tEXt".utf8) + Array("Comment\0hello".utf8) + [0, 0, 0, 1]
        let damaged = Array(png.prefix(ihdrEnd)) + text + png.dropFirst(ihdrEnd)
        let result = try SharePipe.prepare(.bytes(damaged), options: PrepareOptions(maxShortEdge: 60))
        #expect(result.warnings.contains { $0.contains("CRC") }, "\(result.warnings)")
        #expect(result.size.shortEdge == 60)
    }

    @Test func gifFrameOutsideTheScreenIsClippedWithAWarning() throws {
        let result = try SharePipe.prepare(
            .file(path: Fixtures.path("gif/frame-outside.gif")), options: PrepareOptions())
        #expect(result.warnings.contains { $0.contains("outside") }, "\(result.warnings)")
        let info = try Decode.info(result.bytes)
        #expect(info.size == PixelSize(width: 100, height: 80))
    }

    @Test func gifWithoutTrailerIsPreparedWithAWarning() throws {
        let gif = try Fixtures.bytes(Fixtures.path("gif/loop3.gif"))
        #expect(gif.last == 0x3B)
        let result = try SharePipe.prepare(.bytes(Array(gif.dropLast())), options: PrepareOptions())
        #expect(result.warnings.contains { $0.contains("trailer") }, "\(result.warnings)")
        #expect(result.frameCount == (try SharePipe.prepare(.bytes(gif), options: PrepareOptions())).frameCount)
    }

    @Test func gifWithABadLZWCodeSizeFails() throws {
        let path = Fixtures.path("broken/bad-lzw-code-size.gif")
        #expect {
            try SharePipe.prepare(.file(path: path), options: PrepareOptions())
        } throws: { error in
            guard let error = error as? SharePipeError, case .corrupt(let file, _, let reason) = error else {
                return false
            }
            return file == path && reason.contains("LZW")
        }
    }

    /// Exif, ICC and XMP segments at the limits: a 4 MB ICC profile in 65 chunks and 1 MB of extended XMP
    /// are read and handled by mode; past `maxMetadataBytes` the file is refused with the number.
    @Test func hugeICCAndXMPSegments() throws {
        let tiny = try Fixtures.bytes(Fixtures.path("jpeg/tiny-16x16.jpg"))
        let chunk = JPEGMarkers.iccChunkSize
        var profile = [UInt8](repeating: 0x41, count: 65 * chunk)
        profile.replaceSubrange(16..<20, with: Array("RGB ".utf8))
        var segments: [(Int, [UInt8])] = (0..<65).map { index in
            (
                0xE2,
                JPEGMarkers.iccPrefix + [UInt8(index + 1), 65] + Array(profile[index * chunk..<(index + 1) * chunk])
            )
        }
        segments += (0..<16).map { _ in (0xE1, JPEGMarkers.extendedXMPPrefix + [UInt8](repeating: 0x20, count: 65_000))
        }
        let jpeg = HardeningJPEG.inserting(segments, into: tiny)

        let all = try SharePipe.prepare(.bytes(jpeg), options: PrepareOptions())
        let kept = try Decode.info(all.bytes).metadata
        #expect(kept.count == 1)
        #expect(kept.first == .icc(profile), "strip all keeps the whole ICC profile")
        #expect(all.removedMetadata.contains(.xmp))

        var limited = PrepareOptions()
        limited.limits.maxMetadataBytes = 1 << 20
        #expect {
            try SharePipe.prepare(.bytes(jpeg), options: limited)
        } throws: { error in
            (error as? SharePipeError)?.description
                == "<memory>: too large: exceeds the metadata limit of 1048576 bytes (APPn/COM segments)"
        }
    }
}
