#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif
import Logging
import SharePipeServer

// sharepipe-server [options]: flags over SHAREPIPE_SERVER_* variables over defaults (`--help` lists them).
// JSON log lines on standard error; exit 0 after SIGTERM/SIGINT, 2 for a bad flag or value.
ProcessMemory.configureAllocator()
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(ServerConfiguration.usage)
    exit(0)
}
// Alone on the line: the release; the package's manual page and settings file, made from the setting table.
switch arguments {
case ["--version"]:
    print(ServerManual.version)
    exit(0)
case ["--generate-manual"]:
    print(ServerManual.manualPage, terminator: "")
    exit(0)
case ["--generate-environment-file"]:
    print(ServerManual.environmentFile, terminator: "")
    exit(0)
default: break
}

func fail(_ message: String) -> Never {
    let text = "sharepipe-server: \(message)\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

var environment: [String: String] = [:]
for name in ServerConfiguration.environmentVariables {
    if let value = getenv(name) { environment[name] = String(cString: value) }
}
// --health-check with the settings of the server to ask (options or environment): exit 0 when /healthz is 200.
let healthCheck = arguments.contains("--health-check")
let configuration: ServerConfiguration
do {
    configuration = try ServerConfiguration(
        arguments: arguments.filter { $0 != "--health-check" }, environment: environment)
} catch {
    fail(error.description)
}
if healthCheck {
    let result = ServerHealthCheck.check(configuration)
    if !result.healthy {
        let text = "sharepipe-server: health check failed: \(result.failure)\n"
        _ = text.withCString { write(2, $0, strlen($0)) }
    }
    exit(result.healthy ? 0 : 1)
}

// Every logger writes JSON lines; SharePipe's job lines carry the request id through the metadata provider.
let level = configuration.logLevel
LoggingSystem.bootstrap(
    { _, provider in JSONLogHandler(level: level, metadataProvider: provider) },
    metadataProvider: SharePipeServer.requestMetadata)
let logger = Logger(label: "sharepipe-server")

let server: SharePipeServer
do {
    server = try SharePipeServer(configuration: configuration, logger: logger)
} catch {
    fail("\(error)")
}
do {
    try await server.run(confining: configuration.sandbox)
} catch {
    logger.critical("the server stopped", metadata: ["error": "\(error)"])
    exit(1)
}
exit(0)
