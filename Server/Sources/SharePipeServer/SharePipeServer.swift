#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle
@_spi(Testing) import SharePipe

/// The request context: Hummingbird's, plus the connection, so a handler can stop reading a body it refused.
public struct ServerRequestContext: RequestContext, Sendable {
    public var coreContext: CoreRequestContextStorage
    /// The client's connection.
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        channel = source.channel
    }
}

/// `sharepipe-server`: SharePipe over HTTP, for posting services written in any language.
///
/// Every upload's memory is priced from its header and reserved from one budget before it is decoded;
/// requests wait in a bounded queue, and past it (or past its timeout) are answered 503 with `Retry-After`.
/// Routes, statuses and headers: `Server/openapi.json`, served at `GET /v1/openapi.json`.
public final class SharePipeServer: Sendable {
    /// The settings the server was made with.
    public let configuration: ServerConfiguration
    /// SharePipe's admission queue and jobs.
    public let pipeline: SharePipeline
    /// The services `?service=` may name.
    public let catalog: ProfileCatalog
    /// The counters of `GET /metrics`.
    public let metrics = ServerMetrics()
    /// The server's own spool folder.
    public let spool: SpoolFolder
    /// The server's logger (JSON lines in the executable).
    public let logger: Logger
    private let draining = NIOLockedValueBox(false)
    /// `/v1/prepare` requests whose answer is not yet written to the connection.
    private let answersInFlight = NIOLockedValueBox(0)
    private let sandboxReport = NIOLockedValueBox<ProcessSandbox.Report?>(nil)

    /// The process sandbox's layers once `run(confining: true)` has entered it; nil before, or without it.
    public var sandbox: ProcessSandbox.Report? { sandboxReport.withLockedValue { $0 } }

    /// The id of the request being handled, for SharePipe's log lines (through `requestMetadata`).
    @TaskLocal static var requestID: String?

    /// Adds `request_id` to every log line written while a request is handled.
    public static let requestMetadata = Logger.MetadataProvider {
        requestID.map { ["request_id": .string($0)] } ?? [:]
    }

    /// Makes the spool folder, loads the profiles and the pipeline.
    ///
    /// - Throws: `ServerConfiguration.UsageError` for a profiles file that cannot be read or a spool folder
    ///   that cannot be made (the message names it).
    public convenience init(configuration: ServerConfiguration, logger: Logger) throws {
        try self.init(configuration: configuration, logger: logger, jobHooks: JobHooks())
    }

    /// The tests' form: `jobHooks` are called around and inside every job (SharePipe's test instrumentation,
    /// which the release server has too, unset).
    @_spi(Testing) public init(configuration: ServerConfiguration, logger: Logger, jobHooks: JobHooks) throws {
        self.configuration = configuration
        self.logger = logger
        do {
            catalog = try ProfileCatalog.load(userFile: configuration.profilesFile)
        } catch {
            throw ServerConfiguration.UsageError(
                "\(configuration.profilesFile.map { "--profiles \($0)" } ?? "profiles"): \(error)")
        }
        do {
            spool = try SpoolFolder.make(in: configuration.spoolParent)
        } catch {
            throw ServerConfiguration.UsageError("--spool-dir: \(error)")
        }
        var base = PrepareOptions()
        base.limits.maxInputBytes = configuration.maxBodyBytes
        base.limits.disabledFormats = configuration.disabledFormats
        let pipelineConfiguration = SharePipeline.Configuration(
            memoryBudget: configuration.budgetBytes, maxConcurrentJobs: configuration.maxJobs,
            spoolDirectory: spool.path, baseOptions: base,
            maxWaitingRequests: configuration.queueLength, maxWait: configuration.queueTimeout,
            jobTimeout: configuration.jobTimeout)
        var pipelineLogger = logger
        pipelineLogger.handler.metadataProvider = .multiplex(
            [logger.metadataProvider, Self.requestMetadata].compactMap { $0 })
        do {
            var pipeline = try SharePipeline(configuration: pipelineConfiguration, logger: pipelineLogger)
            pipeline.hooks = jobHooks
            self.pipeline = pipeline
        } catch {
            spool.remove()
            throw ServerConfiguration.UsageError("\(error)")
        }
    }

    /// Whether the server is shutting down (`/readyz` answers 503, new uploads too).
    public var isDraining: Bool { draining.withLockedValue { $0 } }

    /// Marks the server as shutting down.
    public func startDraining() {
        let first = draining.withLockedValue { value in
            defer { value = true }
            return !value
        }
        if first {
            logger.info("draining", metadata: ["grace_seconds": .stringConvertible(Self.seconds(configuration.grace))])
        }
    }

    /// Counts an upload whose answer is on its way, until the ticket's `finish()` (once its answer has been
    /// written, or its client is known to be gone).
    func answerStarted() -> AnswerTicket {
        answersInFlight.withLockedValue { $0 += 1 }
        return AnswerTicket { [answersInFlight] in answersInFlight.withLockedValue { $0 -= 1 } }
    }

