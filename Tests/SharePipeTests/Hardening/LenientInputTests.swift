import Foundation
import Testing
@testable import SharePipe

/// Odd files that browsers display (TestImages/lenient/, made by scripts/fixtures/make-test-images): SharePipe
/// prepares them as Chromium shows them, and does not do what a browser does not do.
@Suite("Lenient as a browser", .tags(.witness), .skipped(whenListed: "witness"))
struct LenientInputTests {
    static func path(_ name: String) -> String { Fixtures.path("lenient/" + name) }

    /// The RGBA of pixel (x, y) of a picture `width` pixels wide.
    static func rgba(_ picture: [UInt8], width: Int, _ x: Int, _ y: Int) -> [Int] {
        let start = (y * width + x) * 4
        return picture[start..<start + 4].map(Int.init)
    }

    static let opaqueBlack = [0, 0, 0, 255]

    // MARK: 1. GIF frames without any colour table

    @Test("frames without a colour table are drawn opaque black, the transparent index stays transparent")
    func gifWithoutColorTables() throws {
        let result = try Pipeline.prepare(.file(path: Self.path("gif-no-color-table.gif")), options: PrepareOptions())
        #expect(result.format == .gif)
        #expect(result.frameCount == 2)
        #expect(result.warnings.contains { $0.contains("no colour table") && $0.contains("opaque black") })
        let output = try DecodedGIF(result.bytes)
        #expect(output.size == PixelSize(width: 48, height: 32))
        #expect(output.delays == [10, 20])
        let (first, second) = (output.pictures[0], output.pictures[1])
        // Frame 0: index 0 (left), the transparent index 1 (middle), index 3 (right).
        #expect(Self.rgba(first, width: 48, 5, 20) == Self.opaqueBlack)
        #expect(Self.rgba(first, width: 48, 24, 20)[3] == 0)
        #expect(Self.rgba(first, width: 48, 40, 20) == Self.opaqueBlack)
        // Frame 1 paints index 0 over the top half of the transparent middle.
        #expect(Self.rgba(second, width: 48, 24, 5) == Self.opaqueBlack)
        #expect(Self.rgba(second, width: 48, 24, 25)[3] == 0)
    }

    @Test("the still path (first frame only) draws a frame without a colour table the same way")
    func gifWithoutColorTablesAsStill() throws {
        var options = PrepareOptions()
        options.animation.allowed = false
        let result = try Pipeline.prepare(.file(path: Self.path("gif-no-color-table.gif")), options: options)
        #expect(result.warnings.contains { $0.contains("2 of 2 frame(s) have no colour table") })
        #expect(result.frameCount == 1 && result.inputFrameCount == 2)
        #expect(result.adjustments.contains { $0.hasPrefix("first frame only (of 2;") })
        let bitmap = try Decode.bitmap(result.bytes)
        #expect(bitmap.size == PixelSize(width: 48, height: 32))
        #expect(bitmap.rgb(5, 20) == Self.opaqueBlack)
        #expect(bitmap.rgb(24, 20)[3] == 0)
        #expect(bitmap.rgb(40, 20) == Self.opaqueBlack)
    }

    @Test("an animation for a still-only service that takes no GIF: first frame only and GIF → PNG, both reported")
    func animationForAStillOnlyService() throws {
        var options = ServiceProfile.bluesky.options()
        options.animation.allowed = false
        let result = try Pipeline.prepare(.file(path: Fixtures.path("gif/disposals.gif")), options: options)
        #expect(result.format == .png)
        #expect(result.frameCount == 1 && result.inputFrameCount == 6)
        #expect(result.adjustments.contains("GIF → PNG (accepted formats)"))
        #expect(result.adjustments.contains { $0.hasPrefix("first frame only (of 6;") })
    }

    // MARK: 2. Bytes after a complete frame that start no block

