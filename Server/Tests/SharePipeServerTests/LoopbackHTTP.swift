import Foundation

/// A minimal HTTP/1.1 client over a loopback TCP socket: enough for the tests (a body sent whole, chunked,
/// slowly, or cut off; the answer read to the end of the connection), and it keeps AsyncHTTPClient (and
/// with it BoringSSL) out of the build. The blocking socket work runs on a thread of its own (`onThread`).
enum LoopbackHTTP {
    struct Response: Sendable {
        var status: Int
        /// Header names in lower case.
        var headers: [String: String]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }

        /// The JSON body as a dictionary (empty when it is not one).
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
        /// `error.kind` and `error.message` of a JSON error body.
        var errorKind: String? { (json["error"] as? [String: Any])?["kind"] as? String }
        var errorMessage: String { (json["error"] as? [String: Any])?["message"] as? String ?? "" }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Sends a request and reads the answer. `body` nil sends no body and no Content-Length.
    static func request(
        port: Int, method: String = "GET", path: String, headers: [(String, String)] = [],
        body: [UInt8]? = nil
    ) async throws -> Response {
        try await onThread {
            let socket = try Socket(port: port)
            defer { socket.close() }
            var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            if let body { head += "Content-Length: \(body.count)\r\n" }
            try socket.send(Array((head + "\r\n").utf8))
            if let body { try socket.send(body) }
            return try parse(socket.receiveAll())
        }
    }

    /// Sends `bytes` as they are (a request the parser may refuse) and reads the answer.
    static func raw(port: Int, _ bytes: [UInt8]) async throws -> Response {
        try await onThread {
            let socket = try Socket(port: port)
            defer { socket.close() }
            try socket.send(bytes)
            return try parse(socket.receiveAll())
        }
    }

    /// Posts `body` with `Transfer-Encoding: chunked`, in chunks of `chunkSize` bytes.
    static func postChunked(
        port: Int, path: String, headers: [(String, String)] = [], body: [UInt8],
        chunkSize: Int = 65536
    ) async throws -> Response {
        try await onThread {
            let socket = try Socket(port: port)
            defer { socket.close() }
            var head =
                "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            try socket.send(Array((head + "\r\n").utf8))
            var offset = 0
            do {
                while offset < body.count {
                    let end = min(offset + chunkSize, body.count)
                    try socket.send(
                        Array("\(String(end - offset, radix: 16))\r\n".utf8) + body[offset..<end] + [13, 10])
                    offset = end
                }
                try socket.send(Array("0\r\n\r\n".utf8))
            } catch {
                // The server may answer (413) and close before the whole body is sent: read what it said.
            }
            return try parse(socket.receiveAll())
        }
    }

    /// Waits for a child process to exit without blocking a thread of the Swift concurrency pool.
    static func waitUntilExit(_ process: Process) async {
        _ = try? await onThread { process.waitUntilExit() }
    }

    /// Runs blocking socket work on a thread of its own. Not on Dispatch's global queue: its few threads
    /// (about one per core) were all blocked in other tests' socket reads in parallel runs, and a quick
    /// request (a /metrics poll, a child's exit) then waited seconds for a thread: the SIGTERM test's
    /// "the job was not seen running" flake, and drain timings of 11 s instead of 0.1 s.
    static func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread { continuation.resume(with: Result { try work() }) }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// A connected loopback socket.
    final class Socket: @unchecked Sendable {
        let descriptor: Int32

        init(port: Int, receiveTimeout: Int = 120) throws {
            descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { throw Failure("socket: \(String(cString: strerror(errno)))") }
            var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else {
                Glibc.close(descriptor)
                throw Failure("connect: \(String(cString: strerror(errno)))")
            }
        }

        func send(_ bytes: [UInt8]) throws {
            var offset = 0
            while offset < bytes.count {
                let sent = bytes.withUnsafeBytes {
                    Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
                }
                if sent < 0 { throw Failure("send: \(String(cString: strerror(errno)))") }
                offset += sent
            }
        }

        /// Reads until the server closes the connection (or resets it after answering).
        func receiveAll() throws -> [UInt8] {
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if count < 0 {
                    if errno == ECONNRESET && !received.isEmpty { break }
                    throw Failure("recv: \(String(cString: strerror(errno)))")
                }
                if count == 0 { break }
                received += buffer[0..<count]
            }
            return received
        }

        func close() { Glibc.close(descriptor) }

        /// Closes with a reset (SO_LINGER 0), as a killed client: unread answers are dropped.
        func reset() {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            Glibc.close(descriptor)
        }
    }

    /// Status line, headers, and the body (by Content-Length, or chunked).
    static func parse(_ bytes: [UInt8]) throws -> Response {
        guard bytes.count >= 4,
            let end = (0...(bytes.count - 4)).first(where: { bytes[$0..<$0 + 4].elementsEqual([13, 10, 13, 10]) })
        else {
            throw Failure("no end of headers in \(bytes.count) bytes")
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw Failure("bad status line \(lines[0])")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
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
                let size = Int(
                    String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";")[0], radix: 16)
            else { throw Failure("bad chunk header") }
            if size == 0 { break }
            out += bytes[(lineEnd + 2)..<(lineEnd + 2 + size)]
            index = lineEnd + 2 + size + 2
        }
        return out
    }

    /// The parts of a `multipart/mixed` (or form-data) body: each part's headers (lower-case names) and content.
    static func parts(of body: [UInt8], boundary: String) throws -> [(headers: [String: String], content: [UInt8])] {
        let delimiter = Array("--\(boundary)".utf8)
        var starts: [Int] = []
        var index = 0
        while index + delimiter.count <= body.count {
            if body[index..<index + delimiter.count].elementsEqual(delimiter) {
                starts.append(index); index += delimiter.count
            } else {
                index += 1
            }
        }
        guard starts.count >= 2 else { throw Failure("fewer than two delimiters") }
        guard
            body[starts.last! + delimiter.count..<min(body.count, starts.last! + delimiter.count + 2)].elementsEqual([
                45, 45,
            ])
        else {
            throw Failure("no close delimiter")
        }
        var parts: [(headers: [String: String], content: [UInt8])] = []
        for (start, next) in zip(starts, starts.dropFirst()) {
            let partStart = start + delimiter.count + 2  // CRLF after the delimiter
            let partEnd = next - 2  // CRLF before the next delimiter
            let part = Array(body[partStart..<partEnd])
            let parsed = try parse(Array("HTTP/1.1 200 OK\r\n".utf8) + part)
            parts.append((parsed.headers, parsed.body))
        }
        return parts
    }
}
