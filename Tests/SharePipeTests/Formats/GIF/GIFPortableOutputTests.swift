import Foundation
import Testing
@testable import SharePipe

/// GIF outputs that every decoder shows the same way: a first frame written over
/// the whole screen where the source's covers it, and a metadata-only copy for a GIF that needs nothing
/// else, never larger than its input.
@Suite("GIF outputs as portable as gifsicle's", .tags(.witness), .skipped(whenListed: "witness"), .serialized)
struct GIFPortableOutputTests {
    static func lenient(_ name: String) -> String { Fixtures.path("lenient/" + name) }

    /// Each frame's image data as stored: descriptor, local table, LZW code size and sub-blocks.
    static func frameData(_ bytes: [UInt8]) -> [[UInt8]] {
        var frames: [[UInt8]] = []
        var p = 13 + (bytes[10] & 0x80 != 0 ? 3 << (Int(bytes[10] & 7) + 1) : 0)
        func subBlocksEnd(_ start: Int) -> Int {
            var q = start
            while q < bytes.count && bytes[q] != 0 { q += Int(bytes[q]) + 1 }
            return q + 1
        }
        while p < bytes.count {
            switch bytes[p] {
            case 0x21: p = subBlocksEnd(p + 2)
            case 0x2C:
                let flags = bytes[p + 9]
                let dataStart = p + 10 + (flags & 0x80 != 0 ? 3 << (Int(flags & 7) + 1) : 0)
                let end = subBlocksEnd(dataStart + 1)
                frames.append(Array(bytes[p..<end]))
                p = end
            default: return frames
            }
        }
        return frames
    }

    /// The first frame as ffmpeg decodes it (what X, Mastodon and Reddit turn GIFs into video with).
    static func ffmpegFirstFrame(_ path: String) throws -> [UInt8] {
        let raw = path + ".rgba"
        _ = try Tool.run(
            "ffmpeg", ["-v", "error", "-y", "-i", path, "-frames:v", "1", "-pix_fmt", "rgba", "-f", "rawvideo", raw])
        return (try? Fixtures.bytes(raw)) ?? []
    }

    // MARK: 5. Frame 0 over the whole screen

    @Test("frame 0 covering the screen is written over the whole screen, transparent at the edges")
    func firstFrameCoversTheScreen() throws {
        let input = Self.lenient("gif-transparent-edges.gif")
        var options = PrepareOptions()
        options.strip = .all
        for (label, options) in [("same size", options), ("resized", PrepareOptions(maxShortEdge: 30))] {
            let result = try Pipeline.prepare(.file(path: input), options: options)
            #expect(result.method == .reencoded || label == "same size")
            let output = try DecodedGIF(result.bytes)
            let screen = output.size
            #expect(
                output.frames[0].rect == GIFRect(left: 0, top: 0, width: screen.width, height: screen.height),
                "\(label)")
            #expect(output.frames[0].transparentIndex != nil, "\(label)")
            // By the browser's rules: the corners transparent, the centre opaque.
            let first = output.pictures[0]
            #expect(LenientInputTests.rgba(first, width: screen.width, 0, 0)[3] == 0, "\(label)")
            #expect(
                LenientInputTests.rgba(first, width: screen.width, screen.width / 2, screen.height / 2)[3] == 255,
                "\(label)")

