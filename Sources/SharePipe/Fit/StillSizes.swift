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
    /// The crop to the plan's ratio (`PreparePlan.crop`), nil for none: every size is then the window of a render
    /// of the whole picture, placed around the whole picture's focal point.
    let crop: CropPlan?
    /// With a crop: the whole picture's focal point, estimated on the first render and kept for every size.
    private(set) var wholeFocus: FocalPoint?
    /// With a crop: the output's focal point (the whole picture's, in the window).
    private(set) var focalPoint: FocalPoint?

    init(renderer: StillRenderer, target: PixelSize, minShortEdge: Int, crop: CropPlan? = nil) {
        self.renderer = renderer
        self.target = target
        self.minShortEdge = minShortEdge
        self.crop = crop
        size = target
    }

    /// "dimensions reduced to fit" once the size is below the target; the crop and the point it was placed
    /// around.
    var adjustments: [String] {
        var notes: [String] = []
        if let crop, let wholeFocus {
            notes.append("cropped to \(crop.ratio) around the focal point (\(wholeFocus))")
        }
        if size != target { notes.append("dimensions reduced to fit") }
        return notes
    }

    /// Renders the current size upright and counts it in the meter until `release`; `sharp`: with
    /// `ImageDecoder.renderSharp`.
    mutating func render(sharp: Bool = false) throws -> Bitmap {
        smallestAtSize = Int.max
        ProcessAllocator.renderStarts()
        let oriented: Bitmap
        if let crop {
            oriented = try renderWindow(of: crop, sharp: sharp)
        } else {
            oriented = try renderer.oriented(size, sharp: sharp, warnings: &warnings)
        }
        if placeholderThumbnail == nil { placeholderThumbnail = PlaceholderThumbnail(oriented) }
        renderer.meter.allocate(oriented.byteCount)
        return oriented
    }

    /// The current size as the crop's window: the whole picture rendered at the scale that gives the window this
    /// size, upright; the focal point estimated on it (first render only); the window cut out around it.
    private mutating func renderWindow(of crop: CropPlan, sharp: Bool) throws -> Bitmap {
        let swaps = renderer.info.orientation.swapsAxes
        let output = swaps ? size.transposed : size
        let render = crop.renderSize(forOutput: output)
        let whole = try renderer.oriented(swaps ? render.transposed : render, sharp: sharp, warnings: &warnings)
        let focus = wholeFocus ?? AttentionMap.focalPoint(of: PlaceholderThumbnail(whole))
        wholeFocus = focus
        let origin = CropPlan.origin(of: output, in: whole.size, around: focus)
        if focalPoint == nil {
            focalPoint = CropPlan.focus(focus, in: whole.size, window: origin, output: output)
        }
        return renderer.meter.holding(whole.byteCount) { whole.cropped(x: origin.x, y: origin.y, size: output) }
    }

    func release(_ oriented: Bitmap) { renderer.meter.release(oriented.byteCount) }

    /// The current size rendered straight into a 4:2:0 JPEG encode with `settings`, where the render needs no
    /// step between the resampler and the encoder: no crop, no kept render (`RenderCache`), stored orientation
    /// upright, a colour source whose decoder streams rows (`RowStreamingDecoder`). The resampler's rows go to
    /// the encoder one 16-row band at a time (`JPEGRowEncode`), so neither the RGB render nor its planes exist
    /// whole: the bytes `renderStaged` and one encode of the planes would give. nil where the render needs a
    /// bitmap (then `renderStaged`). The first render's placeholder thumbnail is made from the same rows.
    mutating func renderEncoded(with encoder: JPEGEncoder, settings: EncodeSettings, metadata: [MetadataBlock])
        throws -> (bytes: [UInt8], size: PixelSize)?
    {
        let info = renderer.info
        guard crop == nil, renderer.cache == nil, info.orientation == .up, encoder.subsample420,
            info.colorModel != .gray, let decoder = renderer.decoder as? any RowStreamingDecoder
        else { return nil }
        smallestAtSize = Int.max
        ProcessAllocator.renderStarts()
        let sink = JPEGRowEncode(
            encoder: encoder, settings: settings, metadata: metadata, meter: renderer.meter,
            thumbnail: placeholderThumbnail == nil)
        renderer.meter.countDecode()
        warnings += try decoder.renderRows(
            renderer.source, info: info, target: size, limits: renderer.limits, meter: renderer.meter, into: sink)
        let bytes = try sink.finish()
        if placeholderThumbnail == nil { placeholderThumbnail = sink.thumbnail() }
        return (bytes, sink.size)
    }

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
        guard var next = FittingDriver.shrink(size, bytes: smallestAtSize, limit: limit, floor: minShortEdge) else {
            return false
        }
        if let crop {
            // Smaller sizes keep the ratio exactly where it can be kept.
            let swaps = renderer.info.orientation.swapsAxes
            let exact = crop.exactOutput(near: swaps ? next.transposed : next)
            next = swaps ? exact.transposed : exact
            guard next != size else { return false }
        }
        size = next
        return true
    }
}
