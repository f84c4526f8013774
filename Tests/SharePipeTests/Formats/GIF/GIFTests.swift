import Foundation
import Testing
@testable import SharePipe

/// The two levels of the GIF model, reading (probe, stream, compositor) and the shim's error reporting.
@Suite("GIF reading and model")
struct GIFReadingTests {
    @Test("a Graphics Control Extension round-trips every field, reserved bits included")
    func controlExtensionRoundTrip() throws {
        for payload: [UInt8] in [[0x00, 0, 0, 0], [0x09, 1, 0, 7], [0xEF, 0xFF, 0xFF, 255], [0x0D, 50, 0, 3]] {
            let control = try #require(GIFGraphicsControl(payload: payload))
            #expect(control.payload == payload)
        }
        let control = try #require(GIFGraphicsControl(payload: [0x0D, 0x32, 0x00, 0x03]))
        #expect(control.disposal == .previous)
        #expect(control.delay == 50)
        #expect(control.transparentIndex == 3)
        #expect(control.userInput == false)
        #expect(GIFGraphicsControl(payload: [1, 2, 3]) == nil)
    }

    @Test("the probe counts frames and finds the container's properties without decoding image data")
    func probe() throws {
        let disposals = try SharePipe.inspect(.file(path: GIFFixtures.path("disposals.gif")))
        #expect(disposals.format == .gif)
        #expect(disposals.frameCount == 6)
        #expect(disposals.size == PixelSize(width: 160, height: 120))
        #expect(disposals.hasAlpha)
        let interlaced = try SharePipe.inspect(.file(path: GIFFixtures.path("interlaced.gif")))
        #expect(interlaced.progressive)
        let metadata = try SharePipe.inspect(.file(path: GIFFixtures.path("metadata.gif")))
        #expect(metadata.metadataKinds == [.comment, .xmp, .icc])
        let single = try SharePipe.inspect(.file(path: GIFFixtures.path("single-frame.gif")))
        #expect(single.frameCount == 1)
    }

    @Test("loop counts: 0, 3, no extension, and the first of several")
    func loopCounts() throws {
        func loop(_ name: String) throws -> Int? {
            try GIFSummary.read(.file(path: GIFFixtures.path(name)), limits: ImageLimits()).container.loopCount
        }
        #expect(try loop("delays-loop0.gif") == 0)
        #expect(try loop("loop3.gif") == 3)
        #expect(try loop("noloop.gif") == nil)
        #expect(try loop("multiple-loops.gif") == 5)
    }

    @Test("frame-level properties are read at the frame level")
    func frameProperties() throws {
        let gif = try DecodedGIF(.file(path: GIFFixtures.path("disposals.gif")))
        #expect(gif.delays == [10, 20, 30, 40, 50, 60])
        #expect(gif.disposals == [1, 0, 2, 3, 1, 0])
        #expect(gif.frames.map { $0.localPalette != nil } == [false, false, true, false, true, false])
        #expect(gif.frames.map(\.transparentIndex) == [nil, 0, nil, 3, nil, nil])
        #expect(gif.frames[2].rect == GIFRect(left: 60, top: 20, width: 50, height: 40))
        #expect(gif.container.globalPalette?.count == 16)
    }

    @Test("the compositor follows each disposal method")
    func compositing() throws {
        let gif = try DecodedGIF(.file(path: GIFFixtures.path("disposals.gif")))
        func pixel(_ frame: Int, _ x: Int, _ y: Int) -> [UInt8] {
            let offset = (y * gif.size.width + x) * 4
            return Array(gif.pictures[frame][offset..<offset + 4])
        }
        #expect(pixel(1, 20, 20) == pixel(0, 20, 20))  // transparent index leaves the background
        #expect(pixel(1, 12, 12) == [255, 0, 0, 255])  // frame 1 drawn (red)
        #expect(pixel(2, 61, 21) == [10, 20, 30, 255])  // local table entry 0
        #expect(pixel(3, 61, 21) == [0, 0, 0, 0])  // frame 2's area cleared to transparent
        #expect(pixel(3, 70, 65) == [0, 0, 255, 255])  // frame 3 drawn (blue)
        #expect(pixel(3, 50, 80) == pixel(2, 50, 80))  // its transparent band shows what was there
        #expect(pixel(4, 70, 65) == pixel(2, 70, 65))  // frame 3 undone (disposal previous)
    }

    @Test("frames reaching outside the screen are clipped; a frame wholly outside stays, empty")
    func framesOutsideTheScreen() throws {
        let summary = try GIFSummary.read(.file(path: GIFFixtures.path("frame-outside.gif")), limits: ImageLimits())
        #expect(summary.frameCount == 4)
        #expect(summary.warnings.contains { $0.contains("frame 1") && $0.contains("clipped") })
        #expect(summary.warnings.contains { $0.contains("frame 2") && $0.contains("empty frame") })
        let gif = try DecodedGIF(.file(path: GIFFixtures.path("frame-outside.gif")))
        #expect(gif.pictures[2] == gif.pictures[1])
        let corner = ((79 * 100) + 99) * 4
        #expect(Array(gif.pictures[1][corner..<corner + 4]) == [255, 0, 0, 255])
    }

