import Foundation
@_spi(Testing) import SharePipe
import SharePipeServer
import Testing

/// The operator's `--disable` (`SHAREPIPE_SERVER_DISABLE`): uploads of a turned-off family are answered 415 before
/// any decoder library reads them, whatever the client's query says.
@Suite struct FormatSwitchTests {
    @Test func theSettingComesFromTheFlagOrTheEnvironmentAndAWrongNameIsNamed() throws {
        #expect(try ServerConfiguration(arguments: [], environment: [:]).disabledFormats.isEmpty)
        let environment = ["SHAREPIPE_SERVER_DISABLE": "heif,avif"]
        #expect(try ServerConfiguration(arguments: [], environment: environment).disabledFormats == [.heif, .avif])
        let flag = try ServerConfiguration(arguments: ["--disable", "webp"], environment: environment)
        #expect(flag.disabledFormats == [.webp], "the flag wins over the variable")
        #expect(try ServerConfiguration(arguments: ["--disable=none"], environment: environment).disabledFormats == [])
        for (arguments, variables, named) in [
            (["--disable", "heic"], [String: String](), "--disable"),
            ([], ["SHAREPIPE_SERVER_DISABLE": "tiff"], "SHAREPIPE_SERVER_DISABLE"),
        ] {
            do {
                _ = try ServerConfiguration(arguments: arguments, environment: variables)
                Issue.record("\(arguments) \(variables) was accepted")
            } catch {
                #expect(error.description.contains(named) && error.description.contains("heif"), "\(error)")
            }
        }
        let usage = ServerConfiguration.usage
        #expect(usage.contains("--disable FAMILIES") && usage.contains("(env SHAREPIPE_SERVER_DISABLE; default none)"))
    }

    @Test func aDisabledFamilyIs415NamingTheSwitchAndOthersArePrepared() async throws {
        let heic = try ServerHarness.image("heif/gps-irot.heic")
        let grid = try ServerHarness.image("heif-grid/grid.heic")
        let jpeg = try ServerHarness.image("jpeg/orient-1.jpg")
        let boundary = "----switch-boundary-0d1e"
        var form = Array(
            ("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"IMG_1.HEIC\"\r\n"
                + "Content-Type: image/heic\r\n\r\n").utf8)
        form += heic + Array("\r\n--\(boundary)--\r\n".utf8)
        let upload = form
        let configuration = ServerHarness.configuration { $0.disabledFormats = [.heif, .avif] }
        try await ServerHarness.withServer(configuration) { _, port in
            for (body, headers) in [
                (heic, [("Content-Type", "image/heic")]), (grid, []),
                (upload, [("Content-Type", "multipart/form-data; boundary=\(boundary)")]),
            ] {
                let answer = try await LoopbackHTTP.request(
                    port: port, method: "POST", path: "/v1/prepare?service=mastodon", headers: headers, body: body)
                #expect(answer.status == 415, "\(answer.status) \(answer.text)")
                #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true)
                let error = answer.json["error"] as? [String: Any] ?? [:]
                #expect(error["kind"] as? String == "unsupportedFormat", "\(error)")
                let message = error["message"] as? String ?? ""
                #expect(message.contains("--disable heif"), "\(message)")
                #expect(message.hasPrefix("upload: "), "named as the upload, no spool file's path: \(message)")
                #expect(!message.contains("/tmp") && !message.contains(".spool"), "no spool file's path: \(message)")
            }
            // A client cannot widen the operator's switch: no query parameter sets it.
            let widened = try await LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=mastodon&disable=none", body: heic)
            #expect(widened.status == 400, "\(widened.status) \(widened.text)")
            let prepared = try await LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=mastodon", body: jpeg)
            #expect(prepared.status == 200, "\(prepared.text)")
            #expect(try SharePipe.inspect(.bytes(prepared.body)).format == .jpeg)
        }
        // The same server without the switch prepares the HEIC.
        try await ServerHarness.withServer { _, port in
            let answer = try await LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=mastodon", body: heic)
            #expect(answer.status == 200, "\(answer.text)")
        }
    }
}
