#if canImport(Glibc)
import Glibc
#endif

/// The pipeline's own accounting of pixel memory: every row buffer, resampler window and bitmap is
/// counted when allocated and uncounted when released, and the peak is reported with each result.
public final class PixelMemoryMeter: @unchecked Sendable {
    private var lock = pthread_mutex_t()
    private var current = 0
    private var highWater = 0

    public init() { pthread_mutex_init(&lock, nil) }

    /// Bytes currently counted.
    public var currentBytes: Int { pthread_mutex_lock(&lock); defer { pthread_mutex_unlock(&lock) }; return current }
    /// Highest count seen.
    public var peakBytes: Int { pthread_mutex_lock(&lock); defer { pthread_mutex_unlock(&lock) }; return highWater }

    /// Counts an allocation of `bytes`.
    public func allocate(_ bytes: Int) {
        pthread_mutex_lock(&lock)
        current += bytes
        highWater = max(highWater, current)
        pthread_mutex_unlock(&lock)
    }

    /// Uncounts a release of `bytes`.
    public func release(_ bytes: Int) {
        pthread_mutex_lock(&lock)
        current -= bytes
        pthread_mutex_unlock(&lock)
    }

    /// Counts `bytes` for the duration of `body`.
    public func holding<T>(_ bytes: Int, _ body: () throws -> T) rethrows -> T {
        allocate(bytes)
        defer { release(bytes) }
        return try body()
    }
}
