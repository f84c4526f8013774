import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Answers a request that the HTTP parser refused (a malformed `Content-Length`, a broken request line or
/// header, a method it does not recognize, headers over the size limit) as every other error is answered: the JSON error body with
/// `Content-Type`, `X-Request-Id`, a log line and a count in `sharepipe_requests_total` (route `other`).
/// Left to Hummingbird, such a request gets a bare `400` with an empty body.
///
/// It sits in each connection's pipeline after the HTTP codec. A parse error while no request is open (its
/// head did not parse) is answered here and the connection is closed after the answer; a parse error in the
/// body of a request being answered (a broken chunk) goes on to the route reading that body, which answers
/// it (`unreadable`).
final class MalformedRequestAnswer: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let server: SharePipeServer
    /// A request's head came in and its answer has not ended yet.
    private var requestOpen = false
    /// A malformed request was answered: the connection is closing.
    private var answered = false

    init(server: SharePipeServer) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { requestOpen = true }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { requestOpen = false }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parseError = error as? HTTPParserError, !requestOpen else {
            context.fireErrorCaught(error)
            return
        }
        // The parser stops at its first error: one answer per connection.
        if answered { return }
        answered = true
        let failure = Self.failure(for: parseError)
        let id = RequestID().description
        var response = HTTPResponse(status: failure.status, headerFields: failure.headers)
        let body = failure.body(requestID: id)
        response.headerFields[.contentType] = "application/json"
        response.headerFields[.contentLength] = String(body.utf8.count)
        response.headerFields[.xRequestID] = id
        response.headerFields[.connection] = "close"
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        context.write(wrapOutboundOut(.body(ByteBuffer(string: body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        PrepareRoute.closeAfterAnswer(context.channel)

        server.metrics.countRequest(route: "other", status: Int(failure.status.code), service: "")
        server.metrics.countResponseBody(body.utf8.count)
        server.logger.info(
            "request",
            metadata: [
                "request_id": .string(id), "status": .stringConvertible(failure.status.code),
                "error_kind": .string(failure.kind), "error": .string(failure.message),
            ])
    }

    /// The answer to a request the parser refused: `501` for a method it does not recognize (as RFC 9110
    /// says; a method it knows that a route does not take is the route's `405`), `431` for headers over its
    /// limit, else `400`.
    static func failure(for error: HTTPParserError) -> ServerFailure {
        switch error {
        case .invalidMethod:
            var methods: [String] = []
            for method in ServerResponder.routes.flatMap(\.methods).map(\.rawValue) where !methods.contains(method) {
                methods.append(method)
            }
            return ServerFailure(
                .notImplemented, "unknownMethod",
                "the request's method is not one the server recognizes; its routes take "
                    + methods.joined(separator: " or ") + " (see /v1/openapi.json)")
        case .headerOverflow:
            return ServerFailure(
                .requestHeaderFieldsTooLarge, "headersTooLarge",
                "the request's headers are over the server's limit (80 KiB)")
        default:
            return ServerFailure(
                .badRequest, "malformedRequest", "the request is not valid HTTP/1.1: \(error.debugDescription)")
        }
    }
}
