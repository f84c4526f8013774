import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SharePipe

/// Settings of the example posting server.
public struct PostingServerConfiguration: Sendable {
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
/// | prepared | 200, `Content-Type` of the output, headers `X-SharePipe-Width/Height/Quality` |
/// | unknown or missing `service` | 400 |
/// | not a JPEG, PNG or GIF | 415 |
/// | over the input, pixel or memory limits | 413 |
/// | damaged image, or nothing fits the byte limit | 422 |
/// | the upload broke off | 400 |
public enum PostingServer {
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
        let pipeline = try SharePipeline(configuration: configuration.pipeline, logger: logger)
        let router = Router()
        router.post("/prepare") { request, _ -> Response in
            try await prepare(request, pipeline: pipeline, profiles: configuration.profiles)
        }
        router.get("/health") { _, _ -> String in
            let usage = await pipeline.budget.usage
            return "reserved \(usage.reservedBytes) of \(pipeline.budget.capacity) bytes, "
                + "\(usage.runningJobs) running, \(usage.waitingRequests) waiting\n"
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
        let prepared: PreparedImage
        do {
            let body = request.body.map { buffer in buffer.readableBytesView }
            let results = try await pipeline.prepare(upload: body, named: "upload", for: [profile])
            prepared = try results[0].get()
        } catch let error as SharePipeError {
            throw HTTPError(status(for: error), message: "\(error)")
        }
        var headers = HTTPFields()
        headers[.contentType] = mediaType(prepared.format)
        headers[.contentLength] = String(prepared.byteCount)
        headers[HTTPField.Name("X-SharePipe-Width")!] = String(prepared.size.width)
        headers[HTTPField.Name("X-SharePipe-Height")!] = String(prepared.size.height)
        if let quality = prepared.quality { headers[HTTPField.Name("X-SharePipe-Quality")!] = String(quality) }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: prepared.bytes)))
    }

    /// The HTTP status for a SharePipe error.
    static func status(for error: SharePipeError) -> HTTPResponse.Status {
        switch error {
        case .unsupportedFormat: return .unsupportedMediaType
        case .tooLarge: return .contentTooLarge
        case .corrupt, .cannotMeetLimit: return .unprocessableContent
        case .unreadable, .invalidOptions: return .badRequest
        case .cancelled: return .serviceUnavailable
        case .unwritable: return .internalServerError
        }
    }

    /// The media type of an output format.
    static func mediaType(_ format: ImageFormat) -> String {
        switch format {
        case .jpeg: return "image/jpeg"
        case .png: return "image/png"
        case .gif: return "image/gif"
        }
    }
}
