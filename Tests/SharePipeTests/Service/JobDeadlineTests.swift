import Foundation
import Logging
import Testing
@_spi(Testing) @testable import SharePipe

/// A deadline per job (`PrepareOptions.timeout`, `SharePipeline.Configuration.jobTimeout`, the CLI's
/// `--timeout`): a job past it stops at its next checkpoint with `timedOut`, within a second of the deadline,
/// writing nothing and freeing its reservation and spool file. The jobs are made long by a checkpoint that
/// sleeps (or, for the CLI, the debug build's `SHAREPIPE_DEBUG_FAULT=slow`), so the tests take the same time
/// whatever the load.
@Suite(.serialized) struct JobDeadlineTests {
    /// A 24 MP PNG (4000 rows: 250 row checkpoints), written once per test process.
    static let largePNG: String = {
        let directory = NSTemporaryDirectory() + "sharepipe-deadline-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return (try? ServicePipelineTests.writeLargePNG(in: directory)) ?? directory + "/missing.png"
    }()

    @Test func aJobPastItsTimeoutStopsWithinASecondWithItsOwnError() throws {
        var options = PrepareOptions()
        options.timeout = 1
        let png = Self.largePNG  // written before the clock starts
        let started = ContinuousClock.now
        #expect(throws: SharePipeError.timedOut(file: png, seconds: 1)) {
            try Pipeline.prepare(.file(path: png), options: try options.checked()) { usleep(40_000) }
        }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .seconds(1) && elapsed < .seconds(2), "ended after \(elapsed)")
        let error = SharePipeError.timedOut(file: "a.png", seconds: 1)
        #expect(error.kind == "timedOut")
        #expect(error.description == "a.png: timed out: the job ran past its deadline of 1 s and was stopped")
    }

    @Test func aJobWithinItsTimeoutIsUnchanged() throws {
        let source = ImageSource.file(path: Fixtures.path("jpeg/orient-6.jpg"))
        var options = PrepareOptions()
        let plain = try SharePipe.prepare(source, options: options)
        options.timeout = 600
        #expect(try SharePipe.prepare(source, options: options).bytes == plain.bytes)
        options.timeout = 0
        #expect(throws: SharePipeError.self) { try options.validate() }
    }

    @Test func aSharePipelineJobPastItsTimeoutFreesItsMemoryAndSpoolFile() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let configuration = SharePipeline.Configuration(
            memoryBudget: 1 << 30, spoolThreshold: 16 << 10, spoolDirectory: directory,
            jobTimeout: .milliseconds(500))
        var pipeline = try SharePipeline(configuration: configuration, logger: Logger(label: "test"))
        // The job's clock starts once it is admitted, after the upload is read: its first checkpoint marks it.
        // The checkpoint that stops it is its last. Measured there, not when this test resumes: the resumption
        // waits for a thread of the test process's cooperative pool, which the suites running beside it may
        // hold for seconds (the server's fault test times the answer from outside).
        let checkpoints = CheckpointInstants()
        pipeline.hooks.checkpoint = {
            checkpoints.mark()
            usleep(20_000)
        }
        let bytes = try Fixtures.bytes(Self.largePNG)
        let results = try await pipeline.prepare(
            upload: ServicePipelineTests.chunks(bytes, size: 64 << 10), named: "upload.png", for: [.x])
        let first = try #require(checkpoints.first, "no checkpoint was reached")
        let elapsed = try #require(checkpoints.last) - first
        guard case .failure(let error) = results.first?.outcome else {
            Issue.record("the job finished in spite of its deadline")
            return
        }
        #expect(error == .timedOut(file: "upload.png", seconds: 0.5))
        #expect(elapsed < .milliseconds(1500), "stopped \(elapsed) after the job's first checkpoint (deadline 0.5 s)")
        let usage = await pipeline.budget.usage
        #expect(usage.reservedBytes == 0 && usage.runningJobs == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    #if DEBUG
        /// The CLI's `--timeout`: the slow file times out, the batch goes on with the next one and ends with status 1
        /// and the summary; nothing is left of the file that timed out.
        @Test func theCLIGoesOnPastAFileThatTimedOut() throws {
            let out = Fixtures.temporaryDirectory()
            defer { Fixtures.cleanUp(out) }
            let small = Fixtures.path("jpeg/orient-6.jpg")
            let started = Date()
            let run = try Tool.run(
                "env",
                [
                    "SHAREPIPE_DEBUG_FAULT=slow", Tool.sharepipe, "prepare", Self.largePNG, small, "--out", out,
                    "--timeout", "1",
                ])
            #expect(run.status == 1, "\(run.stderr)")
            #expect(run.stdout.contains("processed 1, failed 1"), "\(run.stdout)")
            #expect(
                run.stderr.contains("\(Self.largePNG): timed out: the job ran past its deadline of 1 s"),
                "\(run.stderr)")
            #expect(Date().timeIntervalSince(started) < 10)
            let outputs = try FileManager.default.subpathsOfDirectory(atPath: out)
            #expect(outputs.filter { $0.hasSuffix(".png") }.isEmpty, "\(outputs)")
            #expect(outputs.contains { $0.hasSuffix("orient-6.jpg") }, "\(outputs)")
        }
    #endif
}

/// The first and the last instant the job's checkpoint hook was called.
final class CheckpointInstants: @unchecked Sendable {
    private let lock = NSLock()
    private var instants: (first: ContinuousClock.Instant, last: ContinuousClock.Instant)?

    func mark() {
        lock.lock()
        defer { lock.unlock() }
        let now = ContinuousClock.now
        instants = (instants?.first ?? now, now)
    }

    var first: ContinuousClock.Instant? {
        lock.lock()
        defer { lock.unlock() }
        return instants?.first
    }

    var last: ContinuousClock.Instant? {
        lock.lock()
        defer { lock.unlock() }
        return instants?.last
    }
}
