/// Every decision about one job that can be made from the header and the options, made once.
///
/// A pure value: a function of the probe (`ImageInfo`), the options and, where the input format has one,
/// the quality of the source's own encoding. `Pipeline.prepare` executes it; `MemoryEstimate` prices the
/// same value, so the two can never disagree about the route, the size or the metadata.
struct PreparePlan: Sendable, Equatable {
    /// Which way the job goes.
    enum Route: Sendable, Equatable {
        /// The pixels need nothing: copy the image data and rewrite only the metadata. When the copy is
        /// over the byte limit (or the rewriter declines the file) the job continues on the still route
        /// with the same plan. (An animation that needs nothing stays on `.animation`, with
        /// `metadataCopyFirst`.)
        case metadataRewrite
        /// The pixels need only their orientation applied, and the format can turn its image data without
        /// decoding it (a JPEG's DCT blocks): turn it and write the kept metadata. When a perfect turn is
        /// impossible, or the turned file is over the byte limit, the job continues on the still route with
        /// the same plan (and says why).
        case losslessTurn
        /// Decode (shrinking on load), resample, orient and encode one picture within the byte limit.
        case still
        /// Keep the animation: every frame resampled to the target and written as an animated GIF within
        /// the byte limit.
        case animation
    }

    var route: Route
    var inputFormat: ImageFormat
    var outputFormat: ImageFormat
    /// The first size the fitting tries: stored orientation for stills, the oriented canvas for animations.
    var target: PixelSize
    /// The orientation applied to the pixels (always `.up` for metadata rewrites; an animation's frames are
    /// oriented one by one, before resampling).
    var orientation: Orientation
    /// The byte limit the output must meet (the animated one on the animation route).
    var byteLimit: Int?
    /// What survives of the input's metadata, decided by the input format's policy for the strip mode.
    /// The metadata-only rewrite writes exactly this.
    var metadata: MetadataOutcome
    /// `metadata` as a re-encoded output in `outputFormat` holds it (blocks it cannot write are removed).
    var writtenMetadata: MetadataOutcome
    /// How the output is fitted under `byteLimit`.
    var ladder: FittingLadder
    /// Changes the user did not ask for that are known before any pixel is read, in report order.
    var adjustments: [String]
    /// On the animation route: the input is an animation in the output format that needs no resize and
    /// no frame change, so its metadata-only copy is tried first (the animation is written anew only when
    /// the rewriter declines it or the copy is over the byte limit).
    var metadataCopyFirst = false
    /// A JPEG output whose byte limit bites is rendered again sharp (`QualityLadder`, `ImageDecoder.renderSharp`):
    /// under `memoryFirst` (`cpuFirst` resamples the render it keeps) and for an image within the pixel limit
    /// (a larger one is taken on its streamed cost, which prices the plain render).
    var sharpRenderWhenCapped = false
    /// The ladder searches quality in the input's own format, so the source's quality would cap it: only then
    /// is it worth reading (`Pipeline` reads it and calls `capQuality(atSource:options:)`).
    private(set) var capsAtSourceQuality = false
    /// The source's own quality as saved (`SourceQuality.saved`: a JPEG's Annex K estimate) where the auto
    /// quality search of a JPEG output guesses from it (`QualityLadder.autoGuess`); read by `Pipeline` when
    /// `guessesFromSourceQuality`.
    var sourceQualityForGuess: Int? = nil
    /// Whether the ladder is the auto quality search of a JPEG output from an input in the same format, whose
    /// own quality is then its first guess's hint.
    var guessesFromSourceQuality: Bool {
        guard case .quality = ladder, route == .still else { return false }
        return outputFormat == .jpeg && inputFormat == .jpeg && !capsAtSourceQuality
    }
    /// The BlurHash's components (`PrepareOptions.blurHashXComponents`, `blurHashYComponents`).
    var blurHashComponents = BlurHashComponents(x: 4, y: 4)
    /// The still's crop to `PrepareOptions.cropTo` around the focal point, nil when none was asked for or the
    /// image already has the ratio. With a crop, `target` is the window's output size and the route is `.still`.
    var crop: CropPlan? = nil

