import Foundation
import SharePipe
import SharePipeServer
import Testing

/// The other routes, the token, the metrics, the read deadline and disconnecting clients, on a live server.
@Suite struct ServerRouteTests {
    @Test func theServedDocumentIsTheCommittedFileByteForByte() async throws {
        let committed = try [UInt8](
            Data(contentsOf: URL(fileURLWithPath: ServerHarness.repository + "/Server/openapi.json")))
        let response = try await ServerHarness.withServer { _, port in
            try await LoopbackHTTP.request(port: port, path: "/v1/openapi.json")
        }
        #expect(response.status == 200 && response.headers["content-type"] == "application/json")
        #expect(response.body == committed, "run Server/update-openapi.sh after editing Server/openapi.json")
        // It describes every route the server has, with the methods it takes.
        let document = try #require(try JSONSerialization.jsonObject(with: Data(committed)) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let prepare = try #require(paths["/v1/prepare"]?["post"] as? [String: Any])
        let parameters = (prepare["parameters"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        for name in QueryOptions.parameters { #expect(parameters.contains(name), "\(name)") }
        let statuses = Set((prepare["responses"] as? [String: Any] ?? [:]).keys)
        #expect(statuses.isSuperset(of: ["200", "400", "401", "405", "408", "413", "415", "422", "500", "503"]))
    }

    /// Every `$ref` names a part of the document that exists (a missing one is skipped by clients and testers).
    @Test func everyReferenceInTheDocumentResolves() throws {
        let committed = try Data(contentsOf: URL(fileURLWithPath: ServerHarness.repository + "/Server/openapi.json"))
        let document = try #require(try JSONSerialization.jsonObject(with: committed) as? [String: Any])
        var references: [String] = []
        func collect(_ node: Any) {
            if let object = node as? [String: Any] {
                if let reference = object["$ref"] as? String { references.append(reference) }
                object.values.forEach(collect)
            } else if let array = node as? [Any] {
                array.forEach(collect)
            }
        }
        collect(document)
        #expect(references.count > 20, "\(references.count) references")
        for reference in Set(references) {
            #expect(reference.hasPrefix("#/"), "\(reference)")
            var node: Any? = document
            for part in reference.dropFirst(2).split(separator: "/") { node = (node as? [String: Any])?[String(part)] }
            #expect(node != nil, "\(reference) does not resolve")
        }
    }

    @Test func theDocumentDescribesTheRouteTable() throws {
        let committed = try Data(contentsOf: URL(fileURLWithPath: ServerHarness.repository + "/Server/openapi.json"))
        let document = try #require(try JSONSerialization.jsonObject(with: committed) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        #expect(Set(paths.keys) == Set(ServerResponder.routes.map(\.path)))
        let httpMethods: Set = ["get", "put", "post", "delete", "options", "head", "patch", "trace", "query"]
        for route in ServerResponder.routes {
            let item = try #require(paths[route.path], "\(route.path)")
            #expect(
                Set(item.keys).intersection(httpMethods) == Set(route.methods.map { $0.rawValue.lowercased() }),
                "\(route.path): the document's methods are not the table's")
            for operation in route.operations {
                let described = try #require(item[operation.method.rawValue.lowercased()] as? [String: Any])
                #expect(described["operationId"] as? String == operation.operationID, "\(route.path)")
                let responses = Set((described["responses"] as? [String: Any] ?? [:]).keys)
                let security = described["security"] as? [Any]
                switch route.access {
                case .open:
                    #expect(security?.isEmpty == true, "\(route.path) is open: \"security\": [] in the document")
                    #expect(!responses.contains("401"), "\(route.path) is open: no 401")
                case .token:
                    #expect(security == nil, "\(route.path) needs the token: the document's default security")
                    #expect(responses.contains("401"), "\(route.path) needs the token: 401")
                }
                // Any route: another method, a request the parser refuses, headers over the limit.
                #expect(responses.isSuperset(of: ["200", "400", "405", "431"]), "\(route.path): \(responses)")
            }
        }
    }

    @Test func everyOtherMethodIs405WithTheRoutesMethodsInAllow() async throws {
        let configuration = ServerHarness.configuration { $0.token = "t0ken" }
        try await ServerHarness.withServer(configuration) { _, port in
            for route in ServerResponder.routes {
                let taken = Set(route.methods.map(\.rawValue))
                for method in ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "QUERY"]
                where !taken.contains(method) {
                    // Without the token: the method is checked first, as the document's 405 says.
                    let response = try await LoopbackHTTP.request(port: port, method: method, path: route.path)
                    #expect(response.status == 405, "\(method) \(route.path): \(response.status) \(response.text)")
                    #expect(response.headers["allow"] == route.allowHeader, "\(method) \(route.path)")
                    #expect(response.headers["content-type"] == "application/json", "\(method) \(route.path)")
                    #expect(response.errorKind == "methodNotAllowed", "\(method) \(route.path)")
                    #expect(response.errorMessage.contains(method), "\(method) \(route.path): \(response.errorMessage)")
                }
            }
        }
    }

    @Test func aRequestTheParserRefusesGetsTheJSONErrorAndIsCounted() async throws {
        try await ServerHarness.withServer { _, port in
            let big = String(repeating: "a", count: 100 * 1024)
            let cases: [(name: String, request: String, status: Int, kind: String, fragment: String)] = [
                (
                    "content-length", "POST /v1/prepare?service=x HTTP/1.1\r\nHost: h\r\nContent-Length: 12ab\r\n\r\n",
                    400, "malformedRequest", "content-length"
                ),
                (
                    "negative length", "POST /v1/prepare?service=x HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n",
                    400, "malformedRequest", "content-length"
                ),
                (
                    "header", "GET /healthz HTTP/1.1\r\nHost: h\r\nno colon here\r\n\r\n", 400, "malformedRequest",
                    "header"
                ),
                ("version", "GET /healthz HTTP/7.5\r\nHost: h\r\n\r\n", 400, "malformedRequest", "version"),
                ("method", "BREW /healthz HTTP/1.1\r\nHost: h\r\n\r\n", 501, "unknownMethod", "post or get"),
                (
                    "too large", "GET /healthz HTTP/1.1\r\nHost: h\r\nX-Big: \(big)\r\n\r\n", 431, "headersTooLarge",
                    "80 kib"
                ),
            ]
            for (name, request, status, kind, fragment) in cases {
                let response = try await LoopbackHTTP.raw(port: port, Array(request.utf8))
                #expect(response.status == status, "\(name): \(response.status) \(response.text)")
                #expect(response.headers["content-type"] == "application/json", "\(name)")
                #expect(response.headers["connection"] == "close", "\(name)")
                #expect(response.errorKind == kind, "\(name): \(response.text)")
                #expect(response.errorMessage.lowercased().contains(fragment), "\(name): \(response.errorMessage)")
                #expect(
                    (response.json["request_id"] as? String).map {
                        !$0.isEmpty && $0 == response.headers["x-request-id"]
                    }
                        == true, "\(name)")
            }
            let metrics = try await ServerHarness.metrics(port: port)
            #expect(metrics["sharepipe_requests_total{route=\"other\",status=\"400\",service=\"\"}"] == 4)
            #expect(metrics["sharepipe_requests_total{route=\"other\",status=\"431\",service=\"\"}"] == 1)
            #expect(metrics["sharepipe_requests_total{route=\"other\",status=\"501\",service=\"\"}"] == 1)
            // The server still answers.
            #expect(try await LoopbackHTTP.request(port: port, path: "/healthz").status == 200)
        }
    }

