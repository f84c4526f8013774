#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Dispatch
import Logging

/// SharePipe for a posting service: many uploads prepared at once, in process, within a memory budget.
///
/// Each call prepares one input for one or more service profiles. Before anything is decoded, the input's
/// header is probed and every profile's peak memory is planned (`MemoryEstimate`); the call then waits in
/// the budget's first-in-first-out queue until that much memory is free. The admission unit is the
/// upload: its profiles run one after another inside one reservation of the input plus the largest
/// profile's estimate, so the input is counted once and no call ever waits while holding memory (no
/// deadlock). Work runs on Dispatch threads, so the Swift concurrency pool stays free for I/O, and
/// Task cancellation is honoured while waiting, between pipeline steps, between fitting attempts and every
/// few rows, tiles or frames inside a decode or resample (the checkpoint reaches the row loops through the
/// job's `PixelMemoryMeter`): a cancelled call throws `SharePipeError.cancelled`, releases its reservation and removes its spool file.
///
/// ```swift
/// let pipeline = SharePipeline(configuration: .init(memoryBudget: 512 << 20))
/// let results = try await pipeline.prepare(.file(path: "IMG_0001.jpg"), for: [.x, .weibo])
/// for result in results { print(result.profile.name, try result.get().byteCount) }
/// ```
///
/// One structured log line is written per profile job (see `Configuration`); it carries sizes, counts,
/// timings and the outcome, never image data or metadata values.
public struct SharePipeline: Sendable {
    /// How a `SharePipeline` admits and runs work.
    public struct Configuration: Sendable {
        /// Bytes of memory the pipeline's jobs and uploads may hold at once (`MemoryEstimate.totalBytes`).
        public var memoryBudget: Int
        /// Jobs that may run at once whatever the memory (CPU work); defaults to the number of active cores.
        public var maxConcurrentJobs: Int
        /// What happens to an input whose estimate exceeds the whole budget.
        public var oversizedJobs: OversizedJobPolicy
        /// Streamed uploads up to this many bytes stay in memory; larger ones are spooled to a file.
        public var spoolThreshold: Int
        /// Where spool files are made (`mkstemp`, mode 0600, unlinked when the call ends).
        public var spoolDirectory: String
        /// Options every profile starts from (strip mode, quality, limits); the profile sets the caps and
        /// the byte limit through `ServiceProfile.options(basedOn:)`.
        public var baseOptions: PrepareOptions
        /// Calls that may wait for memory at once; one more is refused at once with
        /// `SharePipeError.overloaded` (`MemoryBudget.maxWaitingRequests`). Default: no bound.
        public var maxWaitingRequests: Int
        /// How long a call may wait for memory before it is refused with `SharePipeError.overloaded`
        /// (`MemoryBudget.maxWait`); nil: as long as it takes (the default).
        public var maxWait: Duration?
        /// How long one profile's job may run once admitted (its wait for memory not counted): past it the job
        /// stops at its next checkpoint with `SharePipeError.timedOut`, its reservation released and its spool
        /// file removed. nil: the profile's `PrepareOptions.timeout`, if any (the default).
        public var jobTimeout: Duration?

        /// - Parameters:
        ///   - memoryBudget: bytes the pipeline may hold at once.
        ///   - maxConcurrentJobs: jobs at once (nil: the number of active cores).
        ///   - oversizedJobs: `.runAlone` (default) or `.refuse` for inputs larger than the budget.
        ///   - spoolThreshold: uploads above this many bytes go to a spool file (default 1 MiB).
        ///   - spoolDirectory: where spool files go (nil: `$TMPDIR`, else `/tmp`).
        ///   - baseOptions: options every profile starts from.
        ///   - maxWaitingRequests: calls that may wait for memory at once (default: no bound).
        ///   - maxWait: how long a call may wait for memory (nil: no limit).
        ///   - jobTimeout: how long one job may run once admitted (nil: the options' `timeout`).
        public init(
            memoryBudget: Int, maxConcurrentJobs: Int? = nil, oversizedJobs: OversizedJobPolicy = .runAlone,
            spoolThreshold: Int = 1 << 20, spoolDirectory: String? = nil,
            baseOptions: PrepareOptions = PrepareOptions(), maxWaitingRequests: Int = .max,
            maxWait: Duration? = nil, jobTimeout: Duration? = nil
        ) {
            self.memoryBudget = memoryBudget
            self.maxConcurrentJobs = maxConcurrentJobs ?? max(1, ProcessInfo.processInfo.activeProcessorCount)
            self.oversizedJobs = oversizedJobs
            self.spoolThreshold = spoolThreshold
            self.spoolDirectory =
                spoolDirectory ?? ProcessInfo.processInfo.environment["TMPDIR"].flatMap {
                    $0.isEmpty ? nil : $0
                } ?? "/tmp"
            self.baseOptions = baseOptions
            self.maxWaitingRequests = maxWaitingRequests
            self.maxWait = maxWait
            self.jobTimeout = jobTimeout
        }
    }

