/// The order of work, in one place. The CLI and the library both come here.
///
///   detect → probe (header only) → limits → plan size → metadata → [rewrite metadata only]
///          → decode with shrink-on-load → resample row by row → orient → encode within the byte limit
///
/// Each step that reads pixels opens the source afresh and closes it before the next step.
enum Pipeline {
    /// A hook called between steps and between fitting attempts; throws to cancel.
    typealias Checkpoint = () throws -> Void

    /// Prepares `source` once per options value (one per service), each from a freshly opened source.
    /// Under `cpuFirst` the services share one render: the largest is decoded first and the others are
    /// resampled from it in memory.
    static func prepare(_ source: ImageSource, forEach targets: [PrepareOptions],
                        checkpoint: Checkpoint = {}) -> [Result<PreparedImage, SharePipeError>] {
        let cache = RenderCache()
        // Largest output first, so the shared render can serve every later one.
        let order = targets.indices.sorted { targets[$0].maxShortEdge > targets[$1].maxShortEdge }
        var results = [Result<PreparedImage, SharePipeError>?](repeating: nil, count: targets.count)
        for index in order {
            do {
                results[index] = .success(try prepare(source, options: targets[index], checkpoint: checkpoint,
                                                      cache: targets[index].strategy == .cpuFirst ? cache : nil))
            } catch let error as SharePipeError {
                results[index] = .failure(error)
            } catch {
                results[index] = .failure(.corrupt(file: source.displayName, reason: "\(error)"))
            }
        }
        return results.map { $0! }
    }

    static func prepare(_ source: ImageSource, options: PrepareOptions,
                        checkpoint: Checkpoint = {}, cache: RenderCache? = nil) throws -> PreparedImage {
        try options.validate()
        let file = source.displayName
        let meter = PixelMemoryMeter()

        // 1. Detect the format by magic bytes and read the header: no pixels yet.
        let inputBytes = try source.byteCount()
        if inputBytes > options.limits.maxInputBytes {
            throw SharePipeError.tooLarge(file: file, width: 0, height: 0,
                                          limit: "the input limit of \(options.limits.maxInputBytes) bytes (file has \(inputBytes))")
        }
        let format = try withFile(file) { try ImageFormat.detect(source) }
        let decoder = try withFile(file) { try Codecs.decoder(for: format) }
        let info = try decoder.probe(source, limits: options.limits)
        try checkpoint()
        if info.format == .gif && info.frameCount > 1 && options.animation.allowed && options.outputFormat(for: .gif) == .gif {
            return try AnimatedGIFPipeline.prepare(source, info: info, options: options, meter: meter, checkpoint: checkpoint)
        }

        // 2. Plan the output size. Caps apply to the image as displayed; decoding works in stored orientation.
        let displayedTarget = ScalePlan.targetSize(for: info.orientedSize, caps: options.sizeCaps)
        let target = info.orientation.swapsAxes ? displayedTarget.transposed : displayedTarget

        // 3. Decide which metadata survives.
        let metadata = StandardMetadataPolicy().outcome(for: info, mode: options.strip)

        // 4. Nothing to do to the pixels: copy the image data, rewrite only the metadata.
        if target == info.size, info.orientation == .up, info.colorModel != .cmyk, info.colorModel != .ycck,
           options.outputFormat(for: format) == format, let rewrite = Codecs.metadataRewriter(for: format) {
            // A throwaway 1/8-scale decode proves the image data is whole before it is passed on.
            // Its warnings (recoverable damage) are reported with the copy.
            let check = try decoder.render(source, info: info, target: ScalePlan.scaled(info.size, by: 0.125),
                                           limits: options.limits, meter: meter)
            let bytes = try rewrite(source, metadata.kept)
            if options.maxBytes.map({ bytes.count <= $0 }) ?? true {
                return PreparedImage(bytes: bytes, format: format, size: info.size, inputFormat: format,
                                     inputSize: info.size, inputByteCount: inputBytes, appliedOrientation: .up,
                                     method: .metadataRewrite, quality: nil,
                                     attempts: [FitAttempt(size: info.size, format: format, quality: nil,
                                                           note: "metadata rewrite", bytes: bytes.count,
                                                           fits: true)],
                                     removedMetadata: metadata.removed, keptMetadata: MetadataOutcome.kinds(of: metadata.kept),
                                     frameCount: 1, peakPixelBytes: meter.peakBytes, warnings: check.warnings, adjustments: [])
            }
        }
        try checkpoint()

        // 5–8. Decode with shrink-on-load, resample row by row, orient, encode within the byte limit.
        let fitter = StillFitter(source: source, info: info, options: options, decoder: decoder,
                                 metadata: metadata, meter: meter, cache: cache)
        return try fitter.fit(startingAt: target, checkpoint: checkpoint)
    }

    /// Fills in the file name for errors thrown by helpers that do not know it.
    static func withFile<T>(_ file: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch SharePipeError.unsupportedFormat(let name, let reason) where name.isEmpty {
            throw SharePipeError.unsupportedFormat(file: file, reason: reason)
        }
    }
}
