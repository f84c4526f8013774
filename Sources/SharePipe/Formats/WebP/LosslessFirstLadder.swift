/// `FittingLadder.losslessFirst`, for a lossless WebP written as WebP (screenshots, stickers, line art), at
/// each size, cheapest loss first:
///   1. one lossless encode (`EncodeSettings.lossless`: VP8L, exact pixels; for such images often smaller than
///      lossy too);
///   2. over the byte limit, the quality range searched lossy (VP8; alpha stays exact in its ALPH chunk), and
///      the report says the image became lossy and why;
///   3. otherwise a smaller size, by about sqrt(limit / bytes) of the smallest encode at this size.
/// A smaller size starts lossy once a larger one was (as `LosslessLadder` keeps its strongest effort): what
/// did not fit at a size is not retried there.
struct LosslessFirstLadder: LadderRunner {
    var sizes: StillSizes
    let encoder: any ImageEncoder
    let range: ClosedRange<Int>
    let metadata: MetadataOutcome
    /// The lossless encode's size where it was over the limit (the ladder is lossy from then on).
    private var losslessBytes: Int?

    init(sizes: StillSizes, encoder: any ImageEncoder, range: ClosedRange<Int>, metadata: MetadataOutcome) {
        (self.sizes, self.encoder, self.range, self.metadata) = (sizes, encoder, range, metadata)
    }

    var warnings: [String] { sizes.warnings }
    var placeholderThumbnail: PlaceholderThumbnail? { sizes.placeholderThumbnail }
    var focalPoint: FocalPoint? { sizes.focalPoint }

    mutating func attempt(_ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint) throws -> FittingDriver.Fit? {
        let oriented = try sizes.render()
        defer { sizes.release(oriented) }
        if losslessBytes == nil {
            try checkpoint()
            let bytes = try encoder.encode(
                oriented, settings: EncodeSettings(quality: range.upperBound, progressive: false, lossless: true),
                metadata: metadata.kept)
            sizes.smallestAtSize = bytes.count
            if log.record(
                size: oriented.size, format: encoder.format, quality: nil, note: "lossless", bytes: bytes.count)
            {
                return FittingDriver.Fit(
                    bytes: bytes, format: encoder.format, size: oriented.size, quality: nil,
                    metadata: metadata, adjustments: sizes.adjustments)
            }
            losslessBytes = bytes.count
        }
        let search = try log.searchQuality(
            oriented, encoder: encoder, range: range, progressive: false, metadata: metadata.kept,
            note: "lossy", checkpoint: checkpoint)
        sizes.smallestAtSize = min(sizes.smallestAtSize, search.smallestBytes)
        guard let best = search.best else { return nil }
        let note =
            "lossless \(encoder.format.displayName) written lossy: lossless was \(losslessBytes ?? 0) bytes, over the "
            + "\(log.limit)-byte limit"
        return FittingDriver.Fit(
            bytes: best.encoded, format: encoder.format, size: oriented.size, quality: best.quality,
            metadata: metadata, adjustments: [note] + sizes.adjustments)
    }

    mutating func advance(limit: Int) -> Bool { sizes.shrink(limit: limit) }
}