    /// The configuration the pipeline was made with.
    public let configuration: Configuration
    /// The admission queue; its `usage` shows what is reserved, running and waiting.
    public let budget: MemoryBudget
    /// Where the one line per job goes.
    public let logger: Logger
    /// Test instrumentation: called around every job and at every pipeline checkpoint (SharePipe's tests, and
    /// the server's through `@_spi(Testing) import`; nothing else sets it).
    @_spi(Testing) public var hooks = JobHooks()

    /// A pipeline with its own budget.
    ///
    /// - Throws: `SharePipeError.invalidOptions` when the configuration or its base options make no sense.
    public init(configuration: Configuration, logger: Logger = Logger(label: "SharePipe.SharePipeline")) throws {
        if configuration.memoryBudget < 1 {
            throw SharePipeError.invalidOptions(
                InvalidOption(
                    "memoryBudget", expected: "a positive number of bytes",
                    found: "\(configuration.memoryBudget)"))
        }
        if configuration.maxConcurrentJobs < 1 {
            throw SharePipeError.invalidOptions(
                InvalidOption(
                    "maxConcurrentJobs", expected: "at least 1",
                    found: "\(configuration.maxConcurrentJobs)"))
        }
        if configuration.maxWaitingRequests < 0 {
            throw SharePipeError.invalidOptions(
                InvalidOption(
                    "maxWaitingRequests", expected: "0 or more requests",
                    found: "\(configuration.maxWaitingRequests)"))
        }
        if let maxWait = configuration.maxWait, maxWait <= .zero {
            throw SharePipeError.invalidOptions(
                InvalidOption("maxWait", expected: "a positive duration", found: "\(maxWait)"))
        }
        if configuration.spoolThreshold < 0 {
            throw SharePipeError.invalidOptions(
                InvalidOption(
                    "spoolThreshold", expected: "0 or more bytes",
                    found: "\(configuration.spoolThreshold)"))
        }
        // Each profile's options are checked again when a call plans it (a profile overrides most of them);
        // this reports base options that no profile could mend when the pipeline is made.
        _ = try configuration.baseOptions.checked()
        self.configuration = configuration
        self.budget = MemoryBudget(
            capacity: configuration.memoryBudget, maxConcurrentJobs: configuration.maxConcurrentJobs,
            oversizedJobs: configuration.oversizedJobs,
            maxWaitingRequests: configuration.maxWaitingRequests, maxWait: configuration.maxWait)
        self.logger = logger
    }

    // MARK: - Entry points

    /// Prepares a file or in-memory image for each profile, within the memory budget.
    ///
    /// - Parameters:
    ///   - source: `.file(path:)` (or `.url(_:)`), read through small buffers; or `.bytes(_:)`, whose size is
    ///     counted in the budget while the call runs.
    ///   - name: the input's name in logs and errors (default: the path, or "<memory>").
    ///   - profiles: the services to prepare for; one result each, in the same order.
    ///   - adjust: changes each profile's options before they are checked (a request's own byte limit or
    ///     quality, say); an option it makes invalid is `invalidOptions`, before the input is read.
    /// - Returns: one `ServiceResult` per profile; a profile that cannot be met (`cannotMeetLimit`) is a
    ///   failed result, not a thrown error.
    /// - Throws: `SharePipeError` for the input as a whole: `cancelled`, `unsupportedFormat`, `corrupt` or
    ///   `tooLarge` header, `unreadable`, `invalidOptions`, `tooLarge` against the budget under `.refuse`, or
    ///   `overloaded` when the queue is full or the wait for memory timed out.
    public func prepare(
        _ source: ImageSource, named name: String? = nil, for profiles: [ServiceProfile],
        adjusting adjust: OptionsAdjustment? = nil
    ) async throws -> [ServiceResult] {
        let start = ContinuousClock.now
        let name = name ?? source.displayName
        let plans = try plan(
            source, named: name, residence: InputResidence(of: source), profiles: profiles, adjust: adjust)
        let reservation = try await admit(plans, named: name)
        return try await run(source, named: name, plans: plans, holding: reservation, since: start)
    }

