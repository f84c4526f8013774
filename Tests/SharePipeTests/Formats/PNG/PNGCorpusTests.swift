import Foundation
import Testing
@testable import SharePipe

/// PngSuite (../shared/corpus/png-suite, beside the repository; never copied into it): files SharePipe did
/// not make. Skipped where the corpus is absent.
@Suite("PngSuite corpus")
struct PNGCorpusTests {
    static let directory = Fixtures.corpus("png-suite")
    static let files: [String] = FileIO.listFiles(in: directory, recursive: false).filter { $0.hasSuffix(".png") }

    @Test(
        "every PngSuite file prepares, reduced and as a metadata-only rewrite, or fails with a clear reason",
        .enabled(if: !files.isEmpty, "needs the PngSuite files of ../shared/corpus/png-suite"))
    func everyFilePrepares() throws {
        for file in Self.files {
            let name = Batch.lastComponent(file)
            for options in [PrepareOptions(maxShortEdge: 16), PrepareOptions(strip: .gps)] {
                do {
                    let result = try Pipeline.prepare(.file(path: file), options: options)
                    #expect(result.size.shortEdge <= options.maxShortEdge, "\(name)")
                    let reread = try Decode.bitmap(result.bytes)
                    #expect(reread.size == result.size, "\(name)")
                } catch let error as SharePipeError {
                    // PngSuite's x*.png are the intentionally broken files; all others must prepare.
                    #expect(name.hasPrefix("x"), "\(name): \(error)")
                    #expect(["corrupt", "unsupportedFormat", "tooLarge"].contains(error.kind), "\(name): \(error)")
                }
            }
        }
    }

    @Test(
        "every PngSuite file decodes to ImageMagick's pixels (within 1 for 16-bit rounding)",
        .enabled(if: !files.isEmpty, "needs the PngSuite files of ../shared/corpus/png-suite"))
    func pixelsMatchImageMagick() throws {
        try Witness.require(Witness.convert)
        for file in Self.files where !Batch.lastComponent(file).hasPrefix("x") {
            let name = Batch.lastComponent(file)
            let ours = try Decode.bitmap(try Fixtures.bytes(file))
            // ImageMagick tags a gAMA 1.0 image as linear and would convert it to sRGB on output; "-set
            // colorspace" retags it without touching the samples, so the raw decoded values come out.
            let witness = try Tool.run(
                "sh", ["-c", "/usr/bin/convert \"$0\" -set colorspace sRGB -depth 8 rgba:- | od -An -v -tu1", file])
            let theirs = witness.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
            try #require(theirs.count == ours.size.area * 4, "\(name): ImageMagick gave \(theirs.count) samples")
            var mismatches = 0
            for y in 0..<ours.height {
                for x in 0..<ours.width {
                    var pixel = ours.rgb(x, y)
                    if pixel.count == 3 { pixel.append(255) }
                    let base = (y * ours.width + x) * 4
                    let reference = Array(theirs[base..<base + 4])
                    let compared = reference[3] == 0 ? 3..<4 : 0..<4  // colour under full transparency is undefined
                    if !close(Array(pixel[compared]), Array(reference[compared]), tolerance: 1) { mismatches += 1 }
                }
            }
            #expect(mismatches == 0, "\(name): \(mismatches) pixels differ from ImageMagick")
        }
    }
}
