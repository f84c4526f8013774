#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SharePipe

/// An answer that is not a success: its status, a machine-readable kind and a message, as the JSON body
/// `{"error":{"status":…,"kind":…,"message":…},"request_id":…}`.
struct ServerFailure: Error, Sendable {
    var status: HTTPResponse.Status
    var kind: String
    var message: String
    var headers = HTTPFields()
    /// What `sharepipe_rejections_total` counts it as, if anything.
    var rejection: RejectionReason?

    init(_ status: HTTPResponse.Status, _ kind: String, _ message: String, rejection: RejectionReason? = nil) {
        self.status = status
        self.kind = kind
        self.message = message
        self.rejection = rejection
    }

    /// A 503 that asks the client to come back in `retryAfter` seconds.
    static func unavailable(_ kind: String, _ message: String, rejection: RejectionReason, retryAfter: Int)
        -> ServerFailure
    {
        var failure = ServerFailure(.serviceUnavailable, kind, message, rejection: rejection)
        failure.headers[.retryAfter] = String(retryAfter)
        return failure
    }

    /// The answer for a SharePipe error about the whole input or one service.
    static func from(_ error: SharePipeError, queueTimeout: Duration) -> ServerFailure {
        switch error {
        // A codec library this server lacks (libheif or libavif not installed) is the operator's to mend, not
        // the client's: 501, the server lacks the capability (415 would tell the client to send another file).
        case .unsupportedFormat(_, .library, _):
            return ServerFailure(.notImplemented, error.kind, error.description)
        case .unsupportedFormat: return ServerFailure(.unsupportedMediaType, error.kind, error.description)
        case .tooLarge: return ServerFailure(.contentTooLarge, error.kind, error.description)
        // A job past --job-timeout: the upload costs more than the server gives one job; the same upload would
        // end the same way, so 422 (not 503, which asks to retry).
        case .corrupt, .cannotMeetLimit, .timedOut:
            return ServerFailure(.unprocessableContent, error.kind, error.description)
        case .unreadable: return ServerFailure(.badRequest, error.kind, error.description)
        case .invalidOptions(let invalid):
            return ServerFailure(.badRequest, error.kind, QueryOptions.message(for: invalid))
        case .cancelled:
            return .unavailable(
                "draining", "the server is shutting down: the job was cancelled", rejection: .draining, retryAfter: 5)
        case .overloaded(_, .queueFull):
            return .unavailable(error.kind, error.description, rejection: .queueFull, retryAfter: 1)
        case .overloaded(_, .waitTimedOut):
            return .unavailable(
                error.kind, error.description, rejection: .queueTimeout,
                retryAfter: max(1, Int(SharePipeServer.seconds(queueTimeout) / 4)))
        // SharePipe's own failures, never the upload's: kinds unwritable, encodingFailed, internal.
        case .unwritable, .encodingFailed, .internalError:
            return ServerFailure(.internalServerError, error.kind, error.description)
        }
    }

    /// The JSON body.
    func body(requestID: String) -> String {
        "{\"error\":{\"status\":\(status.code),\"kind\":\(JSONLogHandler.quoted(kind)),"
            + "\"message\":\(JSONLogHandler.quoted(message))},\"request_id\":\(JSONLogHandler.quoted(requestID))}\n"
    }

    func response(requestID: String) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        let text = body(requestID: requestID)
        fields[.contentLength] = String(text.utf8.count)
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}

/// A route's answer, with what the metrics and the log need.
struct Routed {
    var response: Response
    /// The `service` label: the services asked for (`x`, `x+bluesky`), `unknown`, or empty.
    var service = ""
    /// The failure behind a non-2xx answer, for the log.
    var failure: ServerFailure?
}

extension HTTPField.Name {
    static let xRequestID = Self("X-Request-Id")!
    static let sharePipeService = Self("X-SharePipe-Service")!
    static let sharePipeWidth = Self("X-SharePipe-Width")!
    static let sharePipeHeight = Self("X-SharePipe-Height")!
    static let sharePipeQuality = Self("X-SharePipe-Quality")!
    static let sharePipeScore = Self("X-SharePipe-Score")!
    static let sharePipeFormat = Self("X-SharePipe-Format")!
    static let sharePipeRemoved = Self("X-SharePipe-Removed")!
    static let sharePipeChanged = Self("X-SharePipe-Changed")!
    static let sharePipeStatus = Self("X-SharePipe-Status")!
    static let sharePipeBlurHash = Self("X-SharePipe-BlurHash")!
    static let sharePipeThumbHash = Self("X-SharePipe-ThumbHash")!
    /// The variant a part of a `multipart/mixed` answer holds (`variant=`); absent on the main output's part.
    static let sharePipeVariant = Self("X-SharePipe-Variant")!
    static let contentDisposition = Self("Content-Disposition")!
    static let sharePipeFocus = Self("X-SharePipe-Focus")!
}