    /// Prepares a streamed upload (an HTTP request body, say) for each profile, within the memory budget.
    ///
    /// The body is received into memory up to `spoolThreshold` bytes; past that it is written to a spool
    /// file (`mkstemp` in `spoolDirectory`), so memory stays bounded whatever the upload's size. Receiving
    /// reserves `MemoryEstimate.receiving(spoolThreshold:)` bytes from the budget (without a job slot). A
    /// small upload that would have to wait for memory once it has arrived is spooled too, so nothing waits
    /// in line holding memory the budget does not count. The spool file is removed when the call ends,
    /// however it ends.
    ///
    /// - Parameters:
    ///   - chunks: the body, as an async sequence of byte chunks (`[UInt8]`, `ArraySlice<UInt8>`, …).
    ///   - name: the upload's name in logs and errors.
    ///   - profiles: the services to prepare for.
    ///   - adjust: changes each profile's options before they are checked, as in `prepare(_:named:for:adjusting:)`.
    /// - Throws: as `prepare(_:named:for:adjusting:)`; also `tooLarge` past `baseOptions.limits.maxInputBytes` and
    ///   `unreadable` when the sequence throws.
    public func prepare<Chunks: AsyncSequence>(
        upload chunks: Chunks, named name: String = "<upload>",
        for profiles: [ServiceProfile],
        adjusting adjust: OptionsAdjustment? = nil
    ) async throws -> [ServiceResult]
    where Chunks.Element: Sequence, Chunks.Element.Element == UInt8 {
        let start = ContinuousClock.now
        let receiver = UploadReceiver(
            threshold: configuration.spoolThreshold, directory: configuration.spoolDirectory,
            maxBytes: configuration.baseOptions.limits.maxInputBytes, name: name)
        let receiving: MemoryBudget.Reservation
        var received: ReceivedUpload
        do {
            receiving = try await reserve(
                MemoryEstimate.receiving(spoolThreshold: configuration.spoolThreshold),
                holdingJobSlot: false, name: name)
            do {
                received = try await receiver.receive(chunks)
            } catch {
                await budget.release(receiving)
                throw error
            }
        } catch {
            throw failed(error, named: name, profiles: profiles, plans: nil)
        }

        switch received {
        case .spooled(let file):
            defer { file.remove() }
            await budget.release(receiving)
            let source = ImageSource.file(path: file.path)
            let plans = try plan(
                source, named: name, residence: .file, profiles: profiles, adjust: adjust,
                spoolPath: file.path)
            let reservation = try await admit(plans, named: name)
            return try await run(
                source, named: name, plans: plans, holding: reservation, since: start,
                spoolPath: file.path)

        case .memory(var bytes):
            received = .memory([])  // `bytes` is now the only reference to the upload
            let plans: [JobPlan]
            do {
                plans = try plan(.bytes(bytes), named: name, residence: .memory, profiles: profiles, adjust: adjust)
            } catch {
                await budget.release(receiving)
                throw error  // logged by `plan`
            }
            do {
                try refuseIfOversized(plans, named: name)
            } catch {
                await budget.release(receiving)
                throw failed(error, named: name, profiles: profiles, plans: plans)
            }
            if let granted = await budget.exchange(receiving, for: Self.need(plans)) {
                return try await run(.bytes(bytes), named: name, plans: plans, holding: granted, since: start)
            }
            // It would have to wait: wait on disk, not in memory.
            let file: SpoolFile
            do {
                file = try UploadReceiver.spool(bytes, in: configuration.spoolDirectory)
            } catch {
                await budget.release(receiving)
                throw failed(error, named: name, profiles: profiles, plans: plans)
            }
            defer { file.remove() }
            bytes = []
            await budget.release(receiving)
            let onDisk = plans.map { $0.repriced(input: .file) }
            let reservation = try await admit(onDisk, named: name)
            return try await run(
                .file(path: file.path), named: name, plans: onDisk, holding: reservation,
                since: start, spoolPath: file.path)
        }
    }

