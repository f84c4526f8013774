/// A job's kept render: one decoded, resized bitmap that smaller sizes are resampled from in memory instead of
/// decoding the source again.
///
/// Under `cpuFirst` it keeps the largest render (stored orientation) and serves every smaller size the fitting
/// search or a later service asks for. Under `memoryFirst`, a job with variants (`PrepareOptions.variants`)
/// keeps its latest render, upright (the copy its encoder reads, so keeping it costs no second bitmap when the
/// image is rotated), without serving the main output's search (which decodes afresh for each size, as
/// `memoryFirst` does); once the main output is done, `serveVariants()` turns it into the source of the
/// variants.
final class RenderCache: @unchecked Sendable {
    private struct State {
        var bitmap: Bitmap?
        /// Whether `bitmap` is upright (the orientation applied) rather than in stored orientation.
        var upright = false
        var serving: Bool
    }
    private let kept: Locked<State>

    /// `serving`: whether the renderer takes sizes from the cache now (`cpuFirst`), or only keeps its
    /// latest upright render until `serveVariants()` (`memoryFirst` with variants).
    init(serving: Bool = true) { kept = Locked(State(bitmap: nil, serving: serving)) }

    /// Whether the renderer takes sizes from the kept bitmap.
    var isServing: Bool { kept.withLock { $0.serving } }

    /// Whether the renderer should keep its upright render (`keepUpright(_:)`) rather than its stored one.
    var keepsUpright: Bool { kept.withLock { !$0.serving } }

    /// The kept bitmap if the cache serves and it covers `size` (stored orientation) of an image in
    /// `orientation`, and whether it is upright.
    func bitmap(covering size: PixelSize, orientation: Orientation) -> (bitmap: Bitmap, upright: Bool)? {
        kept.withLock { state in
            guard state.serving, let bitmap = state.bitmap else { return nil }
            let needed = state.upright && orientation.swapsAxes ? size.transposed : size
            guard bitmap.width >= needed.width, bitmap.height >= needed.height else { return nil }
            return (bitmap, state.upright)
        }
    }

    /// Keeps `candidate` (stored orientation) if it is larger than what is kept.
    func keep(_ candidate: Bitmap) {
        kept.withLock { state in
            if state.bitmap == nil || candidate.size.area > state.bitmap!.size.area {
                state.bitmap = candidate
                state.upright = false
            }
        }
    }

    /// Keeps `candidate`, upright, in place of what is kept (a cache that does not serve yet: the latest render).
    func keepUpright(_ candidate: Bitmap) {
        kept.withLock { state in
            state.bitmap = candidate
            state.upright = true
        }
    }

    /// From now on the kept render serves every size it covers (the variants after the main output).
    func serveVariants() { kept.withLock { $0.serving = true } }

    /// Lets the kept render go.
    func clear() { kept.withLock { $0.bitmap = nil } }
}
