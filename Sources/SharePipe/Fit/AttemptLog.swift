/// Every encode tried, and the smallest.
struct AttemptLog {
    let limit: Int
    private(set) var attempts: [FitAttempt] = []
    private(set) var smallest = Int.max

    init(limit: Int) { self.limit = limit }

    /// Records one encode; returns whether it fits. `probe`: an encode of part of the picture (the auto search's
    /// probe), listed but never the smallest encode of the picture.
    @discardableResult
    mutating func record(
        size: PixelSize, format: ImageFormat, quality: Int?, note: String?, bytes: Int, score: Double? = nil,
        probe: Bool = false
    ) -> Bool {
        let fits = bytes <= limit
        attempts.append(
            FitAttempt(size: size, format: format, quality: quality, note: note, bytes: bytes, fits: fits, score: score)
        )
        if !probe { smallest = min(smallest, bytes) }
        return fits
    }

    /// The highest quality in `range` whose encode of `bitmap` fits, every encode recorded.
    mutating func searchQuality(
        _ bitmap: Bitmap, encoder: any ImageEncoder, range: ClosedRange<Int>, progressive: Bool,
        metadata: [MetadataBlock], note: String?,
        checkpoint: Pipeline.Checkpoint
    ) throws -> QualitySearch.Outcome<[UInt8]> {
        try searchQuality(
            StagedBitmap(bitmap, encoder: encoder), format: encoder.format, range: range,
            progressive: progressive, metadata: metadata, note: note, checkpoint: checkpoint)
    }

    /// The same on a staged bitmap (`ImageEncoder.staged`).
    mutating func searchQuality(
        _ staged: StagedBitmap, format: ImageFormat, range: ClosedRange<Int>, progressive: Bool,
        metadata: [MetadataBlock], note: String?,
        checkpoint: Pipeline.Checkpoint
    ) throws -> QualitySearch.Outcome<[UInt8]> {
        let search = try QualitySearch.highestFitting(range: range, limit: limit) { quality in
            try checkpoint()
            let bytes = try staged.encode(EncodeSettings(quality: quality, progressive: progressive), metadata)
            return (bytes, bytes.count)
        }
        for (quality, bytes) in search.attempts {
            record(size: staged.size, format: format, quality: quality, note: note, bytes: bytes)
        }
        return search
    }
}