    /// The size the still route renders the whole picture at for `target` (stored orientation): `target` itself,
    /// or with a crop the whole picture at the scale that gives the window `target` (`CropPlan.renderSize`).
    var renderTarget: PixelSize { renderSize(forOutput: target) }

    /// `renderTarget` for an output of `output` (stored orientation).
    func renderSize(forOutput output: PixelSize) -> PixelSize {
        guard let crop else { return output }
        let swaps = orientation.swapsAxes
        let render = crop.renderSize(forOutput: swaps ? output.transposed : output)
        return swaps ? render.transposed : render
    }

    /// Plans preparing an input with `info` under `options`. `sourceQuality` is the input's own encoding
    /// quality (JPEG, WebP), whose ceiling caps the quality search when the output keeps the input's format.
    init(info: ImageInfo, options: PrepareOptions.Checked, sourceQuality: SourceQuality? = nil) {
        let input = FormatRegistry.descriptor(for: info.format)
        let decided = input.metadataPolicy.outcome(for: info, mode: options.strip)
        inputFormat = info.format
        metadata = decided
        adjustments = []
        blurHashComponents = BlurHashComponents(x: options.blurHashXComponents, y: options.blurHashYComponents)

        let animatedInput = info.frameCount > 1 && input.animation != nil
        let animationOutput = options.animation.allowed ? options.animationOutput : .still
        if animatedInput && animationOutput == .video {
            // The video route (`VideoRoute`): the animation written as an H.264 MP4 within the video limits.
            route = .animation
            outputFormat = VideoRoute.outputFormat
            orientation = info.orientation
            byteLimit = options.videoMaxBytes
            writtenMetadata = FormatRegistry.descriptor(for: outputFormat).writableMetadata(decided, info.metadataKinds)
            let size = VideoRoute.initialSize(canvas: info.orientedSize, options: options)
            target = size
            ladder = .video(
                initial: VideoPlan(size: size, quantizer: VideoRoute.quantizers[0]), minShortEdge: options.minShortEdge)
            // The service takes GIF, so video was asked for; otherwise the service's own rule chose it.
            let why =
                options.accepts(.gif) ? "animation written as video" : "the service shows animation only as video"
            adjustments.append("animated \(info.format.displayName) → MP4 (\(why))")
            adjustments += info.probeAdjustments
            let capped = ScalePlan.targetSize(for: info.orientedSize, caps: options.videoSizeCaps)
            if size != capped {
                adjustments.append(
                    "\(size.area > capped.area ? "enlarged" : "resized") to \(size) (caps allow \(capped)): H.264 "
                        + "4:2:0 needs even edges, OpenH264 at least \(VideoRoute.smallestEdge) pixels and at most "
                        + "\(VideoRoute.largestEdge)")
            }
            adjustments += copyOnlyNotes
            return
        }
        let animated =
            animatedInput && animationOutput == .gif && options.accepts(AnimationRoute.outputFormat)
        if animated {
            route = .animation
            outputFormat = AnimationRoute.outputFormat
            // Each canvas is oriented before it is resampled (an APNG's Exif orientation; GIF has none).
            orientation = info.orientation
            byteLimit = options.animatedMaxBytes
            writtenMetadata = FormatRegistry.descriptor(for: outputFormat).writableMetadata(decided, info.metadataKinds)
            let capped = ScalePlan.targetSize(for: info.orientedSize, caps: options.animatedSizeCaps)
            let initial = AnimationRoute.initialPlan(
                canvas: info.orientedSize, frameCount: info.frameCount, options: options)
            target = initial.size
            ladder = .animation(
                initial: initial, frameCount: info.frameCount,
                dimensionFloor: min(initial.size.shortEdge, max(options.minShortEdge, initial.size.shortEdge / 2)),
                minShortEdge: options.minShortEdge)
            if info.format != outputFormat {
                adjustments.append("\(info.format.displayName) → \(outputFormat.displayName) (animation)")
            }
            adjustments += info.probeAdjustments
            if initial.size != capped {
                adjustments.append(
                    "reduced to \(initial.size) (caps allow \(capped)) for the animation's total pixel limit")
            }
            metadataCopyFirst =
                info.format == outputFormat && input.metadataRewriter != nil
                && initial == AnimatedGIFPlan(size: info.size, colorBudget: nil, keepEvery: 1)
            if !metadataCopyFirst { adjustments += copyOnlyNotes }
            return
        }

        outputFormat = options.outputFormat(for: input.writtenAs?(info) ?? info.format, hasAlpha: info.hasAlpha)
        let output = FormatRegistry.descriptor(for: outputFormat)
        orientation = info.orientation
        byteLimit = options.maxBytes
        sharpRenderWhenCapped =
            options.maxBytes != nil && outputFormat == .jpeg && options.strategy == .memoryFirst
            && info.size.area <= options.limits.maxPixels
        writtenMetadata = output.writableMetadata(decided, info.metadataKinds)
        // Caps apply to the image as displayed; decoding works in stored orientation.
        var displayed = ScalePlan.targetSize(for: info.orientedSize, caps: options.sizeCaps)
        if let ratio = options.cropTo {
            let crop = CropPlan(ratio: ratio, image: info.orientedSize)
            if !crop.keepsWholeImage {
                self.crop = crop
                displayed = crop.exactOutput(near: ScalePlan.targetSize(for: crop.window, caps: options.sizeCaps))
            }
        }
        target = info.orientation.swapsAxes ? displayed.transposed : displayed

        if info.frameCount > 1 {
            let why =
                !options.animation.allowed
                ? "the service shows no animation"
                : animationOutput == .still
                    ? "animations written as stills" : "animated \(outputFormat.displayName) not accepted"
            adjustments.append("first frame only (of \(info.frameCount); \(why))")
        }
        if outputFormat != info.format {
            adjustments.append("\(info.format.displayName) → \(outputFormat.displayName) (accepted formats)")
        }
        adjustments += info.probeAdjustments
        switch (outputFormat == info.format ? output.sameFormatFitting?(info) : nil) ?? output.fitting {
        case .losslessFirst:
            ladder = .losslessFirst(range: options.minQuality...options.quality, minShortEdge: options.minShortEdge)
        case .qualitySearch:
            // Never spend more quality than the source had: a q73 photo saved at q85 grows for nothing.
            // (`capQuality(atSource:options:)` below, once the source's quality is known: the lowest quality
            // whose tables are as fine as the source's, `SourceQuality.ceiling`.)
            // Under `--quality auto` the target decides instead: scored against the render, a re-encode at the
            // source's own quality loses again what the source had kept (a q73 photo re-encoded at q73 scores
            // about 74), so the search may go above it.
            capsAtSourceQuality = outputFormat == info.format && options.qualityTarget == nil
            ladder = .quality(
                range: options.minQuality...max(options.minQuality, options.qualityCeiling),
                sourceQualityCap: nil, minShortEdge: options.minShortEdge)
        case .lossless(let efforts, let strongest):
            let jpeg = FormatRegistry.descriptor(for: .jpeg)
            let change =
                options.allowFormatChange
                ? FormatChange(
                    format: .jpeg, range: options.minQuality...options.quality,
                    metadata: jpeg.writableMetadata(decided, info.metadataKinds))
                : nil
            ladder = .lossless(
                efforts: efforts, strongest: strongest, formatChange: change, minShortEdge: options.minShortEdge)
        }

        let samePixels =
            target == info.size && info.colorModel != .cmyk && info.colorModel != .ycck
            && info.frameCount == 1 && outputFormat == info.format && info.storedImageIsShown && crop == nil
        if samePixels && info.orientation == .up && input.metadataRewriter != nil {
            route = .metadataRewrite
        } else if samePixels && info.orientation != .up && input.losslessTurn != nil {
            route = .losslessTurn
        } else {
            route = .still
        }
        if route != .metadataRewrite { adjustments += copyOnlyNotes }
        if let sourceQuality { capQuality(atSource: sourceQuality, options: options) }
    }

