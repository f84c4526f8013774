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
    /// Under `cpuFirst`, the render kept for later sizes and services; nil under `memoryFirst`.
    var cache: RenderCache? = nil

    func fit(startingAt target: PixelSize, checkpoint: Pipeline.Checkpoint) throws -> PreparedImage {
        let outputFormat = options.outputFormat(for: info.format)
        if outputFormat == .png { return try fitLossless(startingAt: target, checkpoint: checkpoint) }
        let encoder = try Codecs.encoder(for: outputFormat)
        var adjustments: [String] = []
        if outputFormat != info.format {
            adjustments.append("\(info.format.rawValue.uppercased()) → \(outputFormat.rawValue.uppercased()) (accepted formats)")
        }
        // Never spend more quality than the source had: a q73 photo saved at q85 grows for nothing.
        var ceiling = options.quality
        if info.format == .jpeg, outputFormat == .jpeg, let sourceQuality = try? JPEGQuality.estimate(source),
           sourceQuality < ceiling {
            ceiling = max(options.minQuality, sourceQuality)
            adjustments.append("quality capped at the source's q\(sourceQuality)")
        }
        let limit = options.maxBytes ?? Int.max
        var size = target
        var attempts: [FitAttempt] = []
        var smallest = Int.max
        var warnings: [String] = []
        let cache = options.strategy == .cpuFirst ? (self.cache ?? RenderCache()) : nil

        while true {
            try checkpoint()
            let oriented = try renderOriented(size, cache: cache, warnings: &warnings)
            meter.allocate(oriented.byteCount)
            defer { meter.release(oriented.byteCount) }

            let range = options.minQuality...ceiling
            let search = try searchQuality(oriented, encoder: encoder, range: range, limit: limit, metadata: metadata.kept,
                                           note: nil, attempts: &attempts, checkpoint: checkpoint)
            smallest = min(smallest, search.smallestBytes)
            if let best = search.best {
                return PreparedImage(bytes: best.encoded, format: outputFormat, size: oriented.size,
                                     inputFormat: info.format, inputSize: info.size, inputByteCount: info.byteCount,
                                     appliedOrientation: info.orientation, method: .reencoded, quality: best.quality,
                                     attempts: attempts, removedMetadata: metadata.removed,
                                     keptMetadata: MetadataOutcome.kinds(of: metadata.kept), frameCount: 1,
                                     peakPixelBytes: meter.peakBytes, warnings: warnings,
                                     adjustments: adjustments + (size == target ? [] : ["dimensions reduced to fit"]))
            }
            let next = ScalePlan.shrink(size, bytes: search.smallestBytes, limit: limit)
            if next.shortEdge < options.minShortEdge || next == size {
                throw SharePipeError.cannotMeetLimit(file: source.displayName, limit: limit, bestBytes: smallest)
            }
            size = next
        }
    }
}

extension StillFitter {
    /// Renders `size` — resampled from the `cpuFirst` cache when it covers the size, else decoded afresh
    /// from the source — and turns it upright.
    func renderOriented(_ size: PixelSize, cache: RenderCache?, warnings: inout [String]) throws -> Bitmap {
        let bitmap: Bitmap
        if let cached = cache?.bitmap(covering: size) {
            bitmap = InMemoryResample.resize(cached, to: size, meter: meter)
        } else {
            let rendered = try decoder.render(source, info: info, target: size, limits: options.limits, meter: meter)
            warnings += rendered.warnings
            bitmap = rendered.bitmap
            cache?.keep(bitmap)
        }
        return meter.holding(bitmap.byteCount) { bitmap.applying(info.orientation) }
    }

    /// The highest quality in `range` whose encode fits `limit`, every encode recorded as an attempt.
    func searchQuality(_ oriented: Bitmap, encoder: any ImageEncoder, range: ClosedRange<Int>, limit: Int,
                       metadata: [MetadataBlock], note: String?, attempts: inout [FitAttempt],
                       checkpoint: Pipeline.Checkpoint) throws -> QualitySearch.Outcome<[UInt8]> {
        let search = try QualitySearch.highestFitting(range: range, limit: limit) { quality in
            try checkpoint()
            let bytes = try encoder.encode(oriented, settings: EncodeSettings(quality: quality, progressive: options.progressive),
                                           metadata: metadata)
            return (bytes, bytes.count)
        }
        for (quality, bytes) in search.attempts {
            attempts.append(FitAttempt(size: oriented.size, format: encoder.format, quality: quality, note: note,
                                       bytes: bytes, fits: bytes <= limit))
        }
        return search
    }
}

/// The `cpuFirst` strategy's memory: one decoded, resized bitmap (stored orientation) reused for every
/// smaller size the fitting search or a later service asks for, instead of decoding the source again.
final class RenderCache: @unchecked Sendable {
    private let lock = Mutex()
    private var bitmap: Bitmap?

