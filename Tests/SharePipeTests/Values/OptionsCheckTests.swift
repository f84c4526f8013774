#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Testing
@testable import SharePipe

/// Invalid options through every public entry point: each refuses them with the same typed
/// `invalidOptions` naming the option, before reading anything (the pipeline itself takes only
/// `PrepareOptions.Checked`, so it cannot be reached with unchecked options).
@Suite struct OptionsCheckTests {
    /// One invalid value: how to set it on options, on a profile, in a profile file and on the command line.
    struct Case: Sendable, CustomStringConvertible {
        var expected: InvalidOption
        var options: @Sendable (inout PrepareOptions) -> Void
        /// The same value set by a service profile, where a profile can set it.
        var profile: (@Sendable (inout ServiceProfile) -> Void)?
        /// The profile file's field (dotted where nested) and JSON value, where a profile file can set it.
        var json: (field: String, value: String)?
        /// The command-line arguments and the message the CLI prints, where a flag sets it.
        var flags: (arguments: [String], message: String)?
        var description: String { expected.option }
    }

    static let cases: [Case] = [
        Case(
            expected: InvalidOption("maxShortEdge", expected: "a positive number of pixels", found: "0"),
            options: { $0.maxShortEdge = 0 }, profile: { $0.caps.shortEdge = 0 }, json: ("maxShortEdge", "0"),
            flags: (["--max-short-edge", "0"], "expected a positive number of pixels for --max-short-edge, got 0")),
        Case(
            expected: InvalidOption("maxLongEdge", expected: .atLeast(option: "maxShortEdge"), found: "500"),
            options: { $0.maxLongEdge = 500 }, profile: { $0.caps.longEdge = 500 }, json: ("maxLongEdge", "500")),
        Case(
            expected: InvalidOption("maxBytes", expected: "at least 1024 bytes", found: "100"),
            options: { $0.maxBytes = 100 }, profile: { $0.maxStillBytes = 100 }, json: ("maxStillBytes", "100"),
            flags: (["--max-bytes", "100"], "expected at least 1024 bytes for --max-bytes, got 100")),
        Case(
            expected: InvalidOption("quality", expected: "1...100", found: "101"),
            options: { $0.quality = 101 }, profile: { $0.maxQuality = 101 }, json: ("maxQuality", "101"),
            flags: (["--quality", "101"], "expected 1...100 for --quality, got 101")),
        Case(
            expected: InvalidOption("minQuality", expected: .upTo(option: "quality", value: 85), found: "90"),
            options: { $0.minQuality = 90 }, profile: { $0.minQuality = 90 }, json: ("minQuality", "90"),
            flags: (
                ["--min-quality", "90"], "expected 1...--quality (85) for --min-quality, got 90 (--min-quality defaults"
            )),
        Case(
            expected: InvalidOption("maxWidth", expected: "a positive number", found: "0"),
            options: { $0.maxWidth = 0 }, profile: { $0.caps.width = 0 }, json: ("maxWidth", "0")),
        Case(
            expected: InvalidOption("acceptedFormats", expected: "at least one format", found: "[]"),
            options: { $0.acceptedFormats = [] }, profile: { $0.formats = [] }, json: ("formats", "[]")),
        Case(
            expected: InvalidOption("animation.maxBytes", expected: "at least 1024 bytes", found: "10"),
            options: { $0.animation.maxBytes = 10 }, profile: { $0.animation.maxBytes = 10 },
            json: ("animated.maxBytes", "10")),
        // Unchecked, -1 once took a square root of a negative number on every animation (SIGILL).
        Case(
            expected: InvalidOption("animation.maxTotalPixels", expected: "a positive number", found: "-1"),
            options: { $0.animation.maxTotalPixels = -1 }, profile: { $0.animation.maxTotalPixels = -1 },
            json: ("animated.maxTotalPixels", "-1")),
        Case(
            expected: InvalidOption("limits.maxFrames", expected: "a positive limit", found: "0"),
            options: { $0.limits.maxFrames = 0 },
            flags: (["--max-frames", "0"], "expected a positive limit for --max-frames, got 0")),
        Case(
            expected: InvalidOption("minShortEdge", expected: "a positive number of pixels", found: "0"),
            options: { $0.minShortEdge = 0 }),
    ]