    /// Said when blocks the strip mode keeps (`none`) cannot go into an output whose image data changes (see
    /// `MetadataOutcome.writableAfterReencoding`): content credentials, an embedded video. Empty when none are
    /// kept. The routes that copy the image data add them when they fall back to re-encoding.
    var copyOnlyNotes: [String] {
        var notes: [String] = []
        for block in metadata.kept {
            switch block {
            case .embeddedVideo:
                // What the video held is in the removed list's entry (`PreparedImage.embeddedVideo`).
                notes.append("embedded video removed: only a metadata-only copy of a JPEG keeps it")
            case _ where block.kind == .contentCredentials && !notes.contains(Self.contentCredentialsNote):
                notes.append(Self.contentCredentialsNote)
            default:
                break
            }
        }
        return notes
    }

    static let contentCredentialsNote =
        "content credentials removed (the image data changed, so their signature would no longer match)"

    /// Lowers the quality search's ceiling to `quality.ceiling`, the lowest quality on SharePipe's scale as fine
    /// as the source (reported with the range, `SourceQuality.capNote`), where the ladder keeps the input's
    /// format (`capsAtSourceQuality`) and that ceiling is below `options.qualityCeiling`; otherwise nothing
    /// changes. The plan is built once and the source read only when this can apply.
    mutating func capQuality(atSource quality: SourceQuality, options: PrepareOptions.Checked) {
        guard capsAtSourceQuality, case .quality(_, _, let minShortEdge) = ladder,
            quality.ceiling < options.qualityCeiling
        else {
            return
        }
        ladder = .quality(
            range: options.minQuality...max(options.minQuality, quality.ceiling), sourceQualityCap: quality,
            minShortEdge: minShortEdge)
    }
}