    // MARK: - The work

    /// Probes the header (no pixels) once and plans every profile's job once: the plan its reservation prices is
    /// the plan it runs. Logs and throws input-level failures; a job its own options refuse (its input-byte
    /// limit, or other limits its probe fails) is that profile's failed result.
    private func plan(
        _ source: ImageSource, named name: String, residence: InputResidence, profiles: [ServiceProfile],
        adjust: OptionsAdjustment?, spoolPath: String? = nil
    ) throws -> [JobPlan] {
        do {
            if profiles.isEmpty {
                throw SharePipeError.invalidOptions(
                    InvalidOption("profiles", expected: "at least one profile", found: "none"))
            }
            if Task.isCancelled { throw SharePipeError.cancelled(file: name) }
            // The options first: invalid ones are reported before the input is read.
            let options = try profiles.map { profile throws(SharePipeError) in
                var options = profile.options(basedOn: configuration.baseOptions)
                try adjust?(&options)
                return try options.checked()
            }
            let limits = configuration.baseOptions.limits
            let info = try SharePipe.inspect(source, limits: limits)
            return zip(profiles, options).map { profile, options in
                JobPlan(
                    profile: profile,
                    job: Result { try Pipeline.plan(source, options: options, probed: (info, limits)) },
                    base: Pipeline.plan(source, info: info, options: options), residence: residence)
            }
        } catch {
            throw failed(error, named: name, profiles: profiles, plans: nil, spoolPath: spoolPath ?? source.displayName)
        }
    }

    /// Waits in line for the upload's memory: the largest profile's estimate (each counts the input once).
    private func admit(_ plans: [JobPlan], named name: String) async throws -> MemoryBudget.Reservation {
        do {
            try refuseIfOversized(plans, named: name)
            return try await reserve(Self.need(plans), holdingJobSlot: true, name: name)
        } catch {
            throw failed(error, named: name, profiles: plans.map(\.profile), plans: plans)
        }
    }

    /// Under `.refuse`, an input larger than the whole budget is `tooLarge`.
    private func refuseIfOversized(_ plans: [JobPlan], named name: String) throws {
        let need = Self.need(plans)
        guard need > configuration.memoryBudget, configuration.oversizedJobs == .refuse, let info = plans.first?.info
        else { return }
        throw SharePipeError.tooLarge(
            file: name,
            exceeded: ExceededLimit(
                .memoryBudget, found: need,
                limit: configuration.memoryBudget, size: info.size))
    }

    private static func need(_ plans: [JobPlan]) -> Int { plans.map(\.estimate.totalBytes).max() ?? 0 }

    /// Runs the admitted jobs one after another inside `reservation`, then releases it. Throws only when
    /// cancelled; every other failure is that profile's result. A job whose render is the same picture as an
    /// earlier one's takes that job's auto search and lossless encodes (`PictureMemo`).
    private func run(
        _ source: ImageSource, named name: String, plans: [JobPlan], holding reservation: MemoryBudget.Reservation,
        since start: ContinuousClock.Instant, spoolPath: String? = nil
    ) async throws -> [ServiceResult] {
        let waited = ContinuousClock.now - start
        var results: [ServiceResult] = []
        let memo = plans.count > 1 ? PictureMemo() : nil
        for plan in plans {
            await hooks.willRun?(name)
            let began = ContinuousClock.now
            let outcome: Result<PreparedImage, SharePipeError>
            do {
                outcome = .success(
                    try await runBlocking(source, job: plan.job.get(), name: name, memo: memo))
            } catch {
                outcome = .failure(Self.sharePipeError(error, renaming: spoolPath ?? source.displayName, to: name))
            }
            let ran = ContinuousClock.now - began
            await hooks.didRun?(name)
            log(name: name, profile: plan.profile, plan: plan, outcome: outcome, waited: waited, ran: ran)
            if case .failure(.cancelled) = outcome {
                await budget.release(reservation)
                throw SharePipeError.cancelled(file: name)
            }
            results.append(
                ServiceResult(
                    profile: plan.profile, outcome: outcome, estimate: plan.estimate,
                    waitDuration: waited, runDuration: ran))
        }
        await budget.release(reservation)
        return results
    }

