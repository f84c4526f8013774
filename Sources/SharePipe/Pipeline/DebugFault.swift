#if DEBUG
    import CSharePipe
    #if canImport(Glibc)
        import Glibc
    #endif

    /// A test hook in debug builds only (release builds have none), set by `SHAREPIPE_DEBUG_FAULT` in the
    /// environment; every job meets it after its probe, on the thread that decodes it:
    /// - `internal`: the job throws an error that is not a `SharePipeError`, as a bug in SharePipe would, so the
    ///   tests can follow an internal error through `Pipeline.prepare`'s catch-all, the batch report, the JSON
    ///   line and the CLI's exit status;
    /// - `hijack-exec`, `hijack-read`, `hijack-write`, `hijack-connect`, `hijack-fork`: the job does what a
    ///   decoder taken over by a hostile file would (execve `/bin/sh`; open `/etc/passwd`; create a file beside
    ///   the input, or in the working folder for an input in memory; socket + connect to 127.0.0.1; fork),
    ///   then throws an internal error saying whether the system refused it ("refused (…)") or let it happen
    ///   ("ALLOWED"), so the tests see the process sandbox (`ProcessSandbox`) at work from inside a job;
    /// - `slow`: every checkpoint of a job pauses 20 ms first, so an ordinary image makes a long job (the
    ///   deadline's tests).
    enum DebugFault {
        struct Injected: Error, CustomStringConvertible {
            var description: String
        }

        static let requested = getenv("SHAREPIPE_DEBUG_FAULT").map { String(cString: $0) }
        static let slow = requested == "slow"

        /// The pause of a checkpoint under `slow`.
        static func pause() { usleep(20_000) }

        static func check(_ source: ImageSource) throws {
            guard let requested else { return }
            if requested == "internal" { throw Injected(description: "fault injected by SHAREPIPE_DEBUG_FAULT") }
            let actions = [
                "hijack-exec": 1, "hijack-read": 2, "hijack-write": 3, "hijack-connect": 4, "hijack-fork": 5,
            ]
            guard let action = actions[requested] else { return }
            var path = "/etc/passwd"
            if action == 3 {
                var folder = "."
                if case .file(let input) = source, let slash = input.lastIndex(of: "/") {
                    folder = String(input[..<slash])
                    if folder.isEmpty { folder = "/" }
                }
                path = folder + "/sharepipe-hijack-\(getpid())"
            }
            var refusal: Int32 = 0
            let allowed = sp_sandbox_attempt(Int32(action), path, 9, &refusal) != 0
            let outcome = allowed ? "ALLOWED" : "refused (\(String(cString: strerror(refusal))))"
            throw Injected(description: "fault injected by SHAREPIPE_DEBUG_FAULT: \(requested) \(outcome)")
        }
    }
#endif
