import HTTPTypes
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore
import SharePipe
import SharePipeMultipart

/// `POST /v1/prepare?service=NAME[&service=NAME2…][&options]`: one upload (the body, or the `file` part of a
/// `multipart/form-data` body) prepared for each service.
///
/// The body streams into `SharePipeline.prepare(upload:)` (spooled past 1 MiB) while two watchers run beside
/// the job: the whole body must arrive within `--read-timeout` (408), and a client that goes away cancels the
/// job (Hummingbird's `consumeWithCancellationOnInboundClose`), which frees its reservation as soon as the job
/// reaches its next checkpoint. The connection is closed after the answer (`Connection: close`): the body's
/// watcher owns the connection's input (`closeAfterAnswer`).
struct PrepareRoute {
    let server: SharePipeServer
    let request: Request
    let context: ServerRequestContext
    let id: String
    /// Set once the body is handed to the job (or its watcher): it is then no longer this route's to read.
    let bodyReadingBegan = NIOLockedValueBox(false)

    private var configuration: ServerConfiguration { server.configuration }

    func respond() async -> Routed {
        let ticket = server.answerStarted()
        var service = ""
        var routed: Routed
        do {
            let (profiles, options) = try readQuery()
            service = profiles.map(\.name).joined(separator: "+")
            routed = try await prepare(profiles: profiles, options: options)
            routed.service = service
        } catch let failure as ServerFailure {
            routed = Routed(response: failure.response(requestID: id), service: service, failure: failure)
        } catch {
            let failure = ServerFailure(.internalServerError, "internal", "\(error)")
            routed = Routed(response: failure.response(requestID: id), service: service, failure: failure)
        }
        // The connection ends with this answer: the body may not have been read to its end (refused early),
        // and the watcher of the client's disconnect has consumed the connection's input.
        routed.response.headers[.connection] = "close"
        let body = routed.response.body
        let channel = context.channel
        // Answered before the body was read (413 from Content-Length, a bad query, draining): many clients
        // send the whole body before they read (Python's http.client, …), and a connection closed under
        // their upload makes them see a broken pipe instead of the answer. So, as nginx's lingering close,
        // the rest of a body that is not too long is read and dropped for up to `linger` first.
        let leftover = bodyReadingBegan.withLockedValue { $0 } ? nil : lingeringBody()
        routed.response.body = ResponseBody(contentLength: body.contentLength) { writer in
            // The ticket goes back once the output is shut, which is after the answer's last bytes left:
            // a write returns when its bytes are queued, and a drain that closed the connection then cut
            // the end off a large answer (the last ~70 KB of 4 MB).
            defer { Self.closeAfterAnswer(channel, whenOutputClosed: { ticket.finish() }) }
            try await body.write(writer)
            if let leftover {
                await Self.discard(leftover.body, upTo: leftover.bytes, within: Self.linger, on: channel)
            }
        }
        // A client that went away gets no answer: nothing to wait for when draining. Nor does one whose
        // connection closes before Hummingbird writes the answer (the body writer above never runs then).
        if routed.response.status.code == 499 { ticket.finish() }
        channel.closeFuture.whenComplete { _ in ticket.finish() }
        if await server.pipeline.budget.usage.reservedBytes == 0 { ProcessMemory.trim() }
        return routed
    }

    /// How long a connection may stay open after its answer was written, for the client to read it and
    /// close (a client still sending a refused body is cut off then); also how long the rest of a body
    /// refused before it was read is read and dropped (`discard`).
    static let linger: TimeAmount = .seconds(2)
    /// The most bytes of a refused body read and dropped after an early answer. A longer declared body
    /// (a 10 GB Content-Length) is not read at all: its connection is closed after the answer.
    static let lingerMaxBytes = 64 << 20

