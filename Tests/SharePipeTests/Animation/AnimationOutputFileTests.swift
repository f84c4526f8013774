import Foundation
import Testing

@testable import SharePipe

/// The animation route's GIF goes to an unlinked temporary file as it is written, never held whole: the same
/// bytes as a writer into memory, one file per attempt that goes with the attempt, read back for callers that
/// take bytes and copied into place (temporary name, then rename) by a batch.
@Suite(.tags(.witness), .skipped(whenListed: "witness")) struct AnimationOutputFileTests {
    /// How many of this process's open descriptors are files made in `directory` (unlinked ones too: Linux
    /// shows them as "<path> (deleted)").
    static func openFiles(in directory: String) -> Int {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.filter { descriptor in
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + descriptor)
            return target?.hasPrefix(directory + "/") ?? false
        }.count
    }

    /// Two noisy 300×300 frames under a 256-colour table (about 180 KB: the file writer's 64 KiB buffer goes
    /// out several times), an aspect byte (patched after giflib's screen descriptor), a loop and a comment.
    static func writeNoise(_ writer: GIFWriter) throws {
        var state: UInt32 = 12345
        func next() -> UInt8 {
            state = state &* 1_103_515_245 &+ 12345
            return UInt8(truncatingIfNeeded: state >> 16)
        }
        let palette = GIFPalette(rgb: (0..<768).map { _ in next() })
        try writer.begin(
            GIFContainer(
                screenSize: PixelSize(width: 300, height: 300), globalPalette: palette, backgroundIndex: 3,
                colorResolution: 8, aspectByte: 49, loopCount: 0, metadata: [.comment(Array("noise".utf8))]))
        for delay in [5, 7] {
            var indices = (0..<90_000).map { _ in next() }
            try writer.putFrame(
                GIFFrame(
                    rect: GIFRect(left: 0, top: 0, width: 300, height: 300), localPalette: nil, interlaced: delay == 7,
                    control: GIFGraphicsControl(delay: delay)), indices: &indices)
        }
    }

    @Test("a writer into a temporary file writes the bytes a writer into memory does, and leaves no name behind")
    func fileWriterWritesTheSameBytes() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let memory = try GIFWriter()
        try Self.writeNoise(memory)
        let expected = try memory.finish()
        #expect(expected.count > 3 * 65536)
        var written: EncodedFile?
        do {
            let writer = try GIFWriter.toTemporaryFile(in: directory)
            try Self.writeNoise(writer)
            let output = try writer.finishOutput()
            #expect(output.bytes.isEmpty)
            written = output.file
        }
        #expect(written?.byteCount == expected.count)
        #expect(try written?.readAll() == expected)
        #expect(try DecodedGIF(try #require(written).readAll()).frames.count == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        #expect(Self.openFiles(in: directory) == 1)
        written = nil
        #expect(Self.openFiles(in: directory) == 0, "the file goes with its last reference")
        // A writer dropped before it finishes (an error, a cancelled job) takes its file with it too.
        do {
            let writer = try GIFWriter.toTemporaryFile(in: directory)
            try writer.begin(
                GIFContainer(
                    screenSize: PixelSize(width: 2, height: 2), globalPalette: GIFPalette(rgb: [0, 0, 0, 9, 9, 9]),
                    backgroundIndex: 0, colorResolution: 8, aspectByte: 0, loopCount: nil, metadata: []))
            #expect(Self.openFiles(in: directory) == 1)
        }
        #expect(Self.openFiles(in: directory) == 0)
        // Where no file can be made, the writer writes into memory: the same bytes.
        let fallback = try GIFWriter.toTemporaryFile(in: directory + "/missing")
        try Self.writeNoise(fallback)
        let output = try fallback.finishOutput()
        #expect(output.file == nil && output.bytes == expected)
    }

    /// Six 160×120 frames of noise as a GIF (made here), and the same frames as an APNG (ffmpeg), an animated
    /// WebP (gif2webp) and an AVIF image sequence (avifenc): large enough that a byte limit a third of the first
    /// attempt's size makes the ladder try again (the committed animations encode to a few hundred bytes).
    static let noise: String = {
        let directory = NSTemporaryDirectory() + "sharepipe-noise-animations-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var state: UInt32 = 777
        func next() -> UInt8 {
            state = state &* 1_103_515_245 &+ 12345
            return UInt8(truncatingIfNeeded: state >> 16)
        }
        let writer = try! GIFWriter()
        try! writer.begin(
            GIFContainer(
                screenSize: PixelSize(width: 160, height: 120),
                globalPalette: GIFPalette(rgb: (0..<768).map { _ in next() }),
                backgroundIndex: 0, colorResolution: 8, aspectByte: 0, loopCount: 0, metadata: []))
        for _ in 0..<6 {
            var indices = (0..<(160 * 120)).map { _ in next() }
            try! writer.putFrame(
                GIFFrame(
                    rect: GIFRect(left: 0, top: 0, width: 160, height: 120), localPalette: nil, interlaced: false,
                    control: GIFGraphicsControl(delay: 10)), indices: &indices)
        }
        try! Fixtures.write(try! writer.finish(), to: directory + "/noise.gif")
        func run(_ tool: String, _ arguments: [String]) {
            let output = try? Tool.run(tool, arguments)
            if output?.status != 0 { print("fixture: \(tool) \(arguments) failed: \(output?.stderr ?? "not run")") }
        }
        run(
            "ffmpeg",
            [
                "-v", "error", "-y", "-i", directory + "/noise.gif", "-plays", "0", "-f", "apng",
                directory + "/noise.png",
            ])
        run("gif2webp", ["-quiet", directory + "/noise.gif", "-o", directory + "/noise.webp"])
        run("ffmpeg", ["-v", "error", "-y", "-i", directory + "/noise.gif", directory + "/frame-%02d.png"])
        run(
            "avifenc",
            ["-s", "10", "-j", "1", "--fps", "10"] + (1...6).map { directory + String(format: "/frame-%02d.png", $0) }
                + [directory + "/noise.avif"])
        return directory
    }()

    /// The noise animation in each format: a GIF (its own record-by-record pass), an APNG, an animated WebP and an
    /// AVIF image sequence (frame sources).
    static let inputs = ["noise.gif", "noise.png", "noise.webp", "noise.avif"]

    static func path(_ input: String) throws -> String {
        try Witness.require("ffmpeg", "gif2webp", "avifenc")
        let path = noise + "/" + input
        try #require(FileManager.default.fileExists(atPath: path), "\(input) was not made")
        return path
    }

    /// Options whose byte limit the first attempt misses (a third of its size), so the ladder tries again.
    static func tightOptions(_ source: ImageSource) throws -> PrepareOptions.Checked {
        var options = ServiceProfile.x.options()
        let first = try SharePipe.prepare(source, options: options)
        try #require(first.format == .gif && first.attempts.count == 1 && first.frameCount == 6)
        options.animation.maxBytes = first.byteCount / 3
        return try options.checked()
    }

    @Test(
        "each attempt's file goes with it: the kept one alone stays open, holding what an in-memory pass writes",
        arguments: inputs)
    func attemptsNotKeptLeaveNoFile(_ input: String) throws {
        let source = ImageSource.file(path: try Self.path(input))
        let options = try Self.tightOptions(source)
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let job = try Pipeline.plan(source, options: options)
        let meter = PixelMemoryMeter()
        var ladder = try AnimationRoute.ladder(
            source, info: job.info, plan: job.plan, options: options, meter: meter, checkpoint: {},
            temporaryDirectory: directory)
        do {
            let prepared = try FittingDriver(source: source, info: job.info, plan: job.plan, meter: meter).run(
                &ladder, checkpoint: {})
            #expect(prepared.attempts.count >= 2, "\(input): \(prepared.attempts)")
            #expect(prepared.bytes.isEmpty)
            let file = try #require(prepared.outputFile)
            #expect(prepared.byteCount == prepared.attempts.last?.bytes && file.byteCount == prepared.byteCount)
            #expect(Self.openFiles(in: directory) == 1, "\(input): only the kept attempt's file is open")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
            // The library's callers get the same bytes, read back from the file.
            let inMemory = try Pipeline.prepare(source, options: options)
            #expect(inMemory.outputFile == nil && inMemory.attempts == prepared.attempts)
            #expect(try file.readAll() == inMemory.bytes, "\(input)")
        }
        #expect(Self.openFiles(in: directory) == 0, "the kept file goes with the result")
    }

    @Test(
        "a batch copies the animation's file into place: the bytes the library returns, nothing else in the folder",
        arguments: inputs)
    func batchWritesTheFileInPlace(_ input: String) throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let inputPath = try Self.path(input)
        var options = ServiceProfile.x.options()
        options.maxShortEdge = 100  // resized: the animation route (a GIF needing nothing would be copied instead)
        let kept = try Pipeline.prepare(
            .file(path: inputPath), options: options.checked(), keepingOutputFile: true)
        #expect(kept.outputFile != nil && kept.bytes.isEmpty, "\(input): the animation route writes a file")
        let output = directory + "/out"
        let batch = Batch(outputDirectory: output, options: options)
        let reports = batch.process(BatchItem(input: inputPath, relativeName: BatchItem.lastComponent(inputPath)))
        let report = try #require(reports.first)
        #expect(report.error == nil, "\(input): \(String(describing: report.error))")
        let written = try #require(report.output)
        let expected = try SharePipe.prepare(.file(path: inputPath), options: options).bytes
        #expect(try Fixtures.bytes(written) == expected)
        #expect(report.bytes == expected.count)
        #expect(report.result?.bytes.isEmpty == true && report.result?.outputFile == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: output) == [BatchItem.lastComponent(written)])
    }
}
