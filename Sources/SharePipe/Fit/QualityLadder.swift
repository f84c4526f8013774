/// `FittingLadder.quality`: at each size the highest fitting quality, then a smaller size.
struct QualityLadder: LadderRunner {
    var sizes: StillSizes
    let encoder: any ImageEncoder
    let range: ClosedRange<Int>
    let progressive: Bool
    let metadata: MetadataOutcome
    /// The adjustment the ladder's range carries ("quality capped at the source's q73"), if any.
    let rangeNote: String?

    var warnings: [String] { sizes.warnings }

    mutating func attempt(_ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint) throws -> FittingDriver.Fit? {
        let staged = try sizes.renderStaged(for: encoder)
        defer { sizes.release(staged) }
        let search = try log.searchQuality(
            staged, format: encoder.format, range: range, progressive: progressive,
            metadata: metadata.kept, note: nil, checkpoint: checkpoint)
        sizes.smallestAtSize = search.smallestBytes
        guard let best = search.best else { return nil }
        return FittingDriver.Fit(
            bytes: best.encoded, format: encoder.format, size: staged.size, quality: best.quality,
            metadata: metadata, adjustments: (rangeNote.map { [$0] } ?? []) + sizes.adjustments)
    }

    mutating func advance(limit: Int) -> Bool { sizes.shrink(limit: limit) }
}
