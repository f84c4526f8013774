import Foundation
import Logging
import Testing
@_spi(Testing) @testable import SharePipe

/// `SharePipeline` and `MemoryBudget`: admission by memory (counted with an instrumented counter of
/// running jobs, not with timings), first-in-first-out order, cancellation, upload spooling, logging.
@Suite struct ServicePipelineTests {
    static let large = Fixtures.path("jpeg/large-4000x3000.jpg")

    /// The memory one upload of `path` needs for `profiles`, as the pipeline plans it.
    static func need(_ path: String, _ profiles: [ServiceProfile] = [.x], input: InputResidence = .file) throws -> Int {
        let info = try SharePipe.inspect(.file(path: path))
        return try profiles.map { try MemoryEstimate(info: info, options: $0.options(), input: input).totalBytes }
            .max()!
    }

    static func pipeline(
        budget: Int, jobs: Int = 8, oversized: OversizedJobPolicy = .runAlone, threshold: Int = 1 << 20,
        spoolDirectory: String? = nil, maxInputBytes: Int? = nil,
        logs: CapturedLogs = CapturedLogs()
    ) throws -> SharePipeline {
        var base = PrepareOptions()
        if let maxInputBytes { base.limits.maxInputBytes = maxInputBytes }
        let configuration = SharePipeline.Configuration(
            memoryBudget: budget, maxConcurrentJobs: jobs, oversizedJobs: oversized,
            spoolThreshold: threshold, spoolDirectory: spoolDirectory,
            baseOptions: base)
        return try SharePipeline(
            configuration: configuration,
            logger: Logger(label: "test") { _ in CapturingLogHandler(store: logs) })
    }

