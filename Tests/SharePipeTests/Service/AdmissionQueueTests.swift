import Foundation
import Logging
import Testing
@testable import SharePipe

/// The bounded admission queue: `maxWaitingRequests` and `maxWait` turn requests away with
/// `SharePipeError.overloaded`, a refused or timed-out waiter leaves nothing reserved, and a call's own
/// option adjustments are applied and checked like the profile's.
@Suite struct AdmissionQueueTests {
    @Test func pastTheQueueBoundARequestIsRefusedAtOnceAndTheOthersStillRun() async throws {
        let budget = MemoryBudget(capacity: 100, maxWaitingRequests: 1)
        let held = try await budget.reserve(100)
        let waiting = Task { try await budget.reserve(50, for: "second.jpg") }
        #expect(await eventually { await budget.usage.waitingRequests == 1 })
        do {
            _ = try await budget.reserve(10, for: "third.jpg")
            Issue.record("a third request was queued behind a full queue")
        } catch let error as SharePipeError {
            #expect(error == .overloaded(file: "third.jpg", reason: .queueFull(waiting: 1)))
            #expect(error.kind == "overloaded")
            #expect("\(error)" == "third.jpg: busy: 1 requests already waiting for memory")
        }
        let usage = await budget.usage
        #expect(usage.waitingRequests == 1 && usage.reservedBytes == 100)
        // One that fits at once never waits, so the bound does not apply to it.
        await budget.release(held)
        let second = try await waiting.value
        let immediate = try await budget.reserve(50)
        await budget.release(second)
        await budget.release(immediate)
        let end = await budget.usage
        #expect(end.reservedBytes == 0 && end.waitingRequests == 0)
    }