    /// The request's body to read and drop after an early answer, and how much of it: its declared length,
    /// or `lingerMaxBytes` for a chunked one; nil when it is longer than that, or there is none.
    private func lingeringBody() -> (body: RequestBody, bytes: Int)? {
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        if let declared, declared == 0 || declared > Self.lingerMaxBytes { return nil }
        if declared == nil && request.headers[.transferEncoding] == nil { return nil }
        return (request.body, declared ?? Self.lingerMaxBytes)
    }

    /// Reads and drops `body` until it ends or `maxBytes` were read; when `timeout` passes first, the
    /// connection is closed (which ends the read), as it would be after the answer anyway.
    static func discard(_ body: RequestBody, upTo maxBytes: Int, within timeout: TimeAmount, on channel: any Channel)
        async
    {
        let timer = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        defer { timer.cancel() }
        var read = 0
        do {
            for try await buffer in body {
                read += buffer.readableBytes
                if read >= maxBytes { break }
            }
        } catch {
            // The connection closed (the client's close, or the timer's): nothing more to drop.
        }
    }

    /// Ends the connection once the answer is written: the output is shut (FIN) after the pending writes,
    /// then the whole channel is closed `linger` later unless the client closed it first. Reading stays on
    /// meanwhile (a refused body is read and dropped), so the client's close is seen and nothing lingers
    /// in CLOSE-WAIT.
    static func closeAfterAnswer(_ channel: any Channel, whenOutputClosed: @escaping @Sendable () -> Void = {}) {
        let outputClosed = channel.eventLoop.makePromise(of: Void.self)
        channel.close(mode: .output, promise: outputClosed)
        outputClosed.futureResult.whenComplete { _ in
            whenOutputClosed()
            channel.eventLoop.scheduleTask(in: linger) { channel.close(promise: nil) }
        }
    }

    /// The services and the options, checked against every profile before the body is read.
    private func readQuery() throws(ServerFailure) -> ([ServiceProfile], QueryOptions) {
        let pairs = request.uri.queryParameters.map { (name: String($0.key), value: String($0.value)) }
        let options: QueryOptions
        do {
            options = try QueryOptions(query: pairs)
        } catch {
            throw ServerFailure(.badRequest, "invalidParameter", error.description)
        }
        let names = pairs.filter { $0.name == "service" }.map(\.value)
        let known = server.catalog.profiles.map(\.name).joined(separator: ", ")
        guard !names.isEmpty else {
            throw ServerFailure(.badRequest, "missingService", "name a service: ?service=NAME (known: \(known))")
        }
        var profiles: [ServiceProfile] = []
        for name in names {
            guard let profile = server.catalog.named(name) else {
                throw ServerFailure(.badRequest, "unknownService", "unknown service \"\(name)\" (known: \(known))")
            }
            profiles.append(profile)
        }
        // As the CLI's entry check: the profile's options with the query's over them, checked now.
        for profile in profiles {
            var prepared = profile.options(basedOn: server.pipeline.configuration.baseOptions)
            do {
                try options.apply(to: &prepared)
                try prepared.validate()
            } catch {
                throw ServerFailure.from(error, queueTimeout: configuration.queueTimeout)
            }
        }
        return (profiles, options)
    }