    @Test func servicesAreTheProfilesAsTheCLIPrintsThem() async throws {
        let response = try await ServerHarness.withServer { _, port in
            try await LoopbackHTTP.request(port: port, path: "/v1/services")
        }
        #expect(response.status == 200)
        let profiles = try JSONDecoder().decode([ServiceProfile].self, from: Data(response.body))
        #expect(profiles.map(\.name) == ProfileCatalog.builtIn.profiles.map(\.name))
        #expect(profiles == ProfileCatalog.builtIn.profiles)
    }

    @Test func theTokenGuardsEveryRouteButTheProbesAndIsComparedWhole() async throws {
        let photo = try ServerHarness.image("jpeg/orient-1.jpg")
        let configuration = ServerHarness.configuration { $0.token = "s3cret-token" }
        try await ServerHarness.withServer(configuration) { _, port in
            let good = [("Authorization", "Bearer s3cret-token")]
            for (header, expected) in [
                (nil, 401), ("Bearer s3cret-toke", 401), ("Bearer s3cret-token-", 401),
                ("Basic s3cret-token", 401), ("Bearer s3cret-token", 200), ("bearer s3cret-token", 200),
            ] {
                let response = try await LoopbackHTTP.request(
                    port: port, method: "POST", path: "/v1/prepare?service=x",
                    headers: header.map { [("Authorization", $0)] } ?? [], body: photo)
                #expect(response.status == expected, "\(header ?? "none"): \(response.text)")
                if expected == 401 {
                    #expect(response.headers["www-authenticate"] == "Bearer" && response.errorKind == "unauthorized")
                }
            }
            for path in ["/v1/services", "/metrics", "/v1/openapi.json"] {
                #expect(try await LoopbackHTTP.request(port: port, path: path).status == 401, "\(path)")
                #expect(try await LoopbackHTTP.request(port: port, path: path, headers: good).status == 200, "\(path)")
            }
            for path in ["/healthz", "/readyz"] {
                #expect(try await LoopbackHTTP.request(port: port, path: path).status == 200, "\(path)")
            }
            let metrics = try await ServerHarness.metrics(port: port, headers: good)
            #expect(metrics["sharepipe_rejections_total{reason=\"unauthorized\"}"] == 7)
        }
        #expect(ServerResponder.authorized("Bearer abc", token: "abc"))
        #expect(!ServerResponder.authorized("Bearer abd", token: "abc"))
        #expect(!ServerResponder.authorized("Bearer ", token: "abc"))
        #expect(!ServerResponder.authorized(nil, token: "abc"))
    }

