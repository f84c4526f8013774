import CSharePipe
import Foundation
import Testing
@testable import SharePipe

/// The committed WebP fixtures (scripts/fixtures/make-test-images, section webp) and outside witnesses.
enum WebPFixtures {
    static func path(_ name: String) -> String { Fixtures.path("webp/" + name) }
    static func source(_ name: String) -> ImageSource { .file(path: path(name)) }

    /// Decodes WebP bytes with libwebp's own `dwebp` (an outside witness) to a straight RGBA bitmap.
    static func witnessDecode(_ bytes: [UInt8]) throws -> Bitmap {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Fixtures.write(bytes, to: directory + "/in.webp")
        let run = try Tool.run("dwebp", ["-quiet", "-pam", directory + "/in.webp", "-o", directory + "/out.pam"])
        guard run.status == 0 else { throw SharePipeError.corrupt(file: "dwebp", phase: .decode, reason: run.stderr) }
        let pam = try Fixtures.bytes(directory + "/out.pam")
        // PAM header: text lines up to ENDHDR\n, then width × height × 4 bytes (dwebp writes RGB_ALPHA).
        let marker = Array("ENDHDR\n".utf8)
        guard
            let end = (0...(pam.count - marker.count)).first(where: {
                pam[$0..<$0 + marker.count].elementsEqual(marker)
            })
        else {
            throw SharePipeError.corrupt(file: "dwebp", phase: .decode, reason: "no PAM header")
        }
        let header = String(decoding: pam[..<end], as: UTF8.self)
        func value(_ key: String) -> Int {
            header.split(separator: "\n").first { $0.hasPrefix(key + " ") }.map { Int($0.dropFirst(key.count + 1))! }
                ?? 0
        }
        let size = PixelSize(width: value("WIDTH"), height: value("HEIGHT"))
        return Bitmap(size: size, layout: .rgba, pixels: Array(pam[(end + marker.count)...]))
    }

    /// exiftool's tag list for some bytes (-n -s -G1).
    static func exiftool(_ bytes: [UInt8]) throws -> String {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Fixtures.write(bytes, to: directory + "/x.webp")
        return try Tool.run("exiftool", ["-a", "-n", "-s", "-G1", directory + "/x.webp"]).stdout
    }

    /// The four-character codes of the top-level chunks, in order.
    static func chunkList(_ bytes: [UInt8]) throws -> [String] {
        let walker = try WebPChunkWalker(.bytes(bytes))
        var list: [String] = []
        while let chunk = try walker.next() { list.append(chunk.fourCC) }
        return list
    }

    /// A 64×48 picture: grey, 8px red TL / green TR / blue BR markers, optionally a transparent bottom-left quarter.
    static func markedBitmap(alpha: Bool) -> Bitmap {
        let size = PixelSize(width: 64, height: 48)
        var bitmap = Bitmap(size: size, layout: alpha ? .rgba : .rgb)
        let channels = alpha ? 4 : 3
        for y in 0..<size.height {
            for x in 0..<size.width {
                var colour: [UInt8] = [128, 128, 128, 255]
                if x < 8 && y < 8 { colour = [255, 0, 0, 255] }
                if x >= 56 && y < 8 { colour = [0, 255, 0, 255] }
                if x >= 56 && y >= 40 { colour = [0, 0, 255, 255] }
                if alpha && x < 32 && y >= 24 { colour = [0, 0, 0, 0] }
                let offset = (y * size.width + x) * channels
                for c in 0..<channels { bitmap.pixels[offset + c] = colour[c] }
            }
        }
        return bitmap
    }
}

@Suite("WebP header and metadata", .tags(.witness), .skipped(whenListed: "witness"))
struct WebPProbeTests {
    @Test("sniffing: RIFF/WEBP is WebP, a RIFF/WAVE file is not")
    func sniff() {
        #expect(ImageFormat.sniff(Array("RIFF\u{10}\0\0\0WEBPVP8 ".utf8)) == .webp)
        #expect(ImageFormat.sniff(Array("RIFF\u{10}\0\0\0WAVEfmt ".utf8)) == nil)
    }

