import Foundation
import SharePipe
import SharePipeServer
import SharePipeTestSupport
import Testing

/// The option property test, through the server's query: every option a client may set (the library's
/// option table, rows with `clientMaySet`), given extreme, random (seeded: the same every run) and odd
/// values as query parameters of `POST /v1/prepare` on a live server. Never a 500 or a dead server; always
/// 200, 422, or 400 with kind `invalidOptions` naming a parameter. The operator's options (limits,
/// strategy) are refused by name (`invalidParameter`).
@Suite struct QueryOptionPropertyTests {
    static let extremes = extremeIntegers
    static let oddTexts = [
        "", " 1", "1 ", "+5", "-0", "1e3", "0x10", "NaN", "inf", "1.0", "٣", "true", "false", "TRUE",
        "yes", "1", "0", "all", "gps", "none", "cpuFirst", "jpeg", "a&b", "99999999999999999999",
        String(repeating: "9", count: 1000), String(repeating: "a", count: 1000),
    ]
    typealias Seeded = SeededGenerator

    static let clientOptions = OptionTable.all.filter(\.clientMaySet)
    static let clientNames = clientOptions.compactMap(\.queryName)

    /// The values tried for one option: its kind's words, extreme and random numbers, odd texts.
    static func values(for spec: OptionSpec, generator: inout Seeded) -> [String] {
        var words: [String] = []
        switch spec.kind {
        case .choice(let choices): words = choices
        case .boolean: words = ["true", "false"]
        case .names: words = ["small", "thumb", "a/b"]
        case .aspectRatio: words = ["1:1", "4:5", "191:100", "0:1", "11:1", "1:0"]
        default: break
        }
        return words + extremes.map(String.init) + (0..<12).map { _ in String(generator.anyMagnitude()) } + oddTexts
    }

    static func encoded(_ text: String) -> String {
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&+=")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// Checks one answer; `given` are the query's option names.
    static func check(_ response: LoopbackHTTP.Response, given: [String], _ what: String) {
        switch response.status {
        case 200:
            #expect(response.headers["x-sharepipe-format"] != nil, "\(what)")
        case 422:
            #expect(response.errorKind == "cannotMeetLimit", "\(what): \(response.text)")
        case 400:
            #expect(response.errorKind == "invalidOptions", "\(what): \(response.text)")
            let named = clientNames.filter { response.errorMessage.contains($0) }
            #expect(!named.isEmpty, "\(what): the message names no parameter: \(response.errorMessage)")
        default:
            Issue.record("\(what): \(response.status) \(response.text.prefix(300))")
        }
    }

    @Test func everyClientOptionWithExtremeRandomAndOddValuesIsAnsweredOrNamed() async throws {
        let photo = try ServerHarness.image("jpeg/tiny-16x16.jpg")
        let gif = try ServerHarness.image("gif/loop3.gif")
        #expect(Self.clientNames.count == 11, "\(Self.clientNames)")
        try await ServerHarness.withServer { server, port in
            var generator = Seeded(state: 2300)
            var answered = 0
            for spec in Self.clientOptions {
                let name = try #require(spec.queryName)
                for text in Self.values(for: spec, generator: &generator) {
                    let what = "\(name)=\(text.prefix(30))"
                    let response = try await LoopbackHTTP.request(
                        port: port, method: "POST", path: "/v1/prepare?service=x&\(name)=\(Self.encoded(text))",
                        body: photo)
                    Self.check(response, given: [name], what)
                    // Text that is no value of its type is refused by the name of its parameter.
                    if response.status == 400, Int(text) == nil,
                        !["true", "false", "all", "gps", "none"].contains(text)
                    {
                        #expect(response.errorMessage.contains(name), "\(what): \(response.errorMessage)")
                    }
                    answered += 1
                }
            }
            // Random mixes of several options, on a still and on an animation, for two services at once.
            for round in 0..<40 {
                var pairs: [(String, String)] = []
                for spec in Self.clientOptions where Bool.random(using: &generator) {
                    let values = Self.values(for: spec, generator: &generator)
                    pairs.append((spec.queryName!, values.randomElement(using: &generator)!))
                }
                let query = pairs.map { "\($0.0)=\(Self.encoded($0.1))" }.joined(separator: "&")
                let what = "round \(round): \(query.prefix(200))"
                let response = try await LoopbackHTTP.request(
                    port: port, method: "POST", path: "/v1/prepare?service=x&service=mastodon&\(query)",
                    body: round % 2 == 0 ? photo : gif)
                if response.status == 200, response.headers["content-type"]?.hasPrefix("multipart/mixed") == true {
                    // One part per service; a failed service is a JSON part with its status: never 500.
                    #expect(!response.text.contains("X-SharePipe-Status: 500"), "\(what)")
                } else {
                    Self.check(response, given: pairs.map(\.0), what)
                }
                answered += 1
            }
            // The operator's options are not the client's: refused by their parameter name.
            for spec in OptionTable.all where !spec.clientMaySet {
                guard let name = spec.queryName else { continue }
                let response = try await LoopbackHTTP.request(
                    port: port, method: "POST",
                    path: "/v1/prepare?service=x&\(name)=1", body: photo)
                #expect(
                    response.status == 400 && response.errorKind == "invalidParameter"
                        && response.errorMessage.contains(name), "\(name): \(response.text)")
            }
            // Still serving, nothing held.
            #expect(try await LoopbackHTTP.request(port: port, path: "/healthz").status == 200)
            #expect(await ServerHarness.eventually { await server.pipeline.budget.usage.reservedBytes == 0 })
            let metrics = try await ServerHarness.metrics(port: port)
            #expect(metrics.filter { $0.key.contains("status=\"500\"") }.values.reduce(0, +) == 0)
            #expect(answered > 200)
        }
    }
}
