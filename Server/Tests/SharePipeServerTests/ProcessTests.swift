import Foundation
import SharePipe
import SharePipeServer
import Testing

/// The settings, the log lines, and the `sharepipe-server` executable itself: listening line, SIGTERM drain.
@Suite struct ProcessTests {
    @Test func flagsWinOverTheEnvironmentWhichWinsOverTheDefaults() throws {
        let defaults = try ServerConfiguration(arguments: [], environment: [:])
        #expect(defaults.host == "127.0.0.1" && defaults.port == 8080 && defaults.budgetBytes == 256 << 20)
        #expect(
            defaults.queueLength == 32 && defaults.queueTimeout == .seconds(30) && defaults.maxBodyBytes == 104_857_600)
        #expect(defaults.readTimeout == .seconds(60) && defaults.grace == .seconds(25) && defaults.token == nil)
        #expect(defaults.maxJobs == max(1, ProcessInfo.processInfo.activeProcessorCount))
        #expect(defaults.jobTimeout == .seconds(30))
        let jobTimeout = try ServerConfiguration(
            arguments: ["--job-timeout", "2.5"], environment: ["SHAREPIPE_SERVER_JOB_TIMEOUT": "9"])
        #expect(jobTimeout.jobTimeout == .milliseconds(2500))
        #expect(
            try ServerConfiguration(arguments: [], environment: ["SHAREPIPE_SERVER_JOB_TIMEOUT": "9"]).jobTimeout
                == .seconds(9))
        let environment = [
            "SHAREPIPE_SERVER_HOST": "0.0.0.0", "SHAREPIPE_SERVER_PORT": "9000", "SHAREPIPE_SERVER_BUDGET_MIB": "128",
            "SHAREPIPE_SERVER_MAX_JOBS": "3", "SHAREPIPE_SERVER_QUEUE": "5", "SHAREPIPE_SERVER_QUEUE_TIMEOUT": "1.5",
            "SHAREPIPE_SERVER_MAX_BODY_BYTES": "1000", "SHAREPIPE_SERVER_READ_TIMEOUT": "7",
            "SHAREPIPE_SERVER_GRACE": "2", "SHAREPIPE_SERVER_SPOOL_DIR": "/var/tmp", "SHAREPIPE_SERVER_TOKEN": "t",
            "SHAREPIPE_PROFILES": "/etc/p.json", "SHAREPIPE_SERVER_LOG_LEVEL": "debug",
        ]
        let fromEnvironment = try ServerConfiguration(arguments: [], environment: environment)
        #expect(
            fromEnvironment.host == "0.0.0.0" && fromEnvironment.port == 9000
                && fromEnvironment.budgetBytes == 128 << 20)
        #expect(
            fromEnvironment.maxJobs == 3 && fromEnvironment.queueLength == 5
                && fromEnvironment.queueTimeout == .milliseconds(1500))
        #expect(
            fromEnvironment.maxBodyBytes == 1000 && fromEnvironment.readTimeout == .seconds(7)
                && fromEnvironment.grace == .seconds(2))
        #expect(
            fromEnvironment.spoolParent == "/var/tmp" && fromEnvironment.token == "t"
                && fromEnvironment.profilesFile == "/etc/p.json")
        #expect(fromEnvironment.logLevel == .debug)
        let fromFlags = try ServerConfiguration(
            arguments: ["--port", "0", "--budget-mib=64", "--queue", "0", "--host", "::1"],
            environment: environment)
        #expect(
            fromFlags.port == 0 && fromFlags.budgetBytes == 64 << 20 && fromFlags.queueLength == 0
                && fromFlags.host == "::1")
        #expect(fromFlags.maxJobs == 3, "a variable no flag overrides still applies")
    }

    @Test func aBadFlagOrValueNamesIt() {
        let cases: [([String], [String: String], String)] = [
            (["--port", "70000"], [:], "--port"),
            ([], ["SHAREPIPE_SERVER_PORT": "http"], "SHAREPIPE_SERVER_PORT"),
            (["--budget-mib", "0"], [:], "--budget-mib"),
            (["--queue-timeout", "-1"], [:], "--queue-timeout"),
            (["--read-timeout", "soon"], [:], "--read-timeout"),
            (["--log-level", "loud"], [:], "--log-level"),
            (["--grace"], [:], "--grace"),
            (["--verbose"], [:], "--verbose"),
            (["8080"], [:], "8080"),
        ]
        for (arguments, environment, named) in cases {
            do {
                _ = try ServerConfiguration(arguments: arguments, environment: environment)
                Issue.record("\(arguments) \(environment) was accepted")
            } catch {
                #expect(error.description.contains(named), "\(error.description)")
            }
        }
    }

    @Test func helpListsEveryFlagItsVariableAndDefault() {
        let usage = ServerConfiguration.usage
        for setting in ServerConfiguration.settings {
            #expect(
                usage.contains(setting.flag) && usage.contains(setting.variable)
                    && usage.contains("default \(setting.defaultText)"),
                "\(setting.flag)")
        }
        #expect(ServerConfiguration.settings.count == 16)
    }

    @Test func logLinesAreJSONAndEveryLineAboutARequestCarriesItsID() async throws {
        let logs = LogLines()
        let photo = try ServerHarness.image("jpeg/orient-1.jpg")
        try await ServerHarness.withServer(logs: logs) { _, port in
            _ = try await LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=x",
                headers: [("X-Request-Id", "first")], body: photo)
            _ = try await LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=x",
                headers: [("X-Request-Id", "second")], body: Array("not an image".utf8))
        }
        #expect(logs.objects.count == logs.all.count, "every line is a JSON object")
        for object in logs.objects {
            #expect(object["ts"] is String && object["level"] is String && object["message"] is String)
        }
        let listening = try #require(logs.objects.first { $0["message"] as? String == "listening" })
        #expect(listening["host"] as? String == "127.0.0.1" && (listening["port"] as? Int ?? 0) > 0)
        for id in ["first", "second"] {
            let lines = logs.objects.filter { $0["request_id"] as? String == id }
            #expect(lines.contains { $0["message"] as? String == "request" }, "\(id)")
            #expect(
                lines.contains { ($0["message"] as? String)?.hasPrefix("job ") == true }, "\(id): SharePipe's job line")
        }
        let failed = try #require(
            logs.objects.first { $0["request_id"] as? String == "second" && $0["message"] as? String == "request" })
        #expect(failed["status"] as? Int == 415 && failed["error_kind"] as? String == "unsupportedFormat")
    }

    /// The built executable beside the test bundle.
    static var executable: String {
        let bundle = URL(
            fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0])
        return bundle.deletingLastPathComponent().appendingPathComponent("sharepipe-server").path
    }

    @Test func theExecutableListensDrainsOnSIGTERMRemovesItsSpoolFolderAndExitsZero() async throws {
        let server = try await ServerProcess.start(
            ["--port", "0", "--grace", "20"], environment: ["SHAREPIPE_SERVER_BUDGET_MIB": "128"])
        defer { server.stop() }
        let (process, lines, port, parent) = (server.process, server.lines, server.port, server.spoolParent)
        #expect(port > 0)
        let spoolFolders = try FileManager.default.contentsOfDirectory(atPath: parent)
        #expect(spoolFolders.count == 1 && spoolFolders[0].hasPrefix("sharepipe-server-"), "\(spoolFolders)")
        #expect(try await LoopbackHTTP.request(port: port, path: "/readyz").status == 200)

        // An upload in flight when SIGTERM arrives is received, prepared and answered, not cut off. In flight
        // by construction: its body is held back (all but its last 64 KiB) until SIGTERM has been seen, and
        // while it is held the server reserves memory for receiving it. (This test used to wait for
        // `sharepipe_jobs_running` 1, sampled every 20 ms; in parallel runs the sample missed the job now and
        // then, though the job did run: a gauge sampled from a busy test process is no proof of anything.)
        let photo = try ServerHarness.image("jpeg/large-4000x3000.jpg")
        let socket = try await LoopbackHTTP.onThread {
            let socket = try LoopbackHTTP.Socket(port: port)
            try socket.send(
                Array("POST /v1/prepare?service=x HTTP/1.1\r\nHost: x\r\nContent-Length: \(photo.count)\r\n\r\n".utf8))
            try socket.send(Array(photo.dropLast(65536)))
            return socket
        }
        defer { socket.close() }
        #expect(
            await ServerHarness.eventually {
                ((try? await ServerHarness.metrics(port: port))?["sharepipe_budget_reserved_bytes"] ?? 0) > 0
            }, "the upload was not seen being received")
        kill(process.processIdentifier, SIGTERM)
        #expect(await lines.first { $0["message"] as? String == "draining" } != nil, "no draining line")
        #expect(try await LoopbackHTTP.request(port: port, path: "/readyz").status == 503)
        let answer = try await LoopbackHTTP.onThread {
            try socket.send(Array(photo.suffix(65536)))
            return try LoopbackHTTP.parse(socket.receiveAll())
        }
        #expect(
            answer.status == 200 && answer.headers["x-sharepipe-width"] == "1440",
            "\(answer.status) \(answer.text.prefix(300))")
        await LoopbackHTTP.waitUntilExit(process)  // not on a thread of the concurrency pool
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent).isEmpty, "the spool folder was removed")
        let messages = lines.all.compactMap { $0["message"] as? String }
        #expect(messages.contains("draining") && messages.contains("stopped"), "\(messages)")
    }

    /// An answer whose connection is gone before it is written (the client posted and reset the connection
    /// at once) must not keep the SIGTERM drain waiting for it until the grace period ends.
    @Test func clientsThatPostAndCloseAtOnceDoNotHoldTheDrainUntilTheGraceEnds() async throws {
        let server = try await ServerProcess.start(["--port", "0", "--grace", "20", "--max-body-bytes", "2000000"])
        defer { server.stop() }
        let (process, lines, port) = (server.process, server.lines, server.port)
        let photo = try ServerHarness.image("jpeg/orient-1.jpg")
        // Each posts a body over the limit (413 from its Content-Length, at once), or a small photo, and
        // resets the connection without reading: the answers have nowhere to go.
        try await LoopbackHTTP.onThread {
            for round in 0..<16 {
                let socket = try LoopbackHTTP.Socket(port: port)
                let body = round % 2 == 0 ? [UInt8](repeating: 0, count: 3_000_000) : photo
                // (A refused body may be cut off before it is all sent: that is the point, not a failure.)
                try? socket.send(
                    Array(
                        "POST /v1/prepare?service=x HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
                        + body)
                socket.reset()
            }
        }
        // The server has seen the connections go (nothing reserved or running).
        #expect(
            await ServerHarness.eventually {
                let metrics = try? await ServerHarness.metrics(port: port)
                return metrics?["sharepipe_budget_reserved_bytes"] == 0 && metrics?["sharepipe_jobs_running"] == 0
            })
        // And one upload in flight at SIGTERM whose client then resets: its answer (503, draining) has
        // nowhere to go either.
        let large = try ServerHarness.image("jpeg/large-4000x3000.jpg")
        let inFlight = try await LoopbackHTTP.onThread {
            let socket = try LoopbackHTTP.Socket(port: port)
            try socket.send(
                Array("POST /v1/prepare?service=x HTTP/1.1\r\nHost: x\r\nContent-Length: \(large.count)\r\n\r\n".utf8)
                    + large.dropLast(65536))
            return socket
        }
        #expect(
            await ServerHarness.eventually {
                ((try? await ServerHarness.metrics(port: port))?["sharepipe_budget_reserved_bytes"] ?? 0) > 0
            })
        kill(process.processIdentifier, SIGTERM)
        #expect(await lines.first { $0["message"] as? String == "draining" } != nil)
        let signalled = ContinuousClock.now
        inFlight.reset()
        await LoopbackHTTP.waitUntilExit(process)
        let took = ContinuousClock.now - signalled
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        // Waiting for an answer that can never be written would take the grace less a second (19 s).
        #expect(took < .seconds(5), "exit took \(took) after SIGTERM (grace 20 s)")
    }

    /// A server whose codec library is missing (the lazy loader pointed at files that do not exist, as an
    /// install without libheif or libavif has none) answers 501 with kind `unsupportedFormat` naming the
    /// library: the operator's to mend, not the client's (415 would tell the client to send another file).
    /// Formats whose libraries are there are still prepared.
    @Test func aServerLackingACodecLibraryAnswers501NamingIt() async throws {
        let server = try await ServerProcess.start(
            ["--port", "0"],
            environment: [
                "SHAREPIPE_LIBHEIF": "libsharepipe-missing.so.1", "SHAREPIPE_LIBAVIF": "libsharepipe-missing.so.15",
            ])
        defer { server.stop() }
        for (image, library) in [("heif/corners-444.heic", "libheif"), ("heif/corners.avif", "libavif")] {
            let answer = try await LoopbackHTTP.request(
                port: server.port, method: "POST", path: "/v1/prepare?service=x", body: ServerHarness.image(image))
            let error = answer.json["error"] as? [String: Any] ?? [:]
            #expect(answer.status == 501, "\(image): \(answer.status) \(answer.text)")
            #expect(error["status"] as? Int == 501 && error["kind"] as? String == "unsupportedFormat", "\(error)")
            #expect(
                (error["message"] as? String)?.contains("\(library) not available (libsharepipe-missing") == true,
                "\(error)")
        }
        let photo = try await LoopbackHTTP.request(
            port: server.port, method: "POST", path: "/v1/prepare?service=x",
            body: ServerHarness.image("jpeg/orient-1.jpg"))
        #expect(photo.status == 200 && photo.headers["content-type"] == "image/jpeg", "\(photo.status)")
        let metrics = try await ServerHarness.metrics(port: server.port)
        #expect(metrics["sharepipe_requests_total{route=\"/v1/prepare\",status=\"501\",service=\"x\"}"] == 2)
    }

    @Test func theExecutableRefusesABadFlagWithStatus2AndPrintsHelp() throws {
        for (arguments, status) in [(["--port", "x"], Int32(2)), (["--help"], Int32(0))] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.executable)
            process.arguments = arguments
            let output = Pipe(), error = Pipe()
            process.standardOutput = output
            process.standardError = error
            try process.run()
            let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let complained = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == status, "\(arguments)")
            if status == 2 {
                #expect(complained.contains("--port"))
            } else {
                #expect(printed.contains("SHAREPIPE_SERVER_QUEUE_TIMEOUT"))
            }
        }
    }
}