    @Test("lossy with Exif GPS, XMP and orientation 6: size, orientation and every metadata block found")
    func lossyWithMetadata() throws {
        let info = try WebPDecoder().probe(WebPFixtures.source("gps-orient6.webp"), limits: ImageLimits())
        #expect(info.format == .webp)
        #expect(info.size == PixelSize(width: 240, height: 320))
        #expect(info.orientedSize == PixelSize(width: 320, height: 240))
        #expect(info.orientation.rawValue == 6)
        #expect(info.frameCount == 1 && !info.hasAlpha)
        #expect(info.webp?.lossless == false)
        #expect(info.metadataKinds.isSuperset(of: [.exif, .gps, .xmp]))
        // The EXIF chunk is a bare TIFF structure ("MM\0*"), as the WebP container specifies.
        var exif: [UInt8] = []
        for case .exif(let tiff) in info.metadata { exif = tiff }
        #expect(exif.prefix(4).elementsEqual([0x4D, 0x4D, 0x00, 0x2A]))
    }

    @Test("lossless with alpha; ICC profile read whole; animation: canvas, frames, loop count")
    func otherKinds() throws {
        let alpha = try WebPDecoder().probe(WebPFixtures.source("lossless-alpha.webp"), limits: ImageLimits())
        #expect(alpha.hasAlpha && alpha.webp?.lossless == true && alpha.size == PixelSize(width: 200, height: 150))
        #expect(alpha.metadata.isEmpty)

        let icc = try WebPDecoder().probe(WebPFixtures.source("icc.webp"), limits: ImageLimits())
        var profile: [UInt8] = []
        for case .icc(let bytes) in icc.metadata { profile = bytes }
        #expect(profile.count > 128 && profile[36..<40].elementsEqual("acsp".utf8))
        let declared: Int = WebPBytes.u32(profile.prefix(4).reversed(), 0)  // big-endian profile size
        #expect(declared == profile.count)

        let animated = try WebPDecoder().probe(WebPFixtures.source("animated.webp"), limits: ImageLimits())
        #expect(animated.frameCount == 4 && animated.webp?.isAnimated == true && animated.webp?.loopCount == 3)
        #expect(animated.size == PixelSize(width: 160, height: 120))
        #expect(animated.metadataKinds.isSuperset(of: [.exif, .gps]))
    }

    @Test("bombs are refused on the header: a 16000×16000 animation canvas, a frame limit, a pixel limit")
    func bombs() throws {
        #expect(throws: SharePipeError.self) {
            try WebPDecoder().probe(.file(path: Fixtures.path("broken/canvas-bomb.webp")), limits: ImageLimits())
        }
        do {
            _ = try WebPDecoder().probe(.file(path: Fixtures.path("broken/canvas-bomb.webp")), limits: ImageLimits())
        } catch SharePipeError.tooLarge(let file, let exceeded) {
            #expect(file.hasSuffix("canvas-bomb.webp") && exceeded.size == PixelSize(width: 16000, height: 16000))
        }
        #expect {
            try WebPDecoder().probe(WebPFixtures.source("animated.webp"), limits: ImageLimits(maxFrames: 3))
        } throws: { error in
            if case SharePipeError.tooLarge(_, let exceeded) = error {
                return exceeded.kind == .frameCount && exceeded.limit == 3
            }
            return false
        }
        #expect {
            try WebPDecoder().probe(
                WebPFixtures.source("animated.webp"), limits: ImageLimits(maxTotalFramePixels: 3 * 160 * 120))
        } throws: { error in
            if case SharePipeError.tooLarge = error { return true } else { return false }
        }
        #expect {
            try WebPDecoder().probe(
                WebPFixtures.source("gps-orient6.webp"), limits: ImageLimits(maxPixels: 240 * 320 - 1))
        } throws: { error in
            if case SharePipeError.tooLarge = error { return true } else { return false }
        }
    }

    @Test("truncated and malformed files: a corrupt error naming the file, from the probe or the render")
    func broken() throws {
        let truncated = ImageSource.file(path: Fixtures.path("broken/truncated.webp"))
        #expect {
            let info = try WebPDecoder().probe(truncated, limits: ImageLimits())
            _ = try WebPDecoder().render(
                truncated, info: info, target: info.size, limits: ImageLimits(), meter: PixelMemoryMeter())
        } throws: { error in
            if case SharePipeError.corrupt(let file, _, _) = error {
                return file.hasSuffix("truncated.webp")
            } else {
                return false
            }
        }
        // A whole file whose image data is cut inside the bitstream (the RIFF sizes still agree).
        var bytes = try Fixtures.bytes(WebPFixtures.path("lossless-alpha.webp"))
        bytes = Array(bytes.prefix(60))
        bytes.replaceSubrange(4..<8, with: WebPBytes.le32(bytes.count - 8))
        bytes.replaceSubrange(16..<20, with: WebPBytes.le32(bytes.count - 20))
        let cut = ImageSource.bytes(bytes)
        #expect(throws: SharePipeError.self) {
            let info = try WebPDecoder().probe(cut, limits: ImageLimits())
            _ = try WebPDecoder().render(
                cut, info: info, target: info.size, limits: ImageLimits(), meter: PixelMemoryMeter())
        }
        // Not RIFF at all, RIFF without chunks, a canvas that disagrees with the bitstream.
        for bad in [Array("RIFF\u{4}\0\0\0WEBP".utf8), Array("RIFX\u{4}\0\0\0WEBP".utf8)] {
            #expect(throws: SharePipeError.self) { try WebPDecoder().probe(.bytes(bad), limits: ImageLimits()) }
        }
        var mismatched = try Fixtures.bytes(WebPFixtures.path("gps-orient6.webp"))
        mismatched[24] = 0x10  // VP8X canvas width 240 → 17
        #expect(throws: SharePipeError.self) { try WebPDecoder().probe(.bytes(mismatched), limits: ImageLimits()) }
    }
}