/// The server's responder: dispatch by path and method (through `routes`, the one table of routes), the
/// token, the request id, the metrics and one log line per request.
public struct ServerResponder: HTTPResponder {
    public typealias Context = ServerRequestContext
    let server: SharePipeServer

    public func respond(to request: Request, context: Context) async throws -> Response {
        var context = context
        let id = Self.requestID(request) ?? context.id
        context.logger[metadataKey: "hb.request.id"] = .string(id)
        let start = ContinuousClock.now
        let path = request.uri.path
        let route = Self.routesByPath[path]
        var routed = await SharePipeServer.$requestID.withValue(id) {
            await self.route(request, path: path, context: context, id: id)
        }
        routed.response.headers[.xRequestID] = id
        let status = routed.response.status.code
        server.metrics.countRequest(route: route?.path ?? "other", status: status, service: routed.service)
        if let bytes = routed.response.body.contentLength { server.metrics.countResponseBody(bytes) }
        if let reason = routed.failure?.rejection { server.metrics.countRejection(reason) }
        var metadata: Logger.Metadata = [
            "method": .string(request.method.rawValue), "path": .string(path), "status": .stringConvertible(status),
            "duration_ms": .stringConvertible(Int(SharePipeServer.seconds(ContinuousClock.now - start) * 1000)),
        ]
        if !routed.service.isEmpty { metadata["service"] = .string(routed.service) }
        if let failure = routed.failure {
            metadata["error_kind"] = .string(failure.kind)
            metadata["error"] = .string(failure.message)
        }
        context.logger.log(level: route?.logLevel ?? .info, "request", metadata: metadata)
        return routed.response
    }

    /// A client's own `X-Request-Id` when it is short and plain (letters, digits, `-`, `_`, `.`), else nil.
    static func requestID(_ request: Request) -> String? {
        guard let given = request.headers[.xRequestID], (1...128).contains(given.utf8.count),
            given.utf8.allSatisfy({
                $0 == 45 || $0 == 46 || $0 == 95 || (48...57).contains($0) || (65...90).contains($0)
                    || (97...122).contains($0)
            })
        else { return nil }
        return given
    }

    private func route(_ request: Request, path: String, context: Context, id: String) async -> Routed {
        let call = RouteCall(server: server, request: request, context: context, id: id)
        guard let route = Self.routesByPath[path] else {
            return call.failed(ServerFailure(.notFound, "notFound", "no route \(path); see /v1/openapi.json"))
        }
        guard let operation = route.operations.first(where: { $0.method == request.method }) else {
            var failure = ServerFailure(
                .methodNotAllowed, "methodNotAllowed",
                "\(path) takes \(route.methods.map(\.rawValue).joined(separator: " or ")) only, not \(request.method)")
            failure.headers[.allow] = route.allowHeader
            return call.failed(failure)
        }
        if route.access == .token, let token = server.configuration.token,
            !Self.authorized(request.headers[.authorization], token: token)
        {
            var failure = ServerFailure(
                .unauthorized, "unauthorized", "a bearer token is required: Authorization: Bearer TOKEN",
                rejection: .unauthorized)
            failure.headers[.wwwAuthenticate] = "Bearer"
            return call.failed(failure)
        }
        return await operation.handle(call)
    }

    /// Whether `header` is `Bearer <token>`, compared in constant time (every byte is looked at, whatever
    /// the first difference).
    public static func authorized(_ header: String?, token: String) -> Bool {
        guard let header, header.count > 7, header.prefix(7).lowercased() == "bearer " else { return false }
        let given = Array(header.utf8.dropFirst(7)), expected = Array(token.utf8)
        var difference = UInt8(given.count == expected.count ? 0 : 1)
        for index in 0..<max(given.count, expected.count) {
            let a = index < given.count ? given[index] : 0
            let b = index < expected.count ? expected[index] : 0
            difference |= a ^ b
        }
        return difference == 0
    }

    /// The profiles as `sharepipe services --json` prints them.
    static func servicesJSON(_ profiles: [ServiceProfile]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(profiles) else { return "[]\n" }
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    static func text(_ text: String, type: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.contentLength] = String(text.utf8.count)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
