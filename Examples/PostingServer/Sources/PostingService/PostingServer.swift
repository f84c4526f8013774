import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SharePipe

/// Settings of the example posting server.
public struct PostingServerConfiguration: Sendable, Equatable {
    /// Address to listen on (loopback by default).
    public var host: String
    /// Port to listen on; 0 picks a free one (see `onServerRunning`).
    public var port: Int
    /// How SharePipe admits and runs the uploads: memory budget, concurrent jobs, spooling.
    public var pipeline: SharePipeline.Configuration
    /// The services `?service=` may name.
    public var profiles: [ServiceProfile]

    /// - Parameters:
    ///   - host: address to listen on.
    ///   - port: port to listen on (0: any free port).
    ///   - pipeline: SharePipe's admission settings (default: a 512 MiB budget, 1 MiB spool threshold).
    ///   - profiles: the services accepted (default: SharePipe's built-in profiles).
    public init(host: String = "127.0.0.1", port: Int = 8080,
                pipeline: SharePipeline.Configuration = SharePipeline.Configuration(memoryBudget: 512 << 20),
                profiles: [ServiceProfile] = ServiceProfile.builtIn) {
        self.host = host
        self.port = port
        self.pipeline = pipeline
        self.profiles = profiles
    }

    /// A usage error in the options or the environment.
    public struct UsageError: Error, CustomStringConvertible, Equatable {
        public var description: String
    }

    /// The usage text for `posting-server --help`.
    public static let usage = """
        usage: posting-server [--host ADDRESS] [--port PORT] [--budget-mib MIB]
          --host ADDRESS    address to listen on (default 127.0.0.1; env POSTING_SERVER_HOST)
          --port PORT       port to listen on, 0 for any free one (default 8080; env POSTING_SERVER_PORT)
          --budget-mib MIB  SharePipe's memory budget in MiB (default 512; env POSTING_SERVER_BUDGET_MIB)
        Options win over the environment.
        """

    /// The environment variables read, in the order of their options.
    public static let environmentVariables = ["POSTING_SERVER_HOST", "POSTING_SERVER_PORT", "POSTING_SERVER_BUDGET_MIB"]

    /// The configuration from command-line options (without the program name), over the environment, over
    /// the defaults. Throws `UsageError` naming the option or variable that is wrong.
    public init(arguments: [String], environment: [String: String]) throws {
        self.init()
        var values: [String: (value: String, from: String)] = [:]
        for (option, variable) in zip(["--host", "--port", "--budget-mib"], Self.environmentVariables) {
            if let value = environment[variable] { values[option] = (value, variable) }
        }
        var index = 0
        while index < arguments.count {
            var option = arguments[index], value: String?
            if let equals = option.firstIndex(of: "=") {
                value = String(option[option.index(after: equals)...])
                option = String(option[..<equals])
            }
            guard ["--host", "--port", "--budget-mib"].contains(option) else {
                throw UsageError(description: "unknown option \(arguments[index])\n\(Self.usage)")
            }
            if value == nil {
                index += 1
                guard index < arguments.count else { throw UsageError(description: "\(option) needs a value") }
                value = arguments[index]
            }
            values[option] = (value!, option)
            index += 1
        }
        if let (host, from) = values["--host"] {
            guard !host.isEmpty else { throw UsageError(description: "\(from) is empty") }
            self.host = host
        }
        if let (text, from) = values["--port"] {
            guard let port = Int(text), (0...65535).contains(port) else {
                throw UsageError(description: "\(from) must be a port number 0...65535, got \"\(text)\"")
            }
            self.port = port
        }
        if let (text, from) = values["--budget-mib"] {
            guard let mib = Int(text), (1...(1 << 20)).contains(mib) else {
                throw UsageError(description: "\(from) must be a number of MiB 1...1048576, got \"\(text)\"")
            }
            pipeline.memoryBudget = mib << 20
        }
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.host == b.host && a.port == b.port && a.pipeline.memoryBudget == b.pipeline.memoryBudget
            && a.profiles.map(\.name) == b.profiles.map(\.name)
    }
}

