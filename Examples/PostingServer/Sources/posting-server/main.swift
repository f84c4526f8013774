import Hummingbird
import Logging
import PostingService

// posting-server [PORT] [MEMORY_BUDGET_MIB]: serves POST /prepare?service=NAME on 127.0.0.1.
let arguments = CommandLine.arguments.dropFirst()
let port = arguments.first.flatMap(Int.init) ?? 8080
let budget = (arguments.dropFirst().first.flatMap(Int.init) ?? 512) << 20
var logger = Logger(label: "PostingServer")
logger.logLevel = .info
var configuration = PostingServerConfiguration(port: port)
configuration.pipeline.memoryBudget = budget
let app = try PostingServer.application(configuration, logger: logger)
try await app.runService()