@Suite("WebP decoding", .tags(.witness), .skipped(whenListed: "witness"))
struct WebPDecodeTests {
    private func render(_ name: String, target: PixelSize? = nil) throws -> (RenderedImage, PixelMemoryMeter) {
        let source = WebPFixtures.source(name)
        let info = try WebPDecoder().probe(source, limits: ImageLimits())
        let meter = PixelMemoryMeter()
        return (
            try WebPDecoder().render(
                source, info: info, target: target ?? info.size, limits: ImageLimits(), meter: meter), meter
        )
    }

    @Test("lossy at full size: stored orientation, marked corners where the file has them")
    func lossyFullSize() throws {
        let (rendered, meter) = try render("gps-orient6.webp")
        let bitmap = rendered.bitmap
        #expect(bitmap.size == PixelSize(width: 240, height: 320) && bitmap.layout == .rgb)
        #expect(close(bitmap.rgb(16, 303), [255, 0, 0], tolerance: 12))  // displayed top-left, stored bottom-left
        #expect(close(bitmap.rgb(16, 16), [0, 255, 0], tolerance: 12))
        #expect(close(bitmap.rgb(223, 16), [0, 0, 255], tolerance: 12))
        #expect(close(bitmap.rgb(120, 160), [128, 128, 128], tolerance: 6))
        #expect(meter.currentBytes == 0)
        // Pixels agree with libwebp's own reference decoder.
        let witness = try WebPFixtures.witnessDecode(try Fixtures.bytes(WebPFixtures.path("gps-orient6.webp")))
        for (x, y) in [(16, 303), (16, 16), (223, 16), (120, 160), (0, 0), (239, 319)] {
            #expect(close(bitmap.rgb(x, y), Array(witness.rgb(x, y).prefix(3)), tolerance: 1))
        }
    }

    @Test("scaled: libwebp decodes to twice the target, Lanczos does the rest; its buffers are metered")
    func scaled() throws {
        let (rendered, meter) = try render("gps-orient6.webp", target: PixelSize(width: 60, height: 80))
        #expect(rendered.bitmap.size == PixelSize(width: 60, height: 80))
        let decoded = WebPDecoder.decodeSize(stored: PixelSize(width: 240, height: 320), target: rendered.bitmap.size)
        #expect(decoded == PixelSize(width: 120, height: 160))
        #expect(close(rendered.bitmap.rgb(3, 76), [255, 0, 0], tolerance: 16))
        #expect(close(rendered.bitmap.rgb(3, 3), [0, 255, 0], tolerance: 16))
        #expect(close(rendered.bitmap.rgb(56, 3), [0, 0, 255], tolerance: 16))
        let header = try WebPScan.read(WebPFixtures.source("gps-orient6.webp"), limits: ImageLimits())
        #expect(meter.peakBytes >= WebPDecoder.libraryBytes(header, decoded: decoded))
        #expect(meter.currentBytes == 0)
    }

