#if DEBUG
    #if canImport(Glibc)
        import Glibc
    #endif

    /// A test hook in debug builds only (release builds have none): with `SHAREPIPE_DEBUG_FAULT=internal` in
    /// the environment, every job throws, after its probe, an error that is not a `SharePipeError`, as a bug
    /// in SharePipe would, so the tests can follow an internal error through `Pipeline.prepare`'s catch-all,
    /// the batch report, the JSON line and the CLI's exit status.
    enum DebugFault {
        struct Injected: Error, CustomStringConvertible {
            var description: String { "fault injected by SHAREPIPE_DEBUG_FAULT" }
        }

        static let requested = getenv("SHAREPIPE_DEBUG_FAULT").map { String(cString: $0) } == "internal"

        static func check() throws { if requested { throw Injected() } }
    }
#endif
