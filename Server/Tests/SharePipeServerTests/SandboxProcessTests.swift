import Foundation
import SharePipe
import Testing

/// The `sharepipe-server` executable's process sandbox, seen from outside (the kernel's status file, the
/// `listening` line, `/metrics`) and, in debug builds, from inside a job (`SHAREPIPE_DEBUG_FAULT=hijack-*`).
@Suite struct SandboxProcessTests {
    /// The layers `/metrics` shows, by name.
    static func layers(port: Int) async throws -> [String: Double] {
        let metrics = try await ServerHarness.metrics(port: port)
        var layers: [String: Double] = [:]
        for (key, value) in metrics where key.hasPrefix("sharepipe_sandbox_layer{layer=\"") {
            layers[String(key.dropFirst("sharepipe_sandbox_layer{layer=\"".count).dropLast(2))] = value
        }
        return layers
    }

    static func status(_ process: Process) throws -> String {
        try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
    }

    @Test("a running server shows Seccomp 2 and NoNewPrivs 1, says which layers are on, and still prepares")
    func theRunningServerIsConfined() async throws {
        let server = try await ServerProcess.start(["--port", "0"])
        defer { server.stop() }
        let status = try Self.status(server.process)
        #expect(status.contains("Seccomp:\t2") && status.contains("NoNewPrivs:\t1"), "\(status)")
        let listening = try #require(server.lines.all.first { $0["message"] as? String == "listening" })
        let summary = listening["sandbox"] as? String ?? ""
        #expect(summary.hasPrefix("no_new_privs, seccomp"), "\(summary)")
        let landlock = ProcessSandbox.landlockABI
        let layers = try await Self.layers(port: server.port)
        #expect(layers["no_new_privs"] == 1 && layers["seccomp"] == 1, "\(layers)")
        #expect(layers["landlock_fs"] == (landlock >= 1 ? 1 : 0), "\(layers)")
        #expect(layers["landlock_net"] == (landlock >= 4 ? 1 : 0), "\(layers)")
        #expect(layers["landlock_scope"] == (landlock >= 6 ? 1 : 0), "\(layers)")
        // Every format still prepares: the lazily loaded libraries were opened before the filesystem shrank.
        for (image, type) in [
            ("jpeg/orient-6.jpg", "image/jpeg"), ("heif/mirror.heic", "image/jpeg"), ("heif/alpha.avif", "image/png"),
            ("webp/animated.webp", "image/gif"), ("apng/dispose-blend.png", "image/png"),
            ("gif/loop3.gif", "image/gif"),
        ] {
            let answer = try await LoopbackHTTP.request(
                port: server.port, method: "POST", path: "/v1/prepare?service=mastodon",
                body: ServerHarness.image(image))
            #expect(answer.status == 200, "\(image): \(answer.status) \(answer.text)")
            #expect(answer.headers["content-type"].map { $0.hasPrefix("image/") } == true, "\(image) \(type)")
        }
        // A large upload goes through a spool file, in the spool folder the sandbox keeps writable.
        let large = try await LoopbackHTTP.request(
            port: server.port, method: "POST", path: "/v1/prepare?service=mastodon",
            body: ServerHarness.image("jpeg/large-4000x3000.jpg"))
        #expect(large.status == 200, "\(large.text)")
    }

    @Test("--no-sandbox and SHAREPIPE_SERVER_SANDBOX=off leave the process unconfined, and say so")
    func turnedOff() async throws {
        for (arguments, environment) in [
            (["--port", "0", "--no-sandbox"], [String: String]()),
            (["--port", "0"], ["SHAREPIPE_SERVER_SANDBOX": "off"]),
        ] {
            let server = try await ServerProcess.start(arguments, environment: environment)
            defer { server.stop() }
            let status = try Self.status(server.process)
            #expect(status.contains("Seccomp:\t0"), "\(arguments) \(environment)")
            let listening = try #require(server.lines.all.first { $0["message"] as? String == "listening" })
            #expect(listening["sandbox"] as? String == "off")
            let layers = try await Self.layers(port: server.port)
            #expect(layers.count == 5 && layers.values.allSatisfy { $0 == 0 }, "\(layers)")
        }
    }

    #if DEBUG
        @Test("each act of a hijacked decoder is refused inside a job: 500 internal, and the server goes on")
        func hijackedDecoderIsRefused() async throws {
            let workingFolder = FileManager.default.currentDirectoryPath
            for hijack in ["hijack-exec", "hijack-read", "hijack-write", "hijack-connect", "hijack-fork"] {
                let server = try await ServerProcess.start(
                    ["--port", "0"], environment: ["SHAREPIPE_DEBUG_FAULT": hijack])
                defer { server.stop() }
                for _ in 0..<2 {
                    let answer = try await LoopbackHTTP.request(
                        port: server.port, method: "POST", path: "/v1/prepare?service=mastodon",
                        body: ServerHarness.image("jpeg/orient-6.jpg"))
                    #expect(answer.status == 500 && answer.errorKind == "internal", "\(hijack): \(answer.text)")
                    #expect(answer.errorMessage.contains("\(hijack) refused ("), "\(hijack): \(answer.errorMessage)")
                }
                #expect(server.process.isRunning)
                #expect(try await LoopbackHTTP.request(port: server.port, path: "/healthz").status == 200)
                // An upload in memory has no folder: the write was tried in the server's working folder.
                let pid = server.process.processIdentifier
                #expect(!FileManager.default.fileExists(atPath: "\(workingFolder)/sharepipe-hijack-\(pid)"))
            }
        }

        @Test("without the sandbox the hook's acts go through: the refusals above are the sandbox's")
        func unconfinedHijackGoesThrough() async throws {
            let server = try await ServerProcess.start(
                ["--port", "0", "--no-sandbox"], environment: ["SHAREPIPE_DEBUG_FAULT": "hijack-read"])
            defer { server.stop() }
            let answer = try await LoopbackHTTP.request(
                port: server.port, method: "POST", path: "/v1/prepare?service=mastodon",
                body: ServerHarness.image("jpeg/orient-6.jpg"))
            #expect(answer.status == 500 && answer.errorMessage.contains("hijack-read ALLOWED"), "\(answer.text)")
        }
    #endif
}