    private func prepare(profiles: [ServiceProfile], options: QueryOptions) async throws -> Routed {
        if server.isDraining {
            throw ServerFailure.unavailable(
                "draining", "the server is shutting down", rejection: .draining, retryAfter: 5)
        }
        if let length = request.headers[.contentLength].flatMap({ Int($0) }) {
            if length > configuration.maxBodyBytes {
                throw ServerFailure(
                    .contentTooLarge, "bodyTooLarge",
                    "the body is \(length) bytes, over the limit of \(configuration.maxBodyBytes)",
                    rejection: .bodyTooLarge)
            }
            if length == 0 { throw Self.emptyBody }
        }
        let boundary: String?
        if Multipart.isFormData(request.headers[.contentType]) {
            guard let found = Multipart.boundary(ofContentType: request.headers[.contentType] ?? "") else {
                throw ServerFailure(
                    .badRequest, "brokenMultipart",
                    "multipart/form-data needs a boundary parameter (1 to 70 characters)")
            }
            boundary = found
        } else {
            boundary = nil
        }
        let body = BodyProgress(maxBytes: configuration.maxBodyBytes)
        let start = ContinuousClock.now
        let outcome: JobOutcome
        do {
            bodyReadingBegan.withLockedValue { $0 = true }
            outcome = try await request.body.consumeWithCancellationOnInboundClose { stream in
                try await withThrowingTaskGroup(of: JobOutcome.self) { group in
                    group.addTask {
                        await self.runJob(stream, boundary: boundary, profiles: profiles, options: options, body: body)
                    }
                    group.addTask { await body.watchDeadline(self.configuration.readTimeout) }
                    var outcome: JobOutcome?
                    while let next = try await group.next() {
                        if case .bodyArrived = next { continue }
                        group.cancelAll()
                        outcome = next
                        break
                    }
                    // A job refused before it read the body (queue full, say) never made the body's iterator:
                    // make one and drop it, which ends the body stream, or Hummingbird's reader of the
                    // connection waits for room in it forever (and with it this handler).
                    if !body.iteratorMade { _ = stream.makeAsyncIterator() }
                    guard let outcome else { throw CancellationError() }
                    return outcome
                }
            }
            // The client went away while its body was arriving, and the job ended on the cut body (as an
            // unreadable upload) before the watcher of the connection cancelled it: that is a disconnect too.
            if !context.channel.isActive { throw CancellationError() }
        } catch {
            // The connection's input closed before the answer: the client went away (or, past the grace
            // period, the server cancelled the handler). The job was cancelled on the way here.
            server.metrics.countRequestBody(body.bytes)
            if Task.isCancelled || server.isDraining {
                throw ServerFailure.unavailable(
                    "draining", "the server is shutting down: the job was cancelled",
                    rejection: .draining, retryAfter: 5)
            }
            server.metrics.countClientDisconnect()
            server.logger.notice(
                "client went away; job cancelled",
                metadata: ["request_id": .string(id), "received_bytes": .stringConvertible(body.bytes)])
            throw ServerFailure(
                HTTPResponse.Status(code: 499, reasonPhrase: "Client Closed Request"), "clientClosed",
                "the client closed the connection before the answer")
        }
        server.metrics.countRequestBody(body.bytes)
        switch outcome {
        case .readTimeout:
            throw ServerFailure(
                .requestTimeout, "readTimeout",
                "the body did not arrive within \(SharePipeServer.seconds(configuration.readTimeout)) s (\(body.bytes) bytes received)",
                rejection: .readTimeout)
        case .bodyArrived:
            throw CancellationError()  // not returned by the group
        case .failed(let failure):
            throw failure
        case .prepared(let results):
            server.metrics.observePrepare(seconds: SharePipeServer.seconds(ContinuousClock.now - start))
            // With variants (`variant=`) every output is a part of a multipart/mixed answer.
            if results.count == 1 && !options.asksForVariants {
                switch results[0].outcome {
                case .success(let image):
                    return Routed(response: Self.imageResponse(image, service: results[0].profile.name))
                case .failure(let error): throw ServerFailure.from(error, queueTimeout: configuration.queueTimeout)
                }
            }
            return Routed(
                response: Self.mixedResponse(results, requestID: id, queueTimeout: configuration.queueTimeout))
        }
    }

    static let emptyBody = ServerFailure(
        .badRequest, "emptyBody", "the request body is empty: post the image as the body")

    /// What the job task or the deadline task ended with.
    enum JobOutcome: Sendable {
        case prepared([ServiceResult])
        case failed(ServerFailure)
        case readTimeout
        /// The deadline watcher's answer when the body arrived in time (not an outcome of the request).
        case bodyArrived
    }