    @Test func metricsParseCountRequestsAndBytesAndTheBudgetReturnsToZero() async throws {
        let photo = try ServerHarness.image("jpeg/large-4000x3000.jpg")
        try await ServerHarness.withServer { server, port in
            let before = try await ServerHarness.metrics(port: port)
            #expect(before["sharepipe_budget_capacity_bytes"] == Double(256 << 20))
            #expect(before["sharepipe_budget_reserved_bytes"] == 0)
            #expect(before["process_resident_memory_bytes"].map { $0 > Double(1 << 20) } == true)
            #expect(before["sharepipe_spool_files"] == 0)
            // Four uploads at once (spooled: the photo is over 1 MiB).
            let sizes = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        let response = try await LoopbackHTTP.request(
                            port: port, method: "POST", path: "/v1/prepare?service=x", body: photo)
                        #expect(response.status == 200)
                        return response.body.count
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let after = try await ServerHarness.metrics(port: port)
            #expect(after["sharepipe_requests_total{route=\"/v1/prepare\",status=\"200\",service=\"x\"}"] == 4)
            #expect(after["sharepipe_request_body_bytes_total"] == Double(4 * photo.count))
            #expect(after["sharepipe_response_body_bytes_total"].map { $0 >= Double(sizes.reduce(0, +)) } == true)
            #expect(after["sharepipe_prepare_duration_seconds_count"] == 4)
            #expect(after["sharepipe_prepare_duration_seconds_bucket{le=\"+Inf\"}"] == 4)
            #expect(after["sharepipe_budget_reserved_bytes"] == 0)
            #expect(after["sharepipe_jobs_running"] == 0 && after["sharepipe_queue_waiting"] == 0)
            #expect(after["sharepipe_budget_peak_reserved_bytes"].map { $0 > 0 && $0 <= Double(256 << 20) } == true)
            #expect(after["sharepipe_spool_files"] == 0)
            #expect(after["process_peak_resident_memory_bytes"]! >= after["process_resident_memory_bytes"]!)
            #expect(server.spool.fileCount() == 0)
        }
    }

    @Test func aBodySlowerThanTheReadTimeoutIs408AndFreesEverything() async throws {
        let photo = try ServerHarness.image("jpeg/orient-1.jpg")
        let configuration = ServerHarness.configuration { $0.readTimeout = .seconds(1) }
        try await ServerHarness.withServer(configuration) { server, port in
            let start = ContinuousClock.now
            let response = try await LoopbackHTTP.onThread {
                let socket = try LoopbackHTTP.Socket(port: port)
                defer { socket.close() }
                try socket.send(
                    Array(
                        "POST /v1/prepare?service=x HTTP/1.1\r\nHost: x\r\nContent-Length: \(photo.count)\r\n\r\n".utf8)
                )
                // One byte every 100 ms: the whole body would take minutes; the answer must come after ~1 s.
                // 15 bytes (1.5 s), then read: past the deadline, and done sending before the server closes
                // the connection (2 s after its answer), which would make a later send fail with EPIPE.
                for byte in photo.prefix(15) {
                    try socket.send([byte])
                    usleep(100_000)
                }
                return try LoopbackHTTP.parse(socket.receiveAll())
            }
            #expect(response.status == 408 && response.errorKind == "readTimeout", "\(response.text)")
            // The whole body at 10 bytes/s would take hours; the answer comes in seconds.
            #expect(ContinuousClock.now - start < .seconds(30))
            let metrics = try await ServerHarness.metrics(port: port)
            #expect(metrics["sharepipe_rejections_total{reason=\"read_timeout\"}"] == 1)
            #expect(await ServerHarness.eventually { await server.pipeline.budget.usage.reservedBytes == 0 })
            #expect(server.spool.fileCount() == 0)
        }
    }

