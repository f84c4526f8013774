import Foundation
import Testing
@testable import SharePipe

/// Animated GIFs through the whole pipeline, checked with the library's own decoder and, where installed,
/// with gifsicle and ImageMagick as outside witnesses.
@Suite("GIF pipeline", .tags(.witness), .skipped(whenListed: "witness"))
struct GIFPipelineTests {
    static let animatedFixtures = [
        "delays-loop0.gif", "disposals.gif", "loop3.gif", "noloop.gif", "interlaced.gif",
        "metadata.gif", "multiple-loops.gif", "frame-outside.gif",
    ]

    @Test(
        "small animations keep frames, delays, loop count, disposal and pictures exactly",
        arguments: animatedFixtures)
    func keepsEverything(name: String) throws {
        let source = try DecodedGIF(.file(path: GIFFixtures.path(name)))
        let (result, path) = try GIFFixtures.prepare(name)
        defer { Fixtures.cleanUp(FileIO.parentDirectory(of: path)) }
        #expect(result.format == .gif)
        #expect(result.frameCount == source.frames.count)
        #expect(result.size == source.size)
        let output = try DecodedGIF(result.bytes)
        #expect(output.delays == source.delays)
        #expect(output.container.loopCount == source.container.loopCount)
        #expect(output.frames.count == source.frames.count)
        #expect(output.frames.map(\.interlaced) == source.frames.map(\.interlaced))
        for (index, (a, b)) in zip(output.pictures, source.pictures).enumerated() {
            let difference = PictureDifference(a, b)
            #expect(difference.meanColorError == 0 && difference.alphaMismatch == 0, "frame \(index): \(difference)")
        }
        try GIFWitness.require()
        do {
            let witness = try GIFWitness.gifsicleInfo(path)
            #expect(witness.frames == source.frames.count)
            let expectedLoop = source.container.loopCount.map { $0 == 0 ? "forever" : String($0) } ?? "none"
            #expect(witness.loop == expectedLoop)
            #expect(try GIFWitness.delaysAndDisposals(path).map(\.delay) == source.delays)
        }
    }