/// One job as planned from its header: the probe, the checked options and the plan made from them, once.
/// `SharePipeline` prices this value for its reservation (`estimate(input:)`) and runs the same value
/// (`Pipeline.prepare(_:job:checkpoint:cache:)`); the CLI and the library plan and run in one call.
struct PlannedJob: Sendable {
    var info: ImageInfo
    var options: PrepareOptions.Checked
    var plan: PreparePlan

    /// The plan priced, with its input in memory or read from a file.
    func estimate(input: InputResidence) -> MemoryEstimate {
        MemoryEstimate(plan: plan, info: info, options: options, input: input)
    }
}

/// How an output is fitted under the byte limit: the steps, with the options' numbers filled in.
enum FittingLadder: Sendable, Equatable {
    /// At each size: the quality range searched for the highest fitting quality; then a smaller size, by
    /// about sqrt(limit / bytes), down to `minShortEdge`.
    /// `sourceQualityCap` is the source's own quality where its ceiling lowered the range's (reported).
    case quality(range: ClosedRange<Int>, sourceQualityCap: SourceQuality?, minShortEdge: Int)
    /// At each size: the lossless efforts in order (after the first size only the strongest); then, once
    /// an opaque image cannot fit losslessly and `formatChange` allows it, a quality search in that
    /// format (kept for every smaller size); then a smaller size, down to `minShortEdge`.
    case lossless(efforts: [Int], strongest: Int, formatChange: FormatChange?, minShortEdge: Int)
    /// At each size: one lossless encode; over the limit, the quality range searched in the same format
    /// (kept for every smaller size); then a smaller size, down to `minShortEdge`.
    case losslessFirst(range: ClosedRange<Int>, minShortEdge: Int)
    /// From the initial plan: smaller dimensions down to `dimensionFloor`, fewer colours, frame
    /// decimation, then smaller dimensions down to `minShortEdge`.
    case animation(initial: AnimatedGIFPlan, frameCount: Int, dimensionFloor: Int, minShortEdge: Int)
    /// From the initial plan: a higher H.264 quantiser, then smaller dimensions down to `minShortEdge`
    /// (`VideoLadder`).
    case video(initial: VideoPlan, minShortEdge: Int)
}

/// A lossless ladder's last resort before shrinking: a lossy format, searched over a quality range.
struct FormatChange: Sendable, Equatable {
    var format: ImageFormat
    var range: ClosedRange<Int>
    /// The kept metadata as the changed format holds it.
    var metadata: MetadataOutcome
}

extension PrepareOptions.Checked {
    /// Whether the destination accepts `format` as it is.
    func accepts(_ format: ImageFormat) -> Bool { options.acceptedFormats.map { $0.contains(format) } ?? true }
}

extension ImageFormat {
    /// The name used in reports ("JPEG", "PNG", "GIF").
    var displayName: String { rawValue.uppercased() }
}
