/// The order of work, in one place. The CLI and the library both come here.
///
///   detect → probe (header only; limits) → plan (`PreparePlan`: route, size, output format, metadata, ladder)
///   then one of four routes:
///   - metadata rewrite: prove the data whole (1/8-scale decode) → copy it with the kept metadata
///     (over the byte limit: continue as a still);
///   - lossless turn: apply the orientation to the image data without decoding it (JPEG's DCT blocks) →
///     write the kept metadata (a partial MCU in the way, or over the byte limit: continue as a still);
///   - still: decode with shrink-on-load → resample row by row → orient → encode within the byte limit
///     (`FittingDriver` climbing the plan's quality or lossless ladder);
///   - animation: every frame composited → resampled → written as an animated GIF within the byte limit
///     (`AnimationRoute`; GIF's native pass or any format's `AnimationFrameSource`).
///
/// Each step that reads pixels opens the source afresh and closes it before the next step. Formats are
/// reached only through `FormatRegistry`.
enum Pipeline {
    /// A hook called between steps, between fitting attempts and, through the job's `PixelMemoryMeter`,
    /// every few rows, bands, tiles or frames inside a step; throws to cancel.
    typealias Checkpoint = () throws -> Void

    /// Prepares `source` once per options value (one per service), each from a freshly opened source; a
    /// target whose options failed their check is that target's failure. Under `cpuFirst` the services
    /// share one render: the largest is decoded first and the others are resampled from it in memory. A
    /// service whose render is the same picture as an earlier one's takes that service's `QualitySetting.auto`
    /// search (searched the same way) and lossless encodes (the same settings and metadata): `PictureMemo`.
    /// `keepingOutputFiles`: see `prepare(_:job:checkpoint:cache:keepingOutputFile:)`.
    static func prepare(
        _ source: ImageSource, forEach targets: [Result<PrepareOptions.Checked, SharePipeError>],
        checkpoint: @escaping Checkpoint = {}, keepingOutputFiles: Bool = false
    ) -> [Result<PreparedImage, SharePipeError>] {
        let cache = RenderCache()
        let memo = targets.count > 1 ? PictureMemo() : nil
        // One deadline per file (`PrepareOptions.timeout`): every target's clock starts here.
        let started = ContinuousClock.now
        // Largest output first, so the shared render can serve every later one.
        let edges = targets.map { (try? $0.get().maxShortEdge) ?? 0 }
        let order = targets.indices.sorted { edges[$0] > edges[$1] }
        var results = [Result<PreparedImage, SharePipeError>?](repeating: nil, count: targets.count)
        for index in order {
            do {
                let options = try targets[index].get()
                results[index] = .success(
                    try prepare(
                        source, options: options, checkpoint: checkpoint,
                        cache: options.strategy == .cpuFirst ? cache : nil, keepingOutputFile: keepingOutputFiles,
                        startedAt: started, memo: memo))
            } catch {
                // Anything but a `SharePipeError` here is SharePipe's bug, not the input's fault.
                results[index] = .failure(.from(error, file: source.displayName))
            }
        }
        return results.map { $0! }
    }

    /// `startedAt`: when the job's deadline (`PrepareOptions.timeout`) started; now by default. `memo`: the
    /// searches and encodes of the source's other services (`PictureMemo`).
    static func prepare(
        _ source: ImageSource, options: PrepareOptions.Checked,
        checkpoint: @escaping Checkpoint = {}, cache: RenderCache? = nil, keepingOutputFile: Bool = false,
        startedAt: ContinuousClock.Instant = .now, memo: PictureMemo? = nil
    ) throws -> PreparedImage {
        let guarded = JobDeadline.checkpoint(
            checkpoint, timeout: options.timeout.map(Double.init), startedAt: startedAt, file: source.displayName)
        let job = try plan(source, options: options)
        return try prepare(
            source, job: job, checkpoint: guarded, cache: cache, keepingOutputFile: keepingOutputFile,
            deadlineStarted: true, memo: memo)
    }

