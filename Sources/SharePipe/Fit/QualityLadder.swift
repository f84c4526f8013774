/// `FittingLadder.quality`: at each size the highest fitting quality, then a smaller size.
///
/// JPEG, when the byte limit bites (the ceiling's encode, as requested, does not fit): the search goes on
/// with progressive scans (smaller than baseline at the same quality, so a step or so higher under the same
/// limit) on the size rendered again, sharp where the plan says (`PreparePlan.sharpRenderWhenCapped`,
/// `ImageDecoder.renderSharp`: a JPEG source decoded at twice the size or more); then, for a colour image,
/// that render is searched at 4:4:4 chroma below the 4:2:0 answer's quality, and of the two fits the one
/// closer to the render (`JPEGEncoder.distance`, 4:4:4 by a margin) is written: 4:4:4 keeps saturated colour
/// edges that 4:2:0 blurs whatever its quality, 4:2:0 spends the bytes on detail where colour is plain.
/// Without a limit that bites, the ceiling's encode is written as it always was (from the render's 4:2:0
/// planes). Both searches encode the second render itself (3 bytes a pixel: the bitmap the first size's
/// planes were made from, counted again in the meter once the planes are gone), so the meter's peak is the
/// larger of the two renders' (`MemoryEstimate.jpeg` prices the sharp one).
struct QualityLadder: LadderRunner {
    var sizes: StillSizes
    let encoder: any ImageEncoder
    let range: ClosedRange<Int>
    let progressive: Bool
    let metadata: MetadataOutcome
    /// The adjustment the ladder's range carries ("quality capped at the source's q73"), if any.
    let rangeNote: String?
    /// Whether a size the limit bites is rendered sharp (`PreparePlan.sharpRenderWhenCapped`).
    let sharpRender: Bool

    var warnings: [String] { sizes.warnings }
    var placeholderThumbnail: PlaceholderThumbnail? { sizes.placeholderThumbnail }
    var focalPoint: FocalPoint? { sizes.focalPoint }

    /// The attempt note and adjustment of a 4:4:4 fit.
    static let fullChromaNote = "4:4:4 chroma"
    /// How much closer (`JPEGEncoder.distance`) the 4:4:4 fit must be to be written: 3 % (on the bench photos
    /// the near ties, within 1–3 %, were 4:2:0's in butteraugli: landscape 150 KB, sea and night 60 KB).
    static let fullChromaMargin = 0.97
    /// The attempt note and adjustment of progressive scans the options did not ask for.
    static let progressiveNote = "progressive"

    mutating func attempt(_ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint) throws -> FittingDriver.Fit? {
        if let jpeg = encoder as? JPEGEncoder, jpeg.subsample420 {
            return try attemptJPEG(jpeg, &log, checkpoint: checkpoint)
        }
        let staged = try sizes.renderStaged(for: encoder)
        defer { sizes.release(staged) }
        let search = try log.searchQuality(
            staged, format: encoder.format, range: range, progressive: progressive,
            metadata: metadata.kept, note: nil, checkpoint: checkpoint)
        sizes.smallestAtSize = search.smallestBytes
        guard let best = search.best else { return nil }
        return fit(best.encoded, size: staged.size, quality: best.quality, notes: [])
    }

    private func fit(_ bytes: [UInt8], size: PixelSize, quality: Int, notes: [String]) -> FittingDriver.Fit {
        FittingDriver.Fit(
            bytes: bytes, format: encoder.format, size: size, quality: quality, metadata: metadata,
            adjustments: (rangeNote.map { [$0] } ?? []) + notes + sizes.adjustments)
    }

