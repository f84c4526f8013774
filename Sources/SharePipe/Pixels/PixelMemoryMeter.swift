/// The pipeline's own accounting of pixel memory: every row buffer, resampler window and bitmap is
/// counted when allocated and uncounted when released, and the peak is reported with each result.
final class PixelMemoryMeter: @unchecked Sendable {
    private let counts = Locked((current: 0, highWater: 0))

    init() {}

    /// Bytes currently counted.
    var currentBytes: Int { counts.withLock { $0.current } }
    /// Highest count seen.
    var peakBytes: Int { counts.withLock { $0.highWater } }

    /// Counts an allocation of `bytes`.
    func allocate(_ bytes: Int) {
        counts.withLock {
            $0.current += bytes
            $0.highWater = max($0.highWater, $0.current)
        }
    }

    /// Uncounts a release of `bytes`.
    func release(_ bytes: Int) { counts.withLock { $0.current -= bytes } }

    /// Counts `bytes` for the duration of `body`.
    func holding<T>(_ bytes: Int, _ body: () throws -> T) rethrows -> T {
        allocate(bytes)
        defer { release(bytes) }
        return try body()
    }
}
