#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import SharePipe

/// The server's settings: from command-line flags, over environment variables, over the defaults.
public struct ServerConfiguration: Sendable {
    /// Address to listen on.
    public var host = "127.0.0.1"
    /// Port to listen on; 0 picks a free one (the "listening" log line says which).
    public var port = 8080
    /// SharePipe's memory budget, in bytes.
    public var budgetBytes = 256 << 20
    /// Jobs that may run at once whatever the memory.
    public var maxJobs = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Requests that may wait for memory at once; one more is answered 503.
    public var queueLength = 32
    /// How long a request may wait for memory before it is answered 503.
    public var queueTimeout: Duration = .seconds(30)
    /// Largest request body accepted; a longer one is answered 413 before it is read whole.
    public var maxBodyBytes = 104_857_600
    /// The whole request body must arrive within this time, or the answer is 408.
    public var readTimeout: Duration = .seconds(60)
    /// On SIGTERM or SIGINT, jobs in flight may finish within this time; then they are cancelled.
    public var grace: Duration = .seconds(25)
    /// The folder in which the server makes its own spool folder (removed on exit).
    public var spoolParent = ServerConfiguration.defaultSpoolParent
    /// Bearer token every route but /healthz and /readyz requires; nil: none.
    public var token: String?
    /// A JSON profiles file adding or overriding services, as the CLI's `--profiles`.
    public var profilesFile: String?
    /// Log lines below this level are not written.
    public var logLevel: Logger.Level = .info

    public init() {}

    static var defaultSpoolParent: String {
        ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }

    /// A flag or variable that is wrong: the message names it (the process exits with status 2).
    public struct UsageError: Error, CustomStringConvertible, Equatable {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// One setting: its flag, its variable, the default shown by `--help`, what it is, and how to set it.
    public struct Setting: Sendable {
        /// `--port`.
        public var flag: String
        /// What the value is, in `--help` (`N`, `SECONDS`).
        public var value: String
        /// `SHAREPIPE_SERVER_PORT`.
        public var variable: String
        /// The default as `--help` shows it.
        public var defaultText: String
        /// What the setting does.
        public var help: String
        var apply: @Sendable (inout ServerConfiguration, String, String) throws(UsageError) -> Void
    }

    /// Every setting, in the order `--help` lists them.
    public static let settings: [Setting] = [
        Setting(flag: "--host", value: "ADDR", variable: "SHAREPIPE_SERVER_HOST", defaultText: "127.0.0.1",
                help: "address to listen on") { configuration, text, from throws(UsageError) in
            guard !text.isEmpty else { throw UsageError("\(from) is empty: give an address to listen on") }
            configuration.host = text
        },
        Setting(flag: "--port", value: "N", variable: "SHAREPIPE_SERVER_PORT", defaultText: "8080",
                help: "port to listen on; 0 = any free port") { configuration, text, from throws(UsageError) in
            configuration.port = try ServerConfiguration.integer(text, from, in: 0...65535, "a port number")
        },
        Setting(flag: "--budget-mib", value: "N", variable: "SHAREPIPE_SERVER_BUDGET_MIB", defaultText: "256",
                help: "memory budget of the jobs, in MiB") { configuration, text, from throws(UsageError) in
            configuration.budgetBytes = try ServerConfiguration.integer(text, from, in: 1...(1 << 20), "a number of MiB") << 20
        },
        Setting(flag: "--max-jobs", value: "N", variable: "SHAREPIPE_SERVER_MAX_JOBS", defaultText: "active cores",
                help: "jobs that may run at once") { configuration, text, from throws(UsageError) in
            configuration.maxJobs = try ServerConfiguration.integer(text, from, in: 1...4096, "a number of jobs")
        },
        Setting(flag: "--queue", value: "N", variable: "SHAREPIPE_SERVER_QUEUE", defaultText: "32",
                help: "requests that may wait for memory; more are answered 503") { configuration, text, from throws(UsageError) in
            configuration.queueLength = try ServerConfiguration.integer(text, from, in: 0...1_000_000, "a number of requests")
        },
        Setting(flag: "--queue-timeout", value: "SECONDS", variable: "SHAREPIPE_SERVER_QUEUE_TIMEOUT", defaultText: "30",
                help: "longest wait for memory before 503") { configuration, text, from throws(UsageError) in
            configuration.queueTimeout = try ServerConfiguration.seconds(text, from)
        },
        Setting(flag: "--max-body-bytes", value: "N", variable: "SHAREPIPE_SERVER_MAX_BODY_BYTES", defaultText: "104857600",
                help: "largest request body; more is answered 413") { configuration, text, from throws(UsageError) in
            configuration.maxBodyBytes = try ServerConfiguration.integer(text, from, in: 1...(1 << 50), "a number of bytes")
        },
        Setting(flag: "--read-timeout", value: "SECONDS", variable: "SHAREPIPE_SERVER_READ_TIMEOUT", defaultText: "60",
                help: "the whole body must arrive within it, or 408") { configuration, text, from throws(UsageError) in
            configuration.readTimeout = try ServerConfiguration.seconds(text, from)
        },
        Setting(flag: "--grace", value: "SECONDS", variable: "SHAREPIPE_SERVER_GRACE", defaultText: "25",
                help: "on SIGTERM, time for jobs in flight to finish") { configuration, text, from throws(UsageError) in
            configuration.grace = try ServerConfiguration.seconds(text, from)
        },
        Setting(flag: "--spool-dir", value: "DIR", variable: "SHAREPIPE_SERVER_SPOOL_DIR", defaultText: "$TMPDIR or /tmp",
                help: "where the server makes its spool folder (removed on exit)") { configuration, text, from throws(UsageError) in
            guard !text.isEmpty else { throw UsageError("\(from) is empty: give a folder") }
            configuration.spoolParent = text
        },
        Setting(flag: "--token", value: "TOKEN", variable: "SHAREPIPE_SERVER_TOKEN", defaultText: "none",
                help: "bearer token required by every route but /healthz and /readyz") { configuration, text, from throws(UsageError) in
            guard !text.isEmpty else { throw UsageError("\(from) is empty: give a token, or leave it unset") }
            configuration.token = text
        },
        Setting(flag: "--profiles", value: "FILE", variable: "SHAREPIPE_PROFILES", defaultText: "none",
                help: "JSON file adding or overriding service profiles (as sharepipe --profiles)") { configuration, text, from throws(UsageError) in
            guard !text.isEmpty else { throw UsageError("\(from) is empty: give a file") }
            configuration.profilesFile = text
        },
        Setting(flag: "--log-level", value: "LEVEL", variable: "SHAREPIPE_SERVER_LOG_LEVEL", defaultText: "info",
                help: "trace, debug, info, notice, warning, error or critical") { configuration, text, from throws(UsageError) in
            guard let level = Logger.Level(rawValue: text.lowercased()) else {
                throw UsageError("\(from) must be trace, debug, info, notice, warning, error or critical, got \"\(text)\"")
            }
            configuration.logLevel = level
        },
    ]

