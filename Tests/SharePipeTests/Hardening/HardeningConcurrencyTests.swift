import Foundation
import Testing
@testable import SharePipe

/// `--jobs N` gives the same outputs, byte for byte, and the same failures as `--jobs 1`, over a mixed
/// directory with bad files in it. Run under `swift test --sanitize=thread` (scripts/race does), the
/// in-process batch below is also the race check for the library's shared state. scripts/race repeats the
/// comparison over 200 files with a release build.
@Suite(.serialized) struct HardeningConcurrencyTests {
    /// About 40 small files: JPEGs, PNGs and GIFs under several names and folders, and broken inputs.
    static func mixedDirectory() throws -> String {
        let directory = Fixtures.temporaryDirectory()
        let sources = [
            "jpeg/tiny-16x16.jpg", "jpeg/orient-1.jpg", "jpeg/orient-6.jpg", "jpeg/orient-8.jpg", "jpeg/gray.jpg",
            "jpeg/cmyk-adobe.jpg", "jpeg/landscape-orient0.jpg", "jpeg/gps-orient6.jpg", "png/palette-8.png",
            "png/photo-160x120.png", "png/gray-alpha-8.png", "png/detail-rgba-8-interlaced.png", "png/gps-orient6.png",
            "gif/loop3.gif", "gif/single-frame.gif", "gif/frame-outside.gif", "gif/disposals.gif",
            "broken/truncated.jpg", "broken/no-sof.jpg", "broken/empty.jpg", "broken/bad-crc-ihdr.png",
            "broken/not-an-image.png", "broken/gif-no-frames.gif",
        ]
        for (index, relative) in (sources + sources.prefix(17)).enumerated() {
            let folder = directory + "/in/set-\(index % 3)"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let name = (relative as NSString).lastPathComponent
            try FileManager.default.copyItem(atPath: Fixtures.path(relative), toPath: folder + "/\(index)-" + name)
        }
        return directory
    }

    static func contents(_ directory: String) throws -> [String: [UInt8]] {
        var result: [String: [UInt8]] = [:]
        for file in filesBelow(directory) { result[file] = try Fixtures.bytes(directory + "/" + file) }
        return result
    }

    static let brokenNames = [
        "truncated.jpg", "no-sof.jpg", "empty.jpg", "bad-crc-ihdr.png", "not-an-image.png", "gif-no-frames.gif",
    ]

    static var options: PrepareOptions {
        var options = PrepareOptions(maxShortEdge: 120, maxBytes: 6000, strip: .gps)
        options.limits.maxDecoderMemory = 256 << 20
        return options
    }

    @Test func inProcessBatchIsTheSameWithFourJobsAsWithOne() throws {
        let directory = try Self.mixedDirectory()
        defer { Fixtures.cleanUp(directory) }
        var summaries: [[String]] = []
        var outputs: [[String: [UInt8]]] = []
        for jobs in [1, 4] {
            let out = directory + "/out-\(jobs)"
            let batch = Batch(outputDirectory: out, options: Self.options, recursive: true, jobs: jobs)
            var reports: [BatchReport] = []
            let walk = batch.run(.paths([directory + "/in"])) { reports.append($0) }
            #expect(walk.missing == 0 && walk.files == 40)
            #expect(reports.count == 40)
            // Reports arrive in completion order with several jobs: compare them sorted.
            summaries.append(reports.map { "\($0.input) \($0.error?.kind ?? "ok") \($0.bytes ?? -1)" }.sorted())
            outputs.append(try Self.contents(out))
        }
        #expect(summaries[0] == summaries[1])
        #expect(outputs[0].keys.sorted() == outputs[1].keys.sorted())
        for (name, bytes) in outputs[0] { #expect(outputs[1][name] == bytes, "\(name) differs between --jobs 1 and 4") }
        let failed = summaries[0].filter { !$0.contains(" ok ") }
        #expect(outputs[0].count + failed.count == 40)
        for name in Self.brokenNames { #expect(failed.contains { $0.contains("-" + name + " ") }, "\(name) must fail") }
    }

    @Test func cliWithJobsMatchesOneJobByteForByte() throws {
        let directory = try Self.mixedDirectory()
        defer { Fixtures.cleanUp(directory) }
        var runs: [Tool.Output] = []
        for jobs in ["1", "4"] {
            runs.append(
                try Tool.run(
                    Tool.sharepipe,
                    [
                        "prepare", directory + "/in", "--out", directory + "/out-" + jobs,
                        "--recursive", "--jobs", jobs, "--max-short-edge", "120",
                        "--max-bytes", "6000", "--strip", "gps",
                    ]))
        }
        let summary = runs.map { $0.stdout.split(separator: "\n").last.map(String.init) ?? "" }
        #expect(runs.allSatisfy { $0.status == 1 })
        #expect(summary[0] == summary[1] && summary[0].hasPrefix("processed "), "\(summary)")
        // Failures come out in completion order with several jobs: compare them as sets.
        let failures = runs.map { Set($0.stderr.split(separator: "\n").filter { $0.hasPrefix("FAILED ") }) }
        #expect(failures[0] == failures[1])
        for name in Self.brokenNames {
            #expect(failures[0].contains { $0.contains("-" + name + ": ") }, "\(name) must fail")
        }
        let one = try Self.contents(directory + "/out-1"), four = try Self.contents(directory + "/out-4")
        #expect(one.keys.sorted() == four.keys.sorted() && one.count + failures[0].count == 40)
        for (name, bytes) in one { #expect(four[name] == bytes, "\(name) differs between --jobs 1 and 4") }
    }
}