    @Test func aBoundOfZeroRefusesEveryRequestThatWouldWait() async throws {
        let budget = MemoryBudget(capacity: 100, maxConcurrentJobs: 1, maxWaitingRequests: 0)
        let held = try await budget.reserve(10)
        // Memory to spare, but the only job slot is taken: it would have to wait.
        await #expect(throws: SharePipeError.overloaded(file: "<job>", reason: .queueFull(waiting: 0))) {
            try await budget.reserve(10)
        }
        // Without a job slot it fits at once.
        let receiving = try await budget.reserve(10, holdingJobSlot: false)
        await budget.release(receiving)
        await budget.release(held)
        #expect(
            await budget.usage
                == MemoryBudget.Usage(
                    reservedBytes: 0, runningJobs: 0, waitingRequests: 0,
                    peakReservedBytes: 20, peakRunningJobs: 1))
    }

    @Test func aWaiterPastTheWaitLimitIsRefusedAndLeavesTheQueue() async throws {
        let budget = MemoryBudget(capacity: 100, maxWait: .milliseconds(150))
        let held = try await budget.reserve(90)
        let start = ContinuousClock.now
        do {
            _ = try await budget.reserve(50, for: "slow.jpg")
            Issue.record("admitted although the budget was held")
        } catch let error as SharePipeError {
            #expect(error == .overloaded(file: "slow.jpg", reason: .waitTimedOut(after: .milliseconds(150))))
            #expect(error.reason == "busy: waited 150 ms for memory")
        }
        #expect(ContinuousClock.now - start >= .milliseconds(150))
        let usage = await budget.usage
        #expect(usage.waitingRequests == 0 && usage.reservedBytes == 90)
        await budget.release(held)
        #expect(await budget.usage.reservedBytes == 0)
    }

    @Test func aTimedOutHeadUnblocksTheSmallerRequestsBehindIt() async throws {
        let budget = MemoryBudget(capacity: 100, maxWait: .seconds(1))
        let held = try await budget.reserve(90)
        let head = Task { try await budget.reserve(50, for: "big.jpg") }
        #expect(await eventually { await budget.usage.waitingRequests == 1 })
        // 90 + 10 fits, but FIFO keeps it behind the head until the head times out.
        let behind = Task { try await budget.reserve(10, for: "small.jpg") }
        #expect(await eventually { await budget.usage.waitingRequests == 2 })
        await #expect(throws: SharePipeError.self) { try await head.value }
        // The small one was admitted when the head left, before its own second ran out.
        let granted = try await behind.value
        let usage = await budget.usage
        #expect(usage.reservedBytes == 100 && usage.waitingRequests == 0)
        await budget.release(granted)
        await budget.release(held)
        #expect(await budget.usage.reservedBytes == 0)
    }

    @Test func anAdmittedWaiterIsNotRefusedWhenItsWaitLimitPasses() async throws {
        let budget = MemoryBudget(capacity: 100, maxWait: .milliseconds(200))
        let held = try await budget.reserve(100)
        let waiter = Task { try await budget.reserve(100) }
        #expect(await eventually { await budget.usage.waitingRequests == 1 })
        await budget.release(held)
        let granted = try await waiter.value
        try await Task.sleep(for: .milliseconds(400))
        // Still held (the timer was cancelled on admission), and released once.
        #expect(await budget.usage.reservedBytes == 100)
        await budget.release(granted)
        #expect(await budget.usage.reservedBytes == 0)
    }

    @Test func aPipelineRefusesAnUploadWhenItsQueueIsFullBeforeReadingIt() async throws {
        let large = Fixtures.path("jpeg/large-4000x3000.jpg")
        let configuration = SharePipeline.Configuration(
            memoryBudget: 64 << 20, maxConcurrentJobs: 1,
            maxWaitingRequests: 0)
        let pipeline = try SharePipeline(
            configuration: configuration, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        let blocker = try await pipeline.budget.reserve(64 << 20)
        let consumed = BodyReads()
        let bytes = try Fixtures.bytes(large)
        let body = AsyncStream<[UInt8]>(unfolding: { consumed.increment() == 1 ? bytes : nil })
        await #expect(throws: SharePipeError.overloaded(file: "queued.jpg", reason: .queueFull(waiting: 0))) {
            _ = try await pipeline.prepare(upload: body, named: "queued.jpg", for: [.x])
        }
        #expect(consumed.value == 0, "the body was read although the upload was refused")
        await pipeline.budget.release(blocker)
        // With the budget free, the same pipeline takes a file.
        let results = try await pipeline.prepare(.file(path: large), for: [.x])
        #expect(try results[0].get().size == PixelSize(width: 1440, height: 1080))
        #expect(await pipeline.budget.usage.reservedBytes == 0)
    }

    @Test func aPipelineWaitLimitRefusesAnInputThatWaitsTooLong() async throws {
        let path = Fixtures.path("jpeg/gps-orient6.jpg")
        let configuration = SharePipeline.Configuration(memoryBudget: 64 << 20, maxWait: .milliseconds(100))
        let pipeline = try SharePipeline(
            configuration: configuration, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        let blocker = try await pipeline.budget.reserve(64 << 20)
        await #expect(throws: SharePipeError.overloaded(file: path, reason: .waitTimedOut(after: .milliseconds(100)))) {
            _ = try await pipeline.prepare(.file(path: path), for: [.x])
        }
        await pipeline.budget.release(blocker)
        #expect(
            await pipeline.budget.usage
                == MemoryBudget.Usage(
                    reservedBytes: 0, runningJobs: 0, waitingRequests: 0,
                    peakReservedBytes: 64 << 20, peakRunningJobs: 1))
    }

    @Test func aNegativeQueueBoundOrANonPositiveWaitIsAnInvalidConfiguration() throws {
        #expect(
            throws: SharePipeError.invalidOptions(
                InvalidOption("maxWaitingRequests", expected: "0 or more requests", found: "-1"))
        ) {
            try SharePipeline(configuration: .init(memoryBudget: 1 << 20, maxWaitingRequests: -1))
        }
        #expect(throws: SharePipeError.self) {
            try SharePipeline(configuration: .init(memoryBudget: 1 << 20, maxWait: .zero))
        }
    }

    @Test func aCallsAdjustmentOverridesTheProfileAndIsCheckedBeforeTheInputIsRead() async throws {
        let path = Fixtures.path("jpeg/large-4000x3000.jpg")
        let pipeline = try SharePipeline(
            configuration: .init(memoryBudget: 512 << 20),
            logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        let results = try await pipeline.prepare(.file(path: path), for: [.x, .bluesky]) { options in
            options.maxShortEdge = 300
            options.strip = .gps
        }
        for result in results {
            let image = try result.get()
            #expect(image.size == PixelSize(width: 400, height: 300), "\(result.profile.name)")
            let info = try SharePipe.inspect(.bytes(image.bytes))
            #expect(info.size == image.size)
            #expect(!info.metadataKinds.contains(.gps) && info.metadataKinds.contains(.exif), "\(info.metadataKinds)")
        }
        // A minimum quality above the request's quality: refused naming the option, before any decoding.
        do {
            _ = try await pipeline.prepare(.file(path: "/nonexistent.jpg"), for: [.x]) { options in
                options.quality = 50
                options.minQuality = 60
            }
            Issue.record("invalid options were accepted")
        } catch let SharePipeError.invalidOptions(invalid) {
            #expect(invalid.option == "minQuality" && invalid.found == "60")
        }
        #expect(await pipeline.budget.usage.reservedBytes == 0)
    }
}

/// Calls counted from any thread.
private final class BodyReads: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() -> Int {
        lock.withLock {
            count += 1; return count
        }
    }
}
