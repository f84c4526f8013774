import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
@_spi(Testing) import SharePipe
@_spi(Testing) import SharePipeServer

/// A live server in the test process, on 127.0.0.1 with an ephemeral port and its own spool folder.
enum ServerHarness {
    /// The repository's test images (…/Server/Tests/SharePipeServerTests/ → four levels up).
    static let repository: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.path
    }()

    static func image(_ relative: String) throws -> [UInt8] {
        try [UInt8](Data(contentsOf: URL(fileURLWithPath: repository + "/TestImages/" + relative)))
    }

    /// A configuration for tests: port 0, a spool folder under a fresh temporary folder.
    static func configuration(_ adjust: (inout ServerConfiguration) -> Void = { _ in }) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.spoolParent = NSTemporaryDirectory()
        configuration.maxJobs = 2
        adjust(&configuration)
        return configuration
    }

    /// Starts a server, runs `body` with it and its port, then shuts it down gracefully and removes its
    /// spool folder. `jobHooks` are called around and inside every job, as in SharePipe's own tests.
    static func withServer<T: Sendable>(
        _ configuration: ServerConfiguration = configuration(), logs: LogLines? = nil, jobHooks: JobHooks = JobHooks(),
        _ body: @escaping @Sendable (SharePipeServer, Int) async throws -> T
    ) async throws -> T {
        let logger = Logger(label: "sharepipe-server-test") { _ in
            JSONLogHandler(level: .debug, metadataProvider: nil, write: { line in logs?.append(line) })
        }
        let server = try SharePipeServer(configuration: configuration, logger: logger, jobHooks: jobHooks)
        defer { server.spool.remove() }
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let app = server.application { channel in
            portSink.yield(channel.localAddress?.port ?? -1)
            portSink.finish()
        }
        let services = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await services.run() }
            do {
                var iterator = ports.makeAsyncIterator()
                guard let port = await iterator.next(), port > 0 else {
                    throw LoopbackHTTP.Failure("the server did not start")
                }
                let value = try await body(server, port)
                await services.triggerGracefulShutdown()
                try await group.waitForAll()
                return value
            } catch {
                await services.triggerGracefulShutdown()
                throw error
            }
        }
    }

    /// Polls `condition` until it holds or 60 s pass.
    static func eventually(_ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return try await condition()
    }

    /// The samples of a Prometheus text page: "name{labels}" → value. Throws for a line that is not a
    /// comment or a sample.
    static func parseMetrics(_ text: String) throws -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") { continue }
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                throw LoopbackHTTP.Failure("not a sample: \(line)")
            }
            let key = String(line[..<space])
            let name = key.prefix { $0 != "{" }
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" }) else {
                throw LoopbackHTTP.Failure("bad metric name in \(line)")
            }
            samples[key] = value
        }
        return samples
    }

    static func metrics(port: Int, headers: [(String, String)] = []) async throws -> [String: Double] {
        let response = try await LoopbackHTTP.request(port: port, path: "/metrics", headers: headers)
        guard response.status == 200 else { throw LoopbackHTTP.Failure("/metrics answered \(response.status)") }
        return try parseMetrics(response.text)
    }
}

/// Log lines written by a test server, kept in order.
final class LogLines: Sendable {
    private let lines = NIOLockedValueBox<[String]>([])
    func append(_ line: String) { lines.withLockedValue { $0.append(line) } }
    var all: [String] { lines.withLockedValue { $0 } }
    /// Every line as a JSON object (a line that is not one fails the test that reads it).
    var objects: [[String: Any]] {
        all.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }
}