    /// Runs `count` uploads of the large JPEG at once and returns every result.
    static func prepareConcurrently(_ pipeline: SharePipeline, count: Int) async throws -> [ServiceResult] {
        try await withThrowingTaskGroup(of: [ServiceResult].self) { group in
            for index in 0..<count {
                group.addTask { try await pipeline.prepare(.file(path: large), named: "photo-\(index).jpg", for: [.x]) }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
    }

    // MARK: - Admission

    @Test func aBudgetForOneJobRunsConcurrentJobsOneAtATime() async throws {
        let need = try Self.need(Self.large)
        var pipeline = try Self.pipeline(budget: need + need / 2)
        let counter = RunningJobs()
        pipeline.hooks.willRun = { _ in
            await counter.enter()
            // Widen the window in which a wrongly admitted second job would be counted.
            try? await Task.sleep(for: .milliseconds(20))
        }
        pipeline.hooks.didRun = { _ in await counter.leave() }

        let results = try await Self.prepareConcurrently(pipeline, count: 4)
        #expect(results.count == 4)
        for result in results { #expect(try result.get().size == PixelSize(width: 1440, height: 1080)) }
        #expect(await counter.started == 4)
        #expect(await counter.peak == 1)
        let usage = await pipeline.budget.usage
        #expect(usage.peakRunningJobs == 1)
        #expect(usage.peakReservedBytes <= need + need / 2)
        #expect(usage.reservedBytes == 0 && usage.runningJobs == 0 && usage.waitingRequests == 0)
    }

    @Test func aLargeBudgetRunsThemInParallel() async throws {
        let need = try Self.need(Self.large)
        var pipeline = try Self.pipeline(budget: 4 * need + (1 << 20), jobs: 4)
        let counter = RunningJobs()
        pipeline.hooks.willRun = { _ in
            await counter.enter()
            // Hold every job until all four have started: possible only if all four were admitted together.
            await counter.waitForStarts(4, timeout: .seconds(60))
        }
        pipeline.hooks.didRun = { _ in await counter.leave() }

        let results = try await Self.prepareConcurrently(pipeline, count: 4)
        #expect(results.allSatisfy { (try? $0.get()) != nil })
        #expect(await counter.peak == 4)
        #expect(await pipeline.budget.usage.peakRunningJobs == 4)
    }

    @Test func theJobSlotCapAppliesEvenWithMemoryToSpare() async throws {
        var pipeline = try Self.pipeline(budget: 1 << 40, jobs: 2)
        let counter = RunningJobs()
        pipeline.hooks.willRun = { _ in
            await counter.enter()
            try? await Task.sleep(for: .milliseconds(20))
        }
        pipeline.hooks.didRun = { _ in await counter.leave() }
        _ = try await Self.prepareConcurrently(pipeline, count: 4)
        #expect(await counter.peak <= 2)
        #expect(await counter.started == 4)
    }

    @Test func anInputLargerThanTheBudgetRunsAloneByDefault() async throws {
        let need = try Self.need(Self.large)
        var pipeline = try Self.pipeline(budget: need / 2)
        let counter = RunningJobs()
        pipeline.hooks.willRun = { _ in
            await counter.enter()
            try? await Task.sleep(for: .milliseconds(20))
        }
        pipeline.hooks.didRun = { _ in await counter.leave() }
        let results = try await Self.prepareConcurrently(pipeline, count: 3)
        #expect(results.count == 3 && results.allSatisfy { (try? $0.get()) != nil })
        #expect(await counter.peak == 1)
    }

    @Test func anInputLargerThanTheBudgetIsRefusedUnderRefuse() async throws {
        let need = try Self.need(Self.large)
        let logs = CapturedLogs()
        var pipeline = try Self.pipeline(budget: need / 2, oversized: .refuse, logs: logs)
        let counter = RunningJobs()
        pipeline.hooks.willRun = { _ in await counter.enter() }
        do {
            _ = try await pipeline.prepare(.file(path: Self.large), for: [.x])
            Issue.record("expected tooLarge")
        } catch let error as SharePipeError {
            #expect(error.kind == "tooLarge")
            #expect(error.description.contains("memory budget"))
        }
        #expect(await counter.started == 0)
        #expect(logs.records.count == 1 && logs.records[0].metadata["error_kind"] == "tooLarge")
        #expect(await pipeline.budget.usage.reservedBytes == 0)
    }

    @Test func eachProfileGetsAResultAndAFailedProfileIsAResultNotAThrow() async throws {
        let pipeline = try Self.pipeline(budget: 1 << 30)
        let results = try await pipeline.prepare(.file(path: Fixtures.path("broken/truncated.jpg")), for: [.x, .weibo])
        #expect(results.map(\.profile.name) == ["x", "weibo"])
        for result in results {
            guard case .failure(let error) = result.outcome else {
                Issue.record("a truncated file must fail"); continue
            }
            #expect(error.kind == "corrupt")
        }
        let good = try await pipeline.prepare(.file(path: Fixtures.path("jpeg/gps-orient6.jpg")), for: [.x, .weibo])
        #expect(
            try good.map { try $0.get().size } == [
                PixelSize(width: 640, height: 480), PixelSize(width: 640, height: 480),
            ])
    }

    // MARK: - The budget itself

    @Test func theBudgetAdmitsStrictlyInOrder() async throws {
        let budget = MemoryBudget(capacity: 100)
        let order = Entries()
        let first = try await budget.reserve(80)
        let big = Task { () -> MemoryBudget.Reservation in
            let granted = try await budget.reserve(60)
            await order.append("big")
            return granted
        }
        #expect(await eventually { await budget.usage.waitingRequests == 1 })
        let small = Task { () -> MemoryBudget.Reservation in
            let granted = try await budget.reserve(10)
            await order.append("small")
            return granted
        }
        #expect(await eventually { await budget.usage.waitingRequests == 2 })
        // 80 + 10 would fit, but the small request is behind the big one.
        #expect(await budget.usage.reservedBytes == 80)
        #expect(await budget.reserveWithoutWaiting(5) == nil)
        await budget.release(first)
        let bigGranted = try await big.value
        let smallGranted = try await small.value
        #expect(await order.values == ["big", "small"])
        await budget.release(bigGranted)
        await budget.release(smallGranted)
        #expect(
            await budget.usage
                == MemoryBudget.Usage(
                    reservedBytes: 0, runningJobs: 0, waitingRequests: 0,
                    peakReservedBytes: 80, peakRunningJobs: 2))
    }

    @Test func anOversizedRequestWaitsForAnEmptyBudgetAndThenHoldsItAlone() async throws {
        let budget = MemoryBudget(capacity: 100)
        let small = try await budget.reserve(10)
        let huge = Task { try await budget.reserve(500) }
        #expect(await eventually { await budget.usage.waitingRequests == 1 })
        await budget.release(small)
        let hugeGranted = try await huge.value
        #expect(await budget.usage.reservedBytes == 500)
        let next = Task { try await budget.reserve(1) }
        #expect(await eventually { await budget.usage.waitingRequests == 1 })
        await budget.release(hugeGranted)
        await budget.release(try await next.value)
        #expect(await budget.usage.reservedBytes == 0)
    }

    @Test func aCancelledWaiterLeavesTheQueueAndUnblocksThoseBehindIt() async throws {
        let budget = MemoryBudget(capacity: 100)
        let held = try await budget.reserve(90)
        let blocked = Task { try await budget.reserve(50) }
        #expect(await eventually { await budget.usage.waitingRequests == 1 })
        let behind = Task { try await budget.reserve(10) }
        #expect(await eventually { await budget.usage.waitingRequests == 2 })
        blocked.cancel()
        await #expect(throws: CancellationError.self) { try await blocked.value }
        // With the head gone, the small request fits beside the held 90.
        let granted = try await behind.value
        #expect(await budget.usage.reservedBytes == 100)
        await budget.release(granted)
        await budget.release(held)
        #expect(
            await budget.usage
                == MemoryBudget.Usage(
                    reservedBytes: 0, runningJobs: 0, waitingRequests: 0,
                    peakReservedBytes: 100, peakRunningJobs: 2))
    }