    @Test("lossless with alpha: exact colours, transparent and half-transparent areas")
    func losslessAlpha() throws {
        let (rendered, _) = try render("lossless-alpha.webp")
        let bitmap = rendered.bitmap
        #expect(bitmap.layout == .rgba)
        #expect(bitmap.rgb(5, 5) == [255, 0, 0, 255])
        #expect(bitmap.rgb(190, 5) == [0, 255, 0, 255])
        #expect(bitmap.rgb(190, 140) == [0, 0, 255, 255])
        #expect(bitmap.rgb(50, 100)[3] == 0)
        #expect(close(bitmap.rgb(120, 60), [255, 255, 0, 128], tolerance: 1))
        // At the stored size libwebp's rescaler is off: every pixel as dwebp decodes it (the rescaler rounded
        // the colour of half-transparent pixels by one).
        let witness = try WebPFixtures.witnessDecode(try Fixtures.bytes(WebPFixtures.path("lossless-alpha.webp")))
        #expect(bitmap.pixels == witness.pixels)
        let (lossy, _) = try render("icc.webp")
        #expect(
            lossy.bitmap.pixels
                == (try WebPFixtures.witnessDecode(try Fixtures.bytes(WebPFixtures.path("icc.webp")))).pixels
                .enumerated().filter { $0.offset % 4 != 3 }.map(\.element))  // dwebp's RGBA, our RGB
    }

    @Test("bytes in memory decode exactly as the file does; the decoder memory limit refuses before decoding")
    func memorySourceAndLimit() throws {
        let bytes = try Fixtures.bytes(WebPFixtures.path("icc.webp"))
        let info = try WebPDecoder().probe(.bytes(bytes), limits: ImageLimits())
        let fromMemory = try WebPDecoder().render(
            .bytes(bytes), info: info, target: info.size, limits: ImageLimits(), meter: PixelMemoryMeter())
        let (fromFile, _) = try render("icc.webp")
        #expect(fromMemory.bitmap == fromFile.bitmap)
        #expect {
            try WebPDecoder().render(
                .bytes(bytes), info: info, target: info.size, limits: ImageLimits(maxDecoderMemory: 50_000),
                meter: PixelMemoryMeter())
        } throws: { error in
            if case SharePipeError.tooLarge(_, let exceeded) = error {
                return exceeded.kind == .decoderMemory && exceeded.limit == 50_000
            }
            return false
        }
    }

    @Test("animation: composited canvases one at a time, durations in ms, loop count converted for GIF")
    func animation() throws {
        let source = WebPFixtures.source("animated.webp")
        let header = try WebPScan.read(source, limits: ImageLimits())
        let meter = PixelMemoryMeter()
        let animation = try WebPAnimationSource(source, header: header, limits: ImageLimits(), meter: meter)
        #expect(animation.canvasSize == PixelSize(width: 160, height: 120))
        #expect(animation.frameCount == 4)
        #expect(animation.loopCount == 2)  // 3 plays = the first + 2 repeats
        #expect(meter.currentBytes == 160 * 120 * 4)  // the canvas; a frame's buffers only while it decodes
        var durations: [Int] = []
        var centres: [[Int]] = []
        while let frame = try animation.nextFrame() {
            durations.append(frame.durationMilliseconds)
            #expect(frame.canvas.size == animation.canvasSize && frame.canvas.layout == .rgba)
            #expect(frame.canvas.rgb(4, 4) == [255, 0, 0, 255])  // every frame is the whole canvas,
            #expect(frame.canvas.rgb(155, 4) == [0, 255, 0, 255])  // sub-rectangles composited on the first
            #expect(frame.canvas.rgb(155, 115) == [0, 0, 255, 255])
            centres.append(frame.canvas.rgb(80, 60))
        }
        #expect(durations == [100, 250, 40, 500])
        #expect(centres.count == 4)
        if centres.count == 4 {
            #expect(
                centres[0] == [255, 255, 255, 255] && centres[1] == [0, 0, 0, 255] && centres[3] == [0, 255, 255, 255])
            #expect(close(centres[2], [255, 255, 0, 255], tolerance: 8))  // the lossy frame
        }
        #expect(meter.currentBytes == 0)  // closed after the last frame
        // The canvas and a whole-canvas frame (frame 1) decoding: at least two canvases, within the bound.
        #expect(meter.peakBytes >= 2 * 160 * 120 * 4)
        #expect(meter.peakBytes <= WebPAnimationSource.meteredBytes(canvas: animation.canvasSize))
        animation.close()
        #expect(meter.currentBytes == 0)
        #expect(WebPAnimationSource.gifLoopCount(plays: 0) == 0)
        #expect(WebPAnimationSource.gifLoopCount(plays: 1) == nil)
        #expect(WebPAnimationSource.gifLoopCount(plays: 5) == 4)
    }

    /// Every canvas and end time libwebp's `WebPAnimDecoder` (the whole file in memory) produces.
    static func referenceFrames(_ bytes: [UInt8]) throws -> [(canvas: [UInt8], end: Int)] {
        var message = shimMessageBuffer()
        var info = sp_webp_animation_info()
        var handle: OpaquePointer?
        let status = bytes.withUnsafeBufferPointer {
            sp_webp_animation_open($0.baseAddress, $0.count, &handle, &info, &message)
        }
        try checkShim(status, message, file: "reference", phase: .header)
        defer { sp_webp_animation_free(handle) }
        var frames: [(canvas: [UInt8], end: Int)] = []
        while true {
            var canvas: UnsafePointer<UInt8>?
            var end: Int32 = 0
            let next = sp_webp_animation_next(handle, &canvas, &end, &message)
            if next == SP_ERR_END { break }
            try checkShim(next, message, file: "reference", phase: .decode)
            frames.append(
                (
                    Array(UnsafeBufferPointer(start: canvas, count: Int(info.canvas_width * info.canvas_height) * 4)),
                    Int(end)
                ))
        }
        return frames
    }

    @Test(
        "composited from the file frame by frame: every canvas byte for byte as libwebp's WebPAnimDecoder, same timing",
        arguments: ["animated.webp", "disposals-mixed.webp", "disposals-lossy.webp"])
    func compositingMatchesLibwebp(_ name: String) throws {
        let bytes = try Fixtures.bytes(WebPFixtures.path(name))
        let reference = try Self.referenceFrames(bytes)
        for source in [WebPFixtures.source(name), .bytes(bytes)] {
            let header = try WebPScan.read(source, limits: ImageLimits())
            let meter = PixelMemoryMeter()
            let animation = try WebPAnimationSource(source, header: header, limits: ImageLimits(), meter: meter)
            var end = 0
            var index = 0
            while let frame = try animation.nextFrame() {
                end += frame.durationMilliseconds
                #expect(index < reference.count)
                if index < reference.count {
                    #expect(frame.canvas.pixels == reference[index].canvas, "\(name) frame \(index)")
                    #expect(end == reference[index].end, "\(name) frame \(index)")
                }
                index += 1
            }
            #expect(index == reference.count && index == header.frameCount)
            #expect(meter.currentBytes == 0)
        }
    }

    @Test(
        "a damaged frame header is corrupt (header), a frame gone since the probe unreadable, both naming the file; the canvas is uncounted"
    )
    func damagedFrame() throws {
        let bytes = try Fixtures.bytes(WebPFixtures.path("disposals-lossy.webp"))
        // The second ANMF's bitstream: overwrite its VP8 payload (after the frame header and its key-frame header).
        let anmf = (12..<bytes.count - 4).filter { bytes[$0..<$0 + 4].elementsEqual("ANMF".utf8) }
        #expect(anmf.count == 6)
        var damaged = bytes
        let vp8 = try #require((anmf[1]..<anmf[2]).first { bytes[$0..<$0 + 4].elementsEqual("VP8 ".utf8) })
        for i in vp8 + 8 + 3..<vp8 + 8 + 6 { damaged[i] = 0xFF }  // the start code: not a VP8 key frame
        // A RIFF that ends inside the fourth frame, its sizes rewritten so the header walk still accepts it
        // up to there: the frame walk finds frames missing.
        var cut = Array(bytes.prefix(anmf[3]))
        cut.replaceSubrange(4..<8, with: WebPBytes.le32(cut.count - 8))
        for (label, data) in [("damaged", damaged), ("cut", cut)] {
            let meter = PixelMemoryMeter()
            let source = ImageSource.bytes(data)
            var header = try WebPScan.read(source, limits: ImageLimits())
            if label == "cut" { header.frameCount = 6 }  // as if the file was cut after the probe
            let animation = try WebPAnimationSource(source, header: header, limits: ImageLimits(), meter: meter)
            #expect {
                while try animation.nextFrame() != nil {}
            } throws: { error in
                switch (label, error as? SharePipeError) {
                case ("damaged", .corrupt(let file, .header, _)?): return file == "<memory>"
                case ("cut", .unreadable(let file, let reason)?):
                    return file == "<memory>" && reason.contains("changed since it was read")
                default: return false
                }
            }
            #expect(meter.currentBytes == 0, "\(label)")
        }
    }

    @Test("an animation rendered as a still is its first composited frame")
    func animationAsStill() throws {
        let (rendered, _) = try render("animated.webp", target: PixelSize(width: 80, height: 60))
        #expect(rendered.bitmap.size == PixelSize(width: 80, height: 60))
        #expect(close(rendered.bitmap.rgb(40, 30), [255, 255, 255, 255], tolerance: 2))
        #expect(close(rendered.bitmap.rgb(2, 2), [255, 0, 0, 255], tolerance: 8))
    }
}

