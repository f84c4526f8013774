// The server's multipart reading, pure Swift with no dependency (no SwiftNIO, no Hummingbird): a target of its own
// so the fuzz package can compile it alone (Fuzz/Sources/FuzzMultipart).

/// `multipart/form-data` in (the `file` part, streamed) and `multipart/mixed` out (one part per service).
package enum Multipart {
    /// The `boundary` parameter of a `multipart/…` media type; nil when it is missing or not valid (RFC 2046:
    /// 1 to 70 characters).
    package static func boundary(ofContentType contentType: String) -> String? {
        let parameters = contentType.split(separator: ";").dropFirst()
        for parameter in parameters {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmed(" \t").lowercased() == "boundary" else { continue }
            var value = pair[1].trimmed(" \t")
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                value = String(value.dropFirst().dropLast())
            }
            return (1...70).contains(value.utf8.count) ? value : nil
        }
        return nil
    }

    /// Whether a `Content-Type` is `multipart/form-data` (any parameters).
    package static func isFormData(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        return contentType.split(separator: ";").first?.trimmed(" \t").lowercased() == "multipart/form-data"
    }

    /// A body that is not the multipart it claims to be: the message says what is wrong.
    package struct Broken: Error, CustomStringConvertible {
        package var description: String
    }

    /// Finds the part named `field` in a `multipart/form-data` body and yields its content as it streams in;
    /// the other parts are skipped. Throws `Broken` for a body without that part, a part's headers longer
    /// than 16 KiB, or a body that ends before the part's closing delimiter.
    package struct FormDataPart<Base: AsyncSequence>: AsyncSequence where Base.Element == [UInt8] {
        package typealias Element = [UInt8]
        let base: Base
        let boundary: String
        let field: String

        /// The part named `field` of the multipart body `base`, whose delimiter is `boundary`.
        package init(base: Base, boundary: String, field: String) {
            self.base = base
            self.boundary = boundary
            self.field = field
        }

        package func makeAsyncIterator() -> Iterator {
            Iterator(base: base.makeAsyncIterator(), delimiter: Array("\r\n--\(boundary)".utf8), field: field)
        }

        package struct Iterator: AsyncIteratorProtocol {
            enum State {
                /// Looking for the next delimiter, skipping content (or emitting it, in the wanted part).
                case content(wanted: Bool)
                /// After a delimiter: "--" ends the body; otherwise the line ends and headers follow.
                case afterDelimiter
                /// Reading a part's headers, up to the blank line.
                case headers
                /// The wanted part has ended.
                case finished
            }

            var base: Base.AsyncIterator
            let delimiter: [UInt8]
            let field: String
            /// Bytes received and not yet consumed. Starts with CRLF so a delimiter at the very start matches.
            var pending: [UInt8] = [13, 10]
            var state = State.content(wanted: false)
            var baseEnded = false
            var sawWanted = false

            static var maxHeaderBytes: Int { 16 << 10 }

            init(base: Base.AsyncIterator, delimiter: [UInt8], field: String) {
                self.base = base
                self.delimiter = delimiter
                self.field = field
            }

            package mutating func next() async throws -> [UInt8]? {
                while true {
                    switch state {
                    case .finished:
                        return nil
                    case .content(let wanted):
                        if let index = Self.find(delimiter, in: pending) {
                            let content = Array(pending[..<index])
                            pending.removeFirst(index + delimiter.count)
                            state = wanted ? .finished : .afterDelimiter
                            if wanted && !content.isEmpty { return content }
                            continue
                        }
                        // Everything but a possible delimiter's start can go.
                        let keep = Swift.min(pending.count, delimiter.count - 1)
                        if pending.count - keep >= 64 << 10 || (baseEnded && pending.count > keep) {
                            let content = Array(pending[..<(pending.count - keep)])
                            pending.removeFirst(pending.count - keep)
                            if wanted { return content }
                            continue
                        }
                    case .afterDelimiter:
                        if pending.count >= 2 {
                            if pending[0] == 45 && pending[1] == 45 {  // "--": the close delimiter
                                throw Broken(
                                    description: sawWanted
                                        ? "the multipart body ended inside the \(field) part"
                                        : "the multipart body has no part named \"\(field)\"")
                            }
                            if let lineEnd = Self.find([13, 10], in: pending) {
                                // Transport padding (spaces, tabs) may follow the boundary.
                                guard pending[..<lineEnd].allSatisfy({ $0 == 32 || $0 == 9 }) else {
                                    throw Broken(
                                        description:
                                            "the multipart boundary is followed by other characters than a line end")
                                }
                                pending.removeFirst(lineEnd + 2)
                                state = .headers
                                continue
                            }
                        }
                        if pending.count > 1024 { throw Broken(description: "the multipart boundary line is too long") }
                    case .headers:
                        // No headers: the blank line comes at once. Otherwise the headers end with one.
                        let contentStart: Int?
                        let headerBytes: ArraySlice<UInt8>
                        if pending.count >= 2 && pending[0] == 13 && pending[1] == 10 {
                            contentStart = 2
                            headerBytes = []
                        } else if let end = Self.find([13, 10, 13, 10], in: pending) {
                            contentStart = end + 4
                            headerBytes = pending[..<end]
                        } else {
                            contentStart = nil
                            headerBytes = []
                        }
                        if let contentStart {
                            let wanted = Self.names(field, in: String(decoding: headerBytes, as: UTF8.self))
                            if wanted { sawWanted = true }
                            pending.removeFirst(contentStart)
                            state = .content(wanted: wanted)
                            continue
                        }
                        if pending.count > Self.maxHeaderBytes {
                            throw Broken(
                                description: "a multipart part's headers are longer than \(Self.maxHeaderBytes) bytes")
                        }
                    }
                    guard !baseEnded else {
                        switch state {
                        case .content(true):
                            throw Broken(description: "the multipart body ended inside the \(field) part")
                        case .finished: return nil
                        default:
                            throw Broken(
                                description: sawWanted
                                    ? "the multipart body ended inside the \(field) part"
                                    : "the multipart body has no part named \"\(field)\"")
                        }
                    }
                    if let chunk = try await base.next() {
                        pending += chunk
                    } else {
                        baseEnded = true
                    }
                }
            }

            /// Whether a part's headers say `Content-Disposition: form-data; name="field"`.
            package static func names(_ field: String, in headers: String) -> Bool {
                for line in headers.split(separator: "\r\n") {
                    guard let colon = line.firstIndex(of: ":"),
                        line[..<colon].trimmed(" \t").lowercased() == "content-disposition"
                    else { continue }
                    for parameter in line[line.index(after: colon)...].split(separator: ";").dropFirst() {
                        let pair = parameter.split(separator: "=", maxSplits: 1)
                        guard pair.count == 2, pair[0].trimmed(" \t").lowercased() == "name" else { continue }
                        var value = pair[1].trimmed(" \t")
                        if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                            value = String(value.dropFirst().dropLast())
                        }
                        return value == field
                    }
                }
                return false
            }

            /// The first index of `needle` in `haystack`.
            package static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
                guard haystack.count >= needle.count, let first = needle.first else { return nil }
                return haystack.withUnsafeBufferPointer { hay in
                    var index = 0
                    let last = hay.count - needle.count
                    while index <= last {
                        if hay[index] == first {
                            var matched = 1
                            while matched < needle.count && hay[index + matched] == needle[matched] { matched += 1 }
                            if matched == needle.count { return index }
                        }
                        index += 1
                    }
                    return nil
                }
            }
        }
    }
}

extension String {
    /// The string without leading and trailing characters in `set` (a string of single characters).
    package func trimmed(_ set: String = " \t") -> String {
        let characters = Set(set)
        var text = Substring(self)
        while let first = text.first, characters.contains(first) { text = text.dropFirst() }
        while let last = text.last, characters.contains(last) { text = text.dropLast() }
        return String(text)
    }
}

extension Substring {
    /// The text without leading and trailing characters in `set`.
    package func trimmed(_ set: String = " \t") -> String { String(self).trimmed(set) }
}