    /// The kept bitmap if it is at least `size` on both edges.
    func bitmap(covering size: PixelSize) -> Bitmap? {
        lock.locked {
            guard let bitmap, bitmap.width >= size.width, bitmap.height >= size.height else { return nil }
            return bitmap
        }
    }

    /// Keeps `candidate` if it is larger than what is kept.
    func keep(_ candidate: Bitmap) {
        lock.locked {
            if bitmap == nil || candidate.size.area > bitmap!.size.area { bitmap = candidate }
        }
    }
}

// MARK: - Lossless sources (PNG)

extension StillFitter {
    /// Meets the byte limit for a PNG. For each size, cheapest loss first:
    ///   1. PNG at the default zlib level (`PNGEncoder.defaultEffort`);
    ///   2. PNG at the strongest lossless settings (zlib 9, both filter strategies): "zlib 9";
    ///   3. where `allowFormatChange` is set and the image has no meaningful alpha (every pixel opaque at
    ///      this size), a JPEG searched over the quality range like a JPEG source: "PNG → JPEG";
    ///   4. otherwise a smaller size, by about sqrt(limit / bytes) of the smallest encode, down to
    ///      `minShortEdge`: "dimensions reduced to fit".
    /// A smaller size starts where the larger one ended (zlib 9, or JPEG once the format changed), since
    /// what did not fit larger will not fit smaller at a weaker setting. Every encode is an attempt whose
    /// note names the setting.
    func fitLossless(startingAt target: PixelSize, checkpoint: Pipeline.Checkpoint) throws -> PreparedImage {
        let limit = options.maxBytes ?? Int.max
        // The PNG encoder carries the source's colour and physical chunks, which the format-only registry
        // (`Codecs.encoder(for:)`) cannot hand it.
        let pngEncoder = PNGEncoder(preserving: info)
        let jpegEncoder = try Codecs.encoder(for: .jpeg)
        let pngMetadata = metadata.writtenAsReencodedPNG(present: info.metadataKinds)
        let jpegMetadata = metadata.writtenAsJPEG(present: info.metadataKinds)
        var size = target
        var attempts: [FitAttempt] = []
        var smallest = Int.max
        var warnings: [String] = []
        let cache = options.strategy == .cpuFirst ? (self.cache ?? RenderCache()) : nil
        var efforts = [PNGEncoder.defaultEffort, PNGEncoder.strongestEffort]
        var writesJPEG = false

        func prepared(_ bytes: [UInt8], outputSize: PixelSize, quality: Int?, adjustments: [String]) -> PreparedImage {
            let outcome = writesJPEG ? jpegMetadata : pngMetadata
            return PreparedImage(bytes: bytes, format: writesJPEG ? .jpeg : .png, size: outputSize, inputFormat: info.format,
                                 inputSize: info.size, inputByteCount: info.byteCount, appliedOrientation: info.orientation,
                                 method: .reencoded, quality: quality, attempts: attempts, removedMetadata: outcome.removed,
                                 keptMetadata: MetadataOutcome.kinds(of: outcome.kept), frameCount: 1,
                                 peakPixelBytes: meter.peakBytes, warnings: warnings,
                                 adjustments: adjustments + (size == target ? [] : ["dimensions reduced to fit"]))
        }

        while true {
            try checkpoint()
            let oriented = try renderOriented(size, cache: cache, warnings: &warnings)
            meter.allocate(oriented.byteCount)
            defer { meter.release(oriented.byteCount) }

            var smallestAtThisSize = Int.max
            if !writesJPEG {
                for effort in efforts {
                    try checkpoint()
                    let bytes = try pngEncoder.encode(oriented, settings: EncodeSettings(quality: options.quality, progressive: false, effort: effort),
                                                      metadata: pngMetadata.kept)
                    let fits = bytes.count <= limit
                    attempts.append(FitAttempt(size: oriented.size, format: .png, quality: nil, note: "zlib \(effort)",
                                               bytes: bytes.count, fits: fits))
                    smallest = min(smallest, bytes.count)
                    smallestAtThisSize = min(smallestAtThisSize, bytes.count)
                    if fits {
                        return prepared(bytes, outputSize: oriented.size, quality: nil,
                                        adjustments: effort == PNGEncoder.defaultEffort ? [] : ["zlib \(effort)"])
                    }
                }
                efforts = [PNGEncoder.strongestEffort]
                writesJPEG = options.allowFormatChange && !oriented.hasTransparency
            }
            if writesJPEG {
                let search = try searchQuality(oriented, encoder: jpegEncoder, range: options.minQuality...options.quality,
                                               limit: limit, metadata: jpegMetadata.kept, note: "PNG → JPEG",
                                               attempts: &attempts, checkpoint: checkpoint)
                smallest = min(smallest, search.smallestBytes)
                if let best = search.best {
                    return prepared(best.encoded, outputSize: oriented.size, quality: best.quality, adjustments: ["PNG → JPEG"])
                }
                smallestAtThisSize = search.smallestBytes
            }
            let next = ScalePlan.shrink(size, bytes: smallestAtThisSize, limit: limit)
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