@Suite("WebP encoding and rewriting", .tags(.witness), .skipped(whenListed: "witness"))
struct WebPEncodeTests {
    @Test("lossy: marked corners survive, libwebp's dwebp agrees; lower quality is smaller")
    func lossy() throws {
        let bitmap = WebPFixtures.markedBitmap(alpha: false)
        let high = try WebPEncoder().encode(
            bitmap, settings: EncodeSettings(quality: 90, progressive: false), metadata: [])
        let low = try WebPEncoder().encode(
            bitmap, settings: EncodeSettings(quality: 20, progressive: false), metadata: [])
        #expect(low.count < high.count)
        #expect(try WebPFixtures.chunkList(high) == ["VP8 "])  // a simple file without metadata
        let decoded = try WebPFixtures.witnessDecode(high)
        #expect(decoded.size == bitmap.size)
        #expect(close(decoded.rgb(3, 3), [255, 0, 0, 255], tolerance: 16))
        #expect(close(decoded.rgb(60, 3), [0, 255, 0, 255], tolerance: 16))
        #expect(close(decoded.rgb(60, 44), [0, 0, 255, 255], tolerance: 16))
        #expect(close(decoded.rgb(30, 20), [128, 128, 128, 255], tolerance: 4))
    }

    @Test("lossless keeps every pixel and the alpha exactly; lossy keeps alpha in an ALPH chunk")
    func losslessAndAlpha() throws {
        let bitmap = WebPFixtures.markedBitmap(alpha: true)
        let lossless = try WebPEncoder(lossless: true).encode(
            bitmap, settings: EncodeSettings(quality: 85, progressive: false), metadata: [])
        #expect(try WebPFixtures.chunkList(lossless) == ["VP8L"])
        let exact = try WebPFixtures.witnessDecode(lossless)
        for (x, y) in [(3, 3), (60, 3), (60, 44), (40, 10), (10, 40), (31, 24)] {
            let expected = bitmap.rgb(x, y)
            #expect(expected[3] == 0 ? exact.rgb(x, y)[3] == 0 : exact.rgb(x, y) == expected)
        }
        let lossy = try WebPEncoder().encode(
            bitmap, settings: EncodeSettings(quality: 80, progressive: false), metadata: [])
        #expect(try WebPFixtures.chunkList(lossy) == ["VP8X", "ALPH", "VP8 "])
        let decoded = try WebPFixtures.witnessDecode(lossy)
        #expect(decoded.rgb(10, 40)[3] == 0 && decoded.rgb(40, 10)[3] == 255)
    }