    /// Runs `job`, planned beforehand (`plan(_:options:probed:)`): the same value `SharePipeline` priced for
    /// its reservation. An output written to a temporary file (the animation route's GIF) is read into the
    /// result's `bytes`, unless `keepingOutputFile`: the caller then writes `PreparedImage.outputFile` where it
    /// belongs (`FileIO.writeAtomically(_:to:)`) without ever holding the whole output.
    /// The job's deadline (`PrepareOptions.timeout`) starts here unless `deadlineStarted` (the caller's
    /// checkpoint already checks it).
    static func prepare(
        _ source: ImageSource, job: PlannedJob,
        checkpoint: @escaping Checkpoint = {}, cache: RenderCache? = nil, keepingOutputFile: Bool = false,
        deadlineStarted: Bool = false, memo: PictureMemo? = nil
    ) throws -> PreparedImage {
        let guarded =
            deadlineStarted
            ? checkpoint
            : JobDeadline.checkpoint(
                checkpoint, timeout: job.options.timeout.map(Double.init), file: source.displayName)
        do {
            let variants = job.options.requestedVariants
            // With variants, the main output's render is kept for them: under `memoryFirst` without serving the
            // main output's own search (`RenderCache`).
            let kept = variants.isEmpty ? cache : cache ?? RenderCache(serving: job.options.strategy == .cpuFirst)
            var prepared = try prepareSteps(source, job: job, checkpoint: guarded, cache: kept, memo: memo)
            // An encoder's call has no checkpoint inside it (a PNG of noise deflates for a third of a second):
            // a job that finished past its deadline is timed out all the same, not answered late.
            try guarded()
            if !keepingOutputFile { try prepared.loadOutputFile(naming: source.displayName) }
            if let kept, !variants.isEmpty {
                prepared.variants = try prepareVariants(
                    variants, of: source, job: job, main: prepared, cache: kept, checkpoint: guarded,
                    keepingOutputFiles: keepingOutputFile)
                try guarded()
                // A cache of this job alone goes with it; one shared by several services stays for the next.
                if cache == nil { kept.clear() }
            }
            return prepared
        } catch let failure as EncoderFailure {
            // Encoders see only pixels; the input's name is added here, once for every format.
            throw failure.error(file: source.displayName)
        }
    }

    /// Step 4, for a job with variants (`PrepareOptions.variants`): each variant planned from the main output's
    /// probe under its own options (`PrepareOptions.options(for:)`) and run with the main output's kept render,
    /// which serves every size it covers: a variant at or below the main output's size is resampled from it in
    /// memory and never decoded again from the source (a source decode is made only where no render covers the
    /// variant: after a metadata-only copy or a lossless turn, whose renders are the placeholder's). Run largest
    /// first, returned in the order asked. A variant that fails fails the job (its error names it). A variant
    /// whose plan copies the image data as the main output did (an image already within the variant's caps:
    /// the same metadata-only copy or lossless turn) is the main output's bytes, made once.
    static func prepareVariants(
        _ variants: [OutputVariant], of source: ImageSource, job: PlannedJob, main: PreparedImage,
        cache: RenderCache, checkpoint: @escaping Checkpoint, keepingOutputFiles: Bool
    ) throws -> [PreparedVariant] {
        cache.serveVariants()
        let jobs = try variants.map { variant in
            do {
                return plan(source, info: job.info, options: try job.options.options.options(for: variant).checked())
            } catch {
                throw SharePipeError.invalidOptions(
                    InvalidOption("variants", expected: "a variant within the profile's options", found: variant.name))
            }
        }
        // Largest first: a variant no render covers keeps its own for the smaller ones.
        var prepared = [PreparedVariant?](repeating: nil, count: variants.count)
        for index in variants.indices.sorted(by: { jobs[$0].plan.target.area > jobs[$1].plan.target.area }) {
            try checkpoint()
            let name = variants[index].name
            var image: PreparedImage
            if Self.copiesAsMain(jobs[index].plan, job.plan, main: main) {
                image = main
                image.placeholder = nil
                image.placeholderPixels = nil
                image.sourceDecodes = 0
                prepared[index] = PreparedVariant(name: name, image: image)
                continue
            }
            do {
                image = try prepareSteps(source, job: jobs[index], checkpoint: checkpoint, cache: cache)
            } catch let error as SharePipeError {
                throw error.forVariant(name)
            }
            if !keepingOutputFiles { try image.loadOutputFile(naming: source.displayName) }
            // The main output's placeholder stands for its variants.
            image.placeholder = nil
            image.placeholderPixels = nil
            prepared[index] = PreparedVariant(name: name, image: image)
        }
        return prepared.map { $0! }
    }

