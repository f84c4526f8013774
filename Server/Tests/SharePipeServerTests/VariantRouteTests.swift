import Foundation
import SharePipe
import SharePipeServer
import Testing

/// `variant=` on `POST /v1/prepare`: one `multipart/mixed` part per output, read by a client that is not the
/// server's (Python's standard `email` parser, as a mail or HTTP library would read it).
@Suite struct VariantRouteTests {
    /// The parts of a `multipart/mixed` body as Python's `email` package reads it: each part's headers (names in
    /// lower case) and content, or a failure naming what Python said.
    static func pythonParts(_ body: [UInt8], contentType: String) throws -> [(
        headers: [String: String], content: [UInt8]
    )] {
        let folder = NSTemporaryDirectory() + "sharepipe-variant-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let message = Array("Content-Type: \(contentType)\r\nMIME-Version: 1.0\r\n\r\n".utf8) + body
        try Data(message).write(to: URL(fileURLWithPath: folder + "/answer"))
        // message_from_bytes: message_from_binary_file reads through a text layer that loses a byte of a binary part.
        let script = """
            import base64, email, email.policy, json, sys
            message = email.message_from_bytes(open(sys.argv[1], "rb").read(), policy=email.policy.HTTP)
            assert message.is_multipart() and message.get_content_type() == "multipart/mixed", message.get_content_type()
            assert not message.defects, message.defects
            parts = []
            for part in message.iter_parts():
                assert not part.defects, part.defects
                parts.append({"headers": {k.lower(): str(v) for k, v in part.items()},
                              "content": base64.b64encode(part.get_payload(decode=True)).decode()})
            print(json.dumps(parts))
            """
        try script.write(toFile: folder + "/parse.py", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", folder + "/parse.py", folder + "/answer"]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw LoopbackHTTP.Failure("python3 email: \(complaint)") }
        let parts = try #require(try JSONSerialization.jsonObject(with: printed) as? [[String: Any]])
        return try parts.map { part in
            let headers = try #require(part["headers"] as? [String: String])
            let encoded = try #require(part["content"] as? String)
            let content = try #require(Data(base64Encoded: encoded))
            return (headers, [UInt8](content))
        }
    }

    @Test func aVariantIsAPartOfAMultipartAnswerThatAnEmailParserReads() async throws {
        let photo = try ServerHarness.image("jpeg/large-4000x3000.jpg")
        #expect(try SharePipe.inspect(.bytes(photo)).metadataKinds.contains(.gps), "the fixture carries GPS")
        let (answer, alone, unknown) = try await ServerHarness.withServer { _, port in
            (
                try await LoopbackHTTP.request(
                    port: port, method: "POST", path: "/v1/prepare?service=mastodon&variant=small", body: photo),
                try await LoopbackHTTP.request(
                    port: port, method: "POST", path: "/v1/prepare?service=mastodon", body: photo),
                try await LoopbackHTTP.request(
                    port: port, method: "POST", path: "/v1/prepare?service=mastodon&variant=thumb", body: photo)
            )
        }
        #expect(answer.status == 200, "\(answer.text)")
        let contentType = try #require(answer.headers["content-type"])
        #expect(contentType.hasPrefix("multipart/mixed; boundary="))
        let parts = try Self.pythonParts(answer.body, contentType: contentType)
        #expect(parts.count == 2)
        guard parts.count == 2 else { return }
        let (main, small) = (parts[0], parts[1])
        #expect(main.headers["content-disposition"] == #"inline; name="mastodon"; filename="mastodon.jpg""#)
        #expect(
            small.headers["content-disposition"] == #"inline; name="mastodon.small"; filename="mastodon.small.jpg""#)
        #expect(main.headers["x-sharepipe-variant"] == nil && small.headers["x-sharepipe-variant"] == "small")
        // The main output is the one a request without the variant gets, headers and bytes.
        #expect(alone.status == 200 && alone.headers["content-type"] == "image/jpeg")
        #expect(main.content == alone.body)
        for name in ["x-sharepipe-width", "x-sharepipe-height", "x-sharepipe-blurhash", "x-sharepipe-removed"] {
            #expect(main.headers[name] == alone.headers[name], "\(name)")
        }
        // Each part with its own headers; the placeholders on the main output only.
        for part in parts {
            #expect(part.headers["content-type"] == "image/jpeg" && part.headers["x-sharepipe-service"] == "mastodon")
            #expect(part.headers["content-length"] == String(part.content.count))
            let info = try SharePipe.inspect(.bytes(part.content))
            #expect(part.headers["x-sharepipe-width"] == String(info.size.width))
            #expect(part.headers["x-sharepipe-height"] == String(info.size.height))
            // The profile's metadata mode on every output: no location anywhere.
            #expect(info.metadataKinds.isDisjoint(with: [.exif, .gps, .xmp, .iptc]), "\(info.metadataKinds)")
            #expect(part.headers["x-sharepipe-removed"]?.split(separator: ",").contains("gps") == true)
        }
        #expect(small.headers["x-sharepipe-blurhash"] == nil && main.headers["x-sharepipe-blurhash"] != nil)
        let smallInfo = try SharePipe.inspect(.bytes(small.content))
        #expect(smallInfo.size.area <= 230_400 && smallInfo.size.area > 225_000, "\(smallInfo.size)")
        // Mastodon's q90, interlaced; a source of lower quality caps it, as for any output in the source's format.
        let quality = try #require(small.headers["x-sharepipe-quality"].flatMap { Int($0) })
        #expect(
            quality <= 90 && quality >= (Int(main.headers["x-sharepipe-quality"] ?? "") ?? 0) && smallInfo.progressive)
        // The test's own reader sees the same parts.
        let own = try LoopbackHTTP.parts(
            of: answer.body, boundary: String(contentType.dropFirst("multipart/mixed; boundary=".count)))
        #expect(own.map(\.content) == parts.map(\.content))
        // A variant the profile does not declare is refused by its parameter.
        #expect(unknown.status == 400 && unknown.errorKind == "invalidOptions", "\(unknown.text)")
        #expect(unknown.errorMessage.contains("for `variant`, got 'thumb'"), "\(unknown.errorMessage)")
    }
}