    @Test("metadata goes through WebPMux: VP8X flags, ICCP first, EXIF and XMP after the image; exiftool reads them")
    func metadata() throws {
        let source = try WebPDecoder().probe(WebPFixtures.source("gps-orient6.webp"), limits: ImageLimits())
        let icc = try WebPDecoder().probe(WebPFixtures.source("icc.webp"), limits: ImageLimits()).metadata
        let kept = FormatRegistry.webp.metadataPolicy.outcome(for: source, mode: .gps).kept + icc
        let bytes = try WebPEncoder().encode(
            WebPFixtures.markedBitmap(alpha: false), settings: EncodeSettings(quality: 80, progressive: false),
            metadata: kept)
        #expect(try WebPFixtures.chunkList(bytes) == ["VP8X", "ICCP", "VP8 ", "EXIF"])
        let tags = try WebPFixtures.exiftool(bytes)
        #expect(tags.contains("Display P3 (SharePipe test profile)"))
        #expect(tags.contains("SharePipeCam"))
        #expect(!tags.contains("GPSLatitude") && !tags.contains("XMP"), "\(tags)")
        let reread = try WebPDecoder().probe(.bytes(bytes), limits: ImageLimits())
        #expect(reread.metadataKinds == [.exif, .icc])
        #expect(reread.orientation == .up)
    }

