import SharePipe
import SharePipeServer
import Testing

/// What the Debian package installs beside the binary, made from the setting table: the manual page, the
/// settings file; and the health check a container runs.
@Suite struct PackageFilesTests {
    @Test func theManualPageListsEverySettingWithItsVariableAndDefault() {
        let page = ServerManual.manualPage
        #expect(page.hasPrefix(".TH SHAREPIPE-SERVER 8 \"\" \"SharePipe \(SharePipeVersion.current)\""))
        for setting in ServerConfiguration.settings {
            let flag = setting.flag.replacingHyphens()
            #expect(page.contains("\\fB\(flag)\\fR"), "\(setting.flag)")
            #expect(page.contains("Environment: \\fB\(setting.variable)\\fR; default: "), "\(setting.variable)")
            #expect(page.contains("default: \(setting.defaultText.replacingHyphens())."), "\(setting.flag)")
        }
        for route in ServerResponder.routes { #expect(page.contains(route.path.replacingHyphens()), "\(route.path)") }
        for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", "FILES", "EXIT STATUS"] {
            #expect(page.contains("\n.SH \(section)\n"), "\(section)")
        }
        // No line of text starts with a dot or quote that roff would take for a request.
        for line in page.split(separator: "\n") where line.hasPrefix(".") || line.hasPrefix("'") {
            let request = line.dropFirst().prefix { $0 != " " }
            #expect(["TH", "SH", "TP", "PP", "B", "BR", "br"].contains(String(request)), "\(line)")
        }
    }

    @Test func theEnvironmentFileListsEveryVariableOnceCommentedOutAndItsDefaultParses() throws {
        let file = ServerManual.environmentFile
        let lines = file.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.allSatisfy { $0.isEmpty || $0.hasPrefix("#") }, "every line is a comment: the defaults apply")
        var environment: [String: String] = [:]
        for setting in ServerConfiguration.settings {
            let assignments = lines.filter { $0.hasPrefix("#\(setting.variable)=") }
            #expect(assignments.count == 1, "\(setting.variable)")
            let value = String(assignments.first?.dropFirst(setting.variable.count + 2) ?? "")
            if !value.isEmpty { environment[setting.variable] = value }
        }
        // Uncommented, the file's values are accepted and are the defaults.
        let uncommented = try ServerConfiguration(arguments: [], environment: environment)
        let defaults = try ServerConfiguration(arguments: [], environment: [:])
        #expect(uncommented.host == defaults.host && uncommented.port == defaults.port)
        #expect(uncommented.budgetBytes == defaults.budgetBytes && uncommented.grace == defaults.grace)
        #expect(uncommented.logLevel == defaults.logLevel && uncommented.maxBodyBytes == defaults.maxBodyBytes)
    }

    @Test func theHealthCheckAsksTheServerTheSettingsDescribe() async throws {
        let configuration = ServerHarness.configuration { $0.token = "s3cret-token" }
        try await ServerHarness.withServer(configuration) { _, port in
            var asked = configuration
            asked.port = port
            let healthy = ServerHealthCheck.check(asked)
            #expect(healthy.healthy, "\(healthy.failure)")
            asked.host = "0.0.0.0"
            #expect(ServerHealthCheck.check(asked).healthy, "a wildcard address is asked on loopback")
        }
        // Nothing listens on the port once the server is gone.
        var gone = configuration
        gone.port = try await ServerHarness.withServer(configuration) { _, port in port }
        let result = ServerHealthCheck.check(gone, timeoutSeconds: 2)
        #expect(!result.healthy && result.failure.contains("cannot connect"), "\(result.failure)")
        gone.port = 0
        #expect(ServerHealthCheck.check(gone).failure.contains("port is 0"))
    }
}

extension String {
    fileprivate func replacingHyphens() -> String {
        var result = ""
        for character in self { if character == "-" { result += "\\-" } else { result.append(character) } }
        return result
    }
}