    /// Whether a variant planned as `variant` would make the same bytes as the main output `main` (planned as
    /// `plan`) did: both copy the image data (a metadata-only copy, a lossless turn) of the same size, format
    /// and metadata, and the main output was that copy, held in memory.
    static func copiesAsMain(_ variant: PreparePlan, _ plan: PreparePlan, main: PreparedImage) -> Bool {
        let copied: [PreparePlan.Route: PreparationMethod] = [
            .metadataRewrite: .metadataRewrite, .losslessTurn: .losslessTurn,
        ]
        guard let method = copied[plan.route], main.method == method, main.outputFile == nil else { return false }
        return variant.route == plan.route && variant.target == plan.target && variant.outputFormat == plan.outputFormat
            && variant.metadata == plan.metadata && variant.byteLimit == plan.byteLimit
    }

    /// Steps 1 and 2: detects the format by magic bytes, reads the header (no pixels yet) and plans the job
    /// (`PreparePlan`: route, size, output format, metadata, fitting ladder), once. `probed` is a probe of
    /// `source` already made (`SharePipeline` probes once for all its profiles): used when it was made under
    /// the options' own limits, since a probe is a check against the limits it was given.
    static func plan(
        _ source: ImageSource, options: PrepareOptions.Checked, probed: (info: ImageInfo, limits: ImageLimits)? = nil
    ) throws -> PlannedJob {
        let file = source.displayName
        let inputBytes = try source.byteCount()
        if inputBytes > options.limits.maxInputBytes {
            throw SharePipeError.tooLarge(
                file: file,
                exceeded: ExceededLimit(
                    .inputBytes, found: inputBytes,
                    limit: options.limits.maxInputBytes))
        }
        let info: ImageInfo
        if let probed, probed.limits == options.limits {
            info = probed.info
        } else {
            info = try probe(source, limits: options.limits)
        }
        return plan(source, info: info, options: options)
    }

    /// Step 1: the format from the magic bytes, the checks on the file's own structure that come before any
    /// decoder library (`FormatFamilyGate`: the disabled families, a HEIF/AVIF's essential transforms), then the
    /// format's header read.
    static func probe(_ source: ImageSource, limits: ImageLimits) throws -> ImageInfo {
        let format = try withFile(source.displayName) { try ImageFormat.detect(source) }
        try FormatFamilyGate.check(source, format: format, limits: limits)
        return try FormatRegistry.descriptor(for: format).decoder.probe(source, limits: limits)
    }

    /// Step 2 alone: the plan for a probe, built once. The source's own quality is read only where it would
    /// cap the quality search.
    static func plan(_ source: ImageSource, info: ImageInfo, options: PrepareOptions.Checked) -> PlannedJob {
        var plan = PreparePlan(info: info, options: options)
        if plan.capsAtSourceQuality, let quality = FormatRegistry.descriptor(for: info.format).sourceQuality?(source) {
            plan.capQuality(atSource: quality, options: options)
        } else if options.qualityTarget != nil && plan.guessesFromSourceQuality {
            // The quality as saved (a JPEG's Annex K estimate), on which `QualityLadder.autoGuess` was fitted.
            plan.sourceQualityForGuess = FormatRegistry.descriptor(for: info.format).sourceQuality?(source)?.saved
        }
        return PlannedJob(info: info, options: options, plan: plan)
    }