    /// The text of `sharepipe-server --help`.
    public static var usage: String {
        var lines = [
            "usage: sharepipe-server [options]",
            "Prepares images for posting over HTTP: POST /v1/prepare?service=NAME (see GET /v1/openapi.json).",
            "Each option can come from the environment instead; an option wins over its variable.",
            "",
        ]
        let width = settings.map { "\($0.flag) \($0.value)".count }.max() ?? 0
        for setting in settings {
            let left = "\(setting.flag) \(setting.value)"
            lines.append("  \(padded(left, width))  \(setting.help)")
            lines.append("  \(String(repeating: " ", count: width))  (env \(setting.variable); default \(setting.defaultText))")
        }
        lines.append("  \(padded("--help", width))  this text")
        return lines.joined(separator: "\n")
    }

    private static func padded(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }

    /// The variables read, in the order of their flags.
    public static var environmentVariables: [String] { settings.map(\.variable) }

    /// The configuration from command-line arguments (without the program name), over `environment`, over
    /// the defaults. Throws `UsageError` naming the flag or variable that is wrong.
    public init(arguments: [String], environment: [String: String]) throws(UsageError) {
        self.init()
        var given: [String: (value: String, from: String)] = [:]
        for setting in Self.settings {
            if let value = environment[setting.variable] { given[setting.flag] = (value, setting.variable) }
        }
        var index = 0
        while index < arguments.count {
            var flag = arguments[index], value: String?
            if flag.hasPrefix("--"), let equals = flag.firstIndex(of: "=") {
                value = String(flag[flag.index(after: equals)...])
                flag = String(flag[..<equals])
            }
            guard Self.settings.contains(where: { $0.flag == flag }) else {
                throw UsageError("unknown option \(arguments[index]) (see --help)")
            }
            if value == nil {
                index += 1
                guard index < arguments.count else { throw UsageError("\(flag) needs a value") }
                value = arguments[index]
            }
            given[flag] = (value!, flag)
            index += 1
        }
        for setting in Self.settings {
            if let (value, from) = given[setting.flag] { try setting.apply(&self, value, from) }
        }
    }

    fileprivate static func integer(_ text: String, _ from: String, in range: ClosedRange<Int>,
                                _ what: String) throws(UsageError) -> Int {
        guard let value = Int(text.trimmed()), range.contains(value) else {
            throw UsageError("\(from) must be \(what) in \(range.lowerBound)...\(range.upperBound), got \"\(text)\"")
        }
        return value
    }

    fileprivate static func seconds(_ text: String, _ from: String) throws(UsageError) -> Duration {
        guard let value = Double(text.trimmed()), value.isFinite, value > 0, value <= 86_400 * 7 else {
            throw UsageError("\(from) must be a number of seconds above 0 (fractions allowed), got \"\(text)\"")
        }
        return .milliseconds(max(1, Int64((value * 1000).rounded())))
    }
}