    @Test func reservationsWithoutAJobSlotIgnoreTheSlotCap() async throws {
        let budget = MemoryBudget(capacity: 100, maxConcurrentJobs: 1)
        let job = try await budget.reserve(10)
        #expect(await budget.reserveWithoutWaiting(10) == nil)
        let receiving = try #require(await budget.reserveWithoutWaiting(10, holdingJobSlot: false))
        // An exchange counts what it gives back: a receive reservation can become the job it was receiving for.
        await budget.release(job)
        let exchanged = try #require(await budget.exchange(receiving, for: 95))
        let usage = await budget.usage
        #expect(usage.reservedBytes == 95 && usage.runningJobs == 1)
        await budget.release(exchanged)
    }

    // MARK: - Cancellation

    @Test func cancellingAJobStopsItAtTheNextCheckpointFreesItsMemoryAndLeavesNoFile() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let logs = CapturedLogs()
        var pipeline = try Self.pipeline(budget: 1 << 30, threshold: 16 << 10, spoolDirectory: directory, logs: logs)
        let checkpoints = TestCounter()
        let task = TaskBox()
        pipeline.hooks.checkpoint = {
            // The second checkpoint is after the header and before the render: cancel there.
            if checkpoints.increment() == 2 { task.cancel() }
        }
        let bytes = try Fixtures.bytes(Self.large)
        task.set(
            Task {
                _ = try await pipeline.prepare(
                    upload: Self.chunks(bytes, size: 32 << 10), named: "upload.jpg", for: [.x, .weibo])
            })
        let outcome = await task.result()
        guard case .failure(let error) = outcome else { Issue.record("a cancelled job must not succeed"); return }
        #expect(error as? SharePipeError == .cancelled(file: "upload.jpg"))
        #expect(checkpoints.value == 2, "no step ran after the checkpoint that saw the cancellation")
        let usage = await pipeline.budget.usage
        #expect(usage.reservedBytes == 0 && usage.runningJobs == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        // One line for the job that was cancelled; the second profile never started.
        #expect(logs.records.map { $0.metadata["outcome"] } == ["cancelled"])
    }

    /// Writes a 24 MP PNG (6000×4000 RGB, colours enough to stay truecolour) into `directory`.
    static func writeLargePNG(in directory: String) throws -> String {
        let size = PixelSize(width: 6000, height: 4000)
        var pixels = [UInt8](repeating: 0, count: size.area * 3)
        for y in 0..<size.height {
            for x in 0..<size.width {
                let i = (y * size.width + x) * 3
                pixels[i] = UInt8(truncatingIfNeeded: x); pixels[i + 1] = UInt8(truncatingIfNeeded: y)
                pixels[i + 2] = UInt8(truncatingIfNeeded: x ^ y)
            }
        }
        let png = try PNGEncoder().encode(
            Bitmap(size: size, layout: .rgb, pixels: pixels),
            settings: EncodeSettings(quality: 90, progressive: false, effort: 1), metadata: [])
        let path = directory + "/large-24mp.png"
        try Data(png).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func cancellingInTheMiddleOfADecodeStopsWithinItsRowsAndFreesTheBudget() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let path = try Self.writeLargePNG(in: directory)
        let logs = CapturedLogs()
        var pipeline = try Self.pipeline(budget: 1 << 30, logs: logs)
        let checkpoints = TestCounter()
        // The cancelled run is cancelled by its own 20th checkpoint: well into the decode, whatever the load
        // (a test that polled for it could see it only after the job's last checkpoint, and the job succeeded).
        let cancelAtCheckpoint = Locked<Int?>(nil)
        let cancelled = TaskBox()
        let cancelledAt = Locked<(checkpoint: Int, time: ContinuousClock.Instant)?>(nil)
        pipeline.hooks.checkpoint = {
            let count = checkpoints.increment()
            if count == cancelAtCheckpoint.withLock({ $0 }) {
                cancelledAt.withLock { $0 = (count, ContinuousClock.now) }
                cancelled.cancel()  // raises the job's flag at once (its cancellation handler)
            }
        }
        let watched = pipeline
        // The whole job once, for the time a cancellation used to wait for (the next step's checkpoint).
        let whole = ContinuousClock.now
        _ = try await pipeline.prepare(.file(path: path), named: "whole.png", for: [.x])
        let wholeDuration = ContinuousClock.now - whole
        let checkpointsInAJob = checkpoints.value
        // The steps' own checkpoints are a handful; the rest are the rows' (every 16 of 4,000).
        #expect(checkpointsInAJob > 200, "row checkpoints: \(checkpointsInAJob)")

        let before = checkpoints.value
        cancelAtCheckpoint.withLock { $0 = before + 20 }
        cancelled.set(Task { _ = try await watched.prepare(.file(path: path), named: "cancelled.png", for: [.x]) })
        let outcome = await cancelled.result()
        let cancellation = try #require(cancelledAt.withLock { $0 }, "the job never reached its 20th checkpoint")
        let atCancel = cancellation.checkpoint
        let returnedAfter = ContinuousClock.now - cancellation.time
        // Released before the cancelled call returned (no polling: a release left to a later task would fail here).
        let usageAtReturn = await pipeline.budget.usage
        #expect(usageAtReturn.reservedBytes == 0 && usageAtReturn.runningJobs == 0, "at return: \(usageAtReturn)")
        guard case .failure(let error) = outcome else { Issue.record("a cancelled job must not succeed"); return }
        #expect(error as? SharePipeError == .cancelled(file: "cancelled.png"))
        // The next row checkpoint after the cancellation threw: at most the one in progress ran after it.
        #expect(checkpoints.value - atCancel <= 2, "\(checkpoints.value - atCancel) checkpoints after the cancellation")
        #expect(checkpoints.value - before < checkpointsInAJob, "the job stopped before its decode ended")
        // No wall-clock bound: under the parallel suites the two cooperative threads are often busy with other
        // tests' work for seconds, so a bound would measure them. The checkpoint counts above are the bound.
        print("24 MP PNG: whole job \(wholeDuration); cancelled mid-decode: returned and freed after \(returnedAfter)")
    }

    @Test func cancellingWhileWaitingForMemoryThrowsCancelled() async throws {
        let pipeline = try Self.pipeline(budget: 1 << 30)
        let blocker = try await pipeline.budget.reserve(1 << 30)
        let waiting = Task { try await pipeline.prepare(.file(path: Self.large), named: "waiting.jpg", for: [.x]) }
        #expect(await eventually { await pipeline.budget.usage.waitingRequests == 1 })
        waiting.cancel()
        do {
            _ = try await waiting.value
            Issue.record("expected cancelled")
        } catch {
            #expect(error as? SharePipeError == .cancelled(file: "waiting.jpg"))
        }
        await pipeline.budget.release(blocker)
        #expect(await pipeline.budget.usage.reservedBytes == 0)
    }

    // MARK: - Uploads

    @Test func aSmallUploadStaysInMemoryAndIsCountedWhole() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        var pipeline = try Self.pipeline(budget: 1 << 30, threshold: 64 << 10, spoolDirectory: directory)
        let seen = Entries()
        pipeline.hooks.willRun = { _ in await seen.append(contentsOf: Self.spoolFiles(in: directory)) }
        let bytes = try Fixtures.bytes(Fixtures.path("jpeg/orient-6.jpg"))
        let results = try await pipeline.prepare(upload: Self.chunks(bytes, size: 1000), named: "small.jpg", for: [.x])
        #expect(try results[0].get().size == PixelSize(width: 600, height: 400))
        #expect(results[0].estimate.inputBytes == bytes.count)
        #expect(await seen.values.isEmpty, "nothing was spooled")
        #expect(await pipeline.budget.usage.peakReservedBytes >= MemoryEstimate.receiving(spoolThreshold: 64 << 10))
    }

    @Test func aLargeUploadIsSpooledToAPrivateFileThatIsRemovedAfterTheJob() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        var pipeline = try Self.pipeline(budget: 1 << 30, threshold: 64 << 10, spoolDirectory: directory)
        let seen = Entries()
        pipeline.hooks.willRun = { _ in
            for name in Self.spoolFiles(in: directory) {
                let attributes = try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)
                let mode = (attributes?[.posixPermissions] as? NSNumber)?.intValue ?? -1
                let size = (attributes?[.size] as? NSNumber)?.intValue ?? -1
                await seen.append("\(name) \(String(mode, radix: 8)) \(size)")
            }
        }
        let bytes = try Fixtures.bytes(Self.large)
        let results = try await pipeline.prepare(
            upload: Self.chunks(bytes, size: 10_000), named: "large.jpg", for: [.x, .weibo])
        #expect(results.count == 2)
        #expect(try results.allSatisfy { try $0.get().size == PixelSize(width: 1440, height: 1080) })
        #expect(results[0].estimate.inputBytes == MemoryEstimate.fileReadBufferBytes)
        let entries = await seen.values
        #expect(entries.count == 2, "one spool file, seen by each profile's job: \(entries)")
        #expect(
            entries.allSatisfy { $0.hasPrefix("sharepipe-upload-") && $0.hasSuffix(" 600 \(bytes.count)") },
            "\(entries)")
        #expect(Self.spoolFiles(in: directory).isEmpty)
        // Errors and logs name the upload, never the spool file.
        #expect(try results[0].get().inputByteCount == bytes.count)
    }

    @Test func aSmallUploadThatMustWaitWaitsOnDisk() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let path = Fixtures.path("jpeg/gps-orient6.jpg")
        let threshold = 128 << 10
        let bytes = try Fixtures.bytes(path)
        let receiving = MemoryEstimate.receiving(spoolThreshold: threshold)
        let inMemory = try Self.need(path, input: .memory)
        #expect(inMemory > receiving, "the job must need more than receiving, or it would be admitted by exchange")
        let other = 10 << 20
        let pipeline = try Self.pipeline(budget: other + receiving, threshold: threshold, spoolDirectory: directory)
        let blocker = try await pipeline.budget.reserve(other)
        let upload = Task {
            try await pipeline.prepare(upload: Self.chunks(bytes, size: 4096), named: "queued.jpg", for: [.x])
        }
        #expect(await eventually { await pipeline.budget.usage.waitingRequests == 1 })
        // Received into memory, then moved to a spool file to wait: only the blocker is reserved now.
        #expect(Self.spoolFiles(in: directory).count == 1)
        #expect(await pipeline.budget.usage.reservedBytes == other)
        await pipeline.budget.release(blocker)
        let results = try await upload.value
        #expect(try results[0].get().size == PixelSize(width: 640, height: 480))
        #expect(results[0].estimate.inputBytes == MemoryEstimate.fileReadBufferBytes)
        #expect(Self.spoolFiles(in: directory).isEmpty)
        #expect(await pipeline.budget.usage.reservedBytes == 0)
    }

    @Test func anUploadOverTheInputLimitStopsWithTooLargeAndLeavesNoFile() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let pipeline = try Self.pipeline(
            budget: 1 << 30, threshold: 16 << 10, spoolDirectory: directory, maxInputBytes: 100_000)
        let bytes = try Fixtures.bytes(Self.large)
        do {
            _ = try await pipeline.prepare(upload: Self.chunks(bytes, size: 8192), named: "big.jpg", for: [.x])
            Issue.record("expected tooLarge")
        } catch let error as SharePipeError {
            // Receiving stops at the first 8 KiB chunk past the limit: 13 × 8192 bytes.
            #expect(
                error
                    == .tooLarge(
                        file: "big.jpg", exceeded: ExceededLimit(.inputBytes, found: 13 * 8192, limit: 100_000)))
            #expect(
                error.description == "big.jpg: too large: exceeds the input limit of 100000 bytes (file has 106496)")
        }
        #expect(Self.spoolFiles(in: directory).isEmpty)
        #expect(await pipeline.budget.usage.reservedBytes == 0)
    }

    @Test func anUploadThatBreaksOffIsUnreadableAndLeavesNoFile() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let pipeline = try Self.pipeline(budget: 1 << 30, threshold: 16 << 10, spoolDirectory: directory)
        struct ConnectionReset: Error {}
        let broken = AsyncThrowingStream<[UInt8], any Error> { continuation in
            for _ in 0..<8 { continuation.yield([UInt8](repeating: 0xFF, count: 8192)) }
            continuation.finish(throwing: ConnectionReset())
        }
        do {
            _ = try await pipeline.prepare(upload: broken, named: "reset.jpg", for: [.x])
            Issue.record("expected unreadable")
        } catch let error as SharePipeError {
            #expect(error.kind == "unreadable")
        }
        #expect(Self.spoolFiles(in: directory).isEmpty)
        #expect(await pipeline.budget.usage.reservedBytes == 0)
    }

    // MARK: - Logging

    @Test func oneStructuredLinePerJobWithoutMetadataValues() async throws {
        let logs = CapturedLogs()
        let pipeline = try Self.pipeline(budget: 1 << 30, logs: logs)
        let path = Fixtures.path("jpeg/gps-orient6.jpg")
        _ = try await pipeline.prepare(.bytes(try Fixtures.bytes(path)), named: "holiday.jpg", for: [.x, .weibo])
        let records = logs.records
        #expect(records.map { $0.metadata["profile"] } == ["x", "weibo"])
        for record in records {
            #expect(record.message == "job finished")
            for key in [
                "input", "profile", "outcome", "input_size", "input_bytes", "output_size", "output_bytes", "attempts",
                "duration_ms", "wait_ms", "peak_pixel_bytes", "estimate_bytes",
            ] {
                #expect(record.metadata[key] != nil, "missing \(key)")
            }
            #expect(record.metadata["input"] == "holiday.jpg")
            #expect(record.metadata["outcome"] == "prepared")
            #expect(record.metadata["input_size"] == "480x640")
            #expect(record.metadata["output_size"] == "640x480")
            #expect(record.metadata["removed_metadata"]?.contains("gps") == true)  // the kind, not the value
        }
        // The file's camera, GPS and caption values (TestImages/README.md) appear nowhere.
        let text = records.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        for secret in [
            "52.52", "52,52", "13.405", "13.40", "SharePipeCam", "TestModel", "Berlin", "secret", "private comment",
            "2021:06:15",
        ] {
            #expect(!text.contains(secret), "log carries \(secret)")
        }
    }

    // MARK: - Helpers

    /// An upload body in chunks of `size` bytes.
    static func chunks(_ bytes: [UInt8], size: Int) -> AsyncStream<[UInt8]> {
        AsyncStream { continuation in
            for start in stride(from: 0, to: bytes.count, by: size) {
                continuation.yield(Array(bytes[start..<min(start + size, bytes.count)]))
            }
            continuation.finish()
        }
    }

    static func spoolFiles(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter {
            $0.hasPrefix("sharepipe-upload-")
        }
    }
}