    /// Streams the body (or its `file` part) into the pipeline. Never throws: a failure is an outcome.
    private func runJob(
        _ stream: RequestBody, boundary: String?, profiles: [ServiceProfile], options: QueryOptions,
        body: BodyProgress
    ) async -> JobOutcome {
        let counted = CountedBody(base: stream, progress: body)
        do {
            let results: [ServiceResult]
            let adjust: SharePipeline.OptionsAdjustment? =
                options.isEmpty
                ? nil
                : { @Sendable (prepared: inout PrepareOptions) throws(SharePipeError) in
                    try options.apply(to: &prepared)
                }
            if let boundary {
                let part = Multipart.FormDataPart(base: counted, boundary: boundary, field: "file")
                results = try await server.pipeline.prepare(
                    upload: UploadEnd(base: part, progress: body), named: "upload",
                    for: profiles, adjusting: adjust)
            } else {
                results = try await server.pipeline.prepare(
                    upload: UploadEnd(base: counted, progress: body), named: "upload",
                    for: profiles, adjusting: adjust)
            }
            return .prepared(results)
        } catch {
            // The body's own failures first: the pipeline sees them as an unreadable upload.
            if let failure = body.failure { return .failed(failure) }
            if body.uploadBytes == 0 && body.ended {
                return .failed(
                    boundary == nil
                        ? Self.emptyBody
                        : ServerFailure(.badRequest, "emptyBody", "the file part is empty: put the image in it"))
            }
            if let error = error as? SharePipeError {
                return .failed(ServerFailure.from(error, queueTimeout: configuration.queueTimeout))
            }
            return .failed(ServerFailure(.internalServerError, "internal", "\(error)"))
        }
    }