            let directory = Fixtures.temporaryDirectory()
            defer { Fixtures.cleanUp(directory) }
            let path = directory + "/out.gif"
            try Fixtures.write(result.bytes, to: path)
            // ImageMagick's -coalesce starts from the background colour: the corner must still be transparent.
            try GIFWitness.require()
            do {
                let coalesced = try GIFWitness.coalesced(path, size: screen)
                #expect(coalesced.count == 3)
                #expect(
                    coalesced.first.map { LenientInputTests.rgba($0, width: screen.width, 0, 0)[3] } == 0, "\(label)")
            }
            // ffmpeg fills what frame 0 leaves uncovered with opaque colour: nothing may be left uncovered.
            try Witness.require("ffmpeg")
            do {
                let frame = try Self.ffmpegFirstFrame(path)
                let pixels = Array(frame.prefix(screen.area * 4))
                #expect(pixels.count == screen.area * 4, "\(label)")
                if pixels.count == screen.area * 4 {
                    #expect(
                        LenientInputTests.rgba(pixels, width: screen.width, 0, 0)[3] == 0, "\(label): ffmpeg corner")
                    #expect(
                        LenientInputTests.rgba(pixels, width: screen.width, screen.width - 1, screen.height - 1)[3]
                            == 0,
                        "\(label): ffmpeg corner")
                }
            }
        }
    }

    // MARK: 6. Metadata-only copy

    @Test("an animated GIF that needs nothing but its metadata is copied: image data byte for byte, never larger")
    func metadataOnlyCopy() throws {
        let path = GIFFixtures.path("metadata.gif")
        let input = try Fixtures.bytes(path)
        let result = try Pipeline.prepare(.file(path: path), options: PrepareOptions())
        #expect(result.method == .metadataRewrite)
        #expect(result.byteCount < input.count)
        #expect(result.frameCount == 2 && result.inputFrameCount == 2)
        #expect(Self.frameData(result.bytes) == Self.frameData(input))
        #expect(result.removedMetadata.isSuperset(of: [.comment, .xmp]))
        #expect(GIFFixtures.count("XMP DataXMP", in: result.bytes) == 0)
        #expect(GIFFixtures.count("ICCRGBG1012", in: result.bytes) == 1)  // the colour profile stays
        #expect(GIFFixtures.count("private comment", in: result.bytes) == 0)
        let output = try DecodedGIF(result.bytes)
        let source = try DecodedGIF(input)
        #expect(output.container.loopCount == source.container.loopCount)
        #expect(output.delays == source.delays)
        #expect(output.pictures == source.pictures)
        #expect(result.bytes.last == 0x3B)

        // Keeping everything copies the file unchanged.
        var keepAll = PrepareOptions()
        keepAll.strip = .none
        #expect(try Pipeline.prepare(.file(path: path), options: keepAll).bytes == input)
    }

    @Test("the copy keeps the first loop extension only, as the reader and the re-encoder do")
    func metadataOnlyCopyKeepsTheFirstLoopCount() throws {
        let path = GIFFixtures.path("multiple-loops.gif")
        let result = try Pipeline.prepare(.file(path: path), options: PrepareOptions())
        #expect(result.method == .metadataRewrite)
        #expect(GIFFixtures.count("NETSCAPE2.0", in: result.bytes) == 1)
        #expect(try DecodedGIF(result.bytes).container.loopCount == 5)
    }

    @Test("a copy stops where the reader stops: junk or an appended GIF after the frames is left out")
    func metadataOnlyCopyOfAnAppendedGIF() throws {
        let path = Self.lenient("gif-appended-gif.gif")
        let input = try Fixtures.bytes(path)
        let result = try Pipeline.prepare(.file(path: path), options: PrepareOptions())
        #expect(result.method == .metadataRewrite)
        #expect(result.frameCount == 2)
        #expect(result.warnings.contains { $0.contains("kept the 2 frame(s)") })
        #expect(GIFFixtures.count("GIF89a", in: result.bytes) == 1)
        #expect(Self.frameData(result.bytes) == Array(Self.frameData(input).prefix(2)))
        #expect(try DecodedGIF(result.bytes).frames.count == 2)
    }

    @Test("frames without a colour table are re-encoded with a palette, not copied (only browsers show them)")
    func noColorTableIsNotCopied() throws {
        let result = try Pipeline.prepare(
            .file(path: Self.lenient("gif-no-color-table.gif")), options: PrepareOptions())
        #expect(result.method == .reencoded)
        #expect(
            try DecodedGIF(result.bytes).frames.allSatisfy { $0.localPalette != nil }
                || DecodedGIF(result.bytes).container.globalPalette != nil)
    }

    @Test("frames reaching outside the screen, or empty, are re-encoded (clipped; 1×1), not copied")
    func framesDecodersDisagreeOnAreNotCopied() throws {
        for path in [GIFFixtures.path("frame-outside.gif"), Self.lenient("gif-zero-width-frame.gif")] {
            let result = try Pipeline.prepare(.file(path: path), options: PrepareOptions())
            #expect(result.method == .reencoded, "\(path)")
            let screen = try DecodedGIF(result.bytes).size
            #expect(
                try DecodedGIF(result.bytes).frames.allSatisfy {
                    !$0.rect.isEmpty && $0.rect.clipped(to: screen) == $0.rect
                })
        }
    }

    @Test("a GIF that needs a resize or is over the byte limit is still re-encoded")
    func copyOnlyWhenNothingElseIsNeeded() throws {
        let path = GIFFixtures.path("large-1600x1200.gif")
        #expect(try Pipeline.prepare(.file(path: path), options: PrepareOptions()).method == .reencoded)
        var tight = PrepareOptions()
        tight.animation.maxBytes = 1024
        let small = GIFFixtures.path("disposals.gif")
        let fitted = try? Pipeline.prepare(.file(path: small), options: tight)
        #expect(fitted.map { $0.method == .reencoded && $0.byteCount <= 1024 } ?? true)
    }

    /// Every committed GIF and every corpus GIF that meets the default limits comes out no larger.
    static let gifsMeetingLimits: [String] = {
        let committed = (try? FileManager.default.contentsOfDirectory(atPath: Fixtures.path("gif"))) ?? []
        let corpusDirectory = Fixtures.corpus("gif-animated")
        let corpus = (try? FileManager.default.contentsOfDirectory(atPath: corpusDirectory)) ?? []
        return committed.filter { $0.hasSuffix(".gif") }.map { Fixtures.path("gif/" + $0) }
            + corpus.filter { $0.hasSuffix(".gif") }.sorted().map { corpusDirectory + "/" + $0 }
    }()

    @Test("never larger than the input when the input already meets every limit", arguments: gifsMeetingLimits)
    func neverLarger(_ path: String) throws {
        let input = try Fixtures.bytes(path)
        let info = try SharePipe.inspect(.bytes(input))
        let options = PrepareOptions()
        let capped = ScalePlan.targetSize(
            for: info.size, caps: info.frameCount > 1 ? options.animatedSizeCaps : options.sizeCaps)
        guard capped == info.size else { return }  // needs a resize: not this test's case
        let result = try Pipeline.prepare(.file(path: path), options: options)
        #expect(result.byteCount <= input.count, "\(path): \(input.count) → \(result.byteCount) (\(result.method))")
        #expect(result.size == info.size)
    }
}