    @Test("a second GIF appended to a first without its trailer: the first one's 2 frames, with a warning")
    func gifWithAppendedGIF() throws {
        let source = ImageSource.file(path: Self.path("gif-appended-gif.gif"))
        let info = try SharePipe.inspect(source)
        #expect(info.frameCount == 2)
        let result = try Pipeline.prepare(source, options: PrepareOptions())
        #expect(result.frameCount == 2)
        #expect(
            result.warnings.contains { $0.contains("unknown block type 0x47") && $0.contains("kept the 2 frame(s)") })
        let output = try DecodedGIF(result.bytes)
        #expect(output.frames.count == 2)
        #expect(output.delays == [10, 20])
        #expect(Self.rgba(output.pictures[0], width: 40, 20, 15) == [255, 0, 0, 255])
        #expect(Self.rgba(output.pictures[1], width: 40, 20, 15) == [0, 255, 0, 255])
        // gifsicle, as an outside witness, reads the output whole.
        try GIFWitness.require()
        do {
            let directory = Fixtures.temporaryDirectory()
            defer { Fixtures.cleanUp(directory) }
            try Fixtures.write(result.bytes, to: directory + "/out.gif")
            #expect(try GIFWitness.gifsicleInfo(directory + "/out.gif").frames == 2)
        }
    }

    @Test("junk after the last frame of a GIF without a trailer: the frame is kept, with a warning")
    func gifWithTrailingJunk() throws {
        var bytes = try Fixtures.bytes(Fixtures.path("gif/single-frame.gif"))
        #expect(bytes.removeLast() == 0x3B)
        bytes += Array("\0junk after the image".utf8)
        let result = try Pipeline.prepare(.bytes(bytes), options: PrepareOptions())
        #expect(
            result.warnings.contains { $0.contains("unknown block type 0x00") && $0.contains("kept the 1 frame(s)") })
        let reference = try Pipeline.prepare(
            .file(path: Fixtures.path("gif/single-frame.gif")), options: PrepareOptions())
        #expect(try Decode.bitmap(result.bytes).pixels == Decode.bitmap(reference.bytes).pixels)
    }

    @Test("a byte that starts no block before the first frame is still corrupt (browsers show nothing)")
    func gifWithJunkBeforeTheFirstFrame() throws {
        let header: [UInt8] = Array("GIF89a".utf8) + [10, 0, 10, 0, 0x80, 0, 0, 0, 0, 0, 255, 255, 255]
        #expect {
            try Pipeline.prepare(.bytes(header + Array("junk".utf8)), options: PrepareOptions())
        } throws: { error in
            guard case SharePipeError.corrupt(let file, _, let reason) = error else { return false }
            return file == "<memory>" && reason.contains("unknown block type 0x6A")
        }
    }

    // MARK: 3. JPEG marker segment with a length below 2

    @Test("a COM segment of length 0 is an empty segment, as in libjpeg: copied around and re-encoded")
    func jpegZeroLengthSegment() throws {
        let path = Self.path("jpeg-zero-length-com.jpg")
        let reference = try Decode.bitmap(try Fixtures.bytes(Fixtures.path("jpeg/orient-1.jpg")))
        #expect(try Decode.bitmap(try Fixtures.bytes(path)).pixels == reference.pixels)

        let copied = try Pipeline.prepare(.file(path: path), options: PrepareOptions())
        #expect(copied.method == .metadataRewrite)
        #expect(try Decode.bitmap(copied.bytes).pixels == reference.pixels)
        #expect(!copied.bytes.contains(subsequence: [0xFF, 0xFE, 0x00, 0x00]))

        let resized = try Pipeline.prepare(.file(path: path), options: PrepareOptions(maxShortEdge: 100))
        #expect(resized.size == PixelSize(width: 150, height: 100))
        let bitmap = try Decode.bitmap(resized.bytes)
        #expect(close(bitmap.rgb(5, 5), [255, 0, 0], tolerance: 12))
        #expect(close(bitmap.rgb(144, 5), [0, 255, 0], tolerance: 12))
        #expect(close(bitmap.rgb(144, 94), [0, 0, 255], tolerance: 12))
    }

    @Test("an APP segment whose length field is 1 is skipped the same way")
    func jpegLengthOneSegment() throws {
        var bytes = try Fixtures.bytes(Self.path("jpeg-zero-length-com.jpg"))
        let at = try #require(bytes.firstRange(of: [0xFF, 0xFE, 0x00, 0x00]))
        bytes.replaceSubrange(at, with: [0xFF, 0xE5, 0x00, 0x01])
        let result = try Pipeline.prepare(.bytes(bytes), options: PrepareOptions(maxShortEdge: 200))
        #expect(result.size == PixelSize(width: 300, height: 200))
    }

    // MARK: 4. PNG with the HP/Microsoft sRGB profile

    @Test("a PNG with the HP/Microsoft sRGB profile is resized and keeps the profile byte for byte")
    func pngWithHPsRGBProfile() throws {
        let path = Self.path("png-hp-srgb-1200.png")
        let input = try SharePipe.inspect(.file(path: path))
        let profile = try #require(
            input.metadata.compactMap { block -> [UInt8]? in
                if case .icc(let bytes) = block { return bytes } else { return nil }
            }.first)
        #expect(profile.count == 3144)

        let result = try Pipeline.prepare(.file(path: path), options: PrepareOptions())
        #expect(result.format == .png)
        #expect(result.size == PixelSize(width: 1080, height: 1080))
        let output = try Decode.info(result.bytes)
        #expect(output.metadata.contains(.icc(profile)))
        let bitmap = try Decode.bitmap(result.bytes)
        #expect(bitmap.rgb(10, 10) == [255, 0, 0])
        #expect(bitmap.rgb(1070, 10) == [0, 255, 0])
        #expect(bitmap.rgb(1070, 1070) == [0, 0, 255])
        #expect(bitmap.rgb(10, 1070) == [128, 128, 128])
        // exiftool, as an outside witness, reads the profile in the output.
        try Witness.require("exiftool")
        do {
            let directory = Fixtures.temporaryDirectory()
            defer { Fixtures.cleanUp(directory) }
            try Fixtures.write(result.bytes, to: directory + "/out.png")
            let tags = try Tool.run(
                "exiftool",
                [
                    "-s3", "-ICC_Profile:ProfileDescription", "-ICC_Profile:ProfileCreator",
                    directory + "/out.png",
                ])
            #expect(tags.stdout == "sRGB IEC61966-2.1\nHewlett-Packard\n")
        }
    }

    @Test("an encoder failure names the input file and is not called corrupt input")
    func encoderFailureNamesTheInput() throws {
        // A 70000×1 PNG (the user raised the dimension limit) that must become a JPEG to fit: libjpeg cannot
        // write more than 65500 pixels a side, so the JPEG encoder fails.
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let width = 70_000
        var state: UInt64 = 42  // noise (a 64-bit LCG's top byte): no PNG of it fits
        let pixels = (0..<width * 3).map { _ -> UInt8 in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(state >> 56)
        }
        let png = try PNGEncoder().encode(
            Bitmap(size: PixelSize(width: width, height: 1), layout: .rgb, pixels: pixels),
            settings: EncodeSettings(quality: 85, progressive: false), metadata: [])
        let path = directory + "/wide.png"
        try Fixtures.write(png, to: path)
        var options = PrepareOptions(maxBytes: 2000, limits: ImageLimits(maxDimension: 80_000), allowFormatChange: true)
        options.minShortEdge = 1
        #expect {
            try Pipeline.prepare(.file(path: path), options: options)
        } throws: { error in
            guard case SharePipeError.encodingFailed(let file, let reason) = error else { return false }
            return file == path && reason.contains("65500") && !"\(error)".contains("<encoder>")
        }
    }

    // MARK: What a browser does not do

    @Test("orientation given only in XMP tiff:Orientation is not applied to a PNG (Chromium applies eXIf only)")
    func pngXMPOrientationIsNotApplied() throws {
        let path = Self.path("png-xmp-orientation.png")
        let info = try SharePipe.inspect(.file(path: path))
        #expect(info.orientation == .up)
        for options in [PrepareOptions(), PrepareOptions(maxShortEdge: 24)] {
            let result = try Pipeline.prepare(.file(path: path), options: options)
            #expect(result.appliedOrientation == .up)
            let bitmap = try Decode.bitmap(result.bytes)
            #expect(bitmap.size.width < bitmap.size.height)  // stored 48×64 stays portrait
            let (w, h) = (bitmap.size.width, bitmap.size.height)
            #expect(close(bitmap.rgb(2, 2), [255, 0, 0], tolerance: 8))
            #expect(close(bitmap.rgb(w - 3, 2), [0, 255, 0], tolerance: 8))
            #expect(close(bitmap.rgb(w - 3, h - 3), [0, 0, 255], tolerance: 8))
        }
    }

    @Test("a zero-width GIF frame draws nothing; its time is kept")
    func gifZeroWidthFrame() throws {
        let result = try Pipeline.prepare(.file(path: Self.path("gif-zero-width-frame.gif")), options: PrepareOptions())
        let output = try DecodedGIF(result.bytes)
        #expect(output.delays.reduce(0, +) == 60)
        // As Chromium shows it: red, still red while the empty frame is up, then a blue square at the top left.
        let input = try DecodedGIF(.file(path: Self.path("gif-zero-width-frame.gif")))
        #expect(input.pictures[1] == input.pictures[0])
        #expect(output.pictures.count == 3)
        for (index, picture) in output.pictures.enumerated() {
            #expect(picture == input.pictures[index], "frame \(index)")
        }
        #expect(Self.rgba(output.pictures[2], width: 40, 5, 5) == [0, 0, 255, 255])
        #expect(Self.rgba(output.pictures[2], width: 40, 20, 20) == [255, 0, 0, 255])
    }
}
