import Foundation
import Hummingbird
import Logging
import NIOCore
import PostingService
import ServiceLifecycle
import SharePipe
import Testing

/// The example server, live on 127.0.0.1 (an ephemeral port): real images posted over loopback.
@Suite struct PostingServerTests {
    /// The repository's test images (…/Examples/PostingServer/Tests/PostingServiceTests/ → five levels up).
    static let testImages: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<5 { url.deleteLastPathComponent() }
        return url.path + "/TestImages/"
    }()

    @Test func postsALargePhotoAndGetsBackAStrippedDownscaledJPEG() async throws {
        let photo = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Self.testImages + "jpeg/large-4000x3000.jpg")))
        let original = try SharePipe.inspect(.bytes(photo))
        #expect(original.metadataKinds.contains(.gps), "the fixture carries GPS, so its absence below means something")

        let response = try await Self.withLiveServer { port in
            try await LoopbackHTTP.post(port: port, path: "/prepare?service=x", contentType: "image/jpeg", body: photo)
        }
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        #expect(response.headers["content-type"] == "image/jpeg")
        #expect(response.headers["content-length"] == String(response.body.count))
        #expect(response.headers["x-sharepipe-width"] == "1440" && response.headers["x-sharepipe-height"] == "1080")

        // What came back is a whole JPEG of the right size, with no Exif (so no GPS) left in it.
        let info = try SharePipe.inspect(.bytes(response.body))
        #expect(info.format == .jpeg)
        #expect(info.size == PixelSize(width: 1440, height: 1080))
        #expect(info.metadataKinds.isDisjoint(with: [.exif, .gps, .xmp, .iptc, .comment]), "\(info.metadataKinds)")
        #expect(response.body.count <= ServiceProfile.x.maxStillBytes)
        // Decoding every scanline (a 1/4-size re-preparation) proves the data is whole, not just the header.
        let decoded = try await SharePipe.prepare(.bytes(response.body), options: PrepareOptions(maxShortEdge: 270))
        #expect(decoded.size == PixelSize(width: 360, height: 270))
    }

    @Test func refusesAnUnknownServiceAndSomethingThatIsNotAnImage() async throws {
        let responses = try await Self.withLiveServer { port in
            [
                try await LoopbackHTTP.post(port: port, path: "/prepare?service=myspace", contentType: "image/jpeg",
                                            body: [0xFF, 0xD8, 0xFF]),
                try await LoopbackHTTP.post(port: port, path: "/prepare?service=x", contentType: "text/plain",
                                            body: Array("not an image at all".utf8)),
            ]
        }
        #expect(responses.map(\.status) == [400, 415])
    }

    @Test func anEmptyBodyIs400AndAnotherMethodIs405() async throws {
        let responses = try await Self.withLiveServer { port in
            [
                try await LoopbackHTTP.request(port: port, method: "POST", path: "/prepare?service=x", contentType: "image/jpeg", body: []),
                try await LoopbackHTTP.request(port: port, method: "GET", path: "/prepare?service=x"),
                try await LoopbackHTTP.request(port: port, method: "PUT", path: "/prepare?service=x", contentType: "image/jpeg",
                                            body: [0xFF, 0xD8]),
                try await LoopbackHTTP.request(port: port, method: "POST", path: "/health", contentType: "text/plain", body: [1]),
            ]
        }
        #expect(responses.map(\.status) == [400, 405, 405, 405])
        #expect(String(decoding: responses[0].body, as: UTF8.self).contains("body is empty"))
        #expect(responses[1].headers["allow"] == "POST")
        #expect(responses[2].headers["allow"] == "POST")
        #expect(responses[3].headers["allow"] == "GET, HEAD")
    }

    @Test func saysInAHeaderWhenTheImageWasChangedBeyondTheRequest() async throws {
        // Bluesky takes stills in JPEG or PNG only: an animated GIF comes back as its first frame, in PNG.
        let gif = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Self.testImages + "gif/disposals.gif")))
        let photo = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Self.testImages + "jpeg/orient-6.jpg")))
        let responses = try await Self.withLiveServer { port in
            [
                try await LoopbackHTTP.post(port: port, path: "/prepare?service=bluesky", contentType: "image/gif", body: gif),
                try await LoopbackHTTP.post(port: port, path: "/prepare?service=bluesky", contentType: "image/jpeg", body: photo),
            ]
        }
        #expect(responses.map(\.status) == [200, 200])
        #expect(responses[0].headers["content-type"] == "image/png")
        #expect(responses[0].headers["x-sharepipe-changed"] == "format=gif->png, first-frame-only")
        #expect(try SharePipe.inspect(.bytes(responses[0].body)).frameCount == 1)
        // A rotated, stripped, same-format photo is what was asked for: no header.
        #expect(responses[1].headers["x-sharepipe-changed"] == nil)
    }

    @Test func everyLogLineOfARequestCarriesItsID() async throws {
        let lines = LogCapture()
        var logger = Logger(label: "PostingServerTests") { _ in lines.handler }
        logger.logLevel = .info
        let photo = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Self.testImages + "jpeg/orient-1.jpg")))
        let statuses = try await Self.withLiveServer(logger: logger) { port in
            [
                try await LoopbackHTTP.post(port: port, path: "/prepare?service=x", contentType: "image/jpeg", body: photo).status,
                try await LoopbackHTTP.post(port: port, path: "/prepare?service=x", contentType: "text/plain",
                                            body: Array("not an image".utf8)).status,
            ]
        }
        #expect(statuses == [200, 415])
        let jobLines = lines.entries.filter { $0.message.hasPrefix("job ") }
        #expect(jobLines.count == 2, "\(lines.entries.map(\.message))")
        let ids = jobLines.compactMap { $0.metadata["hb.request.id"].map { "\($0)" } }
        #expect(ids.count == 2 && Set(ids).count == 2, "\(jobLines.map(\.metadata))")
        // Hummingbird's own lines for the requests carry the same ids.
        let requestLines = lines.entries.filter { $0.metadata["hb.request.id"] != nil }
        #expect(Set(requestLines.compactMap { $0.metadata["hb.request.id"].map { "\($0)" } }) == Set(ids))
    }

    @Test func takesHostPortAndBudgetFromOptionsOverTheEnvironment() throws {
        let defaults = try PostingServerConfiguration(arguments: [], environment: [:])
        #expect(defaults.host == "127.0.0.1" && defaults.port == 8080 && defaults.pipeline.memoryBudget == 512 << 20)
        let fromEnvironment = try PostingServerConfiguration(
            arguments: [], environment: ["POSTING_SERVER_HOST": "0.0.0.0", "POSTING_SERVER_PORT": "9000",
                                         "POSTING_SERVER_BUDGET_MIB": "256"])
        #expect(fromEnvironment.host == "0.0.0.0" && fromEnvironment.port == 9000
                && fromEnvironment.pipeline.memoryBudget == 256 << 20)
        let fromOptions = try PostingServerConfiguration(
            arguments: ["--host", "::1", "--port=0", "--budget-mib", "64"],
            environment: ["POSTING_SERVER_HOST": "0.0.0.0", "POSTING_SERVER_PORT": "9000"])
        #expect(fromOptions.host == "::1" && fromOptions.port == 0 && fromOptions.pipeline.memoryBudget == 64 << 20)
        #expect(throws: PostingServerConfiguration.UsageError.self) {
            try PostingServerConfiguration(arguments: ["--port", "70000"], environment: [:])
        }
        #expect(throws: PostingServerConfiguration.UsageError.self) {
            try PostingServerConfiguration(arguments: [], environment: ["POSTING_SERVER_PORT": "http"])
        }
        #expect(throws: PostingServerConfiguration.UsageError.self) {
            try PostingServerConfiguration(arguments: ["8080"], environment: [:])
        }
    }

    // MARK: - Harness

    /// Starts the server on 127.0.0.1, port 0, runs `body` with the port it got, then shuts it down gracefully.
    static func withLiveServer<T: Sendable>(logger: Logger? = nil,
                                            _ body: @escaping @Sendable (Int) async throws -> T) async throws -> T {
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let logger = logger ?? {
            var logger = Logger(label: "PostingServerTests")
            logger.logLevel = .warning
            return logger
        }()
        let app = try PostingServer.application(PostingServerConfiguration(port: 0), logger: logger) { channel in
            portSink.yield(channel.localAddress?.port ?? -1)
            portSink.finish()
        }
        let services = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await services.run() }
            do {
                var iterator = ports.makeAsyncIterator()
                guard let port = await iterator.next(), port > 0 else { throw LoopbackHTTP.Failure("the server did not start") }
                let value = try await body(port)
                await services.triggerGracefulShutdown()
                try await group.waitForAll()
                return value
            } catch {
                await services.triggerGracefulShutdown()
                throw error
            }
        }
    }
}