    @Test("interlaced rows are put where they belong")
    func interlacedRows() throws {
        #expect(GIFInterlace.rows(height: 10) == [0, 8, 4, 2, 6, 1, 3, 5, 7, 9])
        let gif = try DecodedGIF(.file(path: GIFFixtures.path("interlaced.gif")))
        // Row y of frame 0 shows local entry (x/10 + y/5) % 4.
        let local: [[UInt8]] = [[0, 40, 200], [250, 250, 250], [20, 20, 20], [200, 0, 0]]
        for y in [0, 1, 4, 7, 33, 74] {
            let offset = (y * 100 + 25) * 4
            #expect(Array(gif.pictures[0][offset..<offset + 3]) == local[(2 + y / 5) % 4])
        }
    }

    @Test("a truncated GIF is a clear error naming the file")
    func truncated() throws {
        let path = Fixtures.path("broken/truncated.gif")
        #expect {
            _ = try SharePipe.prepare(.file(path: path))
        } throws: { error in
            guard case SharePipeError.corrupt(let file, _, let reason) = error else { return false }
            return file == path && reason.contains("truncated")
        }
    }

    @Test("an LZW code size over 8 is named as such")
    func badCodeSize() throws {
        let path = Fixtures.path("broken/bad-lzw-code-size.gif")
        #expect {
            _ = try SharePipe.prepare(.file(path: path))
        } throws: { error in
            guard case SharePipeError.corrupt(let file, _, let reason) = error else { return false }
            return file == path && reason.contains("frame 1") && reason.contains("LZW minimum code size 12")
        }
    }

    @Test("garbage before the first image and no image at all are errors; garbage after a frame ends the GIF there")
    func otherDamage() throws {
        let bytes = try Fixtures.bytes(GIFFixtures.path("loop3.gif"))
        var garbage = bytes
        garbage.insert(0x55, at: garbage.count - 1)  // before the trailer: the 3 frames stand, as in browsers
        #expect(try SharePipe.inspect(.bytes(garbage)).frameCount == 3)
        let beforeFirstImage = Array(bytes.prefix(13 + 24)) + [0x55] + Array(bytes.dropFirst(13 + 24))
        #expect {
            _ = try SharePipe.inspect(.bytes(beforeFirstImage))
        } throws: { error in
            guard case SharePipeError.corrupt(_, _, let reason) = error else { return false }
            return reason.contains("unknown block type 0x55")
        }
        let headerOnly = Array(bytes.prefix(13 + 24)) + [0x3B]  // screen, global table, trailer
        #expect {
            _ = try SharePipe.inspect(.bytes(headerOnly))
        } throws: { error in
            guard case SharePipeError.corrupt(_, _, let reason) = error else { return false }
            return reason.contains("no image")
        }
    }

    @Test("a missing trailer after whole frames is a warning, not an error")
    func missingTrailer() throws {
        let bytes = try Fixtures.bytes(GIFFixtures.path("loop3.gif"))
        let summary = try GIFSummary.read(.bytes(Array(bytes.dropLast())), limits: ImageLimits())
        #expect(summary.frameCount == 3)
        #expect(summary.warnings.contains { $0.contains("no trailer") })
    }

    @Test("limits are checked on the header and while walking, before pixel memory")
    func limits() throws {
        let path = GIFFixtures.path("large-1600x1200.gif")
        #expect(throws: SharePipeError.self) {
            _ = try SharePipe.inspect(.file(path: path), limits: ImageLimits(maxDimension: 1000))
        }
        #expect {
            _ = try SharePipe.inspect(.file(path: path), limits: ImageLimits(maxFrames: 3))
        } throws: { error in
            guard case SharePipeError.tooLarge(_, let exceeded) = error else { return false }
            return exceeded.kind == .frameCount && exceeded.found == 4 && exceeded.limit == 3
                && exceeded.description.contains("frame limit of 3 frames")
        }
        #expect {
            _ = try SharePipe.inspect(.file(path: path), limits: ImageLimits(maxTotalFramePixels: 1600 * 1200 * 3))
        } throws: { error in
            guard case SharePipeError.tooLarge(_, let exceeded) = error else { return false }
            return exceeded.kind == .totalFramePixels && exceeded.limit == 1600 * 1200 * 3
                && (exceeded.found ?? 0) > 1600 * 1200 * 3
        }
    }
}

