#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Logging
import NIOConcurrencyHelpers

/// Writes one JSON object per line to standard error: `ts` (UTC, milliseconds), `level`, `message`, then the
/// metadata as strings. Hummingbird's `hb.request.id` is written `request_id` (as every `hb.` key loses its
/// prefix and dots become underscores), so every line about a request, SharePipe's included, carries it.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    public var metadataProvider: Logger.MetadataProvider?
    private let write: @Sendable (String) -> Void

    /// A handler writing to standard error (or to `write`, for the tests).
    public init(
        level: Logger.Level, metadataProvider: Logger.MetadataProvider? = nil,
        write: (@Sendable (String) -> Void)? = nil
    ) {
        self.logLevel = level
        self.metadataProvider = metadataProvider
        self.write = write ?? JSONLogHandler.standardError
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        var line = "{\"ts\":\(Self.quoted(Self.timestamp())),\"level\":\(Self.quoted(event.level.rawValue))"
        line += ",\"message\":\(Self.quoted("\(event.message)"))"
        var written: Set<String> = ["ts", "level", "message"]
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            let name = Self.fieldName(key)
            guard written.insert(name).inserted else { continue }
            line += ",\(Self.quoted(name)):\(Self.json(value))"
        }
        line += "}\n"
        write(line)
    }

    /// `hb.request.id` → `request_id`; other keys keep their name with dots as underscores.
    static func fieldName(_ key: String) -> String {
        let bare = key.hasPrefix("hb.") ? String(key.dropFirst(3)) : key
        return bare.replacing(".", with: "_")
    }

    static func json(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text): return quoted(text)
        case .stringConvertible(let value):
            // Numbers stay numbers ("port":8080), so a script reads them without converting.
            if value is Int || value is Bool { return value.description }
            if let number = value as? Double, number.isFinite { return value.description }
            return quoted(value.description)
        case .array(let values): return "[" + values.map(json).joined(separator: ",") + "]"
        case .dictionary(let entries):
            return "{"
                + entries.sorted(by: { $0.key < $1.key }).map { "\(quoted($0.key)):\(json($0.value))" }
                .joined(separator: ",") + "}"
        }
    }

    /// A JSON string literal.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// "2026-11-26T11:29:08.123Z".
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let milliseconds = Int(now.tv_nsec / 1_000_000)
        let millis =
            milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(millis)Z"
    }

    private static let lock = NIOLock()

    /// Writes the whole line with one `write(2)` (under a lock, so lines never interleave).
    static let standardError: @Sendable (String) -> Void = { line in
        JSONLogHandler.lock.withLock {
            let bytes = Array(line.utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress! + offset, $0.count - offset) }
                if written <= 0 { if errno == EINTR { continue } else { return } }
                offset += written
            }
        }
    }
}
