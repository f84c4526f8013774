/// The pipeline's own accounting of pixel memory: every row buffer, resampler window and bitmap is
/// counted when allocated and uncounted when released, and the peak is reported with each result.
///
/// The meter also carries the job's checkpoint (`Pipeline.Checkpoint`) down to the loops that make rows,
/// bands, tiles and frames, which call `checkCancellation()` as they go: a cancelled job stops inside a
/// long decode or resample, not only between pipeline steps.
final class PixelMemoryMeter: @unchecked Sendable {
    private let counts = Locked((current: 0, highWater: 0))
    private let checkpoint: Pipeline.Checkpoint

    /// - Parameter checkpoint: the job's checkpoint (throws to cancel); none by default.
    init(checkpoint: @escaping Pipeline.Checkpoint = {}) {
        self.checkpoint = checkpoint
    }

    /// Runs the job's checkpoint: throws `SharePipeError.cancelled` when the job was cancelled. Cheap (a
    /// flag read), but row loops call it every `rowsPerCheck` rows, not every row.
    func checkCancellation() throws { try checkpoint() }

    /// How many rows a row loop makes between two `checkCancellation()` calls.
    static let rowsPerCheck = 16

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

    private let decodes = Locked(0)

    /// How many times the job decoded its source through `ImageDecoder.render` or `renderSharp` (the still
    /// route's renders, the placeholder's and the metadata rewrite's proof): `PreparedImage.sourceDecodes`.
    var decodeCount: Int { decodes.withLock { $0 } }

    /// Counts one decode of the source.
    func countDecode() { decodes.withLock { $0 += 1 } }

    /// Counts `bytes` for the duration of `body`.
    func holding<T>(_ bytes: Int, _ body: () throws -> T) rethrows -> T {
        allocate(bytes)
        defer { release(bytes) }
        return try body()
    }
}
