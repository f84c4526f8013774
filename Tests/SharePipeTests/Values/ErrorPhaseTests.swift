import CSharePipe
import Foundation
import Testing
@_spi(Testing) @testable import SharePipe

/// Errors typed by phase: each phase provoked with real bytes, checked by its case, phase, file name, and
/// through the CLI by its JSON line and exit status; an internal error is SharePipe's, never the input's.
@Suite struct ErrorPhaseTests {
    /// One file through `sharepipe prepare --json`: its JSON line and the exit status.
    static func prepareJSON(_ path: String, environment: [String] = []) throws -> (object: [String: Any], status: Int32)
    {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        // `Tool.run` runs through /usr/bin/env, so `env VAR=value sharepipe …` sets the variables.
        let run = try Tool.run("env", environment + [Tool.sharepipe, "prepare", path, "--out", directory, "--json"])
        let line = try #require(run.stdout.split(separator: "\n").first, "\(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        return (object, run.status)
    }

    static func prepare(_ path: String) throws -> PreparedImage {
        try Pipeline.prepare(.file(path: path), options: PrepareOptions().checked())
    }

    /// A PNG whose IDAT has 16 bytes of its zlib stream changed, with the chunk's CRC made right again:
    /// only inflating the image data can find the damage.
    static func damagedImageData() throws -> [UInt8] {
        var bytes = try Fixtures.bytes(Fixtures.path("png/detail-rgb-16.png"))
        var at = 8
        while at + 12 <= bytes.count {
            let length = bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
            if Array(bytes[at + 4..<at + 8]) == Array("IDAT".utf8) {
                for index in (at + 8 + length / 2)..<(at + 8 + length / 2 + 16) { bytes[index] ^= 0x5A }
                let crc = PNGCRC.checksum(type: .IDAT, data: Array(bytes[at + 8..<at + 8 + length]))
                bytes.replaceSubrange(
                    at + 8 + length..<at + 12 + length,
                    with: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: crc >> $0) })
                return bytes
            }
            at += 12 + length
        }
        throw SharePipeError.corrupt(file: "detail-rgb-16.png", phase: .header, reason: "no IDAT chunk")
    }

    // MARK: Header

    @Test("a header cut short is corrupt in the header phase, naming the file; the CLI exits 1")
    func truncatedHeader() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let path = directory + "/cut.png"
        // The signature and half of IHDR.
        try Fixtures.write(Array(try Fixtures.bytes(Fixtures.path("png/detail-rgb-16.png")).prefix(20)), to: path)
        #expect {
            try Self.prepare(path)
        } throws: { error in
            guard case SharePipeError.corrupt(let file, .header, let reason) = error else { return false }
            return file == path && reason.contains("data ends at byte 20 (file is truncated)")
        }
        let (object, status) = try Self.prepareJSON(path)
        #expect(object["errorKind"] as? String == "corrupt" && object["errorPhase"] as? String == "header", "\(object)")
        #expect(object["input"] as? String == path && object["errorUnsupported"] == nil)
        #expect(status == 1)
    }

    // MARK: Decode

    @Test("damaged compressed image data is corrupt in the decode phase; the CLI says so in its JSON and exits 1")
    func damagedEntropyData() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let path = directory + "/damaged.png"
        try Fixtures.write(try Self.damagedImageData(), to: path)
        // The header is whole: the probe reads it as the undamaged file's.
        #expect(
            try SharePipe.inspect(.file(path: path)).size
                == SharePipe.inspect(.file(path: Fixtures.path("png/detail-rgb-16.png"))).size)
        #expect {
            try Self.prepare(path)
        } throws: { error in
            guard case SharePipeError.corrupt(let file, .decode, _) = error else { return false }
            return file == path
        }
        let (object, status) = try Self.prepareJSON(path)
        #expect(object["errorKind"] as? String == "corrupt" && object["errorPhase"] as? String == "decode", "\(object)")
        #expect(status == 1)
        // A JPEG whose entropy-coded data ends early: also the decode phase.
        #expect {
            try Self.prepare(Fixtures.path("broken/truncated.jpg"))
        } throws: { error in
            guard case SharePipeError.corrupt(let file, .decode, _) = error else { return false }
            return file == Fixtures.path("broken/truncated.jpg")
        }
    }

    // MARK: Unsupported

    @Test("a feature the library lacks is unsupportedFormat(.feature) naming it; bytes that are no image are .format")
    func unsupportedFeatureAndFormat() throws {
        let twelveBit = Fixtures.path("broken/sof1-12bit.jpg")
        #expect {
            try Self.prepare(twelveBit)
        } throws: { error in
            guard case SharePipeError.unsupportedFormat(let file, .feature, let reason) = error else { return false }
            return file == twelveBit && reason.contains("12-bit JPEG")
        }
        let (object, status) = try Self.prepareJSON(twelveBit)
        #expect(
            object["errorKind"] as? String == "unsupportedFormat" && object["errorUnsupported"] as? String == "feature",
            "\(object)")
        #expect(object["errorPhase"] == nil && status == 1)

        let text = Fixtures.path("broken/not-an-image.png")
        #expect {
            try Self.prepare(text)
        } throws: { error in
            guard case SharePipeError.unsupportedFormat(let file, .format, _) = error else { return false }
            return file == text
        }
        #expect(try Self.prepareJSON(text).object["errorUnsupported"] as? String == "format")
    }

    // MARK: Limits, I/O (the encoder's phase: LenientInputTests' 70 000-px-wide PNG, `encodingFailed`)

    @Test("limits are tooLarge with the limit; a missing file is unreadable; both exit 1")
    func limitsAndIO() throws {
        let bomb = Fixtures.path("broken/huge-header.jpg")
        let (object, status) = try Self.prepareJSON(bomb)
        #expect(object["errorKind"] as? String == "tooLarge" && status == 1)
        #expect((object["errorLimit"] as? [String: Any])?["kind"] as? String == "pixelArea", "\(object)")

        let missing = Fixtures.temporaryDirectory() + "/gone.jpg"
        #expect {
            try Self.prepare(missing)
        } throws: { error in
            guard case SharePipeError.unreadable(let file, _) = error else { return false }
            return file == missing
        }
        let (gone, goneStatus) = try Self.prepareJSON(missing)
        #expect(gone["errorKind"] as? String == "unreadable" && gone["input"] as? String == missing && goneStatus == 1)
    }

    // MARK: Internal

    @Test("an error that is not a SharePipeError reaching the pipeline's top is internalError naming the file")
    func internalErrorFromTheCatchAll() throws {
        struct Bug: Error {}
        let path = Fixtures.path("jpeg/orient-6.jpg")
        let results = Pipeline.prepare(
            .file(path: path), forEach: [.success(try PrepareOptions().checked())],
            checkpoint: { throw Bug() })
        guard case .failure(let error) = try #require(results.first) else {
            Issue.record("the job succeeded past a throwing checkpoint")
            return
        }
        guard case .internalError(let file, let reason) = error else {
            Issue.record("\(error)")
            return
        }
        #expect(file == path && reason.hasPrefix("Bug"))
        #expect(error.kind == "internal")
        #expect(error.description.contains("a SharePipe bug, not a fault of the input"))
        // A SharePipeError passes through unchanged; Swift's CancellationError is `cancelled`.
        #expect(SharePipeError.from(SharePipeError.cancelled(file: "a"), file: "b") == .cancelled(file: "a"))
        #expect(SharePipeError.from(CancellationError(), file: "b") == .cancelled(file: "b"))
    }

    @Test("the service pipeline reports a bug in a job as internalError naming the upload, not its spool file")
    func internalErrorInTheServicePipeline() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        struct Bug: Error {}
        let configuration = SharePipeline.Configuration(
            memoryBudget: 1 << 30, spoolThreshold: 1 << 10,
            spoolDirectory: directory)
        var pipeline = try SharePipeline(configuration: configuration)
        pipeline.hooks.checkpoint = { throw Bug() }
        let bytes = try Fixtures.bytes(Fixtures.path("jpeg/orient-6.jpg"))
        let results = try await pipeline.prepare(
            upload: AsyncStream {
                $0.yield(bytes); $0.finish()
            }, named: "upload.jpg",
            for: [.x])
        let result = try #require(results.first)
        guard case .failure(.internalError(let file, _)) = result.outcome else {
            Issue.record("\(result.outcome)")
            return
        }
        #expect(file == "upload.jpg")
    }

    @Test("the CLI: an internal error is kind internal in the JSON and exit status 4, over the other failures' 1")
    func internalErrorExitStatus() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let fault = ["SHAREPIPE_DEBUG_FAULT=internal"]
        let path = Fixtures.path("jpeg/orient-6.jpg")
        let (object, status) = try Self.prepareJSON(path, environment: fault)
        #expect(object["errorKind"] as? String == "internal" && object["input"] as? String == path, "\(object)")
        #expect((object["error"] as? String)?.hasPrefix(path + ": internal error (a SharePipe bug") == true)
        #expect(status == 4)
        // With a corrupt file beside it (refused at its header, before the fault), still 4; without the fault, 1.
        let arguments = [Tool.sharepipe, "prepare", path, Fixtures.path("broken/bad-crc-ihdr.png"), "--out", directory]
        let both = try Tool.run("env", fault + arguments)
        #expect(both.status == 4, "\(both.stderr)")
        #expect(both.stderr.contains("FAILED \(path): internal error"))
        #expect(try Tool.run("env", arguments).status == 1)
        // Without the fault the same file is prepared: the hook is the only difference.
        #expect(try Self.prepareJSON(path).status == 0)
    }

    // MARK: The shim's statuses

    @Test("every shim status maps to one error, the library's in the caller's phase")
    func shimStatuses() {
        func error(_ status: sp_status, _ phase: SharePipeError.ReadPhase = .decode) -> SharePipeError? {
            var message = shimMessageBuffer()
            message.withUnsafeMutableBufferPointer { buffer in
                _ = "what the library said".withCString { strncpy(buffer.baseAddress!, $0, buffer.count - 1) }
            }
            do {
                try checkShim(status, message, file: "f.img", phase: phase)
                return nil
            } catch {
                return error as? SharePipeError
            }
        }
        #expect(error(SP_OK) == nil && error(SP_ERR_END) == nil)
        #expect(
            error(SP_ERR_LIBRARY, .header) == .corrupt(file: "f.img", phase: .header, reason: "what the library said"))
        #expect(
            error(SP_ERR_LIBRARY, .decode) == .corrupt(file: "f.img", phase: .decode, reason: "what the library said"))
        #expect(error(SP_ERR_IO) == .unreadable(file: "f.img", reason: "what the library said"))
        #expect(
            error(SP_ERR_UNAVAILABLE)
                == .unsupportedFormat(file: "f.img", missing: .library, reason: "what the library said"))
        #expect(
            error(SP_ERR_UNSUPPORTED)
                == .unsupportedFormat(file: "f.img", missing: .feature, reason: "what the library said"))
        guard case .tooLarge(_, let memory)? = error(SP_ERR_MEMORY), case .tooLarge(_, let limit)? = error(SP_ERR_LIMIT)
        else {
            Issue.record("memory and limit statuses are tooLarge")
            return
        }
        #expect(memory.kind == .availableMemory && limit.kind == .pixelArea)
        guard case .internalError(let file, let reason)? = error(SP_ERR_ARGUMENT),
            case .internalError(_, let unknown)? = error(sp_status(rawValue: 99))
        else {
            Issue.record("a refused argument and an unknown status are SharePipe's bugs")
            return
        }
        #expect(file == "f.img" && reason.contains("what the library said"))
        #expect(unknown.contains("99"))
    }
}
