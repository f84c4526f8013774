#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif
import Hummingbird
import Logging
import PostingService

// posting-server [--host ADDRESS] [--port PORT] [--budget-mib MIB] (or POSTING_SERVER_HOST / _PORT /
// _BUDGET_MIB in the environment): serves POST /prepare?service=NAME and GET /health.
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(PostingServerConfiguration.usage)
    exit(0)
}
var environment: [String: String] = [:]
for name in PostingServerConfiguration.environmentVariables {
    if let value = getenv(name) { environment[name] = String(cString: value) }
}
let configuration: PostingServerConfiguration
do {
    configuration = try PostingServerConfiguration(arguments: arguments, environment: environment)
} catch {
    let text = "posting-server: \(error)\n"
    _ = text.withCString { write(2, $0, strlen($0)) }  // standard error
    exit(2)
}
var logger = Logger(label: "PostingServer")
logger.logLevel = .info
let app = try PostingServer.application(configuration, logger: logger)
try await app.runService()
