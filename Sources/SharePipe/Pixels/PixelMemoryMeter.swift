/// The pipeline's own accounting of pixel memory: every row buffer, resampler window and bitmap is
/// counted when allocated and uncounted when released, and the peak is reported with each result.
final class PixelMemoryMeter: @unchecked Sendable {
    private let lock = Mutex()
    private var current = 0
    private var highWater = 0

    init() {}

    /// Bytes currently counted.
    var currentBytes: Int { lock.locked { current } }
    /// Highest count seen.
    var peakBytes: Int { lock.locked { highWater } }

    /// Counts an allocation of `bytes`.
    func allocate(_ bytes: Int) {
        lock.locked {
            current += bytes
            highWater = max(highWater, current)
        }
    }

    /// Uncounts a release of `bytes`.
    func release(_ bytes: Int) { lock.locked { current -= bytes } }

    /// Counts `bytes` for the duration of `body`.
    func holding<T>(_ bytes: Int, _ body: () throws -> T) rethrows -> T {
        allocate(bytes)
        defer { release(bytes) }
        return try body()
    }
}