    /// One size of the JPEG ladder: the ceiling as requested; under a biting limit the 4:2:0 search with
    /// progressive scans, then the 4:4:4 search, the closer fit kept. At the first size the ceiling is encoded
    /// from the render as it always was (its 4:2:0 planes), so an output the limit does not bite is unchanged;
    /// once the limit bites, the size is rendered again (sharp: a JPEG decoded at twice the size or more, not
    /// just over it) and both searches encode that render.
    private mutating func attemptJPEG(
        _ jpeg: JPEGEncoder, _ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint
    ) throws -> FittingDriver.Fit? {
        var smallest = Int.max
        let firstSize = sizes.size == sizes.target
        if firstSize {
            let oriented = try sizes.render()
            let staged = try sizes.stage(oriented, for: jpeg)
            defer { sizes.release(staged) }
            let ceiling = try log.searchQuality(
                staged, format: .jpeg, range: range.upperBound...range.upperBound, progressive: progressive,
                metadata: metadata.kept, note: nil, checkpoint: checkpoint)
            sizes.smallestAtSize = ceiling.smallestBytes
            if let best = ceiling.best { return fit(best.encoded, size: staged.size, quality: best.quality, notes: []) }
            smallest = ceiling.smallestBytes
        }
        // Requested progressive: its ceiling is (or is about to be) measured.
        let top = range.upperBound - (progressive ? 1 : 0)
        if firstSize && top < range.lowerBound { return nil }
        let rendered = try sizes.render(sharp: sharpRender)
        defer { sizes.release(rendered) }
        // The render again (3 bytes a pixel, as the 4:2:0 planes' bitmap was), held through both searches.
        let bitmap = rendered.layout.hasAlpha ? AlphaFlattening.overWhite(rendered) : rendered
        func searched(_ encoder: JPEGEncoder, _ range: ClosedRange<Int>, progressive: Bool, note: String?) throws
            -> QualitySearch.Outcome<[UInt8]>
        {
            let search = try log.searchQuality(
                bitmap, encoder: encoder, range: range, progressive: progressive, metadata: metadata.kept,
                note: note, checkpoint: checkpoint)
            smallest = min(smallest, search.smallestBytes)
            sizes.smallestAtSize = smallest
            return search
        }
        if !firstSize {
            // A smaller size: its ceiling as requested may fit (written as a ceiling fit always was).
            let ceiling = try searched(jpeg, range.upperBound...range.upperBound, progressive: progressive, note: nil)
            if let best = ceiling.best { return fit(best.encoded, size: bitmap.size, quality: best.quality, notes: []) }
        }
        guard top >= range.lowerBound else { return nil }
        let subsampled = try searched(
            jpeg, range.lowerBound...top, progressive: true, note: progressive ? nil : Self.progressiveNote)
        guard let best = subsampled.best else { return nil }
        let scanNotes = progressive ? [] : [Self.progressiveNote]
        guard bitmap.layout.channels >= 3 else {
            return fit(best.encoded, size: bitmap.size, quality: best.quality, notes: scanNotes)
        }
        let fullChroma = JPEGEncoder(subsample420: false)
        let search = try searched(
            fullChroma, range.lowerBound...best.quality, progressive: true,
            note: ([Self.fullChromaNote] + scanNotes).joined(separator: ", "))
        guard let full = search.best else {
            return fit(best.encoded, size: bitmap.size, quality: best.quality, notes: scanNotes)
        }
        try checkpoint()
        // Both measured on their baseline twins (the same pixels; a progressive decode holds every coefficient).
        let baseline = { (encoder: JPEGEncoder, quality: Int) in
            try encoder.encode(bitmap, settings: EncodeSettings(quality: quality, progressive: false), metadata: [])
        }
        let subsampledDistance = try JPEGEncoder.distance(baseline(jpeg, best.quality), to: bitmap)
        let fullDistance = try JPEGEncoder.distance(baseline(fullChroma, full.quality), to: bitmap)
        // 4:2:0 (what cameras and services write, and cheaper to decode) unless 4:4:4 is clearly closer.
        if fullDistance < Self.fullChromaMargin * subsampledDistance {
            return fit(full.encoded, size: bitmap.size, quality: full.quality, notes: [Self.fullChromaNote] + scanNotes)
        }
        return fit(best.encoded, size: bitmap.size, quality: best.quality, notes: scanNotes)
    }

    mutating func advance(limit: Int) -> Bool { sizes.shrink(limit: limit) }
}
