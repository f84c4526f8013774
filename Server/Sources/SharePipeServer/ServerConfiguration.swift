#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import Logging
import SharePipe
import SharePipeMultipart

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
    /// How long one job may run once admitted; past it the job stops and the answer is 422 (`timedOut`).
    public var jobTimeout: Duration = .seconds(30)
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
    /// Whether the executable confines itself once it listens (`ProcessSandbox`: seccomp and Landlock; no
    /// program, process, socket or file beyond its spool folder for a hijacked decoder). Off for debugging.
    public var sandbox = true
    /// Input families refused whole, before any decoder library reads an upload (`ImageLimits.disabledFormats`):
    /// `heif,avif` keeps libheif, libde265, libavif and dav1d away from uploads. A client cannot change it.
    public var disabledFormats: Set<FormatFamily> = []

    public init() {}

    static var defaultSpoolParent: String {
        ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }

    /// A flag or variable that is wrong: the message names it (the process exits with status 2).
    public struct UsageError: Error, CustomStringConvertible, Equatable {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// What a setting's value is and which field it sets: the check, the message and the default shown by
    /// `--help` all follow from it.
    public enum ValueKind: Sendable {
        /// Text that must not be empty (`empty` ends the message: "--host is empty: give an address").
        case text(WritableKeyPath<ServerConfiguration, String> & Sendable, empty: String)
        /// Optional text, nil by default ("none" in `--help`).
        case optionalText(WritableKeyPath<ServerConfiguration, String?> & Sendable, empty: String)
        /// A whole number in `range`, described as `what`, stored shifted left by `shift` bits (MiB → bytes).
        case integer(
            WritableKeyPath<ServerConfiguration, Int> & Sendable, ClosedRange<Int>, what: String, shift: Int = 0)
        /// Seconds above 0, fractions allowed (at most a week).
        case seconds(WritableKeyPath<ServerConfiguration, Duration> & Sendable)
        /// A swift-log level name.
        case logLevel(WritableKeyPath<ServerConfiguration, Logger.Level> & Sendable)
        /// `on` or `off`.
        case onOff(WritableKeyPath<ServerConfiguration, Bool> & Sendable)
        /// Format families separated by commas (`FormatFamily`), or `none`.
        case families(WritableKeyPath<ServerConfiguration, Set<FormatFamily>> & Sendable)
    }

    /// One setting: its flag, its variable, the default shown by `--help`, what it is, and how to set it.
    public struct Setting: Sendable {
        /// `--port`.
        public var flag: String
        /// What the value is, in `--help` (`N`, `SECONDS`).
        public var value: String
        /// `SHAREPIPE_SERVER_PORT`: the flag's name in capitals after `SHAREPIPE_SERVER_`, unless given.
        public var variable: String
        /// What the setting does.
        public var help: String
        /// The value's kind and field.
        public var kind: ValueKind
        /// The default as `--help` shows it, when it is not the field's default value written out.
        private var defaultOverride: String?

        init(
            _ flag: String, _ value: String, _ kind: ValueKind, variable: String? = nil, shownDefault: String? = nil,
            help: String
        ) {
            self.flag = flag
            self.value = value
            self.kind = kind
            self.variable =
                variable ?? "SHAREPIPE_SERVER_" + String(flag.dropFirst(2).uppercased().map { $0 == "-" ? "_" : $0 })
            self.defaultOverride = shownDefault
            self.help = help
        }

        /// The default as `--help` shows it.
        public var defaultText: String {
            if let defaultOverride { return defaultOverride }
            let defaults = ServerConfiguration()
            switch kind {
            case .text(let field, _): return defaults[keyPath: field]
            case .optionalText(let field, _): return defaults[keyPath: field] ?? "none"
            case .integer(let field, _, _, let shift): return String(defaults[keyPath: field] >> shift)
            case .seconds(let field): return ServerConfiguration.secondsText(defaults[keyPath: field])
            case .logLevel(let field): return defaults[keyPath: field].rawValue
            case .onOff(let field): return defaults[keyPath: field] ? "on" : "off"
            case .families(let field):
                return FormatFamily.text(defaults[keyPath: field])
            }
        }

        /// Sets the field from `text`, read from `from` (the flag or the variable, which messages name).
        func apply(to configuration: inout ServerConfiguration, _ text: String, from: String) throws(UsageError) {
            switch kind {
            case .text(let field, let empty):
                guard !text.isEmpty else { throw UsageError("\(from) is empty: \(empty)") }
                configuration[keyPath: field] = text
            case .optionalText(let field, let empty):
                guard !text.isEmpty else { throw UsageError("\(from) is empty: \(empty)") }
                configuration[keyPath: field] = text
            case .integer(let field, let range, let what, let shift):
                guard let value = Int(text.trimmed()), range.contains(value) else {
                    throw UsageError(
                        "\(from) must be \(what) in \(range.lowerBound)...\(range.upperBound), got \"\(text)\"")
                }
                configuration[keyPath: field] = value << shift
            case .seconds(let field):
                guard let value = Double(text.trimmed()), value.isFinite, value > 0, value <= 86_400 * 7 else {
                    throw UsageError("\(from) must be a number of seconds above 0 (fractions allowed), got \"\(text)\"")
                }
                configuration[keyPath: field] = .milliseconds(max(1, Int64((value * 1000).rounded())))
            case .logLevel(let field):
                guard let level = Logger.Level(rawValue: text.lowercased()) else {
                    throw UsageError(
                        "\(from) must be trace, debug, info, notice, warning, error or critical, got \"\(text)\"")
                }
                configuration[keyPath: field] = level
            case .onOff(let field):
                switch text.trimmed().lowercased() {
                case "on": configuration[keyPath: field] = true
                case "off": configuration[keyPath: field] = false
                default: throw UsageError("\(from) must be on or off, got \"\(text)\"")
                }
            case .families(let field):
                guard let families = FormatFamily.parse(text) else {
                    throw UsageError("\(from) takes \(OptionSpec.Kind.families.textPhrase), got \"\(text)\"")
                }
                configuration[keyPath: field] = families
            }
        }
    }

    /// Every setting, in the order `--help` lists them.
    public static let settings: [Setting] = [
        Setting("--host", "ADDR", .text(\.host, empty: "give an address to listen on"), help: "address to listen on"),
        Setting(
            "--port", "N", .integer(\.port, 0...65535, what: "a port number"),
            help: "port to listen on; 0 = any free port"),
        Setting(
            "--budget-mib", "N", .integer(\.budgetBytes, 1...(1 << 20), what: "a number of MiB", shift: 20),
            help: "memory budget of the jobs, in MiB"),
        Setting(
            "--max-jobs", "N", .integer(\.maxJobs, 1...4096, what: "a number of jobs"), shownDefault: "active cores",
            help: "jobs that may run at once"),
        Setting(
            "--queue", "N", .integer(\.queueLength, 0...1_000_000, what: "a number of requests"),
            help: "requests that may wait for memory; more are answered 503"),
        Setting("--queue-timeout", "SECONDS", .seconds(\.queueTimeout), help: "longest wait for memory before 503"),
        Setting(
            "--job-timeout", "SECONDS", .seconds(\.jobTimeout),
            help: "longest run of one job once admitted; past it the job stops and the answer is 422 (timedOut)"),
        Setting(
            "--max-body-bytes", "N", .integer(\.maxBodyBytes, 1...(1 << 50), what: "a number of bytes"),
            help: "largest request body; more is answered 413"),
        Setting(
            "--read-timeout", "SECONDS", .seconds(\.readTimeout), help: "the whole body must arrive within it, or 408"),
        Setting("--grace", "SECONDS", .seconds(\.grace), help: "on SIGTERM, time for jobs in flight to finish"),
        Setting(
            "--spool-dir", "DIR", .text(\.spoolParent, empty: "give a folder"), shownDefault: "$TMPDIR or /tmp",
            help: "where the server makes its spool folder (removed on exit)"),
        Setting(
            "--token", "TOKEN", .optionalText(\.token, empty: "give a token, or leave it unset"),
            help: "bearer token required by every route but /healthz and /readyz"),
        Setting(
            "--profiles", "FILE", .optionalText(\.profilesFile, empty: "give a file"), variable: "SHAREPIPE_PROFILES",
            help: "JSON file adding or overriding service profiles (as sharepipe --profiles)"),
        Setting(
            "--log-level", "LEVEL", .logLevel(\.logLevel),
            help: "trace, debug, info, notice, warning, error or critical"),
        Setting(
            "--sandbox", "on|off", .onOff(\.sandbox),
            help: "once listening, confine the process for good (seccomp, Landlock); off (or --no-sandbox) to debug"),
        Setting(
            "--disable", "FAMILIES", .families(\.disabledFormats),
            help: "refuse uploads of these format families (415) before any decoder library reads them: "
                + FormatFamily.allCases.map(\.rawValue).joined(separator: ",")),
    ]

    /// `--no-sandbox`: the one flag without a value, `--sandbox off`.
    static let noSandboxFlag = "--no-sandbox"

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
            lines.append(
                "  \(String(repeating: " ", count: width))  (env \(setting.variable); default \(setting.defaultText))")
        }
        lines.append("  \(padded(noSandboxFlag, width))  the same as --sandbox off")
        lines.append(
            "  \(padded("--health-check", width))  exit 0 if the server these settings describe answers /healthz")
        lines.append("  \(padded("--version", width))  the release")
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
            if flag == Self.noSandboxFlag {
                given["--sandbox"] = ("off", flag)
                index += 1
                continue
            }
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
            if let (value, from) = given[setting.flag] { try setting.apply(to: &self, value, from: from) }
        }
    }

    /// A duration as `--help` shows seconds: "25", "1.5".
    static func secondsText(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return milliseconds % 1000 == 0 ? String(milliseconds / 1000) : String(Double(milliseconds) / 1000)
    }
}