    /// Waits until every upload's answer has been written, or `deadline` passes. The drain waits here before
    /// Hummingbird's own graceful shutdown, which closes a connection as soon as its response is handed over
    /// and so cut large answers short.
    func waitForAnswers(until deadline: ContinuousClock.Instant) async {
        while answersInFlight.withLockedValue({ $0 }) > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Confines the process for good (`ProcessSandbox`), once it listens: the libraries SharePipe loads on
    /// first use opened first, then no new privileges, the seccomp filter (no program, process, socket, bind,
    /// listen or connect; accepting on the listener stays) and Landlock: the spool folder read-write (and its
    /// parent only to remove it at exit), the system's libraries and data and `/proc` read-only
    /// (`ProcessSandbox.Rules.system()`), nothing else; no TCP bind or connect.
    ///
    /// - Throws: `ProcessSandbox.Failure` when a layer the kernel has could not be applied.
    func confine() throws(ProcessSandbox.Failure) -> ProcessSandbox.Report {
        if let missing = ProcessSandbox.loadLibraries() {
            logger.notice(
                "a library could not be loaded: its formats are not available", metadata: ["reason": "\(missing)"])
        }
        var rules = ProcessSandbox.Rules.system()
        rules.allow(spool.path, .write)
        rules.allow(configuration.spoolParent, .removeFolders)
        let report = try ProcessSandbox.enter(rules)
        sandboxReport.withLockedValue { $0 = report }
        return report
    }

    /// The Hummingbird application; `onServerRunning` gets the listening channel (its port when `port` is 0).
    /// `confining`: enter the process sandbox once listening, before the `listening` line (the executable's
    /// way; a server inside another program, as the tests run it, leaves that program unconfined).
    public func application(
        confining: Bool = false, onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
    )
        -> some ApplicationProtocol
    {
        Application(
            responder: ServerResponder(server: self),
            // Requests the HTTP parser refuses get the JSON error too (Hummingbird's own answer has no body).
            server: .http1(
                configuration: HTTP1Channel.Configuration(
                    additionalChannelHandlers: [MalformedRequestAnswer(server: self)])),
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port),
                serverName: "sharepipe-server"),
            onServerRunning: { [logger, configuration] channel in
                var sandbox = "off"
                if confining {
                    do throws(ProcessSandbox.Failure) {
                        sandbox = try self.confine().summary
                    } catch {
                        logger.critical(
                            "the process sandbox could not be entered (--no-sandbox runs without it)",
                            metadata: ["error": "\(error.description)", "sandbox": "\(error.report.summary)"])
                        self.spool.remove()
                        exit(1)
                    }
                }
                logger.info(
                    "listening",
                    metadata: [
                        "host": .string(configuration.host),
                        "port": .stringConvertible(channel.localAddress?.port ?? configuration.port),
                        "budget_bytes": .stringConvertible(configuration.budgetBytes),
                        "max_jobs": .stringConvertible(configuration.maxJobs),
                        "queue": .stringConvertible(configuration.queueLength),
                        "spool": .string(self.spool.path),
                        "sandbox": .string(sandbox),
                    ])
                await onServerRunning(channel)
            },
            logger: logger)
    }

    /// Serves until SIGTERM or SIGINT, then drains: stops accepting, lets jobs in flight finish within
    /// `grace` (then cancels them), removes the spool folder. Returns normally after a signal. `confining`:
    /// enter the process sandbox once listening (`confine()`; the executable passes `--sandbox`).
    public func run(
        confining: Bool = false, onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
    ) async throws {
        defer {
            spool.remove()
            logger.info("stopped")
        }
        var groupConfiguration = ServiceGroupConfiguration(
            services: [
                .init(service: application(confining: confining, onServerRunning: onServerRunning)),
                .init(service: DrainWatcher(server: self), successTerminationBehavior: .ignore),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = configuration.grace
        let group = ServiceGroup(configuration: groupConfiguration)
        do {
            try await group.run()
        } catch  where isDraining {
            logger.notice("jobs still running after the grace period were cancelled", metadata: ["error": "\(error)"])
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// One upload's place among the answers in flight (`SharePipeServer.answerStarted()`): `finish()` gives it
/// back, the first time only.
final class AnswerTicket: Sendable {
    private let finished = NIOLockedValueBox(false)
    private let release: @Sendable () -> Void

    init(release: @escaping @Sendable () -> Void) { self.release = release }

    func finish() {
        let first = finished.withLockedValue { done in
            defer { done = true }
            return !done
        }
        if first { release() }
    }
}

/// Sets the server draining when a graceful shutdown begins, then waits until the uploads in flight have
/// written their answers (at most the grace period less a second). Listed after the application, so the
/// service group signals it first and signals the application only once it has returned: `/readyz` and new
/// uploads say 503 while the listener is still open, and no answer is cut short by the listener's shutdown.
struct DrainWatcher: Service {
    let server: SharePipeServer

    func run() async throws {
        try? await gracefulShutdown()
        let deadline = ContinuousClock.now + server.configuration.grace - .seconds(1)
        server.startDraining()
        await server.waitForAnswers(until: deadline)
    }
}