/// The posting endpoint, as a Hummingbird application.
///
/// `POST /prepare?service=NAME` with the image as the request body returns the image prepared for that
/// service: metadata stripped, orientation applied, short edge at most 1080, under the service's byte
/// limit. The body is streamed into SharePipe (spooled to a temporary file past 1 MiB), and every upload
/// waits for its share of the memory budget. `GET /health` reports the budget's use.
///
/// | outcome | status |
/// |---|---|
/// | prepared | 200, `Content-Type` of the output, headers `X-SharePipe-Width/Height/Quality`, and `X-SharePipe-Changed` when the image was changed beyond the request |
/// | unknown or missing `service`, empty body | 400 |
/// | another method than POST (`/prepare`) or GET (`/health`) | 405, with `Allow` |
/// | not a JPEG, PNG or GIF | 415 |
/// | over the input, pixel or memory limits | 413 |
/// | damaged image, or nothing fits the byte limit | 422 |
/// | the upload broke off | 400 |
/// | an encoder failed | 500 |
///
/// Every log line about a request, SharePipe's included, carries its id as `hb.request.id`.
public enum PostingServer {
    /// The id of the request being handled, for SharePipe's log lines (through a metadata provider).
    @TaskLocal public static var requestID: String?

    /// Adds `hb.request.id` (Hummingbird's key) to every log line written while a request is handled.
    public static let requestMetadata = Logger.MetadataProvider {
        requestID.map { ["hb.request.id": .string($0)] } ?? [:]
    }

