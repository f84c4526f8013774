import Foundation
import Testing
@testable import SharePipe

/// Runs the real-world animated GIFs of the shared corpus (../shared/corpus/gif-animated, listed in its
/// MANIFEST.tsv) through the CLI and checks every file keeps its frame count, delays and loop count, and shows
/// the same pictures. Runs only where the corpus exists; the files are never copied into the repository.
@Suite(
    "GIF corpus", .tags(.witness), .skipped(whenListed: "witness"),
    .enabled(if: GIFCorpus.available, "needs ../shared/corpus/MANIFEST.tsv"))
struct GIFCorpusTests {
    @Test("every corpus animation keeps frames, delays, loop count and pictures (CLI, default options)")
    func corpusThroughCLI() throws {
        let names = try GIFCorpus.manifestFiles()
        #expect(names.count >= 20)
        let output = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(output) }
        let run = try Tool.run(Tool.sharepipe, ["prepare", "--out", output] + names.map { Fixtures.corpus($0) })
        #expect(run.status == 0, "\(run.stderr)")
        for name in names {
            let source = try DecodedGIF(.file(path: Fixtures.corpus(name)))
            let written = output + "/" + (name as NSString).lastPathComponent
            let result = try DecodedGIF(.file(path: written))
            #expect(result.frames.count == source.frames.count, "\(name): frame count")
            #expect(result.delays == source.delays, "\(name): delays")
            #expect(result.container.loopCount == source.container.loopCount, "\(name): loop count")
            // Every corpus file is within the 1080 cap, so the pictures must come back exactly.
            for (index, (a, b)) in zip(result.pictures, source.pictures).enumerated() {
                let difference = PictureDifference(a, b)
                #expect(
                    difference.meanColorError == 0 && difference.alphaMismatch == 0,
                    "\(name) frame \(index): \(difference)")
            }
            try GIFWitness.require()
            do {
                // gifsicle reports the last of several loop extensions; SharePipe keeps the first.
                let witness = try GIFWitness.gifsicleInfo(written)
                #expect(witness.frames == source.frames.count, "\(name): gifsicle frame count")
                #expect(
                    try GIFWitness.delaysAndDisposals(written).map(\.delay) == source.delays, "\(name): identify delays"
                )
            }
        }
    }

    @Test("scaled down, every corpus animation still keeps frames, delays and loop count")
    func corpusScaled() throws {
        for name in try GIFCorpus.manifestFiles() {
            let path = Fixtures.corpus(name)
            let source = try DecodedGIF(.file(path: path))
            let result = try SharePipe.prepare(.file(path: path), options: PrepareOptions(maxShortEdge: 24))
            let output = try DecodedGIF(result.bytes)
            #expect(output.frames.count == source.frames.count, "\(name)")
            #expect(output.delays == source.delays, "\(name)")
            #expect(output.container.loopCount == source.container.loopCount, "\(name)")
            let reference = source.pictures(scaledTo: output.size)
            var worst = 0.0
            for (a, b) in zip(output.pictures, reference) { worst = max(worst, PictureDifference(a, b).meanColorError) }
            #expect(worst < 16, "\(name): worst frame mean colour error \(worst)")
        }
    }
}

enum GIFCorpus {
    static let manifest = Fixtures.corpus("MANIFEST.tsv")
    static var available: Bool { FileManager.default.fileExists(atPath: manifest) }

    /// The manifest's GIF rows (paths relative to the corpus).
    static func manifestFiles() throws -> [String] {
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard columns.count > 2, columns[2] == "GIF" else { return nil }
            return String(columns[0])
        }
    }
}
