import Foundation
import Testing
@testable import SharePipe

/// The spine: JPEG in, stripped, oriented, downscaled JPEG under a byte limit out — checked on decoded pixels.
@Suite(.tags(.witness), .skipped(whenListed: "witness")) struct JPEGPipelineTests {
    static let red = [255, 0, 0], green = [0, 255, 0], blue = [0, 0, 255]

    @Test(arguments: 1...8)
    func orientationIsAppliedToPixels(_ value: Int) throws {
        let result = try SharePipe.prepare(.file(path: Fixtures.path("jpeg/orient-\(value).jpg")))
        #expect(result.size == PixelSize(width: 600, height: 400))
        #expect(result.appliedOrientation.rawValue == value)
        let bitmap = try Decode.bitmap(result.bytes)
        #expect(bitmap.size == PixelSize(width: 600, height: 400))
        // Marked corners land where a viewer honouring the tag would show them.
        #expect(close(bitmap.rgb(20, 20), Self.red, tolerance: 40), "top-left \(bitmap.rgb(20, 20))")
        #expect(close(bitmap.rgb(579, 20), Self.green, tolerance: 40), "top-right \(bitmap.rgb(579, 20))")
        #expect(close(bitmap.rgb(579, 379), Self.blue, tolerance: 40), "bottom-right \(bitmap.rgb(579, 379))")
        #expect(close(bitmap.rgb(20, 379), [128, 128, 128], tolerance: 20), "bottom-left \(bitmap.rgb(20, 379))")
        // The tag is gone with the Exif, so nothing rotates it a second time.
        let info = try Decode.info(result.bytes)
        #expect(info.orientation == .up)
        #expect(info.storedOrientationValue == nil)
    }

    @Test func invalidOrientationZeroMeansUpright() throws {
        let result = try SharePipe.prepare(.file(path: Fixtures.path("jpeg/landscape-orient0.jpg")))
        #expect(result.appliedOrientation == .up)
        #expect(result.size == PixelSize(width: 300, height: 200))
    }

    @Test func largeImageIsDownscaledToShortEdge1080() throws {
        let result = try SharePipe.prepare(.file(path: Fixtures.path("jpeg/large-4000x3000.jpg")))
        let bitmap = try Decode.bitmap(result.bytes)
        #expect(bitmap.size.shortEdge == 1080)
        #expect(abs(bitmap.size.width - 1440) <= 1)
        // Shrink on load: no full-resolution bitmap (36 MB) was ever held.
        #expect(result.peakPixelBytes < 12_000_000, "peak pixel bytes \(result.peakPixelBytes)")
    }

    /// An upright colour JPEG's render streams from the resampler into the encoder, 16 rows at a time: the job's
    /// meter never holds the RGB render (3 bytes a pixel) nor its 4:2:0 planes (1.5), only the resampler's
    /// window, the decoder's rows and one band, and the file is the one the render's planes encode to.
    @Test func uprightJPEGStreamsIntoTheEncoderWithoutTheRender() throws {
        let source = ImageSource.file(path: Fixtures.path("jpeg/large-4000x3000.jpg"))
        var options = PrepareOptions()
        options.strip = .all
        let result = try SharePipe.prepare(source, options: options)
        #expect(result.size == PixelSize(width: 1440, height: 1080))
        #expect(result.sourceDecodes == 1)
        let planes = JPEGPlanes.byteCount(result.size)
        #expect(result.peakPixelBytes < planes, "peak pixel bytes \(result.peakPixelBytes), planes \(planes)")
        // The same bytes as the render, staged as 4:2:0 planes and encoded (the route the other orientations take).
        let info = try SharePipe.inspect(source)
        #expect(info.orientation == .up)
        let render = try JPEGDecoder().render(
            source, info: info, target: result.size, limits: ImageLimits(), meter: PixelMemoryMeter())
        let staged = try JPEGEncoder().staged(render.bitmap)
        let quality = try #require(result.quality)
        let expected = try staged.encode(EncodeSettings(quality: quality, progressive: false), [])
        let same = result.bytes == expected
        #expect(same, "\(result.bytes.count) vs \(expected.count) bytes")
        // The placeholder's thumbnail came from the same rows.
        #expect(result.placeholderPixels == PlaceholderThumbnail(render.bitmap))
    }

    @Test func progressiveJPEGIsDownscaled() throws {
        let result = try SharePipe.prepare(.file(path: Fixtures.path("jpeg/progressive.jpg")))
        #expect(result.size == PixelSize(width: 1440, height: 1080))
        #expect(try Decode.bitmap(result.bytes).size == result.size)
    }

    @Test func smallImageIsNeverUpscaledAndNeverGrows() throws {
        let path = Fixtures.path("jpeg/tiny-16x16.jpg")
        let result = try SharePipe.prepare(.file(path: path))
        #expect(result.size == PixelSize(width: 16, height: 16))
        #expect(result.method == .metadataRewrite)
        #expect(result.byteCount <= (try Fixtures.bytes(path)).count)
    }

    @Test func metadataRewriteKeepsImageDataAndNeverGrows() throws {
        let path = Fixtures.path("jpeg/gps-thumb.jpg")
        let result = try SharePipe.prepare(.file(path: path))
        #expect(result.method == .metadataRewrite)
        #expect(result.byteCount < (try Fixtures.bytes(path)).count)
        // Same pixels as the input: the entropy-coded data was copied, not re-encoded.
        let original = try Decode.bitmap(try Fixtures.bytes(path))
        #expect(try Decode.bitmap(result.bytes) == original)
    }

    @Test func stripAllRemovesEverythingButICC() throws {
        let result = try SharePipe.prepare(.file(path: Fixtures.path("jpeg/gps-thumb.jpg")))
        #expect(result.removedMetadata.isSuperset(of: [.exif, .gps, .exifThumbnail, .xmp, .iptc, .comment]))
        let info = try Decode.info(result.bytes)
        #expect(info.metadataKinds.isEmpty, "left: \(info.metadataKinds)")
    }

    @Test func stripAllVerifiedByExiftool() throws {
        try Witness.require("exiftool")
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        for name in ["gps-thumb.jpg", "gps-orient6.jpg", "large-4000x3000.jpg"] {
            let result = try SharePipe.prepare(.file(path: Fixtures.path("jpeg/" + name)))
            let output = directory + "/" + name
            try Fixtures.write(result.bytes, to: output)
            let witness = try Tool.run(
                "exiftool",
                [
                    "-a", "-G1", "-s", "-GPS:all", "-EXIF:all", "-XMP:all", "-IPTC:all",
                    "-File:Comment", "-Orientation", "-ThumbnailImage", output,
                ])
            #expect(witness.status == 0)
            #expect(
                witness.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty,
                "exiftool still finds in \(name):\n\(witness.stdout)")
            // And the witness does see those tags in the input, so the check can fail.
            let input = try Tool.run("exiftool", ["-s", "-GPSLatitude", Fixtures.path("jpeg/" + name)])
            #expect(input.stdout.contains("GPSLatitude"))
        }
    }

    @Test func stripGPSKeepsCameraButNotLocationOrThumbnail() throws {
        try Witness.require("exiftool")
        var options = PrepareOptions()
        options.strip = .gps
        let result = try SharePipe.prepare(.file(path: Fixtures.path("jpeg/gps-orient6.jpg")), options: options)
        #expect(result.size == PixelSize(width: 640, height: 480))
        let info = try Decode.info(result.bytes)
        #expect(info.metadataKinds.contains(.exif))
        #expect(!info.metadataKinds.contains(.gps))
        #expect(!info.metadataKinds.contains(.exifThumbnail))
        #expect(!info.metadataKinds.contains(.xmp))
        #expect(!info.metadataKinds.contains(.iptc))
        #expect(info.storedOrientationValue == 1)
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Fixtures.write(result.bytes, to: directory + "/out.jpg")
        let witness = try Tool.run(
            "exiftool",
            [
                "-s", "-Make", "-GPS:all", "-XMP:all", "-IPTC:all", "-ThumbnailImage",
                "-Orientation#", directory + "/out.jpg",
            ])
        #expect(witness.stdout.contains("SharePipeCam"))
        #expect(!witness.stdout.contains("GPS"))
        #expect(!witness.stdout.contains("Thumbnail"))
        #expect(!witness.stdout.contains("City"))
        #expect(witness.stdout.contains("Orientation                     : 1"))
        // The GPS bytes are gone from the file, not just unlinked.
        let latitudeRef = Array("GPSLatitudeRef".utf8)
        #expect(!result.bytes.contains(subsequence: latitudeRef))
    }

    @Test func stripNoneKeepsEverythingButResetsOrientation() throws {
        var options = PrepareOptions()
        options.strip = .none
        let result = try SharePipe.prepare(.file(path: Fixtures.path("jpeg/gps-orient6.jpg")), options: options)
        let info = try Decode.info(result.bytes)
        #expect(info.metadataKinds.isSuperset(of: [.exif, .gps, .xmp, .iptc, .comment]))
        #expect(info.storedOrientationValue == 1)
        #expect(result.size == PixelSize(width: 640, height: 480))
    }

    @Test(arguments: ["jpeg/icc-p3.jpg", "jpeg/icc-multichunk.jpg"])
    func iccProfileIsKeptByteIdentical(_ name: String) throws {
        let input = try SharePipe.inspect(.file(path: Fixtures.path(name)))
        let profile = try #require(input.metadata.compactMap { if case .icc(let p) = $0 { p } else { nil } }.first)
        // Both paths: metadata rewrite (no resize) and re-encode (resize).
        for shortEdge in [1080, 300] {
            var options = PrepareOptions()
            options.maxShortEdge = shortEdge
            let result = try SharePipe.prepare(.file(path: Fixtures.path(name)), options: options)
            let output = try Decode.info(result.bytes)
            let kept = output.metadata.compactMap { if case .icc(let p) = $0 { p } else { nil } }
            #expect(kept == [profile], "ICC changed with short edge \(shortEdge)")
            #expect(!result.removedMetadata.contains(.icc))
        }
    }

    @Test func adobeCMYKBecomesCorrectRGB() throws {
        let result = try SharePipe.prepare(.file(path: Fixtures.path("jpeg/cmyk-adobe.jpg")))
        let bitmap = try Decode.bitmap(result.bytes)
        #expect(bitmap.layout == .rgb)
        #expect(try Decode.info(result.bytes).colorModel == .rgb)
        // Quadrants: red, green / blue, white.
        #expect(close(bitmap.rgb(100, 100), [255, 0, 0], tolerance: 45), "\(bitmap.rgb(100, 100))")
        #expect(close(bitmap.rgb(300, 100), [0, 255, 0], tolerance: 45), "\(bitmap.rgb(300, 100))")
        #expect(close(bitmap.rgb(100, 300), [0, 0, 255], tolerance: 45), "\(bitmap.rgb(100, 300))")
        #expect(close(bitmap.rgb(300, 300), [255, 255, 255], tolerance: 30), "\(bitmap.rgb(300, 300))")
    }

    @Test func grayscaleStaysGray() throws {
        var options = PrepareOptions()
        options.maxShortEdge = 240
        let result = try SharePipe.prepare(.file(path: Fixtures.path("jpeg/gray.jpg")), options: options)
        let bitmap = try Decode.bitmap(result.bytes)
        #expect(bitmap.layout == .gray)
        #expect(bitmap.size == PixelSize(width: 320, height: 240))
        #expect(bitmap.rgb(2, 120)[0] < 20 && bitmap.rgb(317, 120)[0] > 235)
    }

    @Test func bytesFitUnderTheLimitAtTheHighestQualityThatFits() throws {
        let path = Fixtures.path("jpeg/noisy-2000x1500.jpg")
        var options = PrepareOptions()
        options.maxBytes = 120_000
        let result = try SharePipe.prepare(.file(path: path), options: options)
        #expect(result.byteCount <= 120_000)
        let quality = try #require(result.quality)
        #expect(quality < 85 && quality >= options.minQuality)
        // One step higher does not fit at the same size (checked with the same encoder on the same pixels).
        let bitmap = try Decode.bitmap(result.bytes)
        #expect(bitmap.size == PixelSize(width: 1440, height: 1080))
        // Under a limit that bites the ladder searches 4:2:0 with progressive scans and then 4:4:4 (`QualityLadder`):
        // the step up is the written search's own (its attempts carry its note).
        let written = try #require(
            result.attempts.first { $0.fits && $0.bytes == result.byteCount && $0.size == result.size })
        if let higher = result.attempts.first(where: {
            $0.quality == quality + 1 && $0.size == result.size && $0.note == written.note
        }) {
            #expect(higher.bytes > 120_000)
        } else {
            // Only the 4:4:4 search stops short of quality + 1: its top is the 4:2:0 answer's quality.
            #expect(written.note?.hasPrefix(QualityLadder.fullChromaNote) == true)
            #expect(
                result.attempts.contains {
                    $0.note == QualityLadder.progressiveNote && $0.fits && $0.quality == quality
                })
        }
        for note in Set(result.attempts.map(\.note)) {
            let count = result.attempts.filter { $0.note == note }.count
            #expect(count <= 8, "each search is bounded: \(count) encodes (\(note ?? "ceiling"))")
        }
    }

    @Test func dimensionsShrinkWhenTheQualityFloorIsStillTooBig() throws {
        var options = PrepareOptions()
        options.maxBytes = 25_000
        let result = try SharePipe.prepare(.file(path: Fixtures.path("jpeg/noisy-2000x1500.jpg")), options: options)
        #expect(result.byteCount <= 25_000)
        #expect(result.size.shortEdge < 1080)
        #expect(Set(result.attempts.map(\.size)).count >= 2)
        let bitmap = try Decode.bitmap(result.bytes)
        #expect(abs(Double(bitmap.width) / Double(bitmap.height) - 4.0 / 3.0) < 0.01)
    }

    @Test func impossibleLimitIsAnErrorNotAnOversizeFile() throws {
        var options = PrepareOptions()
        options.maxBytes = 1024
        options.minShortEdge = 500
        #expect {
            try SharePipe.prepare(.file(path: Fixtures.path("jpeg/noisy-2000x1500.jpg")), options: options)
        } throws: { error in
            guard case SharePipeError.cannotMeetLimit(let file, 1024, let best) = error else { return false }
            return file.hasSuffix("noisy-2000x1500.jpg") && best > 1024
        }
    }

    @Test func truncatedJPEGIsAClearError() throws {
        #expect {
            try SharePipe.prepare(.file(path: Fixtures.path("broken/truncated.jpg")))
        } throws: { error in
            guard case SharePipeError.corrupt(let file, _, let reason) = error else { return false }
            return file.hasSuffix("truncated.jpg") && reason.contains("truncated")
        }
    }

    @Test func inMemoryBytesWorkLikeFiles() throws {
        let path = Fixtures.path("jpeg/orient-6.jpg")
        let fromFile = try SharePipe.prepare(.file(path: path))
        let fromBytes = try SharePipe.prepare(.bytes(try Fixtures.bytes(path)))
        #expect(fromFile.bytes == fromBytes.bytes)
    }

    @Test func notAnImageIsUnsupported() throws {
        #expect(throws: SharePipeError.self) { try SharePipe.prepare(.bytes(Array("hello, world".utf8))) }
        #expect(throws: SharePipeError.unsupportedFormat(file: "<memory>", missing: .format, reason: "file is empty")) {
            try SharePipe.prepare(.bytes([]))
        }
    }

    @Test func headerOverThePixelLimitIsRefusedBeforeDecoding() throws {
        var options = PrepareOptions()
        options.limits.maxPixels = 1_000_000
        #expect {
            try SharePipe.prepare(.file(path: Fixtures.path("jpeg/large-4000x3000.jpg")), options: options)
        } throws: { error in
            guard case SharePipeError.tooLarge(_, let exceeded) = error else { return false }
            return exceeded
                == ExceededLimit(
                    .pixelArea, found: 12_000_000, limit: 1_000_000,
                    size: PixelSize(width: 4000, height: 3000))
        }
    }

    @Test func asyncFormMatchesTheSyncForm() async throws {
        let path = Fixtures.path("jpeg/orient-3.jpg")
        let sync = try Self.prepareSynchronously(.file(path: path))
        let async = try await SharePipe.prepare(.file(path: path))
        #expect(sync.bytes == async.bytes)
    }
}

extension JPEGPipelineTests {
    static func prepareSynchronously(_ source: ImageSource) throws -> PreparedImage {
        try SharePipe.prepare(source)
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence: [UInt8]) -> Bool {
        guard subsequence.count <= count else { return false }
        return (0...(count - subsequence.count)).contains {
            self[$0..<$0 + subsequence.count].elementsEqual(subsequence)
        }
    }
}