    /// Builds the application.
    ///
    /// - Parameters:
    ///   - configuration: where to listen and how to prepare.
    ///   - logger: the server's and SharePipe's logger (one line per prepared image).
    ///   - onServerRunning: called with the listening channel once the server is up (its local address
    ///     gives the port when `port` is 0).
    public static func application(
        _ configuration: PostingServerConfiguration = PostingServerConfiguration(),
        logger: Logger = Logger(label: "PostingServer"),
        onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
    ) throws -> some ApplicationProtocol {
        var pipelineLogger = logger
        pipelineLogger.handler.metadataProvider = Logger.MetadataProvider.multiplex(
            [logger.metadataProvider, requestMetadata].compactMap { $0 })
        let pipeline = try SharePipeline(configuration: configuration.pipeline, logger: pipelineLogger)
        let router = Router()
        router.post("/prepare") { request, context -> Response in
            try await $requestID.withValue(context.id) {
                try await prepare(request, pipeline: pipeline, profiles: configuration.profiles)
            }
        }
        router.get("/health") { _, _ -> String in
            let usage = await pipeline.budget.usage
            return "reserved \(usage.reservedBytes) of \(pipeline.budget.capacity) bytes, "
                + "\(usage.runningJobs) running, \(usage.waitingRequests) waiting\n"
        }
        // Hummingbird answers an unrouted method with 404; the path exists, so say 405 and what is allowed.
        for (path, allowed) in [("/prepare", HTTPRequest.Method.post), ("/health", .get)] {
            for method in [HTTPRequest.Method.get, .head, .post, .put, .delete, .patch, .options] where method != allowed
                && !(allowed == .get && method == .head) {
                router.on(RouterPath(path), method: method) { _, _ -> Response in
                    var headers = HTTPFields()
                    headers[.allow] = allowed == .get ? "GET, HEAD" : allowed.rawValue
                    throw HTTPError(.methodNotAllowed, headers: headers, message: "\(path) takes \(allowed.rawValue) only")
                }
            }
        }
        return Application(router: router,
                           configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port),
                                                                   serverName: "SharePipe PostingServer"),
                           onServerRunning: onServerRunning, logger: logger)
    }

    /// One upload, prepared for the service named in the query.
    static func prepare(_ request: Request, pipeline: SharePipeline, profiles: [ServiceProfile]) async throws -> Response {
        guard let name = request.uri.queryParameters["service"].map(String.init), !name.isEmpty else {
            throw HTTPError(.badRequest, message: "name a service: ?service=\(profiles.map(\.name).joined(separator: "|"))")
        }
        guard let profile = profiles.first(where: { $0.name == name.lowercased() }) else {
            throw HTTPError(.badRequest, message: "unknown service \"\(name)\"; known: \(profiles.map(\.name).joined(separator: ", "))")
        }
        if request.headers[.contentLength] == "0" { throw emptyBody }
        // Wait for the first bytes, so an empty chunked body is a 400 as well (not "not an image").
        var body = request.body.makeAsyncIterator()
        var first = try await body.next()
        while let chunk = first, chunk.readableBytes == 0 { first = try await body.next() }
        guard let first else { throw emptyBody }
        let prepared: PreparedImage
        do {
            let chunks = BodyChunks(first: first, rest: body)
            let results = try await pipeline.prepare(upload: chunks, named: "upload", for: [profile])
            prepared = try results[0].get()
        } catch let error as SharePipeError {
            throw HTTPError(status(for: error), message: "\(error)")
        }
        var headers = HTTPFields()
        headers[.contentType] = prepared.format.mediaType
        headers[.contentLength] = String(prepared.byteCount)
        headers[HTTPField.Name("X-SharePipe-Width")!] = String(prepared.size.width)
        headers[HTTPField.Name("X-SharePipe-Height")!] = String(prepared.size.height)
        if let quality = prepared.quality { headers[HTTPField.Name("X-SharePipe-Quality")!] = String(quality) }
        if let changes = changedBeyondRequest(prepared) { headers[HTTPField.Name("X-SharePipe-Changed")!] = changes }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: prepared.bytes)))
    }

    static let emptyBody = HTTPError(.badRequest, message: "the request body is empty: post the image as the body")

    /// What was done to the image beyond the request (which asks for a resize and for metadata to go), as
    /// `X-SharePipe-Changed` tokens: `format=gif->png`, `first-frame-only`, `frames=40->20`; nil for none.
    /// The full list, in words, is `PreparedImage.adjustments`.
    static func changedBeyondRequest(_ prepared: PreparedImage) -> String? {
        var tokens: [String] = []
        if prepared.format != prepared.inputFormat {
            tokens.append("format=\(prepared.inputFormat.rawValue)->\(prepared.format.rawValue)")
        }
        if prepared.inputFrameCount > 1 && prepared.frameCount == 1 {
            tokens.append("first-frame-only")
        } else if prepared.frameCount < prepared.inputFrameCount {
            tokens.append("frames=\(prepared.inputFrameCount)->\(prepared.frameCount)")
        }
        return tokens.isEmpty ? nil : tokens.joined(separator: ", ")
    }

    /// The HTTP status for a SharePipe error.
    static func status(for error: SharePipeError) -> HTTPResponse.Status {
        switch error {
        case .unsupportedFormat: return .unsupportedMediaType
        case .tooLarge: return .contentTooLarge
        case .corrupt, .cannotMeetLimit: return .unprocessableContent
        case .unreadable, .invalidOptions: return .badRequest
        case .cancelled: return .serviceUnavailable
        case .unwritable, .encodingFailed: return .internalServerError
        }
    }

}

/// A request body whose first chunk was already read: that chunk, then the rest, as byte views.
struct BodyChunks: AsyncSequence {
    typealias Element = ByteBufferView
    let first: ByteBuffer
    let rest: RequestBody.AsyncIterator

    struct AsyncIterator: AsyncIteratorProtocol {
        var first: ByteBuffer?
        var rest: RequestBody.AsyncIterator

        mutating func next() async throws -> ByteBufferView? {
            if let buffer = first {
                first = nil
                return buffer.readableBytesView
            }
            return try await rest.next()?.readableBytesView
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(first: first, rest: rest) }
}
