/// `FittingLadder.quality`: at each size the highest fitting quality, then a smaller size.
///
/// JPEG, when the byte limit bites (the ceiling's encode, as requested, does not fit): the search goes on
/// with progressive scans (smaller than baseline at the same quality, so a step or so higher under the same
/// limit); then, for a colour image, the same size is rendered afresh and searched at 4:4:4 chroma below the
/// 4:2:0 answer's quality, and of the two fits the one closer to the render (`JPEGEncoder.distance`, 4:4:4
/// by a margin) is written: 4:4:4 keeps saturated colour edges that 4:2:0 blurs whatever its quality,
/// 4:2:0 spends the bytes on detail where colour is plain. Without a limit that bites, the ceiling's encode
/// is written as it always was. The 4:4:4 search encodes the render itself (3 bytes a pixel: the bitmap the
/// 4:2:0 planes were made from, counted again in the meter once the planes are gone), so the meter's peak
/// is the same.
struct QualityLadder: LadderRunner {
    var sizes: StillSizes
    let encoder: any ImageEncoder
    let range: ClosedRange<Int>
    let progressive: Bool
    let metadata: MetadataOutcome
    /// The adjustment the ladder's range carries ("quality capped at the source's q73"), if any.
    let rangeNote: String?

    var warnings: [String] { sizes.warnings }

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
    /// progressive scans, then the 4:4:4 search, the closer fit kept.
    private mutating func attemptJPEG(
        _ jpeg: JPEGEncoder, _ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint
    ) throws -> FittingDriver.Fit? {
        let subsampled = try searchSubsampled(jpeg, &log, checkpoint: checkpoint)
        guard let best = subsampled.best else { return nil }
        if !subsampled.capBites {
            return fit(best.encoded, size: subsampled.size, quality: best.quality, notes: [])
        }
        let scanNotes = progressive ? [] : [Self.progressiveNote]
        guard subsampled.isColour else {
            return fit(best.encoded, size: subsampled.size, quality: best.quality, notes: scanNotes)
        }
        // The planes are gone (`searchSubsampled` returned): the render again, at 3 bytes a pixel as before.
        let smallest = sizes.smallestAtSize
        let oriented = try sizes.render()
        defer { sizes.release(oriented) }
        let rgb = oriented.layout.hasAlpha ? AlphaFlattening.overWhite(oriented) : oriented
        let fullChroma = JPEGEncoder(subsample420: false)
        let search = try log.searchQuality(
            rgb, encoder: fullChroma, range: range.lowerBound...best.quality, progressive: true,
            metadata: metadata.kept, note: ([Self.fullChromaNote] + scanNotes).joined(separator: ", "),
            checkpoint: checkpoint)
        sizes.smallestAtSize = min(smallest, search.smallestBytes)
        guard let full = search.best else {
            return fit(best.encoded, size: subsampled.size, quality: best.quality, notes: scanNotes)
        }
        try checkpoint()
        // Both measured on their baseline twins (the same pixels; a progressive decode holds every coefficient).
        let baseline = { (encoder: JPEGEncoder, quality: Int) in
            try encoder.encode(rgb, settings: EncodeSettings(quality: quality, progressive: false), metadata: [])
        }
        let subsampledDistance = try JPEGEncoder.distance(baseline(jpeg, best.quality), to: rgb)
        let fullDistance = try JPEGEncoder.distance(baseline(fullChroma, full.quality), to: rgb)
        // 4:2:0 (what cameras and services write, and cheaper to decode) unless 4:4:4 is clearly closer.
        if fullDistance < Self.fullChromaMargin * subsampledDistance {
            return fit(
                full.encoded, size: oriented.size, quality: full.quality, notes: [Self.fullChromaNote] + scanNotes)
        }
        return fit(best.encoded, size: subsampled.size, quality: best.quality, notes: scanNotes)
    }

    /// The 4:2:0 part of a JPEG size: rendered, staged as planes (freed when this returns), the ceiling
    /// encoded as requested; if it does not fit, the range searched with progressive scans.
    private mutating func searchSubsampled(
        _ jpeg: JPEGEncoder, _ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint
    ) throws -> (best: (quality: Int, encoded: [UInt8], bytes: Int)?, size: PixelSize, capBites: Bool, isColour: Bool) {
        let oriented = try sizes.render()
        let isColour = oriented.layout.channels >= 3
        let staged = try sizes.stage(oriented, for: jpeg)
        defer { sizes.release(staged) }
        let ceiling = try log.searchQuality(
            staged, format: .jpeg, range: range.upperBound...range.upperBound, progressive: progressive,
            metadata: metadata.kept, note: nil, checkpoint: checkpoint)
        sizes.smallestAtSize = ceiling.smallestBytes
        if let best = ceiling.best { return (best, staged.size, false, isColour) }
        // Requested progressive: its ceiling was just measured.
        let top = range.upperBound - (progressive ? 1 : 0)
        guard top >= range.lowerBound else { return (nil, staged.size, true, isColour) }
        let search = try log.searchQuality(
            staged, format: .jpeg, range: range.lowerBound...top, progressive: true, metadata: metadata.kept,
            note: progressive ? nil : Self.progressiveNote, checkpoint: checkpoint)
        sizes.smallestAtSize = min(ceiling.smallestBytes, search.smallestBytes)
        return (search.best, staged.size, true, isColour)
    }

    mutating func advance(limit: Int) -> Bool { sizes.shrink(limit: limit) }
}