/// The writer and the still encoder.
@Suite("GIF writing")
struct GIFWritingTests {
    @Test("the writer emits container properties once and frame properties per frame")
    func writerLevels() throws {
        let writer = try GIFWriter()
        let palette = GIFPalette(rgb: [0, 0, 0, 255, 0, 0, 0, 255, 0])
        try writer.begin(
            GIFContainer(
                screenSize: PixelSize(width: 8, height: 4), globalPalette: palette,
                backgroundIndex: 2, colorResolution: 5, aspectByte: 49, loopCount: 7,
                metadata: [.comment(Array("hello".utf8))]))
        var first = [UInt8](repeating: 1, count: 32)
        try writer.putFrame(
            GIFFrame(
                rect: GIFRect(left: 0, top: 0, width: 8, height: 4), localPalette: nil,
                interlaced: false,
                control: GIFGraphicsControl(disposal: .background, delay: 1, transparentIndex: 0)),
            indices: &first)
        var second = [UInt8](repeating: 1, count: 4)
        try writer.putFrame(
            GIFFrame(
                rect: GIFRect(left: 2, top: 1, width: 2, height: 2),
                localPalette: GIFPalette(rgb: [9, 9, 9, 200, 100, 0]), interlaced: true,
                control: nil), indices: &second)
        let bytes = try writer.finish()
        #expect(Array(bytes.prefix(6)) == Array("GIF89a".utf8))
        #expect(bytes[12] == 49)  // aspect byte kept
        #expect(bytes[11] == 2)  // background index
        #expect(GIFFixtures.count("NETSCAPE2.0", in: bytes) == 1)
        let decoded = try DecodedGIF(bytes)
        #expect(decoded.container.loopCount == 7)
        #expect(decoded.container.colorResolution == 5)
        #expect(decoded.container.metadata == [.comment(Array("hello".utf8))])
        #expect(decoded.frames.count == 2)
        #expect(decoded.frames[0].control == GIFGraphicsControl(disposal: .background, delay: 1, transparentIndex: 0))
        #expect(decoded.frames[1].control == nil)
        #expect(decoded.frames[1].interlaced)
        #expect(decoded.frames[1].localPalette?.count == 2)
        #expect(bytes.last == 0x3B)
    }

    @Test("XMP is written raw with its magic trailer and read back unchanged")
    func xmpRoundTrip() throws {
        let packet = Array("<x:xmpmeta xmlns:x=\"adobe:ns:meta/\">GPS here</x:xmpmeta>".utf8)
        let writer = try GIFWriter()
        try writer.begin(
            GIFContainer(
                screenSize: PixelSize(width: 1, height: 1), globalPalette: GIFPalette(rgb: [0, 0, 0, 1, 1, 1]),
                backgroundIndex: 0, colorResolution: 8, aspectByte: 0, loopCount: nil,
                metadata: [.xmp(packet), .icc([UInt8](repeating: 7, count: 600))]))
        var pixel: [UInt8] = [0]
        try writer.putFrame(
            GIFFrame(
                rect: GIFRect(left: 0, top: 0, width: 1, height: 1), localPalette: nil,
                interlaced: false, control: nil), indices: &pixel)
        let bytes = try writer.finish()
        let decoded = try DecodedGIF(bytes)
        #expect(decoded.container.metadata == [.xmp(packet), .icc([UInt8](repeating: 7, count: 600))])
        #expect(decoded.container.loopCount == nil)
        #expect(GIFFixtures.count("NETSCAPE2.0", in: bytes) == 0)
    }

    @Test("the still encoder keeps up to 256 colours exactly and alpha as the transparent index")
    func stillEncoder() throws {
        var pixels: [UInt8] = []
        for y in 0..<16 {
            for x in 0..<16 { pixels += [UInt8(x * 16), UInt8(y * 16), 77, x == 0 ? 0 : 255] }
        }
        let bitmap = Bitmap(size: PixelSize(width: 16, height: 16), layout: .rgba, pixels: pixels)
        let bytes = try GIFEncoder().encode(
            bitmap, settings: EncodeSettings(quality: 85, progressive: false), metadata: [])
        let decoded = try DecodedGIF(bytes)
        #expect(decoded.frames.count == 1)
        let difference = PictureDifference(decoded.pictures[0], pixels)
        #expect(difference.meanColorError == 0 && difference.alphaMismatch == 0)
        #expect(decoded.pictures[0][3] == 0)  // x = 0 is transparent
        #expect(decoded.pictures[0][7] == 255)
        // Lower "quality" means fewer colours.
        #expect(GIFEncoder.colorBudget(forQuality: 85) == 256)
        #expect(GIFEncoder.colorBudget(forQuality: 40) == 128)
        let few = try GIFEncoder().encode(
            bitmap, settings: EncodeSettings(quality: 5, progressive: false), metadata: [])
        #expect(try DecodedGIF(few).container.globalPalette!.count <= 16)
    }

    @Test("median cut keeps the heaviest colours apart")
    func medianCut() {
        let samples = [
            GIFQuantizer.Sample(r: 255, g: 0, b: 0, weight: 100), GIFQuantizer.Sample(r: 250, g: 5, b: 0, weight: 1),
            GIFQuantizer.Sample(r: 0, g: 0, b: 255, weight: 100), GIFQuantizer.Sample(r: 0, g: 255, b: 0, weight: 100),
        ]
        let palette = GIFQuantizer.medianCut(samples, maxColors: 3)
        #expect(palette.count == 3)
        var nearest = GIFNearestColor(palette: palette)
        let red = palette.color(nearest.index(255, 0, 0)), blue = palette.color(nearest.index(0, 0, 255))
        #expect(red.0 > 240 && blue.2 > 240)
    }
}