    static let jpeg = Fixtures.path("jpeg/tiny-16x16.jpg")
    /// A path that does not exist: an entry point that reports the options must not have read it.
    static let missing = "/nonexistent/options-check.jpg"

    static func options(_ row: Case) -> PrepareOptions {
        var options = PrepareOptions()
        row.options(&options)
        return options
    }

    static func profile(_ row: Case) -> ServiceProfile? {
        guard let edit = row.profile else { return nil }
        // A fixed quality (85), as the rows' bounds assume: the built-in profiles' auto has no ceiling to check.
        var profile = ServiceProfile(
            name: "test", displayName: "Test", maxStillBytes: 5_000_000, qualityTarget: nil, source: "test",
            confidence: "test")
        edit(&profile)
        return profile
    }

    @Test(arguments: cases)
    func libraryPrepareChecksFirst(_ row: Case) async throws {
        let options = Self.options(row)
        #expect(throws: SharePipeError.invalidOptions(row.expected)) { try options.validate() }
        #expect(throws: SharePipeError.invalidOptions(row.expected)) {
            try SharePipe.prepare(.file(path: Self.missing), options: options)
        }
        await #expect(throws: SharePipeError.invalidOptions(row.expected)) {
            try await SharePipe.prepare(.file(path: Self.missing), options: options)
        }
        let info = try SharePipe.inspect(.file(path: Self.jpeg))
        #expect(throws: SharePipeError.invalidOptions(row.expected)) {
            try MemoryEstimate(info: info, options: options)
        }
    }

    @Test(arguments: cases)
    func batchReportsEveryFileAndWritesNothing(_ row: Case) throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let batch = Batch(
            outputDirectory: directory,
            targets: [
                BatchTarget(service: "good", options: PrepareOptions()),
                BatchTarget(service: "bad", options: Self.options(row)),
            ])
        let reports = batch.process(.file(path: Self.jpeg), named: "tiny.jpg")
        #expect(reports.map(\.service) == ["good", "bad"])
        #expect(
            reports[0].error == nil && reports[0].bytes ?? 0 > 0, "a valid target is prepared beside an invalid one")
        #expect(reports[1].error == .invalidOptions(row.expected))
        #expect(!FileManager.default.fileExists(atPath: directory + "/bad"))
        var planOnly = batch
        planOnly.dryRun = true
        let planned = planOnly.process(BatchItem(input: Self.jpeg, relativeName: "tiny.jpg"))
        #expect(planned[0].planned && planned[1].error == .invalidOptions(row.expected) && !planned[1].planned)
    }

    @Test(arguments: cases)
    func sharePipelineChecksItsBaseAndEachProfile(_ row: Case) async throws {
        let bad = SharePipeline.Configuration(memoryBudget: 64 << 20, baseOptions: Self.options(row))
        #expect(throws: SharePipeError.invalidOptions(row.expected)) { try SharePipeline(configuration: bad) }
        guard let profile = Self.profile(row) else { return }
        let pipeline = try SharePipeline(configuration: .init(memoryBudget: 64 << 20))
        await #expect(throws: SharePipeError.invalidOptions(row.expected)) {
            try await pipeline.prepare(.file(path: Self.missing), for: [.x, profile])
        }
    }

    @Test(arguments: cases.filter { $0.json != nil })
    func profileFilesNameTheField(_ row: Case) throws {
        let (field, value) = row.json!
        // A new profile searches auto:80 unless it fixes a quality: the minQuality row's bound is a fixed 85.
        let json = OptionPropertyTests.profileJSON(field, value, fixedQuality: field == "minQuality")
        let error = try #require(throws: ProfileFileError.self) {
            try ProfileCatalog.builtIn.applying(json: Array(json.utf8), file: "p.json")
        }
        #expect(error.option == row.expected && error.field == "profiles[0].\(field)")
        #expect(
            error.message.hasPrefix("profiles[0] ('newsite'): expected ")
                && error.message.contains("for `\(field)`, got"),
            "\(error.message)")
    }

    @Test(arguments: cases.filter { $0.flags != nil })
    func cliNamesTheFlag(_ row: Case) throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let (arguments, message) = row.flags!
        let run = try Tool.run(Tool.sharepipe, ["prepare", Self.jpeg, "--out", directory] + arguments)
        #expect(run.status == 2 && run.stderr.contains("invalid options: " + message), "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }
}