    private static func prepareSteps(
        _ source: ImageSource, job: PlannedJob,
        checkpoint: @escaping Checkpoint, cache: RenderCache?, memo: PictureMemo? = nil
    ) throws -> PreparedImage {
        let file = source.displayName
        let meter = PixelMemoryMeter(checkpoint: checkpoint)
        let info = job.info
        let options = job.options
        let input = FormatRegistry.descriptor(for: info.format)
        var plan = job.plan
        // 3. The route the plan chose.
        try checkpoint()
        #if DEBUG
            try DebugFault.check(source)
        #endif

        // An image over the default pixel limit that its header check let past: taken only when its still route
        // streams it and the job's priced memory fits (`ImageLimits.checkStreamedCost`); nothing decoded yet.
        // Then work priced from the header: a small file declaring hundreds of megapixels (tiles, frames, passes)
        // stops here (`ImageLimits.checkWork`). The pixel limit is checked first, so an image over it is refused
        // with that limit's message, as before the work limit.
        try options.limits.checkStreamedCost(
            size: info.size, route: plan.route, estimate: job.estimate(input: InputResidence(of: source)),
            file: file)
        try options.limits.checkWork(WorkEstimate(info: info, route: plan.route), size: info.size, file: file)
        var driver = FittingDriver(source: source, info: info, plan: plan, meter: meter)

        switch plan.route {
        case .animation:
            if let ratio = options.cropTo {
                // Every frame would need the same window, and the frames' passes have no crop: refused, not
                // passed uncropped.
                throw SharePipeError.unsupportedFormat(
                    file: file, missing: .feature,
                    reason: "cropping to \(ratio) is for stills, and this is an animation of \(info.frameCount) "
                        + "frames (with animation not allowed its first frame is cropped)")
            }
            // 3a. An animated GIF that needs nothing but its metadata is copied (declined, or over the byte
            //     limit: written anew). Otherwise every frame, resampled, written within the byte limit.
            if plan.metadataCopyFirst,
                let copied = try rewriteMetadata(source, info: info, plan: plan, options: options, driver: driver)
            {
                return copied
            }
            if plan.metadataCopyFirst, !plan.copyOnlyNotes.isEmpty {
                plan.adjustments += plan.copyOnlyNotes
                driver = FittingDriver(source: source, info: info, plan: plan, meter: meter)
            }
            if case .video = plan.ladder {
                var ladder = try VideoRoute.ladder(
                    source, info: info, plan: plan, options: options, meter: meter, checkpoint: checkpoint)
                return try driver.run(&ladder, checkpoint: checkpoint)
            }
            var ladder = try AnimationRoute.ladder(
                source, info: info, plan: plan, options: options, meter: meter,
                checkpoint: checkpoint)
            return try driver.run(&ladder, checkpoint: checkpoint)
        case .metadataRewrite, .losslessTurn, .still:
            if plan.route == .metadataRewrite {
                // 3b. Nothing to do to the pixels: copy the image data, rewrite only the metadata.
                if let rewritten = try rewriteMetadata(source, info: info, plan: plan, options: options, driver: driver)
                {
                    return rewritten
                }
                if !plan.copyOnlyNotes.isEmpty {
                    plan.adjustments += plan.copyOnlyNotes
                    driver = FittingDriver(source: source, info: info, plan: plan, meter: meter)
                }
            }
            if plan.route == .losslessTurn {
                // 3c. Only the orientation changes: turn the image data, rewrite the metadata.
                switch try turnLosslessly(source, info: info, plan: plan, options: options, driver: driver) {
                case .turned(let prepared):
                    return prepared
                case .impossible(let why):
                    plan.adjustments.append("orientation applied by re-encoding (\(why))")
                    driver = FittingDriver(source: source, info: info, plan: plan, meter: meter)
                }
            }
            // 3d. Decode with shrink-on-load, resample row by row, orient, encode within the byte limit.
            // `cpuFirst` keeps and serves its render; `memoryFirst` keeps one only for variants (`RenderCache`).
            let renderer = StillRenderer(
                source: source, info: info, decoder: input.decoder, limits: options.limits,
                meter: meter, cache: options.strategy == .cpuFirst ? (cache ?? RenderCache()) : cache)
            try checkpoint()
            return try runStillLadder(
                renderer, info: info, plan: plan, options: options, driver: driver, memo: memo,
                checkpoint: checkpoint)
        }
    }