/// Polls `condition` until it holds or 120 s pass (a failure detector, not a measurement: with the whole
/// suite running on two cores, the task under test can wait tens of seconds for a thread).
func eventually(_ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(120)
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return await condition()
}

/// Jobs running at once, counted from the pipeline's hooks.
actor RunningJobs {
    private(set) var running = 0
    private(set) var peak = 0
    private(set) var started = 0

    func enter() {
        running += 1
        started += 1
        peak = max(peak, running)
    }

    func leave() { running -= 1 }

    /// Returns once `count` jobs have started, or after `timeout` (the caller's expectations then fail).
    func waitForStarts(_ count: Int, timeout: Duration) async {
        let deadline = ContinuousClock.now + timeout
        while started < count && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(2))
        }
    }
}

/// Strings in the order they were appended.
actor Entries {
    private(set) var values: [String] = []
    func append(_ value: String) { values.append(value) }
    func append(contentsOf more: [String]) { values += more }
}

/// A counter safe to bump from the job's thread.
final class TestCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() -> Int {
        lock.withLock {
            count += 1; return count
        }
    }
}

/// Holds a task so a hook on another thread can cancel it, even before it is stored.
final class TaskBox: @unchecked Sendable {
    private let lock = NSLock()
    private var task: Task<Void, any Error>?
    private var cancelRequested = false

    func set(_ task: Task<Void, any Error>) {
        let cancelNow = lock.withLock {
            self.task = task; return cancelRequested
        }
        if cancelNow { task.cancel() }
    }

    func cancel() {
        let task = lock.withLock {
            cancelRequested = true; return self.task
        }
        task?.cancel()
    }

    func result() async -> Result<Void, any Error> {
        guard let task = lock.withLock({ self.task }) else { return .success(()) }
        return await task.result
    }
}

/// Log records kept for inspection.
final class CapturedLogs: @unchecked Sendable {
    struct Record {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    private let lock = NSLock()
    private var stored: [Record] = []
    var records: [Record] { lock.withLock { stored } }
    func append(_ record: Record) { lock.withLock { stored.append(record) } }
}

/// A `LogHandler` that keeps every record in a `CapturedLogs`.
struct CapturingLogHandler: LogHandler {
    let store: CapturedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    var metadataProvider: Logger.MetadataProvider?

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        store.append(
            .init(
                level: event.level, message: event.message.description,
                metadata: all.mapValues { $0.description }))
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}