    @Test("each disposal method comes out as written, and the outside witness composites the same frames")
    func disposalsAsSpecified() throws {
        let (result, path) = try GIFFixtures.prepare("disposals.gif")
        defer { Fixtures.cleanUp(FileIO.parentDirectory(of: path)) }
        let output = try DecodedGIF(result.bytes)
        #expect(output.disposals == [1, 0, 2, 3, 1, 0])
        try GIFWitness.require()
        #expect(
            try GIFWitness.delaysAndDisposals(path).map(\.disposal)
                == ["None", "Undefined", "Background", "Previous", "None", "Undefined"])
        let theirs = try GIFWitness.coalesced(path, size: output.size)
        let source = try GIFWitness.coalesced(GIFFixtures.path("disposals.gif"), size: output.size)
        #expect(theirs.count == 6)
        for (index, (a, b)) in zip(theirs, source).enumerated() {
            let difference = PictureDifference(a, b)
            #expect(difference.meanColorError == 0 && difference.alphaMismatch == 0, "frame \(index): \(difference)")
        }
        for (index, (a, b)) in zip(theirs, output.pictures).enumerated() {
            let difference = PictureDifference(a, b)
            #expect(
                difference.meanColorError == 0 && difference.alphaMismatch == 0, "ours vs ImageMagick, frame \(index)")
        }
    }

    @Test("delays 0 and 1 are kept as written")
    func delaysAsWritten() throws {
        let (result, path) = try GIFFixtures.prepare("delays-loop0.gif")
        defer { Fixtures.cleanUp(FileIO.parentDirectory(of: path)) }
        #expect(try DecodedGIF(result.bytes).delays == [0, 1, 2, 10, 50])
        try GIFWitness.require()
        do {
            #expect(try GIFWitness.delaysAndDisposals(path).map(\.delay) == [0, 1, 2, 10, 50])
        }
    }

    @Test("no loop extension stays none; with several, only the first is written, right after the header")
    func loopExtension() throws {
        let once = try SharePipe.prepare(.file(path: GIFFixtures.path("noloop.gif")))
        #expect(GIFFixtures.count("NETSCAPE2.0", in: once.bytes) == 0)
        let several = try SharePipe.prepare(.file(path: GIFFixtures.path("multiple-loops.gif")))
        #expect(GIFFixtures.count("NETSCAPE2.0", in: several.bytes) == 1)
        let decoded = try DecodedGIF(several.bytes)
        #expect(decoded.container.loopCount == 5)
        // Header (13) + global table (8 entries) + extension introducer: the loop extension comes first.
        let offset = 13 + 8 * 3
        #expect(Array(several.bytes[offset..<offset + 3]) == [0x21, 0xFF, 0x0B])
        #expect(Array(several.bytes[offset + 3..<offset + 14]) == Array("NETSCAPE2.0".utf8))
    }

    @Test("metadata: `all` drops comments and XMP, keeps ICC and the loop; `gps` drops XMP; `none` keeps comments")
    func metadataModes() throws {
        let path = GIFFixtures.path("metadata.gif")
        let all = try SharePipe.prepare(.file(path: path), options: PrepareOptions(strip: .all))
        #expect(GIFFixtures.count("XMP DataXMP", in: all.bytes) == 0)
        #expect(GIFFixtures.count("ICCRGBG1012", in: all.bytes) == 1)
        #expect(GIFFixtures.count("private comment", in: all.bytes) == 0)
        #expect(GIFFixtures.count("NETSCAPE2.0", in: all.bytes) == 1)
        #expect(all.removedMetadata == [.comment, .xmp])
        #expect(all.keptMetadata == [.icc])

        let gps = try SharePipe.prepare(.file(path: path), options: PrepareOptions(strip: .gps))
        #expect(GIFFixtures.count("XMP DataXMP", in: gps.bytes) == 0)
        #expect(GIFFixtures.count("GPSLatitude", in: gps.bytes) == 0)
        #expect(gps.removedMetadata == [.xmp])

        let none = try SharePipe.prepare(.file(path: path), options: PrepareOptions(strip: .none))
        let decoded = try DecodedGIF(none.bytes)
        #expect(decoded.container.metadata == (try DecodedGIF(.file(path: path))).container.metadata)
        #expect(GIFFixtures.count("second comment", in: none.bytes) == 1)
        #expect(none.removedMetadata.isEmpty)
    }

    @Test("a 1600×1200 animation is scaled to a 1080 short edge with frames aligned")
    func resizesLargeAnimation() throws {
        let (result, path) = try GIFFixtures.prepare("large-1600x1200.gif")
        defer { Fixtures.cleanUp(FileIO.parentDirectory(of: path)) }
        let target = PixelSize(width: 1440, height: 1080)
        #expect(result.size == target)
        #expect(result.frameCount == 4)
        let output = try DecodedGIF(result.bytes)
        #expect(output.size == target)
        #expect(output.delays == [20, 20, 20, 20])
        #expect(output.container.loopCount == 0)
        let reference = try DecodedGIF(.file(path: GIFFixtures.path("large-1600x1200.gif"))).pictures(scaledTo: target)
        for (index, (ours, expected)) in zip(output.pictures, reference).enumerated() {
            let difference = PictureDifference(ours, expected)
            #expect(difference.alphaMismatch == 0, "frame \(index): \(difference)")
            #expect(difference.meanColorError < 3, "frame \(index): \(difference)")
        }
        try GIFWitness.require()
        do {
            let theirs = try GIFWitness.coalesced(path, size: target)
            let scaledSource = try GIFWitness.coalesced(
                GIFFixtures.path("large-1600x1200.gif"),
                size: PixelSize(width: 1600, height: 1200), resizeTo: target)
            #expect(theirs.count == 4 && scaledSource.count == 4)
            for (index, (a, b)) in zip(theirs, scaledSource).enumerated() {
                let difference = PictureDifference(a, b)
                #expect(difference.alphaMismatch == 0, "frame \(index): \(difference)")
                #expect(
                    difference.meanColorError < 6,
                    "ImageMagick's view of ours vs its scaled source, frame \(index): \(difference)")
            }
        }
    }

    @Test("scaled sub-rectangle frames with every disposal still show the scaled source pictures")
    func resizesDisposals() throws {
        var options = PrepareOptions()
        options.maxShortEdge = 60
        let (result, path) = try GIFFixtures.prepare("disposals.gif", options: options)
        defer { Fixtures.cleanUp(FileIO.parentDirectory(of: path)) }
        #expect(result.size == PixelSize(width: 80, height: 60))
        let output = try DecodedGIF(result.bytes)
        #expect(output.delays == [10, 20, 30, 40, 50, 60])
        let reference = try DecodedGIF(.file(path: GIFFixtures.path("disposals.gif"))).pictures(scaledTo: result.size)
        for (index, (ours, expected)) in zip(output.pictures, reference).enumerated() {
            let difference = PictureDifference(ours, expected)
            #expect(difference.alphaMismatch < 0.01, "frame \(index): \(difference)")
            #expect(difference.meanColorError < 8, "frame \(index): \(difference)")
        }
    }

    @Test("interlaced frames stay interlaced")
    func interlacedStays() throws {
        let (_, path) = try GIFFixtures.prepare("interlaced.gif")
        defer { Fixtures.cleanUp(FileIO.parentDirectory(of: path)) }
        try GIFWitness.require()
        #expect(try GIFWitness.gifsicleInfo(path).interlacedFrames == 3)
    }

    @Test("a single-frame GIF comes back exact: copied when it needs no resize, else through the still path")
    func singleFrame() throws {
        let path = GIFFixtures.path("single-frame.gif")
        let result = try SharePipe.prepare(.file(path: path))
        #expect(result.format == .gif)
        #expect(result.frameCount == 1)
        #expect(result.method == .metadataRewrite)  // only its comment goes
        let output = try DecodedGIF(result.bytes)
        let source = try DecodedGIF(.file(path: path))
        #expect(output.frames.count == 1)
        #expect(output.container.loopCount == nil)
        let difference = PictureDifference(output.pictures[0], source.pictures[0])
        #expect(difference.meanColorError == 0 && difference.alphaMismatch == 0, "\(difference)")
        let scaled = try SharePipe.prepare(.file(path: path), options: PrepareOptions(maxShortEdge: 75))
        #expect(scaled.size == PixelSize(width: 100, height: 75))
        #expect(scaled.attempts.allSatisfy { $0.format == .gif && $0.quality != nil })  // the still fitter's search
        #expect(try DecodedGIF(scaled.bytes).frames.count == 1)
    }

    @Test("over the byte limit: smaller dimensions first, never an over-limit success")
    func byteLimitShrinks() throws {
        let full = try SharePipe.prepare(.file(path: GIFFixtures.path("large-1600x1200.gif")))
        let limit = full.byteCount / 2
        let result = try SharePipe.prepare(
            .file(path: GIFFixtures.path("large-1600x1200.gif")),
            options: PrepareOptions(maxBytes: limit))
        #expect(result.byteCount <= limit)
        #expect(result.size.shortEdge < 1080)
        #expect(result.frameCount == 4)
        #expect(result.attempts.count >= 2)
        #expect(result.attempts.first?.fits == false && result.attempts.last?.fits == true)
        #expect(result.adjustments.contains { $0.contains("to meet the byte limit") })
        #expect(try DecodedGIF(result.bytes).delays == [20, 20, 20, 20])
    }

    @Test("then fewer colours, then frame decimation that keeps the total duration")
    func byteLimitDecimates() throws {
        let path = GIFFixtures.path("delays-loop0.gif")
        var options = PrepareOptions(maxBytes: 2_200)
        options.minShortEdge = 90  // no room to shrink: colours, then frames, must give
        let result = try SharePipe.prepare(.file(path: path), options: options)
        #expect(result.byteCount <= 2_200)
        let notes = result.attempts.compactMap(\.note)
        #expect(notes.contains { $0.contains("128 colours") })
        #expect(notes.contains { $0.contains("every 2nd frame") })
        let output = try DecodedGIF(result.bytes)
        #expect(output.frames.count >= 2 && output.frames.count < 5)
        #expect(output.delays.reduce(0, +) == 63)
        #expect(result.adjustments.contains { $0.contains("decimated") })
    }

    @Test("when nothing fits: cannotMeetLimit, never an over-limit result")
    func cannotMeetLimit() throws {
        var options = PrepareOptions(maxBytes: 1024)
        options.minShortEdge = 1080
        #expect {
            _ = try SharePipe.prepare(.file(path: GIFFixtures.path("large-1600x1200.gif")), options: options)
        } throws: { error in
            guard case SharePipeError.cannotMeetLimit(_, let limit, let best) = error else { return false }
            return limit == 1024 && best > 1024
        }
    }

    @Test("services cap animations on their own: frame limits decimate, keeping the duration")
    func frameLimit() throws {
        var options = PrepareOptions()
        options.animation.maxFrames = 3
        let result = try SharePipe.prepare(.file(path: GIFFixtures.path("disposals.gif")), options: options)
        let output = try DecodedGIF(result.bytes)
        #expect(output.frames.count <= 3)
        #expect(output.delays.reduce(0, +) == 210)
        #expect(result.adjustments.contains { $0.contains("frame limits") })
    }

    @Test("pixel memory does not grow with the frame count")
    func memoryIndependentOfFrameCount() throws {
        func animation(frames: Int) throws -> [UInt8] {
            let writer = try GIFWriter()
            var palette: [UInt8] = []
            for i in 0..<16 { palette += [UInt8(i * 16), UInt8(255 - i * 16), UInt8(i * 7)] }
            try writer.begin(
                GIFContainer(
                    screenSize: PixelSize(width: 400, height: 300), globalPalette: GIFPalette(rgb: palette),
                    backgroundIndex: 0, colorResolution: 8, aspectByte: 0, loopCount: 0, metadata: []))
            for n in 0..<frames {
                var indices = (0..<(400 * 300)).map { UInt8(($0 % 400 / 25 + $0 / 400 / 25 + n) % 16) }
                try writer.putFrame(
                    GIFFrame(
                        rect: GIFRect(left: 0, top: 0, width: 400, height: 300), localPalette: nil,
                        interlaced: false, control: GIFGraphicsControl(disposal: .none, delay: 5)),
                    indices: &indices)
            }
            return try writer.finish()
        }
        let options = PrepareOptions(maxShortEdge: 150)
        let few = try SharePipe.prepare(.bytes(try animation(frames: 3)), options: options)
        let many = try SharePipe.prepare(.bytes(try animation(frames: 30)), options: options)
        #expect(few.frameCount == 3 && many.frameCount == 30)
        #expect(many.peakPixelBytes == few.peakPixelBytes)
        // Canvas 400×300 RGBA, its resampler, and a few 200×150 buffers: well under 2 MB.
        #expect(many.peakPixelBytes < 2_000_000)
    }
}
