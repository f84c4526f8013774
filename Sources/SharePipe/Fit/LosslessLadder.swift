/// `FittingLadder.lossless`: for each size, cheapest loss first:
///   1. the lossless encoder at each effort (the default zlib level, then the strongest settings: "zlib 9"),
///      the stronger ones only when the first encode is within `strongerEffortReach` of the limit (zlib 9
///      saves a few per cent over zlib 1 on photos, at several times its time);
///   2. where a format change is allowed and the image has no meaningful alpha (every pixel opaque at
///      this size), the changed format searched over its quality range: "PNG → JPEG";
///   3. otherwise a smaller size, by about sqrt(limit / bytes) of the smallest encode at this size.
/// A smaller size starts where the larger one ended (the strongest effort, or the changed format once
/// chosen), since what did not fit larger will not fit smaller at a weaker setting.
struct LosslessLadder: LadderRunner {
    var sizes: StillSizes
    let encoder: any ImageEncoder
    private(set) var efforts: [Int]
    let strongest: Int
    let quality: Int
    let progressive: Bool
    let metadata: MetadataOutcome
    let formatChange: FormatChange?
    let changedEncoder: (any ImageEncoder)?
    /// The first effort: a fit there is no adjustment.
    let defaultEffort: Int?
    /// The encodes made of the same source by the services before this one (`PictureMemo`), if it is prepared
    /// for several: an encode of the same picture with the same settings and metadata is theirs.
    var memo: PictureMemo? = nil
    private var changesFormat = false
    /// How far over the limit (limit × this) the first effort's encode may be for the stronger efforts to be
    /// tried at the same size: above what zlib 9 saved over the first effort on the photos measured
    /// (RGBA PNGs of bench/compare's batch at 1080 short edge, with their sampled filter 0.4–7.1 % over zlib 1;
    /// with libpng's per-row filters 0.6–6.4 % over zlib 3). Drawn images can gain more (TestImages'
    /// detail-rgba-8.png: about 20 %), so a limit they miss by more than this shrinks them instead.
    static let strongerEffortReach = 1.10

    init(
        sizes: StillSizes, encoder: any ImageEncoder, efforts: [Int], strongest: Int, quality: Int, progressive: Bool,
        metadata: MetadataOutcome, formatChange: FormatChange?, changedEncoder: (any ImageEncoder)?
    ) {
        (self.sizes, self.encoder, self.efforts, self.strongest) = (sizes, encoder, efforts, strongest)
        (self.quality, self.progressive, self.metadata) = (quality, progressive, metadata)
        (self.formatChange, self.changedEncoder) = (formatChange, changedEncoder)
        defaultEffort = efforts.first
    }

    var warnings: [String] { sizes.warnings }
    var placeholderThumbnail: PlaceholderThumbnail? { sizes.placeholderThumbnail }
    var focalPoint: FocalPoint? { sizes.focalPoint }

    mutating func attempt(_ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint) throws -> FittingDriver.Fit? {
        let oriented = try sizes.render()
        defer { sizes.release(oriented) }
        if !changesFormat {
            let picture = memo.map { _ in PictureMemo.Picture(oriented) }
            for effort in efforts {
                try checkpoint()
                let settings = EncodeSettings(quality: quality, progressive: false, effort: effort)
                func encode() throws -> [UInt8] {
                    try encoder.encode(oriented, settings: settings, metadata: metadata.kept)
                }
                let bytes: [UInt8]
                if let memo, let picture {
                    bytes = try memo.encoded(
                        PictureMemo.EncodeKey(picture: picture, format: encoder.format, settings: settings),
                        metadata: metadata.kept, encode: encode)
                } else {
                    bytes = try encode()
                }
                sizes.smallestAtSize = min(sizes.smallestAtSize, bytes.count)
                if log.record(
                    size: oriented.size, format: encoder.format, quality: nil, note: "zlib \(effort)",
                    bytes: bytes.count)
                {
                    let effortNote = effort == defaultEffort ? [] : ["zlib \(effort)"]
                    return FittingDriver.Fit(
                        bytes: bytes, format: encoder.format, size: oriented.size, quality: nil,
                        metadata: metadata, adjustments: effortNote + sizes.adjustments)
                }
                if effort == defaultEffort && Double(bytes.count) > Double(log.limit) * Self.strongerEffortReach {
                    break
                }
            }
            efforts = [strongest]
            changesFormat = formatChange != nil && !oriented.hasTransparency
        }
        guard changesFormat, let formatChange, let changedEncoder else { return nil }
        let note = "\(encoder.format.displayName) → \(formatChange.format.displayName)"
        let search = try log.searchQuality(
            oriented, encoder: changedEncoder, range: formatChange.range,
            progressive: progressive, metadata: formatChange.metadata.kept,
            note: note, checkpoint: checkpoint)
        sizes.smallestAtSize = search.smallestBytes
        guard let best = search.best else { return nil }
        return FittingDriver.Fit(
            bytes: best.encoded, format: formatChange.format, size: oriented.size,
            quality: best.quality, metadata: formatChange.metadata, adjustments: [note] + sizes.adjustments)
    }

    mutating func advance(limit: Int) -> Bool { sizes.shrink(limit: limit) }
}
