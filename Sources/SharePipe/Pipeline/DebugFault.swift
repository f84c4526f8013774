#if DEBUG
    #if canImport(Glibc)
        import Glibc
    #endif

    /// A test hook in debug builds only (release builds have none): with `SHAREPIPE_DEBUG_FAULT=internal` in
    /// the environment, every job throws, after its probe, an error that is not a `SharePipeError`, as a bug
    /// in SharePipe would, so the tests can follow an internal error through `Pipeline.prepare`'s catch-all,
    /// the batch report, the JSON line and the CLI's exit status. With `SHAREPIPE_DEBUG_FAULT=slow`, every
    /// checkpoint of a job pauses 20 ms first, so an ordinary image makes a long job (the deadline's tests).
    enum DebugFault {
        struct Injected: Error, CustomStringConvertible {
            var description: String { "fault injected by SHAREPIPE_DEBUG_FAULT" }
        }

        static let fault = getenv("SHAREPIPE_DEBUG_FAULT").map { String(cString: $0) }
        static let requested = fault == "internal"
        static let slow = fault == "slow"

        /// The pause of a checkpoint under `slow`.
        static func pause() { usleep(20_000) }

        static func check() throws { if requested { throw Injected() } }
    }
#endif
