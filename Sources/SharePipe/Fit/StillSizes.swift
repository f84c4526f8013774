/// The sizes a still ladder walks: the target first, then smaller by the shared shrink step (based on the
/// smallest encode at the last size) down to `minShortEdge`; each size rendered afresh and held upright
/// in the meter while its encodes run.
struct StillSizes {
    let renderer: StillRenderer
    let target: PixelSize
    let minShortEdge: Int
    private(set) var size: PixelSize
    /// The smallest encode at the current size: what the next size is planned from.
    var smallestAtSize = Int.max
    private(set) var warnings: [String] = []
    /// The first render reduced for the placeholder (`PlaceholderThumbnail`): every later size shows the same
    /// picture.
    private(set) var placeholderThumbnail: PlaceholderThumbnail?

    init(renderer: StillRenderer, target: PixelSize, minShortEdge: Int) {
        self.renderer = renderer
        self.target = target
        self.minShortEdge = minShortEdge
        size = target
    }

    /// "dimensions reduced to fit" once the size is below the target.
    var adjustments: [String] { size == target ? [] : ["dimensions reduced to fit"] }

    /// Renders the current size upright and counts it in the meter until `release`; `sharp`: with
    /// `ImageDecoder.renderSharp`.
    mutating func render(sharp: Bool = false) throws -> Bitmap {
        smallestAtSize = Int.max
        let oriented = try renderer.oriented(size, sharp: sharp, warnings: &warnings)
        if placeholderThumbnail == nil { placeholderThumbnail = PlaceholderThumbnail(oriented) }
        renderer.meter.allocate(oriented.byteCount)
        return oriented
    }

    func release(_ oriented: Bitmap) { renderer.meter.release(oriented.byteCount) }

    /// Renders the current size and stages it for `encoder` (`ImageEncoder.staged`), counted in the meter
    /// until `release`. A converted form replaces the bitmap before any encode: JPEG makes 4:2:0 planes, half
    /// the RGB bitmap's bytes, giving the bitmap's pages back 64 rows at a time as it converts them, so
    /// the meter counts the bitmap, then the planes. Under `cpuFirst` the render is kept for later sizes
    /// (it may be the bitmap itself), so the bitmap is encoded as it is.
    mutating func renderStaged(for encoder: any ImageEncoder) throws -> StagedBitmap {
        try stage(render(), for: encoder)
    }

    /// Stages a bitmap `render` made (and the meter counts) for `encoder`, as `renderStaged` does.
    func stage(_ oriented: consuming Bitmap, for encoder: any ImageEncoder) throws -> StagedBitmap {
        if renderer.cache != nil { return StagedBitmap(oriented, encoder: encoder) }
        let bitmapBytes = oriented.byteCount
        let staged: StagedBitmap
        do {
            staged = try encoder.staged(consume oriented)
        } catch {
            renderer.meter.release(bitmapBytes)
            throw error
        }
        if staged.isBitmap { return staged }
        renderer.meter.release(bitmapBytes)
        renderer.meter.allocate(staged.byteCount)
        return staged
    }

    func release(_ staged: StagedBitmap) { renderer.meter.release(staged.byteCount) }

    mutating func shrink(limit: Int) -> Bool {
        guard let next = FittingDriver.shrink(size, bytes: smallestAtSize, limit: limit, floor: minShortEdge) else {
            return false
        }
        size = next
        return true
    }
}