    /// The metadata-only rewrite, or nil when its copy is over the byte limit or the rewriter declines the
    /// file (one only browsers show right). A throwaway 1/8-scale decode first proves the image data whole
    /// before it is passed on; its warnings (recoverable damage) are reported with the copy.
    static func rewriteMetadata(
        _ source: ImageSource, info: ImageInfo, plan: PreparePlan, options: PrepareOptions.Checked,
        driver: FittingDriver
    ) throws -> PreparedImage? {
        let input = FormatRegistry.descriptor(for: info.format)
        guard let rewrite = input.metadataRewriter else { return nil }
        driver.meter.countDecode()
        let check = try input.decoder.render(
            source, info: info, target: placeholderRenderSize(info.size, atLeast: 0.125),
            limits: options.limits, meter: driver.meter)
        guard check.imageDataCopyable else { return nil }  // re-encoded, with the render's warning
        guard let bytes = try rewrite(source, plan.metadata.kept) else { return nil }
        var log = AttemptLog(limit: plan.byteLimit ?? Int.max)
        guard
            log.record(size: info.size, format: info.format, quality: nil, note: "metadata rewrite", bytes: bytes.count)
        else {
            return nil
        }
        return driver.prepared(
            FittingDriver.Fit(
                bytes: bytes, format: info.format, size: info.size, quality: nil,
                metadata: plan.metadata, frameCount: info.frameCount,
                method: .metadataRewrite),
            attempts: log.attempts, warnings: check.warnings,
            thumbnail: PlaceholderThumbnail(check.bitmap.applying(info.orientation)))
    }

    /// The size a route that renders no output picture decodes for the placeholder (`PlaceholderThumbnail`):
    /// fitting the thumbnail's 100 × 100, or `scale` of the image when that is larger (the metadata rewrite's
    /// proof that the data is whole).
    static func placeholderRenderSize(_ size: PixelSize, atLeast scale: Double = 0) -> PixelSize {
        let fit = Double(PlaceholderThumbnail.maxEdge) / Double(max(size.width, size.height, 1))
        return ScalePlan.scaled(size, by: max(scale, fit))
    }

    /// The lossless turn, or why it cannot serve (a partial MCU in the way, damage it would copy, or a
    /// turned file over the byte limit).
    static func turnLosslessly(
        _ source: ImageSource, info: ImageInfo, plan: PreparePlan, options: PrepareOptions.Checked,
        driver: FittingDriver
    ) throws -> LosslessTurnResult {
        guard let turn = FormatRegistry.descriptor(for: info.format).losslessTurn else {
            return .impossible("the format has no lossless turn")
        }
        // The turned image data no longer matches a content credentials' signature: they are not written.
        let metadata = plan.metadata.withImageDataChanged
        switch try turn(source, info, metadata.kept) {
        case .impossible(let why):
            return .impossible(why)
        case .turned(let bytes):
            let displayed = info.orientedSize
            var log = AttemptLog(limit: plan.byteLimit ?? Int.max)
            guard
                log.record(
                    size: displayed, format: info.format, quality: nil, note: "lossless turn", bytes: bytes.count)
            else {
                return .impossible("the losslessly turned file, \(bytes.count) bytes, is over the byte limit")
            }
            // No picture was rendered: a small decode for the placeholder (a JPEG decodes it at 1/8 scale).
            driver.meter.countDecode()
            let small = try FormatRegistry.descriptor(for: info.format).decoder.render(
                source, info: info, target: placeholderRenderSize(info.size), limits: options.limits,
                meter: driver.meter)
            return .turned(
                driver.prepared(
                    FittingDriver.Fit(
                        bytes: bytes, format: info.format, size: displayed,
                        quality: nil, metadata: metadata, method: .losslessTurn),
                    attempts: log.attempts, warnings: [],
                    thumbnail: PlaceholderThumbnail(small.bitmap.applying(info.orientation))))
        }
    }