    /// `200` with the image and its headers.
    static func imageResponse(_ image: PreparedImage, service: String) -> Response {
        var headers = imageHeaders(image, service: service)
        headers[.contentLength] = String(image.byteCount)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: image.bytes)))
    }

    /// `Content-Type` and the `X-SharePipe-*` headers of one prepared image.
    static func imageHeaders(_ image: PreparedImage, service: String) -> HTTPFields {
        var headers = HTTPFields()
        headers[.contentType] = image.format.mediaType
        headers[.sharePipeService] = service
        headers[.sharePipeWidth] = String(image.size.width)
        headers[.sharePipeHeight] = String(image.size.height)
        if let quality = image.quality { headers[.sharePipeQuality] = String(quality) }
        if let score = image.score { headers[.sharePipeScore] = String((score * 100).rounded() / 100) }
        headers[.sharePipeFormat] = image.format.rawValue
        let removed = image.removedMetadata.sorted().map(\.rawValue)
        headers[.sharePipeRemoved] = removed.isEmpty ? "none" : removed.joined(separator: ",")
        if let changed = changedBeyondRequest(image) { headers[.sharePipeChanged] = changed }
        if let placeholder = image.placeholder {
            headers[.sharePipeBlurHash] = placeholder.blurHash
            headers[.sharePipeThumbHash] = placeholder.thumbHash
        }
        if let focus = image.focus { headers[.sharePipeFocus] = focus.description }
        return headers
    }

    /// What was done to the image beyond the request (which asks for a resize and for metadata to go), as
    /// `X-SharePipe-Changed` tokens: `format=gif->png`, `first-frame-only`, `frames=40->20`; nil for none.
    static func changedBeyondRequest(_ image: PreparedImage) -> String? {
        var tokens: [String] = []
        if image.format != image.inputFormat {
            tokens.append("format=\(image.inputFormat.rawValue)->\(image.format.rawValue)")
        }
        if image.inputFrameCount > 1 && image.frameCount == 1 {
            tokens.append("first-frame-only")
        } else if image.frameCount < image.inputFrameCount {
            tokens.append("frames=\(image.inputFrameCount)->\(image.frameCount)")
        }
        return tokens.isEmpty ? nil : tokens.joined(separator: ", ")
    }

    /// The headers of a prepared output's part of a `multipart/mixed` answer: the image's (`imageHeaders`), its
    /// length, and a `Content-Disposition` naming the output: `inline; name="mastodon"; filename="mastodon.jpg"`,
    /// for a variant `name="mastodon.small"` with `X-SharePipe-Variant: small`.
    static func outputPartHeaders(_ image: PreparedImage, service: String, variant: String?) -> HTTPFields {
        var headers = imageHeaders(image, service: service)
        headers[.contentLength] = String(image.byteCount)
        let name = service + (variant.map { "." + $0 } ?? "")
        headers[.contentDisposition] = "inline; name=\"\(name)\"; filename=\"\(name).\(image.format.fileExtension)\""
        if let variant { headers[.sharePipeVariant] = variant }
        return headers
    }

    /// `200` with `multipart/mixed`: one part per service (and per variant, `variant=`), in the query's order; a service that failed is a
    /// part with `Content-Type: application/json`, `X-SharePipe-Status` and the JSON error.
    static func mixedResponse(_ results: [ServiceResult], requestID: String, queueTimeout: Duration) -> Response {
        let boundary =
            "sharepipe-" + String(UInt64.random(in: .min ... .max), radix: 16)
            + String(UInt64.random(in: .min ... .max), radix: 16)
        var buffer = ByteBuffer()
        buffer.reserveCapacity(
            results.reduce(0) { total, result in
                let image = try? result.get()
                return total + (image.map { $0.variants.reduce($0.byteCount) { $0 + $1.image.byteCount + 512 } } ?? 512)
                    + 512
            })
        func writePart(_ partHeaders: HTTPFields, _ content: [UInt8]) {
            buffer.writeString("--\(boundary)\r\n")
            for field in partHeaders { buffer.writeString("\(field.name.rawName): \(field.value)\r\n") }
            buffer.writeString("\r\n")
            buffer.writeBytes(content)
            buffer.writeString("\r\n")
        }
        for result in results {
            let partHeaders: HTTPFields
            let content: [UInt8]
            switch result.outcome {
            case .success(let image):
                writePart(outputPartHeaders(image, service: result.profile.name, variant: nil), image.bytes)
                // Each variant a part of its own, after its service's output, in the order asked.
                for variant in image.variants {
                    writePart(
                        outputPartHeaders(variant.image, service: result.profile.name, variant: variant.name),
                        variant.image.bytes)
                }
                continue
            case .failure(let error):
                let failure = ServerFailure.from(error, queueTimeout: queueTimeout)
                content = Array(failure.body(requestID: requestID).utf8)
                var headers = HTTPFields()
                headers[.contentType] = "application/json"
                headers[.sharePipeService] = result.profile.name
                headers[.sharePipeStatus] = String(failure.status.code)
                headers[.contentLength] = String(content.count)
                partHeaders = headers
            }
            writePart(partHeaders, content)
        }
        buffer.writeString("--\(boundary)--\r\n")
        var headers = HTTPFields()
        headers[.contentType] = "multipart/mixed; boundary=\(boundary)"
        headers[.contentLength] = String(buffer.readableBytes)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: buffer))
    }
}

/// How far a request body has come: bytes received, whether reading began and ended, the upload's own
/// bytes (the `file` part's, for multipart), and a failure of the body itself (too long, broken multipart),
/// which the pipeline would otherwise only see as an unreadable upload.
final class BodyProgress: Sendable {
    private struct State {
        var bytes = 0
        var uploadBytes = 0
        var startedAt: ContinuousClock.Instant?
        var iteratorMade = false
        var ended = false
        var failure: ServerFailure?
    }
    private let state = NIOLockedValueBox(State())
    let maxBytes: Int

    init(maxBytes: Int) { self.maxBytes = maxBytes }

