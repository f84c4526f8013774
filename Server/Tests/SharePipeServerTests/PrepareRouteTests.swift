import Foundation
import NIOConcurrencyHelpers
@_spi(Testing) import SharePipe
import SharePipeServer
import Testing

/// A switch a test flips while a server runs.
final class Failing: Sendable {
    private let flag = NIOLockedValueBox(true)
    var on: Bool {
        get { flag.withLockedValue { $0 } }
        set { flag.withLockedValue { $0 = newValue } }
    }
}

/// `POST /v1/prepare` on a live server: real images posted over loopback, the answers decoded.
@Suite struct PrepareRouteTests {
    @Test func aLargePhotoComesBackStrippedAndDownscaledWithItsHeaders() async throws {
        let photo = try ServerHarness.image("jpeg/large-4000x3000.jpg")
        #expect(try SharePipe.inspect(.bytes(photo)).metadataKinds.contains(.gps), "the fixture carries GPS")
        let response = try await ServerHarness.withServer { _, port in
            try await LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=x",
                headers: [("Content-Type", "image/jpeg"), ("X-Request-Id", "photo-1")], body: photo)
        }
        #expect(response.status == 200, "\(response.text)")
        #expect(response.headers["content-type"] == "image/jpeg")
        #expect(response.headers["content-length"] == String(response.body.count))
        #expect(response.headers["x-sharepipe-service"] == "x")
        #expect(response.headers["x-sharepipe-width"] == "1440" && response.headers["x-sharepipe-height"] == "1080")
        #expect(response.headers["x-sharepipe-format"] == "jpeg")
        #expect(response.headers["x-sharepipe-quality"].flatMap(Int.init).map { (1...100).contains($0) } == true)
        #expect(
            response.headers["x-sharepipe-removed"]?.split(separator: ",").contains("gps") == true,
            "\(response.headers)")
        #expect(response.headers["x-sharepipe-changed"] == nil)
        // The placeholders: the library's own for the same upload; 4 × 4 components make 36 characters.
        let direct = try await SharePipe.prepare(.bytes(photo), options: ServiceProfile.x.options())
        #expect(response.headers["x-sharepipe-blurhash"] == direct.placeholder?.blurHash)
        #expect(response.headers["x-sharepipe-thumbhash"] == direct.placeholder?.thumbHash)
        #expect(response.headers["x-sharepipe-blurhash"]?.count == 36)
        // The focal point as Mastodon's upload takes it: "x,y".
        #expect(response.headers["x-sharepipe-focus"] == direct.focus?.description)
        #expect(response.headers["x-sharepipe-focus"]?.split(separator: ",").count == 2)
        #expect(response.headers["x-request-id"] == "photo-1")
        #expect(response.headers["connection"] == "close")
        let info = try SharePipe.inspect(.bytes(response.body))
        #expect(info.format == .jpeg && info.size == PixelSize(width: 1440, height: 1080))
        #expect(info.metadataKinds.isDisjoint(with: [.exif, .gps, .xmp, .iptc, .comment]), "\(info.metadataKinds)")
        #expect(response.body.count <= ServiceProfile.x.maxStillBytes)
        // Every scanline decodes (a re-preparation reads them all).
        let decoded = try await SharePipe.prepare(.bytes(response.body), options: PrepareOptions(maxShortEdge: 270))
        #expect(decoded.size == PixelSize(width: 360, height: 270))
    }

    /// A bug in SharePipe (an error that is not a `SharePipeError`, thrown inside the job as a bug would be:
    /// the job's checkpoint hook, the server's real pipeline and catch-all otherwise) is answered 500 with kind
    /// `internal`, in a single answer (kept in memory, and spooled) and in a multipart part; the job's memory
    /// is given back and the server goes on serving.
    @Test func aBugInAJobAnswers500WithKindInternal() async throws {
        struct Bug: Error, CustomStringConvertible {
            var description: String { "a bug planted by the test" }
        }
        let photo = try ServerHarness.image("jpeg/orient-1.jpg")
        let large = try ServerHarness.image("jpeg/large-4000x3000.jpg")  // spooled: over 1 MiB
        let failing = Failing()
        var hooks = JobHooks()
        hooks.checkpoint = { if failing.on { throw Bug() } }
        try await ServerHarness.withServer(jobHooks: hooks) { _, port in
            for body in [photo, large] {
                let answer = try await LoopbackHTTP.request(
                    port: port, method: "POST", path: "/v1/prepare?service=x",
                    headers: [("X-Request-Id", "bug-1")], body: body)
                let error = answer.json["error"] as? [String: Any] ?? [:]
                #expect(answer.status == 500, "\(answer.status) \(answer.text)")
                #expect(error["status"] as? Int == 500 && error["kind"] as? String == "internal", "\(error)")
                let message = error["message"] as? String ?? ""
                #expect(
                    message.contains("a SharePipe bug") && message.contains("a bug planted by the test"), "\(message)")
                #expect(!message.contains("/"), "no spool file's path: \(message)")
                #expect(answer.json["request_id"] as? String == "bug-1")
            }
            let both = try await LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=x&service=bluesky", body: photo)
            let contentType = both.headers["content-type"] ?? ""
            #expect(both.status == 200 && contentType.hasPrefix("multipart/mixed; boundary="), "\(both.status)")
            let parts = try LoopbackHTTP.parts(
                of: both.body, boundary: String(contentType.dropFirst("multipart/mixed; boundary=".count)))
            #expect(parts.count == 2 && parts.allSatisfy { $0.headers["x-sharepipe-status"] == "500" }, "\(parts)")
            let metrics = try await ServerHarness.metrics(port: port)
            #expect(metrics["sharepipe_requests_total{route=\"/v1/prepare\",status=\"500\",service=\"x\"}"] == 2)
            #expect(metrics["sharepipe_budget_reserved_bytes"] == 0)
            failing.on = false
            let healed = try await LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=x", body: photo)
            #expect(healed.status == 200 && healed.headers["content-type"] == "image/jpeg", "\(healed.status)")
        }
    }

    /// A job past --job-timeout (made long by a checkpoint that sleeps) is answered 422 `timedOut` within a second
    /// of its deadline, in memory and spooled; its reservation is back at 0 and no spool file is left.
    @Test func aJobPastTheJobTimeoutIsAnswered422WithinASecond() async throws {
        let photo = try ServerHarness.image("jpeg/large-4000x3000.jpg")  // kept in memory
        let large = try ServerHarness.image("jpeg/noisy-2000x1500.jpg")  // spooled: over 1 MiB
        let slow = Failing()
        var hooks = JobHooks()
        hooks.checkpoint = { if slow.on { usleep(50_000) } }
        let configuration = ServerHarness.configuration { $0.jobTimeout = .seconds(2) }
        try await ServerHarness.withServer(configuration, jobHooks: hooks) { server, port in
            for body in [photo, large] {
                let started = ContinuousClock.now
                let answer = try await LoopbackHTTP.request(
                    port: port, method: "POST", path: "/v1/prepare?service=x", body: body)
                let elapsed = ContinuousClock.now - started
                let error = answer.json["error"] as? [String: Any] ?? [:]
                #expect(answer.status == 422 && error["kind"] as? String == "timedOut", "\(answer.text)")
                #expect(
                    (error["message"] as? String)?.contains("timed out: the job ran past its deadline of 2 s")
                        == true,
                    "\(error)")
                #expect(elapsed >= .seconds(2) && elapsed < .seconds(3), "answered after \(elapsed)")
                let metrics = try await ServerHarness.metrics(port: port)
                #expect(metrics["sharepipe_budget_reserved_bytes"] == 0 && metrics["sharepipe_jobs_running"] == 0)
                #expect(metrics["sharepipe_spool_files"] == 0)
                #expect(try FileManager.default.contentsOfDirectory(atPath: server.spool.path).isEmpty)
            }
            // The server goes on: a small photo (well inside the same 2 s, also on a busy machine) prepares.
            slow.on = false
            let healed = try await LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=x",
                body: try ServerHarness.image("jpeg/orient-6.jpg"))
            #expect(healed.status == 200, "\(healed.status) \(healed.text)")
        }
    }

    @Test func aGIFForAServiceWithoutGIFSaysWhatChangedAndAChunkedBodyWorks() async throws {
        let gif = try ServerHarness.image("gif/disposals.gif")
        let response = try await ServerHarness.withServer { _, port in
            try await LoopbackHTTP.postChunked(
                port: port, path: "/v1/prepare?service=bluesky&animation=still", body: gif, chunkSize: 1000)
        }
        #expect(response.status == 200, "\(response.text)")
        #expect(response.headers["content-type"] == "image/png" && response.headers["x-sharepipe-format"] == "png")
        #expect(response.headers["x-sharepipe-changed"] == "format=gif->png, first-frame-only")
        #expect(response.headers["x-sharepipe-quality"] == nil)
        let info = try SharePipe.inspect(.bytes(response.body))
        #expect(info.format == .png && info.frameCount == 1)
        #expect("\(info.size.width)" == response.headers["x-sharepipe-width"])
    }

    @Test func anAnimationForBlueskyIsAnsweredAsVideoWithTheSameHeaders() async throws {
        let gif = try ServerHarness.image("gif/disposals.gif")
        let response = try await ServerHarness.withServer { _, port in
            try await LoopbackHTTP.request(port: port, method: "POST", path: "/v1/prepare?service=bluesky", body: gif)
        }
        #expect(response.status == 200, "\(response.text)")
        #expect(response.headers["content-type"] == "video/mp4" && response.headers["x-sharepipe-format"] == "mp4")
        #expect(response.headers["x-sharepipe-changed"] == "format=gif->mp4")
        #expect(response.headers["x-sharepipe-service"] == "bluesky" && response.headers["x-sharepipe-blurhash"] != nil)
        let info = try SharePipe.inspect(.bytes(gif))
        #expect(response.headers["x-sharepipe-width"] == "\(info.size.width & ~1)")
        // ftyp, then moov before the samples.
        #expect(Array(response.body[4..<8]) == Array("ftyp".utf8))
        let moov =
            Int(response.body[0]) << 24 | Int(response.body[1]) << 16 | Int(response.body[2]) << 8
            | Int(response.body[3])
        #expect(Array(response.body[moov + 4..<moov + 8]) == Array("moov".utf8))
    }

    @Test func queryOptionsOverrideTheProfile() async throws {
        let photo = try ServerHarness.image("jpeg/large-4000x3000.jpg")
        let response = try await ServerHarness.withServer { _, port in
            try await LoopbackHTTP.request(
                port: port, method: "POST",
                path: "/v1/prepare?service=x&max_short_edge=300&strip=gps&quality=70&min_quality=50&progressive=true",
                body: photo)
        }
        #expect(response.status == 200, "\(response.text)")
        let info = try SharePipe.inspect(.bytes(response.body))
        #expect(info.size == PixelSize(width: 400, height: 300))
        #expect(info.progressive)
        // strip=gps keeps Exif without its location.
        #expect(info.metadataKinds.contains(.exif) && !info.metadataKinds.contains(.gps), "\(info.metadataKinds)")
        #expect(Int(response.headers["x-sharepipe-quality"] ?? "") ?? 0 <= 70)
    }

    @Test func aMultipartFormUploadIsReadFromItsFilePart() async throws {
        let photo = try ServerHarness.image("jpeg/orient-6.jpg")
        let boundary = "----form-boundary-7MA4YWxkTrZu0gW"
        var form = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"caption\"\r\n\r\nmy cat\r\n".utf8)
        form += Array(
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cat.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n"
                .utf8)
        form += photo
        form += Array("\r\n--\(boundary)--\r\n".utf8)
        let body = form
        let broken = Array(body[..<(body.count - 40)])  // cut inside the file part
        let noFile = Array(
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"caption\"\r\n\r\nhi\r\n--\(boundary)--\r\n".utf8)
        let responses = try await ServerHarness.withServer { _, port in
            [
                try await LoopbackHTTP.request(
                    port: port, method: "POST", path: "/v1/prepare?service=mastodon",
                    headers: [("Content-Type", "multipart/form-data; boundary=\(boundary)")], body: body),
                try await LoopbackHTTP.postChunked(
                    port: port, path: "/v1/prepare?service=mastodon",
                    headers: [("Content-Type", "multipart/form-data; boundary=\"\(boundary)\"")],
                    body: body, chunkSize: 7),
                try await LoopbackHTTP.request(
                    port: port, method: "POST", path: "/v1/prepare?service=mastodon",
                    headers: [("Content-Type", "multipart/form-data; boundary=\(boundary)")], body: broken),
                try await LoopbackHTTP.request(
                    port: port, method: "POST", path: "/v1/prepare?service=mastodon",
                    headers: [("Content-Type", "multipart/form-data; boundary=\(boundary)")], body: noFile),
                try await LoopbackHTTP.request(
                    port: port, method: "POST", path: "/v1/prepare?service=mastodon",
                    headers: [("Content-Type", "multipart/form-data")], body: body),
            ]
        }
        let direct = try await SharePipe.prepare(.bytes(photo), options: ServiceProfile.mastodon.options())
        for response in responses.prefix(2) {
            #expect(response.status == 200, "\(response.text)")
            // The same image as the library makes from the file itself: the part was cut out exactly.
            #expect(response.body == direct.bytes)
        }
        #expect(responses[2].status == 400 && responses[2].errorKind == "brokenMultipart", "\(responses[2].text)")
        #expect(
            responses[3].status == 400 && responses[3].errorMessage.contains("no part named \"file\""),
            "\(responses[3].text)")
        #expect(responses[4].status == 400 && responses[4].errorMessage.contains("boundary"), "\(responses[4].text)")
    }

    @Test func severalServicesAnswerMultipartMixedInQueryOrderWithAFailedServiceAsAJSONPart() async throws {
        let photo = try ServerHarness.image("jpeg/large-4000x3000.jpg")
        let folder = NSTemporaryDirectory() + "sharepipe-server-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // A service no photo can meet: under 1 KB at quality 90 or more.
        try #"{"profiles": [{"name": "tiny", "maxStillBytes": 1024, "minQuality": 90, "maxQuality": 95}]}"#
            .write(toFile: folder + "/profiles.json", atomically: true, encoding: .utf8)
        let configuration = ServerHarness.configuration { $0.profilesFile = folder + "/profiles.json" }
        let response = try await ServerHarness.withServer(configuration) { _, port in
            try await LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=bluesky&service=tiny&service=x",
                body: photo)
        }
        #expect(response.status == 200, "\(response.text)")
        let contentType = try #require(response.headers["content-type"])
        #expect(contentType.hasPrefix("multipart/mixed; boundary="))
        let boundary = String(contentType.dropFirst("multipart/mixed; boundary=".count))
        let parts = try LoopbackHTTP.parts(of: response.body, boundary: boundary)
        #expect(parts.map { $0.headers["x-sharepipe-service"] } == ["bluesky", "tiny", "x"])
        for index in [0, 2] {
            let part = parts[index]
            #expect(part.headers["content-type"] == "image/jpeg")
            let info = try SharePipe.inspect(.bytes(part.content))
            #expect(info.size == PixelSize(width: 1440, height: 1080))
            #expect(
                part.headers["x-sharepipe-width"] == "1440"
                    && part.headers["content-length"] == String(part.content.count))
        }
        #expect(parts[0].content.count <= ServiceProfile.bluesky.maxStillBytes)
        let failed = parts[1]
        #expect(failed.headers["content-type"] == "application/json")
        #expect(failed.headers["x-sharepipe-status"] == "422", "\(failed.headers)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(failed.content)) as? [String: Any])
        let error = try #require(json["error"] as? [String: Any])
        #expect(error["status"] as? Int == Int(failed.headers["x-sharepipe-status"] ?? ""))
        #expect(json["request_id"] as? String == response.headers["x-request-id"])
    }

    @Test func everyErrorHasItsStatusAndAJSONBodyNamingTheProblem() async throws {
        let photo = try ServerHarness.image("jpeg/orient-1.jpg")
        let configuration = ServerHarness.configuration { $0.maxBodyBytes = 200_000 }
        let large = try ServerHarness.image("jpeg/large-4000x3000.jpg")
        #expect(large.count > 200_000)
        let responses = try await ServerHarness.withServer(configuration) { _, port in
            func post(_ path: String, _ body: [UInt8], _ headers: [(String, String)] = []) async throws
                -> LoopbackHTTP.Response
            {
                try await LoopbackHTTP.request(port: port, method: "POST", path: path, headers: headers, body: body)
            }
            return [
                "unknown service": try await post("/v1/prepare?service=myspace", photo),
                "no service": try await post("/v1/prepare", photo),
                "max_bytes": try await post("/v1/prepare?service=x&max_bytes=10", photo),
                "min_quality": try await post("/v1/prepare?service=x&quality=50&min_quality=60", photo),
                "strip": try await post("/v1/prepare?service=x&strip=some", photo),
                "progressive": try await post("/v1/prepare?service=x&progressive=yes", photo),
                "max_short_edge": try await post("/v1/prepare?service=x&max_short_edge=big", photo),
                "unknown parameter": try await post("/v1/prepare?service=x&max_pixels=10", photo),
                "empty": try await post("/v1/prepare?service=x", []),
                "empty chunked": try await LoopbackHTTP.postChunked(
                    port: port, path: "/v1/prepare?service=x", body: []),
                "text": try await post("/v1/prepare?service=x", Array("not an image at all".utf8)),
                "truncated": try await post("/v1/prepare?service=x", try ServerHarness.image("broken/truncated.png")),
                "bomb": try await post("/v1/prepare?service=x", try ServerHarness.image("broken/huge-ihdr.png")),
                "length": try await post("/v1/prepare?service=x", large),
                "chunked": try await LoopbackHTTP.postChunked(port: port, path: "/v1/prepare?service=x", body: large),
                "not found": try await LoopbackHTTP.request(port: port, path: "/v2/prepare"),
                "get prepare": try await LoopbackHTTP.request(port: port, path: "/v1/prepare?service=x"),
                "post health": try await post("/healthz", [1]),
            ]
        }
        let expected: [String: (Int, String, String)] = [
            "unknown service": (400, "unknownService", "myspace"),
            "no service": (400, "missingService", "service="),
            "max_bytes": (400, "invalidOptions", "for `max_bytes`, got 10"),
            "min_quality": (400, "invalidOptions", "for `min_quality`, got 60"),
            "strip": (400, "invalidOptions", "for `strip`, got 'some'"),
            "progressive": (400, "invalidOptions", "for `progressive`, got 'yes'"),
            "max_short_edge": (400, "invalidOptions", "for `max_short_edge`, got 'big'"),
            "unknown parameter": (400, "invalidParameter", "unknown query parameter max_pixels"),
            "empty": (400, "emptyBody", "empty"),
            "empty chunked": (400, "emptyBody", "empty"),
            "text": (415, "unsupportedFormat", "upload"),
            "truncated": (422, "corrupt", "upload"),
            "bomb": (413, "tooLarge", "100000"),
            "length": (413, "bodyTooLarge", "200000"),
            "chunked": (413, "bodyTooLarge", "200000"),
            "not found": (404, "notFound", "/v2/prepare"),
            "get prepare": (405, "methodNotAllowed", "POST"),
            "post health": (405, "methodNotAllowed", "GET"),
        ]
        for (name, (status, kind, fragment)) in expected {
            let response = try #require(responses[name])
            #expect(response.status == status, "\(name): \(response.status) \(response.text)")
            #expect(response.headers["content-type"] == "application/json", "\(name)")
            #expect(response.errorKind == kind, "\(name): \(response.text)")
            #expect(response.errorMessage.contains(fragment), "\(name): \(response.errorMessage)")
            let error = response.json["error"] as? [String: Any]
            #expect(error?["status"] as? Int == status, "\(name)")
            #expect(
                (response.json["request_id"] as? String).map { !$0.isEmpty && $0 == response.headers["x-request-id"] }
                    == true, "\(name)")
        }
        #expect(responses["get prepare"]?.headers["allow"] == "POST")
        #expect(responses["post health"]?.headers["allow"] == "GET")
    }

    @Test func aFullQueueOrATimedOutWaitIs503WithRetryAfterAndNothingIsLeftReserved() async throws {
        let photo = try ServerHarness.image("jpeg/orient-1.jpg")
        let configuration = ServerHarness.configuration {
            $0.budgetBytes = 64 << 20
            $0.queueLength = 1
            // Long enough for /readyz and the refused upload to be answered while the first upload waits,
            // also on a loaded machine (2 s was not).
            $0.queueTimeout = .seconds(6)
        }
        try await ServerHarness.withServer(configuration) { server, port in
            // The whole budget held: a first upload waits (and times out), a second one finds the queue full.
            let blocker = try await server.pipeline.budget.reserve(64 << 20)
            async let waiting = LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=x", body: photo)
            #expect(await ServerHarness.eventually { await server.pipeline.budget.usage.waitingRequests == 1 })
            let ready = try await LoopbackHTTP.request(port: port, path: "/readyz")
            let refused = try await LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=x", body: photo)
            let timedOut = try await waiting
            #expect(ready.status == 503 && ready.headers["retry-after"] != nil)
            #expect(
                refused.status == 503 && refused.errorKind == "overloaded" && refused.headers["retry-after"] == "1",
                "\(refused.text)")
            #expect(refused.errorMessage.contains("waiting"))
            #expect(timedOut.status == 503 && timedOut.errorMessage.contains("waited 6 s"), "\(timedOut.text)")
            #expect(Int(timedOut.headers["retry-after"] ?? "") ?? 0 >= 1)
            await server.pipeline.budget.release(blocker)
            // Free again: the same upload is prepared, and the metrics counted both rejections.
            let prepared = try await LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=x", body: photo)
            #expect(prepared.status == 200)
            let metrics = try await ServerHarness.metrics(port: port)
            #expect(metrics["sharepipe_rejections_total{reason=\"queue_full\"}"] == 1)
            #expect(metrics["sharepipe_rejections_total{reason=\"queue_timeout\"}"] == 1)
            #expect(metrics["sharepipe_budget_reserved_bytes"] == 0)
            #expect(metrics["sharepipe_requests_total{route=\"/v1/prepare\",status=\"503\",service=\"x\"}"] == 2)
            #expect(metrics["sharepipe_requests_total{route=\"/v1/prepare\",status=\"200\",service=\"x\"}"] == 1)
            #expect((try await LoopbackHTTP.request(port: port, path: "/readyz")).status == 200)
        }
    }

    /// The bug of 59c7fa1/f420d3d: an upload refused for a full queue before its header was probed (its
    /// receiving reservation refused, the body never read) hung its handler: no answer, no read deadline.
    @Test func anUploadRefusedForAFullQueueBeforeItsHeaderIsReadIsAnswered503AtOnceAndClosed() async throws {
        let photo = try ServerHarness.image("jpeg/orient-1.jpg")
        let configuration = ServerHarness.configuration {
            $0.budgetBytes = 64 << 20
            $0.maxJobs = 1
            $0.queueLength = 1
        }
        try await ServerHarness.withServer(configuration) { server, port in
            // The budget and the one job slot held (a long job running); a second upload waits: the queue is full.
            let running = try await server.pipeline.budget.reserve(64 << 20)
            async let waiting = LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=x", body: photo)
            #expect(await ServerHarness.eventually { await server.pipeline.budget.usage.waitingRequests == 1 })
            // A third announces 40 MB and sends 1 MiB of it, then waits: refused before its header is read.
            let start = ContinuousClock.now
            let (refused, closed) = try await LoopbackHTTP.onThread {
                let socket = try LoopbackHTTP.Socket(port: port, receiveTimeout: 20)
                defer { socket.close() }
                try socket.send(
                    Array("POST /v1/prepare?service=x HTTP/1.1\r\nHost: x\r\nContent-Length: 40000000\r\n\r\n".utf8))
                do {
                    try socket.send(
                        Array(photo.prefix(1 << 20)) + [UInt8](repeating: 0, count: max(0, (1 << 20) - photo.count)))
                } catch {
                    // The answer may come, and the connection close, before the megabyte is sent: read it.
                }
                // receiveAll returns when the server closes the connection; a hung handler times it out (20 s).
                let answer = try LoopbackHTTP.parse(socket.receiveAll())
                return (answer, ContinuousClock.now)
            }
            #expect(refused.status == 503 && refused.errorKind == "overloaded", "\(refused.text)")
            #expect(refused.headers["retry-after"] != nil && refused.headers["connection"] == "close")
            #expect(closed - start < .seconds(10), "answered and closed after \(closed - start)")
            // The server still answers: the waiting upload runs once the budget is free, and a new one too.
            await server.pipeline.budget.release(running)
            #expect(try await waiting.status == 200)
            let after = try await LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=x", body: photo)
            #expect(after.status == 200)
            #expect(try await LoopbackHTTP.request(port: port, path: "/readyz").status == 200)
            let metrics = try await ServerHarness.metrics(port: port)
            #expect(metrics["sharepipe_rejections_total{reason=\"queue_full\"}"] == 1)
            #expect(await ServerHarness.eventually { await server.pipeline.budget.usage.reservedBytes == 0 })
        }
    }
}