    enum LosslessTurnResult {
        case turned(PreparedImage)
        case impossible(String)
    }

    // MARK: - The still route: decode → resample → orient → encode

    /// Climbs the plan's still ladder with the output format's encoder. At each size the ladder tries, the
    /// renderer decodes, resamples and orients (`StillRenderer.oriented`); the ladder encodes its rungs.
    static func runStillLadder(
        _ renderer: StillRenderer, info: ImageInfo, plan: PreparePlan, options: PrepareOptions.Checked,
        driver: FittingDriver, memo: PictureMemo? = nil, checkpoint: Pipeline.Checkpoint
    ) throws -> PreparedImage {
        let encoder = FormatRegistry.descriptor(for: plan.outputFormat).encoder(info)
        switch plan.ladder {
        case .quality(let range, let cap, let minShortEdge):
            var ladder = QualityLadder(
                sizes: StillSizes(
                    renderer: renderer, target: plan.target, minShortEdge: minShortEdge, crop: plan.crop),
                encoder: encoder, range: range, progressive: options.progressive,
                metadata: plan.writtenMetadata, rangeNote: cap?.capNote,
                sharpRender: plan.sharpRenderWhenCapped, target: options.qualityTarget,
                sourceQuality: plan.sourceQualityForGuess, memo: memo)
            return try driver.run(&ladder, checkpoint: checkpoint)
        case .lossless(let efforts, let strongest, let change, let minShortEdge):
            var ladder = LosslessLadder(
                sizes: StillSizes(
                    renderer: renderer, target: plan.target, minShortEdge: minShortEdge, crop: plan.crop),
                encoder: encoder, efforts: efforts, strongest: strongest, quality: options.quality,
                progressive: options.progressive, metadata: plan.writtenMetadata, formatChange: change,
                changedEncoder: change.map { FormatRegistry.descriptor(for: $0.format).encoder(info) })
            ladder.memo = memo
            return try driver.run(&ladder, checkpoint: checkpoint)
        case .losslessFirst(let range, let minShortEdge):
            var ladder = LosslessFirstLadder(
                sizes: StillSizes(
                    renderer: renderer, target: plan.target, minShortEdge: minShortEdge, crop: plan.crop),
                encoder: encoder, range: range, metadata: plan.writtenMetadata)
            return try driver.run(&ladder, checkpoint: checkpoint)
        case .animation, .video:
            preconditionFailure("a still route never plans an animation ladder")
        }
    }

    /// Fills in the file name for errors thrown by helpers that do not know it.
    static func withFile<T>(_ file: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch SharePipeError.unsupportedFormat(let name, let missing, let reason) where name.isEmpty {
            throw SharePipeError.unsupportedFormat(file: file, missing: missing, reason: reason)
        }
    }
}

/// The still route's pixels at one size (each size a still ladder tries): decode → resample → orient.
struct StillRenderer {
    let source: ImageSource
    let info: ImageInfo
    let decoder: any ImageDecoder
    let limits: ImageLimits
    let meter: PixelMemoryMeter
    /// Under `cpuFirst`, the render kept for later sizes and services; under `memoryFirst`, the render kept for
    /// the job's variants (not serving the main output's sizes until `RenderCache.serveVariants()`), or nil.
    let cache: RenderCache?

