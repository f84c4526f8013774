import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// One route of the server, declared once: its path, the handler of each method it takes, whether it needs
/// the token and how its requests are logged. Dispatch, `404`, `405` with `Allow`, the token check and the
/// `route` label of the metrics all follow from `ServerResponder.routes`; a test checks that the OpenAPI
/// document (`Server/openapi.json`) describes the same paths, methods, operation ids and security.
public struct Route: Sendable {
    /// Who may call a route.
    public enum Access: Sendable {
        /// Needs `Authorization: Bearer TOKEN` when the server has a token.
        case token
        /// Open to anyone (the probes).
        case open
    }

    /// One method of the route and its handler.
    public struct Operation: Sendable {
        /// The HTTP method.
        public let method: HTTPRequest.Method
        /// The operation's `operationId` in the OpenAPI document.
        public let operationID: String
        let handle: @Sendable (RouteCall) async -> Routed
    }

    /// The path, matched exactly (no parameters).
    public let path: String
    /// The methods the route takes, with their handlers.
    public let operations: [Operation]
    /// Whether the route needs the token.
    public let access: Access
    /// The level of the route's request log lines: probes and scrapes are frequent (debug), the API's
    /// requests are not (info).
    public let logLevel: Logger.Level

    /// The methods the route takes, in declaration order.
    public var methods: [HTTPRequest.Method] { operations.map(\.method) }

    /// The value of `Allow` on a `405`: the route's methods.
    public var allowHeader: String { methods.map(\.rawValue).joined(separator: ", ") }

    init(
        _ path: String, _ method: HTTPRequest.Method, operationID: String, access: Access = .token,
        logLevel: Logger.Level = .info, handle: @escaping @Sendable (RouteCall) async -> Routed
    ) {
        self.path = path
        self.operations = [Operation(method: method, operationID: operationID, handle: handle)]
        self.access = access
        self.logLevel = logLevel
    }
}

/// What a route's handler gets: the server, the request and its id.
struct RouteCall: Sendable {
    let server: SharePipeServer
    let request: Request
    let context: ServerRequestContext
    let id: String

    /// The answer for a failure, with the failure kept for the log and the metrics.
    func failed(_ failure: ServerFailure, service: String = "") -> Routed {
        Routed(response: failure.response(requestID: id), service: service, failure: failure)
    }
}

extension ServerResponder {
    /// Every route of the server.
    public static let routes: [Route] = [
        Route("/v1/prepare", .post, operationID: "prepare") { call in
            await PrepareRoute(server: call.server, request: call.request, context: call.context, id: call.id)
                .respond()
        },
        Route("/v1/services", .get, operationID: "services") { call in
            Routed(response: text(servicesJSON(call.server.catalog.profiles), type: "application/json"))
        },
        Route("/healthz", .get, operationID: "health", access: .open, logLevel: .debug) { _ in
            Routed(response: text("{\"status\":\"ok\"}\n", type: "application/json"))
        },
        Route("/readyz", .get, operationID: "ready", access: .open, logLevel: .debug) { call in
            await ready(call)
        },
        Route("/metrics", .get, operationID: "metrics", logLevel: .debug) { call in
            await metrics(call.server)
        },
        Route("/v1/openapi.json", .get, operationID: "openapi") { _ in
            Routed(response: text(OpenAPIDocument.text, type: "application/json"))
        },
    ]

    /// The routes by path.
    static let routesByPath = Dictionary(uniqueKeysWithValues: routes.map { ($0.path, $0) })

    /// `GET /readyz`: 503 while draining or while the queue is full.
    private static func ready(_ call: RouteCall) async -> Routed {
        let server = call.server
        if server.isDraining {
            return call.failed(
                .unavailable("draining", "the server is shutting down", rejection: .draining, retryAfter: 5))
        }
        let usage = await server.pipeline.budget.usage
        if usage.waitingRequests >= max(1, server.configuration.queueLength) {
            var failure = ServerFailure(
                .serviceUnavailable, "queueFull", "the queue is full (\(usage.waitingRequests) waiting)")
            failure.headers[.retryAfter] = "1"
            return call.failed(failure)
        }
        return Routed(response: text("{\"status\":\"ready\"}\n", type: "application/json"))
    }

    /// `GET /metrics`: the counters and the gauges of the moment.
    private static func metrics(_ server: SharePipeServer) async -> Routed {
        let resident = ProcessMemory.resident()
        let gauges = ServerMetrics.Gauges(
            budget: await server.pipeline.budget.usage, capacity: server.pipeline.budget.capacity,
            spoolFiles: server.spool.fileCount(), residentBytes: resident.current, peakResidentBytes: resident.peak,
            sandbox: server.sandbox)
        return Routed(
            response: text(server.metrics.exposition(gauges), type: "text/plain; version=0.0.4; charset=utf-8"))
    }
}