    /// Logs one failed line per profile and returns the error as a `SharePipeError` naming the input.
    private func failed(
        _ error: any Error, named name: String, profiles: [ServiceProfile], plans: [JobPlan]?,
        spoolPath: String? = nil
    ) -> SharePipeError {
        let failure = Self.sharePipeError(error, renaming: spoolPath, to: name)
        for (index, profile) in profiles.enumerated() {
            log(name: name, profile: profile, plan: plans?[index], outcome: .failure(failure), waited: nil, ran: nil)
        }
        return failure
    }

    /// Runs the synchronous pipeline on a Dispatch thread; Task cancellation raises a flag that the
    /// pipeline's checkpoints (between steps, between fitting attempts and every few rows, tiles or frames
    /// inside a step) turn into `cancelled`.
    private func runBlocking(_ source: ImageSource, job: PlannedJob, name: String, memo: PictureMemo? = nil)
        async throws -> PreparedImage
    {
        let flag = CancellationFlag()
        let checkpointHook = hooks.checkpoint
        let deadline = configuration.jobTimeout.map { timeout in
            JobDeadline(
                seconds: Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PreparedImage, any Error>) in
                DispatchQueue.global(qos: .userInitiated).async {
                    continuation.resume(
                        with: Result {
                            if flag.isRaised { throw SharePipeError.cancelled(file: name) }
                            let checkpoint = {
                                try checkpointHook?()
                                if flag.isRaised { throw SharePipeError.cancelled(file: name) }
                                try deadline?.check(file: name)
                            }
                            return try Pipeline.prepare(source, job: job, checkpoint: checkpoint, memo: memo)
                        })
                }
            }
        } onCancel: {
            flag.raise()
        }
    }

    /// Waits for a reservation, turning a cancelled wait into `SharePipeError.cancelled`.
    private func reserve(_ bytes: Int, holdingJobSlot: Bool, name: String) async throws -> MemoryBudget.Reservation {
        do {
            return try await budget.reserve(bytes, holdingJobSlot: holdingJobSlot, for: name)
        } catch is CancellationError {
            throw SharePipeError.cancelled(file: name)
        }
    }

    // MARK: - Logging

    /// One line per job: what went in, what came out, how long, how much memory. Sizes, counts and kinds
    /// only: no pixels, no bytes, no metadata values (no GPS, no camera serials, no captions).
    private func log(
        name: String, profile: ServiceProfile, plan: JobPlan?, outcome: Result<PreparedImage, SharePipeError>,
        waited: Duration?, ran: Duration?
    ) {
        var metadata: Logger.Metadata = [
            "input": "\(name)",
            "profile": "\(profile.name)",
        ]
        if let plan {
            metadata["estimate_bytes"] = "\(plan.estimate.totalBytes)"
            metadata["estimate_pixel_bytes"] = "\(plan.estimate.meteredPixelBytes)"
        }
        if let waited { metadata["wait_ms"] = "\(Self.milliseconds(waited))" }
        if let ran { metadata["duration_ms"] = "\(Self.milliseconds(ran))" }
        switch outcome {
        case .success(let image):
            metadata["outcome"] = "prepared"
            metadata["input_format"] = "\(image.inputFormat.rawValue)"
            metadata["input_size"] = "\(image.inputSize.width)x\(image.inputSize.height)"
            metadata["input_bytes"] = "\(image.inputByteCount)"
            metadata["output_format"] = "\(image.format.rawValue)"
            metadata["output_size"] = "\(image.size.width)x\(image.size.height)"
            metadata["output_bytes"] = "\(image.byteCount)"
            metadata["quality"] = "\(image.quality.map(String.init) ?? "-")"
            metadata["method"] = "\(image.method.rawValue)"
            metadata["attempts"] = "\(image.attempts.count)"
            metadata["peak_pixel_bytes"] = "\(image.peakPixelBytes)"
            metadata["removed_metadata"] = "\(image.removedMetadata.sorted().map(\.rawValue).joined(separator: ","))"
            logger.info("job finished", metadata: metadata)
        case .failure(let error):
            metadata["outcome"] =
                error.kind == "cancelled" ? "cancelled" : error.kind == "overloaded" ? "refused" : "failed"
            metadata["error_kind"] = "\(error.kind)"
            metadata["error"] = "\(error)"
            if error.kind == "cancelled" {
                logger.notice("job cancelled", metadata: metadata)
            } else if error.kind == "overloaded" {
                logger.notice("job refused", metadata: metadata)
            } else {
                logger.warning("job failed", metadata: metadata)
            }
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }

    /// Any error as a `SharePipeError`, with a spool file's path replaced by the upload's name.
    /// An error that is not a `SharePipeError` is SharePipe's bug (`internalError`), never the upload's fault.
    static func sharePipeError(_ error: any Error, renaming path: String?, to name: String) -> SharePipeError {
        let error = SharePipeError.from(error, file: name)
        guard let path, path != name else { return error }
        return error.renamingFile(path, to: name)
    }
}