    /// The image at `size` (stored orientation), upright. `sharp`: decoded with `ImageDecoder.renderSharp`
    /// (under `memoryFirst`; `cpuFirst` resamples the render it keeps, as for any size).
    func oriented(_ size: PixelSize, sharp: Bool = false, warnings: inout [String]) throws -> Bitmap {
        // Decode and resample: a fresh decode of the source, shrinking on load, its rows streamed into the
        // resampler (`ImageDecoder.render`); under `cpuFirst`, a resample of the render kept in memory.
        let bitmap: Bitmap
        if let cached = cache?.bitmap(covering: size, orientation: info.orientation) {
            if cached.upright {
                // Kept upright (`memoryFirst` with variants): resampled to the upright size, nothing to orient.
                let upright = info.orientation.swapsAxes ? size.transposed : size
                return try InMemoryResample.resize(cached.bitmap, to: upright, meter: meter)
            }
            bitmap = try InMemoryResample.resize(cached.bitmap, to: size, meter: meter)
        } else {
            meter.countDecode()
            let rendered =
                sharp && cache?.isServing != true
                ? try decoder.renderSharp(source, info: info, target: size, limits: limits, meter: meter)
                : try decoder.render(source, info: info, target: size, limits: limits, meter: meter)
            warnings += rendered.warnings
            bitmap = rendered.bitmap
            if cache?.keepsUpright != true { cache?.keep(bitmap) }
        }
        // Orient (the render is held in the meter while the upright copy is made).
        let upright = meter.holding(bitmap.byteCount) { bitmap.applying(info.orientation) }
        if let cache, cache.keepsUpright { cache.keepUpright(upright) }
        return upright
    }
}

/// A job's deadline: a checkpoint that throws `SharePipeError.timedOut` once it has passed. The pipeline
/// reaches its checkpoints between steps, between fitting attempts and every few rows, bands, tiles and frames
/// inside a step (through `PixelMemoryMeter`), so a job past its deadline stops within the longest stretch
/// between two of them: a fraction of a second, except inside a single call into a C decoder that has no row
/// callback (libheif's whole-image decode of a non-grid HEIF or AVIF).
struct JobDeadline: Sendable {
    /// The deadline's length, for the error.
    let seconds: Double
    /// When it passes.
    let instant: ContinuousClock.Instant

    init(seconds: Double, from start: ContinuousClock.Instant = .now) {
        self.seconds = seconds
        // Capped at about 31 years, so that no length the options take overflows the clock's milliseconds.
        self.instant = start + .milliseconds(Int64((min(seconds, 1_000_000_000) * 1000).rounded(.up)))
    }

    /// Throws `timedOut` naming `file` once the deadline has passed.
    func check(file: String) throws {
        if ContinuousClock.now >= instant { throw SharePipeError.timedOut(file: file, seconds: seconds) }
    }

    /// `checkpoint` followed by the deadline's check (and, in a debug build under
    /// `SHAREPIPE_DEBUG_FAULT=slow`, a pause), or `checkpoint` itself without a timeout.
    static func checkpoint(
        _ checkpoint: @escaping Pipeline.Checkpoint, timeout seconds: Double?,
        startedAt: ContinuousClock.Instant = .now, file: String
    ) -> Pipeline.Checkpoint {
        #if DEBUG
            let paced: Pipeline.Checkpoint =
                DebugFault.slow
                ? {
                    DebugFault.pause()
                    try checkpoint()
                } : checkpoint
        #else
            let paced = checkpoint
        #endif
        guard let seconds else { return paced }
        let deadline = JobDeadline(seconds: seconds, from: startedAt)
        return {
            try paced()
            try deadline.check(file: file)
        }
    }
}