/// A minimal HTTP/1.1 client over a loopback TCP socket (`Connection: close`, body read to the end).
/// Enough for the test, and it keeps AsyncHTTPClient (and with it BoringSSL) out of the build.
enum LoopbackHTTP {
    struct Response: Sendable {
        var status: Int
        /// Header names in lower case.
        var headers: [String: String]
        var body: [UInt8]
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Posts `body` to 127.0.0.1:`port`; the blocking socket work runs on a Dispatch thread.
    static func post(port: Int, path: String, contentType: String, body: [UInt8]) async throws -> Response {
        try await request(port: port, method: "POST", path: path, contentType: contentType, body: body)
    }

    /// Sends a request with any method (a body only when `contentType` is given).
    static func request(port: Int, method: String, path: String, contentType: String? = nil, body: [UInt8] = []) async throws -> Response {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    try exchange(port: port, method: method, path: path, contentType: contentType, body: body)
                })
            }
        }
    }

    private static func exchange(port: Int, method: String, path: String, contentType: String?, body: [UInt8]) throws -> Response {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure("socket: \(String(cString: strerror(errno)))") }
        defer { close(socket) }
        var timeout = timeval(tv_sec: 120, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure("connect: \(String(cString: strerror(errno)))") }

        let content = contentType.map { "Content-Type: \($0)\r\nContent-Length: \(body.count)\r\n" } ?? ""
        let head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\(content)Connection: close\r\n\r\n"
        try sendAll(Array(head.utf8), on: socket)
        try sendAll(body, on: socket)

        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count < 0 { throw Failure("recv: \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            received += buffer[0..<count]
        }
        return try parse(received)
    }

    private static func sendAll(_ bytes: [UInt8], on socket: Int32) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { send(socket, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent < 0 { throw Failure("send: \(String(cString: strerror(errno)))") }
            offset += sent
        }
    }

    /// Status line, headers, and the body (by Content-Length, or chunked).
    private static func parse(_ bytes: [UInt8]) throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0...(bytes.count - 4)).first(where: { bytes[$0..<$0 + 4].elementsEqual(separator) }) else {
            throw Failure("no end of headers in \(bytes.count) bytes")
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure("bad status line \(lines[0])") }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(bytes[(end + 4)...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = try dechunk(body) }
        return Response(status: status, headers: headers, body: body)
    }

    private static func dechunk(_ bytes: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            guard let lineEnd = (index..<(bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }),
                  let size = Int(String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";")[0], radix: 16)
            else { throw Failure("bad chunk header") }
            if size == 0 { break }
            out += bytes[(lineEnd + 2)..<(lineEnd + 2 + size)]
            index = lineEnd + 2 + size + 2
        }
        return out
    }
}

/// Every log entry (message and merged metadata, the metadata provider's included), kept for the tests.
final class LogCapture: @unchecked Sendable {
    struct Entry { var message: String; var metadata: Logger.Metadata }
    private let lock = NSLock()
    private var stored: [Entry] = []

    var entries: [Entry] { lock.withLock { stored } }
    func append(_ entry: Entry) { lock.withLock { stored.append(entry) } }

    /// A handler writing here. A value, as `LogHandler`s must be: a logger's metadata changes stay its own.
    var handler: Handler { Handler(capture: self) }

    struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info
        var metadataProvider: Logger.MetadataProvider?

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var merged = metadata
            if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
            if let own = event.metadata { merged.merge(own) { _, new in new } }
            capture.append(Entry(message: "\(event.message)", metadata: merged))
        }
    }
}