    @Test func aRefusedUploadsConnectionIsClosedSoonAfterTheAnswerEvenIfTheClientKeepsIt() async throws {
        try await ServerHarness.withServer { server, port in
            let start = ContinuousClock.now
            // A 10 GB body announced, 64 KiB sent, the connection kept open: the server answers 413 without
            // reading the body and then closes the connection itself (receiveAll returns at its close).
            let response = try await LoopbackHTTP.onThread {
                let socket = try LoopbackHTTP.Socket(port: port, receiveTimeout: 30)
                defer { socket.close() }
                try socket.send(
                    Array("POST /v1/prepare?service=x HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n\r\n".utf8))
                try socket.send([UInt8](repeating: 0xFF, count: 65536))
                return try LoopbackHTTP.parse(socket.receiveAll())
            }
            #expect(response.status == 413 && response.errorKind == "bodyTooLarge", "\(response.text)")
            #expect(response.headers["connection"] == "close")
            #expect(ContinuousClock.now - start < .seconds(15))
            let metrics = try await ServerHarness.metrics(port: port)
            #expect(metrics["sharepipe_rejections_total{reason=\"body_too_large\"}"] == 1)
            #expect(metrics["sharepipe_request_body_bytes_total"] == 0)
            #expect(await server.pipeline.budget.usage.reservedBytes == 0)
        }
    }

    @Test func aClientThatGoesAwayDuringTheUploadCancelsItsJobAndFreesItsReservation() async throws {
        let photo = try ServerHarness.image("jpeg/large-4000x3000.jpg")
        try await ServerHarness.withServer { server, port in
            try await LoopbackHTTP.onThread {
                let socket = try LoopbackHTTP.Socket(port: port)
                try socket.send(
                    Array(
                        "POST /v1/prepare?service=x HTTP/1.1\r\nHost: x\r\nContent-Length: \(photo.count)\r\n\r\n".utf8)
                )
                try socket.send(Array(photo.prefix(photo.count / 2)))  // past the 1 MiB spool threshold
                usleep(300_000)
                socket.close()
            }
            #expect(
                await ServerHarness.eventually {
                    (try? await ServerHarness.metrics(port: port))?["sharepipe_client_disconnects_total"] == 1
                })
            #expect(await ServerHarness.eventually { await server.pipeline.budget.usage.reservedBytes == 0 })
            #expect(await ServerHarness.eventually { server.spool.fileCount() == 0 })
            // The server goes on serving.
            let response = try await LoopbackHTTP.request(
                port: port, method: "POST", path: "/v1/prepare?service=x", body: photo)
            #expect(response.status == 200)
        }
    }

    @Test func aClientThatGoesAwayWhileItsJobRunsCancelsIt() async throws {
        let photo = try ServerHarness.image("jpeg/large-4000x3000.jpg")
        let logs = LogLines()
        // Every service, one after another in one job: long enough to be running when the client leaves.
        let names = ProfileCatalog.builtIn.profiles.map(\.name)
        let services = names.map { "service=\($0)" }.joined(separator: "&")
        try await ServerHarness.withServer(logs: logs) { server, port in
            let socket = try await LoopbackHTTP.onThread {
                let socket = try LoopbackHTTP.Socket(port: port)
                try socket.send(
                    Array(
                        "POST /v1/prepare?\(services) HTTP/1.1\r\nHost: x\r\nContent-Length: \(photo.count)\r\n\r\n"
                            .utf8))
                try socket.send(photo)
                return socket
            }
            #expect(await ServerHarness.eventually { await server.pipeline.budget.usage.runningJobs == 1 })
            socket.close()
            #expect(await ServerHarness.eventually { await server.pipeline.budget.usage.reservedBytes == 0 })
            let key =
                "sharepipe_requests_total{route=\"/v1/prepare\",status=\"499\",service=\"\(names.joined(separator: "+"))\"}"
            #expect(await ServerHarness.eventually { (try? await ServerHarness.metrics(port: port))?[key] == 1 })
            #expect(try await ServerHarness.metrics(port: port)["sharepipe_client_disconnects_total"] == 1)
            #expect(server.spool.fileCount() == 0)
        }
        // The job stopped early: fewer services finished than were asked for, and a line says it was cancelled.
        let finished = logs.objects.filter { $0["message"] as? String == "job finished" }.count
        #expect(finished < names.count, "\(finished) of \(names.count) finished")
        #expect(logs.objects.contains { $0["message"] as? String == "job cancelled" })
    }
}
