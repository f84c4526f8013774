/// Meets the byte limit for a still image: quality first, then dimensions.
///
/// For each size: render (a fresh decode of the source, or under `cpuFirst` a resample of the first
/// render kept in memory), orient, then search the encoder's quality range. If even the floor is over
/// the limit, the size shrinks by about sqrt(limit / bytes) and the loop repeats, down to
/// `minShortEdge`; then `cannotMeetLimit` with the smallest size reached. Nothing over the limit is
/// ever returned as a success.
struct StillFitter {
    let source: ImageSource
    let info: ImageInfo
    let options: PrepareOptions
    let decoder: any ImageDecoder
    let metadata: MetadataOutcome
    let meter: PixelMemoryMeter

    func fit(startingAt target: PixelSize, checkpoint: Pipeline.Checkpoint) throws -> PreparedImage {
        let outputFormat = info.format
        let encoder = try Codecs.encoder(for: outputFormat)
        let limit = options.maxBytes ?? Int.max
        var size = target
        var attempts: [FitAttempt] = []
        var smallest = Int.max
        var warnings: [String] = []
        var kept: Bitmap?   // cpuFirst: the first render, resampled again for smaller sizes

        while true {
            try checkpoint()
            let bitmap: Bitmap
            if let kept, options.strategy == .cpuFirst {
                bitmap = InMemoryResample.resize(kept, to: size, meter: meter)
            } else {
                let rendered = try decoder.render(source, info: info, target: size, limits: options.limits, meter: meter)
                warnings += rendered.warnings
                bitmap = rendered.bitmap
                if options.strategy == .cpuFirst { kept = bitmap }
            }
            let oriented = meter.holding(bitmap.byteCount) { bitmap.applying(info.orientation) }
            meter.allocate(oriented.byteCount)
            defer { meter.release(oriented.byteCount) }

            let range = options.minQuality...options.quality
            let search = try QualitySearch.highestFitting(range: range, limit: limit) { quality in
                try checkpoint()
                let bytes = try encoder.encode(oriented, settings: EncodeSettings(quality: quality, progressive: options.progressive),
                                               metadata: metadata.kept)
                return (bytes, bytes.count)
            }
            for (quality, bytes) in search.attempts {
                attempts.append(FitAttempt(size: oriented.size, format: outputFormat, quality: quality, note: nil,
                                           bytes: bytes, fits: bytes <= limit))
            }
            smallest = min(smallest, search.smallestBytes)
            if let best = search.best {
                return PreparedImage(bytes: best.encoded, format: outputFormat, size: oriented.size,
                                     inputFormat: info.format, inputSize: info.size, inputByteCount: info.byteCount,
                                     appliedOrientation: info.orientation, method: .reencoded, quality: best.quality,
                                     attempts: attempts, removedMetadata: metadata.removed,
                                     keptMetadata: MetadataOutcome.kinds(of: metadata.kept), frameCount: 1,
                                     peakPixelBytes: meter.peakBytes, warnings: warnings,
                                     adjustments: size == info.size ? [] : [])
            }
            let next = ScalePlan.shrink(size, bytes: search.smallestBytes, limit: limit)
            if next.shortEdge < options.minShortEdge || next == size {
                throw SharePipeError.cannotMeetLimit(file: source.displayName, limit: limit, bestBytes: smallest)
            }
            size = next
        }
    }
}

/// Resizes a bitmap already in memory by feeding its rows to the streaming resampler.
enum InMemoryResample {
    static func resize(_ bitmap: Bitmap, to size: PixelSize, meter: PixelMemoryMeter) -> Bitmap {
        if bitmap.size == size { return bitmap }
        var resampler = LanczosResampler(from: bitmap.size, to: size, layout: bitmap.layout, meter: meter)
        let rowBytes = bitmap.width * bitmap.layout.channels
        bitmap.pixels.withUnsafeBufferPointer { all in
            for y in 0..<bitmap.height {
                resampler.push(row: UnsafeBufferPointer(rebasing: all[y * rowBytes..<(y + 1) * rowBytes]))
            }
        }
        // All rows were pushed, so finish cannot report an incomplete image.
        return (try? resampler.finish()) ?? bitmap
    }
}