/// A `sharepipe-server` child process with a spool folder of its own (removed by `stop`), its log lines read
/// as they come, started and listening.
struct ServerProcess {
    let process: Process
    let lines: StderrLines
    let port: Int
    /// The folder the server makes its spool folder in.
    let spoolParent: String

    /// Starts the executable with `arguments` (which should ask for `--port 0`) and `environment` added to
    /// its spool folder and a plain `PATH`; returns once it logs that it listens.
    static func start(_ arguments: [String], environment: [String: String] = [:]) async throws -> ServerProcess {
        let parent = NSTemporaryDirectory() + "sharepipe-server-process-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ProcessTests.executable)
        process.arguments = arguments
        process.environment = environment.merging(
            ["SHAREPIPE_SERVER_SPOOL_DIR": parent, "PATH": "/usr/bin:/bin"], uniquingKeysWith: { $1 })
        let errorPipe = Pipe()
        process.standardError = errorPipe
        do {
            try process.run()
        } catch {
            try? FileManager.default.removeItem(atPath: parent)
            throw error
        }
        let lines = StderrLines(errorPipe.fileHandleForReading)
        let listening = await lines.first { $0["message"] as? String == "listening" }
        guard let port = listening?["port"] as? Int else {
            if process.isRunning { process.terminate() }
            try? FileManager.default.removeItem(atPath: parent)
            throw LoopbackHTTP.Failure("the server did not say it listens: \(lines.all)")
        }
        return ServerProcess(process: process, lines: lines, port: port, spoolParent: parent)
    }

    /// Ends the process if it still runs and removes the spool folder's parent.
    func stop() {
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(atPath: spoolParent)
    }
}

/// The JSON lines a child process writes to standard error, read as they come on a thread of their own (a
/// read blocked for the child's whole life on one of Dispatch's few global threads starved the others).
final class StderrLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    private var ended = false

    init(_ handle: FileHandle) {
        Thread { [self] in
            var pending = Data()
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                pending += data
                while let newline = pending.firstIndex(of: 10) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending = Data(pending[(newline + 1)...])
                    lock.withLock { lines.append(line) }
                }
            }
            lock.withLock { ended = true }
        }.start()
    }

    /// Every line read so far that is a JSON object.
    var all: [[String: Any]] {
        lock.withLock { lines }.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    /// The first line matching `predicate`, waiting up to 60 s for it (nil when the process ends first).
    func first(where predicate: ([String: Any]) -> Bool) async -> [String: Any]? {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let found = all.first(where: predicate) { return found }
            if lock.withLock({ ended }) { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }
}
