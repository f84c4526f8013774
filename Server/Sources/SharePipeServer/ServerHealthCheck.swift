#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `sharepipe-server --health-check`: GET /healthz from the server the same settings describe, so a container
/// image needs no curl for its health check. A wildcard listening address is asked on loopback.
public enum ServerHealthCheck {
    /// Whether the server answered `GET /healthz` with 200 within `timeoutSeconds`; else why not, in
    /// `failure`.
    public static func check(_ configuration: ServerConfiguration, timeoutSeconds: Int = 5) -> (
        healthy: Bool, failure: String
    ) {
        let host: String
        switch configuration.host {
        case "0.0.0.0", "": host = "127.0.0.1"
        case "::", "[::]": host = "::1"
        default:
            host =
                configuration.host.hasPrefix("[")
                ? String(configuration.host.dropFirst().dropLast()) : configuration.host
        }
        let port = configuration.port
        guard port > 0 else { return (false, "the port is 0 (any free port): give the port the server listens on") }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let first = list else {
            return (false, "cannot resolve \(host): \(String(cString: gai_strerror(resolved)))")
        }
        defer { freeaddrinfo(list) }
        var failure = "cannot connect to \(host):\(port)"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            entry = address.pointee.ai_next
            let descriptor = socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
            guard descriptor >= 0 else { continue }
            defer { close(descriptor) }
            var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            guard connect(descriptor, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 else {
                failure = "cannot connect to \(host):\(port): \(String(cString: strerror(errno)))"
                continue
            }
            var request = "GET /healthz HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n"
            if let token = configuration.token { request += "Authorization: Bearer \(token)\r\n" }
            request += "\r\n"
            let sent = request.utf8CString.withUnsafeBufferPointer { send(descriptor, $0.baseAddress, $0.count - 1, 0) }
            guard sent == request.utf8.count else { return (false, "cannot send the request to \(host):\(port)") }
            var answer: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 512)
            while answer.count < 64 {
                let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                answer += buffer[0..<count]
            }
            let statusLine = String(decoding: answer.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self)
            if statusLine.hasPrefix("HTTP/1.1 200") || statusLine.hasPrefix("HTTP/1.0 200") { return (true, "") }
            return (false, "GET /healthz on \(host):\(port) answered \"\(statusLine)\"")
        }
        return (false, failure)
    }
}
