import HTTPTypes
import SharePipe

/// What the package installs beside the binary, made from the same setting table as `--help`, so the manual
/// page and the settings file can never disagree with the program: `sharepipe-server --generate-manual` and
/// `sharepipe-server --generate-environment-file` (both hidden from `--help`; `scripts/package` runs them).
public enum ServerManual {
    /// The release, as `sharepipe --version` prints it: one number for both programs and the package.
    public static var version: String { SharePipeVersion.current }

    /// `sharepipe-server(8)` in roff (man(7) macros): every setting with its flag, variable and default, the
    /// routes, the files the Debian package installs, the exit statuses.
    public static var manualPage: String {
        var lines = [
            ".TH SHAREPIPE-SERVER 8 \"\" \"SharePipe \(version)\" \"System Manager's Manual\"",
            ".SH NAME",
            "sharepipe-server \\- prepare images for posting to social services, over HTTP",
            ".SH SYNOPSIS",
            ".B sharepipe-server",
            "[\\fIoptions\\fR]",
            ".br",
            ".B sharepipe-server \\-\\-version",
            ".br",
            ".B sharepipe-server \\-\\-health\\-check",
            ".SH DESCRIPTION",
            roffText(
                "sharepipe-server is SharePipe over HTTP, a sidecar for posting services: an upload posted to "
                    + "POST /v1/prepare?service=NAME comes back stripped of private metadata, oriented, downscaled "
                    + "and re-encoded under the service's byte limit, as sharepipe(1) prepares it."),
            ".PP",
            roffText(
                "Every upload's memory is priced from its header and reserved from one budget before it is "
                    + "decoded; uploads that do not fit yet wait in a bounded queue, and beyond it the answer is "
                    + "503 with Retry-After, so the process stays within its budget under any load. "
                    + "The API is described in OpenAPI 3.1, served at GET /v1/openapi.json."),
            ".PP",
            roffText(
                "Each option can come from the environment instead; an option wins over its variable. "
                    + "Log lines are JSON, one per line, on standard error."),
            ".SH OPTIONS",
        ]
        for setting in ServerConfiguration.settings {
            lines.append(".TP")
            let flag = "\\fB\(roffEscape(setting.flag))\\fR"
            lines.append(setting.value.isEmpty ? flag : "\(flag) \\fI\(roffEscape(setting.value))\\fR")
            lines += [roffText(sentence(setting.help)), ".br"]
            lines.append(
                "Environment: \\fB\(roffEscape(setting.variable))\\fR; default: \(roffEscape(setting.defaultText)).")
        }
        lines += [
            ".TP", "\\fB\\-\\-version\\fR", "Prints the release and exits.",
            ".TP", "\\fB\\-\\-health\\-check\\fR",
            roffText(
                "Asks the server that the same settings describe (host and port, from the options or the "
                    + "environment) for GET /healthz and exits 0 when it answers 200, 1 otherwise: a container's "
                    + "or supervisor's health check without curl."),
            ".TP", "\\fB\\-\\-help\\fR", "Lists the options, their variables and defaults, and exits.",
            ".SH ROUTES",
        ]
        for route in ServerResponder.routes.sorted(by: { $0.path < $1.path }) {
            let methods = route.methods.map(\.rawValue).joined(separator: ", ")
            let help =
                routeHelp[route.path]
                ?? "Operation \(route.operations.map(\.operationID).joined(separator: ", ")) of GET /v1/openapi.json."
            lines += [".TP", "\\fB\(methods) \(roffEscape(route.path))\\fR", roffText(help)]
        }
        lines += [
            ".SH ENVIRONMENT",
            roffText("Every option's variable (above), and:"),
            ".TP", "\\fBTMPDIR\\fR",
            roffText("the default parent of the spool folder."),
            ".SH FILES",
            ".TP", "\\fI/etc/default/sharepipe\\-server\\fR",
            roffText(
                "The settings of sharepipe-server.service, as VARIABLE=value lines; every variable is listed "
                    + "there, commented out at its default."),
            ".TP", "\\fI/etc/sharepipe/profiles.json\\fR",
            roffText(
                "Service profiles added or overridden by the operator (SHAREPIPE_PROFILES in the unit); "
                    + "its format is that of sharepipe(1)'s --profiles."),
            ".TP", "\\fI/lib/systemd/system/sharepipe\\-server.service\\fR",
            roffText(
                "The hardened unit: a dynamic user, a read-only system, no home folders, a private /tmp for the "
                    + "spool, MemoryMax of the default budget plus 64 MiB."),
            ".SH EXIT STATUS",
            ".TP", "0",
            roffText("stopped by SIGTERM or SIGINT after the jobs in flight finished or the grace time ran out."),
            ".TP", "1", roffText("the server could not run (the port is taken, say), or a health check failed."),
            ".TP", "2", roffText("an option or variable is wrong; the message names it."),
            ".SH SEE ALSO",
            ".BR sharepipe (1),",
            ".BR systemd.exec (5)",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// `/etc/default/sharepipe-server`: every variable, commented out at its default, after its help.
    public static var environmentFile: String {
        var lines = [
            "# Settings of sharepipe-server, read by sharepipe-server.service (see sharepipe-server(8)).",
            "# Each VARIABLE=value line sets what the option of the same name sets; a variable left commented out",
            "# keeps its default. After a change: systemctl restart sharepipe-server",
            "#",
            "# The unit sets SHAREPIPE_PROFILES=/etc/sharepipe/profiles.json and keeps the spool in its private /tmp;",
            "# lines here win over both. Its MemoryMax is the default budget (\(ServerConfiguration().budgetBytes >> 20) MiB) plus 64 MiB: when",
            "# you raise SHAREPIPE_SERVER_BUDGET_MIB, raise MemoryMax with it (systemctl edit sharepipe-server).",
        ]
        for setting in ServerConfiguration.settings {
            let usage = setting.value.isEmpty ? setting.flag : "\(setting.flag) \(setting.value)"
            lines += ["", "# \(sentence(setting.help)) (\(usage); default: \(setting.defaultText))"]
            lines.append("#\(setting.variable)=\(environmentExample(setting))")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The value shown after a commented-out variable: its default where that is a value the variable takes.
    private static func environmentExample(_ setting: ServerConfiguration.Setting) -> String {
        switch setting.kind {
        case .optionalText: return ""
        default:
            let shown = setting.defaultText
            return shown.contains(" ") ? "" : shown
        }
    }

    private static let routeHelp: [String: String] = [
        "/v1/prepare":
            "The body is the image (or multipart/form-data with a part named file); the query names one or more "
            + "services and options (strip, max_bytes, max_short_edge, quality, min_quality, progressive, "
            + "animation). "
            + "One service: the answer is the image; several: multipart/mixed, one part per service.",
        "/v1/services": "The service profiles, as sharepipe services --json prints them.",
        "/healthz": "200 while the process runs (open without the token).",
        "/readyz": "200, or 503 when draining or the queue is full (open without the token).",
        "/metrics": "Prometheus text: requests, bytes, prepare time, budget, queue, spool files, resident memory.",
        "/v1/openapi.json": "The OpenAPI 3.1 document of these routes.",
    ]

    /// The help text as a sentence: capitalised, ending in a full stop.
    private static func sentence(_ text: String) -> String {
        guard let first = text.first else { return text }
        let capitalised = first.uppercased() + text.dropFirst()
        return capitalised.hasSuffix(".") ? capitalised : capitalised + "."
    }

    /// Text set on its own line: escaped, and guarded so that a leading dot or quote is no request.
    private static func roffText(_ text: String) -> String {
        let escaped = roffEscape(text)
        return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? "\\&" + escaped : escaped
    }

    /// Backslashes and hyphens as roff writes them (`\e`, `\-`).
    private static func roffEscape(_ text: String) -> String {
        text.replacingOccurrences("\\", with: "\\e").replacingOccurrences("-", with: "\\-")
    }
}

extension String {
    fileprivate func replacingOccurrences(_ target: Character, with replacement: String) -> String {
        var result = ""
        for character in self {
            if character == target { result += replacement } else { result.append(character) }
        }
        return result
    }
}