extension SharePipeline {
    /// Changes a profile's options for one call (`prepare(…, adjusting:)`): applied after
    /// `ServiceProfile.options(basedOn:)`, before the options are checked. It may throw `invalidOptions`
    /// (options given as text that do not parse: `PrepareOptions.applying(textValues:)`).
    public typealias OptionsAdjustment = @Sendable (inout PrepareOptions) throws(SharePipeError) -> Void
}

/// One profile's prepared image (or why there is none), with what it was planned to need.
public struct ServiceResult: Sendable {
    /// The service the image was prepared for.
    public var profile: ServiceProfile
    /// The prepared image, or the reason this profile could not be met (`cannotMeetLimit`, `corrupt`, …).
    public var outcome: Result<PreparedImage, SharePipeError>
    /// The memory planned for this job before it ran.
    public var estimate: MemoryEstimate
    /// Time from the call until its memory was granted (receiving included, for uploads).
    public var waitDuration: Duration
    /// Time the job itself ran.
    public var runDuration: Duration

    /// The prepared image, or the profile's error thrown.
    public func get() throws -> PreparedImage { try outcome.get() }
}

/// One profile's job, planned once before it runs: the plan its reservation prices is the plan it runs.
struct JobPlan: Sendable {
    var profile: ServiceProfile
    /// The job to run, or why it cannot start (its own options refuse the input).
    var job: Result<PlannedJob, any Error>
    /// `job`'s plan, or for a refused job the plan from the call's shared probe (what it was priced at).
    var priced: PlannedJob
    var estimate: MemoryEstimate

    /// `job`, priced with its input in memory or in a file; `base`, the plan from the shared probe, prices a
    /// refused job.
    init(
        profile: ServiceProfile, job: Result<PlannedJob, any Error>, base: @autoclosure () -> PlannedJob,
        residence: InputResidence
    ) {
        self.profile = profile
        self.job = job
        priced = (try? job.get()) ?? base()
        estimate = priced.estimate(input: residence)
    }

    /// The probe the job was planned from.
    var info: ImageInfo { priced.info }

    /// The same plan priced with its input somewhere else (an upload moved from memory to a spool file).
    func repriced(input: InputResidence) -> JobPlan {
        var plan = self
        plan.estimate = priced.estimate(input: input)
        return plan
    }
}

/// Callbacks the tests use to watch jobs run (a counter of concurrent jobs, a cancellation at a set point, a
/// bug planted in a job). Test support, not API: `@_spi(Testing)`.
@_spi(Testing) public struct JobHooks: Sendable {
    /// Called after admission, before each profile's job starts.
    public var willRun: (@Sendable (String) async -> Void)?
    /// Called after each profile's job ends, however it ended.
    public var didRun: (@Sendable (String) async -> Void)?
    /// Called on the job's thread at every pipeline checkpoint (row checkpoints included), before the
    /// cancellation check; what it throws ends the job as the pipeline's own errors do.
    public var checkpoint: (@Sendable () throws -> Void)?

    /// No hooks.
    public init() {}
}

/// A flag raised from a Task cancellation handler and read on a Dispatch thread.
final class CancellationFlag: @unchecked Sendable {
    private let raised = Locked(false)
    var isRaised: Bool { raised.withLock { $0 } }
    func raise() { raised.withLock { $0 = true } }
}