    @Test("metadata-only rewrite: bitstream copied byte for byte, EXIF and XMP gone (exiftool), VP8X flags recomputed")
    func rewrite() throws {
        let original = try Fixtures.bytes(WebPFixtures.path("gps-orient6.webp"))
        let stripped = try WebPRewriter.rewrite(WebPFixtures.source("gps-orient6.webp"), keeping: [])
        #expect(try WebPFixtures.chunkList(stripped) == ["VP8X", "VP8 "])
        #expect(stripped[20] == 0)  // no flags left
        let vp8 = { (bytes: [UInt8]) -> ArraySlice<UInt8> in
            let start = (0..<bytes.count - 4).first { bytes[$0..<$0 + 4].elementsEqual("VP8 ".utf8) }!
            return bytes[start..<start + 8 + WebPBytes.u32(bytes, start + 4)]
        }
        #expect(vp8(stripped) == vp8(original))
        let tags = try WebPFixtures.exiftool(stripped)
        #expect(!tags.contains("GPS") && !tags.contains("[IFD0]") && !tags.contains("XMP"), "\(tags)")
        #expect(try WebPFixtures.witnessDecode(stripped) == WebPFixtures.witnessDecode(original))

        // A simple (VP8L) file that keeps an ICC profile gains a VP8X header with the ICC and alpha flags.
        let profile = try WebPDecoder().probe(WebPFixtures.source("icc.webp"), limits: ImageLimits()).metadata
        let withICC = try WebPRewriter.rewrite(WebPFixtures.source("lossless-alpha.webp"), keeping: profile)
        #expect(try WebPFixtures.chunkList(withICC) == ["VP8X", "ICCP", "VP8L"])
        #expect(withICC[20] == WebPFeatureFlags([.icc, .alpha]).rawValue)
        #expect(
            try WebPFixtures.witnessDecode(withICC)
                == WebPFixtures.witnessDecode(try Fixtures.bytes(WebPFixtures.path("lossless-alpha.webp"))))

        // An animation keeps its frames and loop count; its Exif goes.
        let animation = try WebPRewriter.rewrite(WebPFixtures.source("animated.webp"), keeping: [])
        #expect(try WebPFixtures.chunkList(animation) == ["VP8X", "ANIM", "ANMF", "ANMF", "ANMF", "ANMF"])
        let info = try WebPDecoder().probe(.bytes(animation), limits: ImageLimits())
        #expect(info.frameCount == 4 && info.webp?.loopCount == 3 && info.metadata.isEmpty)
    }
}
