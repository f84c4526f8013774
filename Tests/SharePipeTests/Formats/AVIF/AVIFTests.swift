import Foundation
import Testing
@testable import SharePipe

/// AVIF through libavif: alpha, `irot`/`imir`, image sequences with and without a
/// still item taking the animation route, and limits refused from the header. Fixtures are made here by
/// ImageMagick (PNG frames) and libavif's own `avifenc` (scripts/install-deps: libavif-bin), once per run.
@Suite(.tags(.witness), .skipped(whenListed: "witness"), .serialized) struct AVIFTests {
    /// The folder of generated AVIFs (made once per test process).
    static let fixtures: String = {
        let directory = NSTemporaryDirectory() + "sharepipe-avif-fixtures-\(getpid())-v2"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let convert = Witness.convert
        func run(_ tool: String, _ arguments: [String]) {
            let output = try? Tool.run(tool, arguments)
            if output?.status != 0 { print("fixture: \(tool) \(arguments) failed: \(output?.stderr ?? "not run")") }
        }
        // Quadrants: red top left, green top right, blue bottom left, white bottom right (64×48).
        run(
            convert,
            [
                "-size", "64x48", "xc:red", "-fill", "lime", "-draw", "rectangle 32,0 63,23",
                "-fill", "blue", "-draw", "rectangle 0,24 31,47", "-fill", "white", "-draw", "rectangle 32,24 63,47",
                "PNG24:" + directory + "/quadrants.png",
            ])
        // Alpha: opaque red left half, half-transparent blue third quarter, fully transparent last quarter.
        run(
            convert,
            [
                "-size", "64x48", "xc:none", "-fill", "red", "-draw", "rectangle 0,0 31,47",
                "-fill", "rgba(0,0,255,0.5)", "-draw", "rectangle 32,0 47,47", "PNG32:" + directory + "/alpha.png",
            ])
        for (name, colour) in [("red", "red"), ("green", "lime"), ("blue", "blue")] {
            // 24×24 of the colour, then a transparent strip 8 wide on the right.
            run(
                convert,
                [
                    "-size", "24x24", "xc:" + colour, "-background", "none", "-extent", "32x24",
                    "PNG32:" + directory + "/\(name).png",
                ])
        }
        let exact = ["-s", "10", "-y", "444", "--min", "0", "--max", "0", "--minalpha", "0", "--maxalpha", "0"]
        run("avifenc", exact + [directory + "/quadrants.png", directory + "/quadrants.avif"])
        run(
            "avifenc", exact + ["--irot", "1", "--imir", "0", directory + "/quadrants.png", directory + "/turned.avif"])
        run("avifenc", exact + [directory + "/alpha.png", directory + "/alpha.avif"])
        // Three frames of 100, 200 and 300 ms (timescale 10).
        run(
            "avifenc",
            exact + [
                "--timescale", "10", "--duration", "1", directory + "/red.png", "--duration", "2",
                directory + "/green.png", "--duration", "3", directory + "/blue.png", directory + "/sequence.avif",
            ])
        return directory
    }()

    static func path(_ name: String) -> String { fixtures + "/" + name }

    static func bytes(_ name: String) throws -> [UInt8] {
        try Witness.require(Witness.convert, "avifenc")
        let bytes = try Fixtures.bytes(path(name))
        try #require(!bytes.isEmpty, "\(name) was not made (is avifenc installed? scripts/install-deps)")
        return bytes
    }

    static func close(_ a: [Int], _ b: [Int], tolerance: Int = 6) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { abs($0 - $1) <= tolerance }
    }

    /// The byte offset of the first box of `type` (its size field) found by a plain scan.
    static func box(_ type: String, in bytes: [UInt8]) -> Int? {
        let pattern = Array(type.utf8)
        for i in 4..<(bytes.count - 4) where Array(bytes[i..<i + 4]) == pattern { return i - 4 }
        return nil
    }

    @Test func alphaIsKeptAndColoursAreRight() throws {
        let bytes = try Self.bytes("alpha.avif")
        let info = try SharePipe.inspect(.bytes(bytes))
        #expect(info.format == .avif && info.hasAlpha && info.frameCount == 1)
        let result = try SharePipe.prepare(.bytes(bytes), options: ServiceProfile.x.options())
        #expect(result.format == .png && result.size == PixelSize(width: 64, height: 48))
        let decoded = try Decode.bitmap(result.bytes)
        #expect(decoded.layout == .rgba)
        #expect(Self.close(decoded.rgb(10, 20), [255, 0, 0, 255]), "\(decoded.rgb(10, 20))")
        #expect(Self.close(decoded.rgb(40, 20), [0, 0, 255, 128]), "\(decoded.rgb(40, 20))")
        #expect(decoded.rgb(60, 20)[3] == 0)
        // Where PNG is not taken, the transparent quarter is flattened as for any PNG input.
        let bluesky = try SharePipe.prepare(.bytes(bytes), options: ServiceProfile.bluesky.options())
        #expect(bluesky.format == .png)
    }

    @Test func irotAndImirAreAppliedOnceAsBrowsersApplyThem() throws {
        let info = try SharePipe.inspect(.file(path: Self.path("turned.avif")))
        // Coded 64×48; a quarter turn anticlockwise, then top and bottom exchanged: 48×64 upright.
        #expect(info.size == PixelSize(width: 64, height: 48) && info.orientedSize == PixelSize(width: 48, height: 64))
        let result = try SharePipe.prepare(.file(path: Self.path("turned.avif")), options: PrepareOptions())
        let decoded = try Decode.bitmap(result.bytes)
        #expect(decoded.size == PixelSize(width: 48, height: 64))
        // After the turn: green top left, white top right, red bottom left, blue bottom right; the mirror
        // exchanges top and bottom.
        let expected: [(Int, Int, [Int])] = [
            (10, 10, [255, 0, 0]), (38, 10, [0, 0, 255]),
            (10, 54, [0, 255, 0]), (38, 54, [255, 255, 255]),
        ]
        for (x, y, colour) in expected {
            #expect(Self.close(Array(decoded.rgb(x, y).prefix(3)), colour), "(\(x),\(y)) \(decoded.rgb(x, y))")
        }
        // The untouched file keeps its quadrants where they are.
        let plain = try Decode.bitmap(
            try SharePipe.prepare(.file(path: Self.path("quadrants.avif")), options: PrepareOptions()).bytes)
        #expect(
            Self.close(Array(plain.rgb(10, 10).prefix(3)), [255, 0, 0])
                && Self.close(Array(plain.rgb(50, 40).prefix(3)), [255, 255, 255]))
    }

    /// An image sequence with a still primary item (as avifenc writes it) and the same sequence without any
    /// item (the `meta` box made `free`, the item brands dropped: what libheif 1.15 cannot read at all).
    static func sequences() throws -> [(name: String, bytes: [UInt8])] {
        let withItem = try bytes("sequence.avif")
        var withoutItem = withItem
        let meta = try #require(box("meta", in: withoutItem))
        withoutItem.replaceSubrange(meta + 4..<meta + 8, with: Array("free".utf8))
        let ftypSize = Int(withoutItem[3])
        for brand in stride(from: 16, to: ftypSize, by: 4)
        where ["avif", "mif1", "miaf", "MA1A", "MA1B"].contains(
            String(decoding: withoutItem[brand..<brand + 4], as: UTF8.self))
        {
            withoutItem.replaceSubrange(brand..<brand + 4, with: Array("iso8".utf8))
        }
        return [("with a still item", withItem), ("animation only", withoutItem)]
    }

    @Test func aSequenceBecomesAnAnimatedGIFWhereTheServiceShowsAnimation() throws {
        for (name, bytes) in try Self.sequences() {
            let info = try SharePipe.inspect(.bytes(bytes))
            #expect(info.frameCount == 3, "\(name)")
            let result = try SharePipe.prepare(.bytes(bytes), options: ServiceProfile.x.options())
            #expect(result.format == .gif && result.frameCount == 3, "\(name)")
            #expect(result.adjustments.contains("AVIF → GIF (animation)"), "\(name): \(result.adjustments)")
            let directory = Fixtures.temporaryDirectory()
            defer { Fixtures.cleanUp(directory) }
            let gif = directory + "/sequence.gif"
            try Fixtures.write(result.bytes, to: gif)
            #expect(try GIFWitness.gifsicleInfo(gif).frames == 3, "\(name)")
            #expect(try GIFWitness.delaysAndDisposals(gif).map(\.delay) == [10, 20, 30], "\(name)")
            let frames = try GIFWitness.coalesced(gif, size: PixelSize(width: 32, height: 24))
            #expect(frames.count == 3)
            let colours: [[Int]] = [[255, 0, 0], [0, 255, 0], [0, 0, 255]]
            for (index, frame) in frames.enumerated() where frame.count == 32 * 24 * 4 {
                let centre = (12 * 32 + 10) * 4
                #expect(
                    Self.close(frame[centre..<centre + 3].map(Int.init), colours[index], tolerance: 12),
                    "\(name) frame \(index)")
            }
            // The transparent strip stays transparent (ImageMagick's coalesce paints a GIF's uncovered screen
            // opaque; SharePipe's GIF reader, like browsers, leaves it clear).
            let first = try Decode.bitmap(result.bytes)
            #expect(first.rgb(28, 12)[3] == 0 && first.rgb(10, 12)[3] == 255, "\(name)")
        }
    }

    @Test func whereTheServiceShowsNoAnimationTheFirstFrameIsTakenAndReported() throws {
        for (name, bytes) in try Self.sequences() {
            var options = ServiceProfile.bluesky.options()
            options.animation.allowed = false
            let result = try SharePipe.prepare(.bytes(bytes), options: options)
            #expect(result.frameCount == 1 && result.format == .png, "\(name)")
            #expect(
                result.adjustments.contains { $0.hasPrefix("first frame only (of 3") }, "\(name): \(result.adjustments)"
            )
            let decoded = try Decode.bitmap(result.bytes)
            #expect(Self.close(Array(decoded.rgb(10, 12).prefix(3)), [255, 0, 0]), "\(name): \(decoded.rgb(10, 12))")
        }
    }

    @Test func framesAndPixelsOverTheLimitsAreRefusedFromTheHeader() throws {
        let sequence = try Self.bytes("sequence.avif")
        // Three frames against a limit of two: refused at the probe with the numbers.
        #expect {
            _ = try SharePipe.inspect(.bytes(sequence), limits: ImageLimits(maxFrames: 2))
        } throws: { error in
            guard case SharePipeError.tooLarge(_, let exceeded)? = error as? SharePipeError else { return false }
            return exceeded.kind == .frameCount && exceeded.found == 3 && exceeded.limit == 2
        }
        // 100,000 frames declared (stsz, stsc and stts say so; the data is three frames): libavif stops reading
        // the sample table past the limit, so nothing per frame is built.
        var many = sequence
        var at = 0
        while let offset = Self.box("stsz", in: Array(many[at...])).map({ $0 + at }) {
            many.replaceSubrange(offset + 12..<offset + 20, with: [0, 0, 0, 16, 0, 1, 0x86, 0xA0])  // size 16, 100000
            at = offset + 8
        }
        at = 0
        while let offset = Self.box("stsc", in: Array(many[at...])).map({ $0 + at }) {
            many.replaceSubrange(offset + 20..<offset + 24, with: [0, 1, 0x86, 0xA0])
            at = offset + 8
        }
        at = 0
        while let offset = Self.box("stts", in: Array(many[at...])).map({ $0 + at }) {
            many.replaceSubrange(offset + 16..<offset + 20, with: [0, 1, 0x86, 0xA0])
            at = offset + 8
        }
        let start = Date()
        #expect {
            _ = try SharePipe.prepare(.bytes(many), options: ServiceProfile.x.options())
        } throws: { error in
            guard case SharePipeError.tooLarge(let file, let exceeded)? = error as? SharePipeError else { return false }
            return file == "<memory>" && exceeded.kind == .frameCount && exceeded.limit == ImageLimits().maxFrames
        }
        #expect(Date().timeIntervalSince(start) < 2)
        // A still whose ispe says 70000×70000: refused before anything is decoded.
        var huge = try Self.bytes("quadrants.avif")
        let ispe = try #require(Self.box("ispe", in: huge))
        huge.replaceSubrange(ispe + 12..<ispe + 20, with: [0, 1, 0x11, 0x70, 0, 1, 0x11, 0x70])
        #expect {
            _ = try SharePipe.prepare(.bytes(huge), options: ServiceProfile.x.options())
        } throws: { error in
            guard case SharePipeError.tooLarge(_, let exceeded)? = error as? SharePipeError else { return false }
            return [.dimension, .pixelArea].contains(exceeded.kind)
        }
    }

    @Test func damagedFilesAreErrorsNamingTheFileNeverCrashes() throws {
        let whole = try Self.bytes("sequence.avif")
        for (index, damaged) in Fixtures.damagedCopies(of: whole, cuts: 12, flips: 24, seed: 19).enumerated() {
            do {
                _ = try SharePipe.prepare(.bytes(damaged), options: ServiceProfile.x.options())
            } catch let error as SharePipeError {
                #expect("\(error)".contains("<memory>"), "copy \(index): \(error)")
                #expect(!"\(error)".hasSuffix("\n"), "copy \(index): a message ending in a newline")
            }
        }
    }
}