    var bytes: Int { state.withLockedValue { $0.bytes } }
    var uploadBytes: Int { state.withLockedValue { $0.uploadBytes } }
    var ended: Bool { state.withLockedValue { $0.ended } }
    var failure: ServerFailure? { state.withLockedValue { $0.failure } }

    var iteratorMade: Bool { state.withLockedValue { $0.iteratorMade } }
    func madeIterator() { state.withLockedValue { $0.iteratorMade = true } }
    func started() { state.withLockedValue { if $0.startedAt == nil { $0.startedAt = .now } } }
    func end() { state.withLockedValue { $0.ended = true } }

    /// Counts `count` body bytes; false once past `maxBytes` (the failure is recorded).
    func received(_ count: Int) -> Bool {
        state.withLockedValue { state in
            state.bytes += count
            guard state.bytes > maxBytes else { return true }
            state.failure = ServerFailure(
                .contentTooLarge, "bodyTooLarge",
                "the body passed the limit of \(maxBytes) bytes", rejection: .bodyTooLarge)
            return false
        }
    }

    func uploaded(_ count: Int) { state.withLockedValue { $0.uploadBytes += count } }
    func fail(_ failure: ServerFailure) { state.withLockedValue { if $0.failure == nil { $0.failure = failure } } }

    /// Returns `.readTimeout` when reading began more than `timeout` ago and the upload has not ended;
    /// `.bodyArrived` once it ended (or when cancelled). The clock starts with the first read, so time spent
    /// waiting in the queue before the body is read does not count.
    func watchDeadline(_ timeout: Duration) async -> PrepareRoute.JobOutcome {
        while true {
            let (startedAt, ended) = state.withLockedValue { ($0.startedAt, $0.ended) }
            if ended { return .bodyArrived }
            if let startedAt, ContinuousClock.now - startedAt >= timeout { return .readTimeout }
            let step: Duration =
                startedAt.map { min(.milliseconds(250), max(.milliseconds(1), timeout - (ContinuousClock.now - $0))) }
                ?? .milliseconds(250)
            do { try await Task.sleep(for: step) } catch { return .bodyArrived }
        }
    }
}

/// The request body as byte arrays, counted against the limit; the first read starts the read deadline.
struct CountedBody: AsyncSequence {
    typealias Element = [UInt8]
    let base: RequestBody
    let progress: BodyProgress

    func makeAsyncIterator() -> Iterator {
        progress.madeIterator()
        return Iterator(base: base.makeAsyncIterator(), progress: progress)
    }

    struct Iterator: AsyncIteratorProtocol {
        var base: RequestBody.AsyncIterator
        let progress: BodyProgress

        mutating func next() async throws -> [UInt8]? {
            progress.started()
            while let buffer = try await base.next() {
                guard buffer.readableBytes > 0 else { continue }
                guard progress.received(buffer.readableBytes) else {
                    throw ServerFailure(.contentTooLarge, "bodyTooLarge", "the body passed the limit")
                }
                return Array(buffer.readableBytesView)
            }
            return nil
        }
    }
}

/// The upload as the pipeline reads it: marks its end (which stops the read deadline) and counts its bytes;
/// a broken multipart body is recorded as such.
struct UploadEnd<Base: AsyncSequence>: AsyncSequence where Base.Element == [UInt8] {
    typealias Element = [UInt8]
    let base: Base
    let progress: BodyProgress

    func makeAsyncIterator() -> Iterator { Iterator(base: base.makeAsyncIterator(), progress: progress) }

    struct Iterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let progress: BodyProgress

        mutating func next() async throws -> [UInt8]? {
            do {
                guard let chunk = try await base.next() else {
                    progress.end()
                    return nil
                }
                progress.uploaded(chunk.count)
                return chunk
            } catch let broken as Multipart.Broken {
                progress.fail(ServerFailure(.badRequest, "brokenMultipart", broken.description))
                throw broken
            }
        }
    }
}
