/// Every option of `PrepareOptions` in one table: how each surface names it (the library, the command line,
/// a profile file, an HTTP query), its type, the values it accepts, its default and its help. What reads or
/// checks options is derived from it: `PrepareOptions.checked()` runs each row's check in table order, the
/// profile reader decodes the rows' profile fields, the CLI takes its flag names and help from it, an
/// `InvalidOption` is named on any surface through it (`InvalidOption.message(on:)`), and
/// `PrepareOptions.applying(textValues:scope:)` parses query text by it.
///
/// Adding an option: a property on `PrepareOptions` (or `ImageLimits`, `AnimationLimits`), a row here (in
/// `all`, at the place its check should run), and, where the CLI gets a flag, an `@Option` in
/// `PipelineOptions` naming the row.
public enum OptionTable {
    /// The output's short-edge cap.
    public static let maxShortEdge = OptionSpec(
        "maxShortEdge", .integer(\.maxShortEdge), flag: "max-short-edge",
        profile: ("maxShortEdge", .integer(\.caps.shortEdge)),
        query: "max_short_edge", clientMaySet: true, valid: .atLeast(1, phrase: "a positive number of pixels"),
        help: "Largest short edge of the output in pixels; never enlarged.")
    /// The output's long-edge cap.
    public static let maxLongEdge = OptionSpec(
        "maxLongEdge", .optionalInteger(\.maxLongEdge), profile: ("maxLongEdge", .optionalInteger(\.caps.longEdge)),
        valid: .atLeastOption("maxShortEdge"), help: "Largest long edge of the output in pixels.")
    /// The output's area cap.
    public static let maxPixels = OptionSpec(
        "maxPixels", .optionalInteger(\.maxPixels), profile: ("maxPixels", .optionalInteger(\.caps.pixels)),
        valid: .atLeast(1, phrase: "a positive pixel count"), help: "Largest width × height of the output.")
    /// The still byte limit.
    public static let maxBytes = OptionSpec(
        "maxBytes", .optionalInteger(\.maxBytes), flag: "max-bytes",
        profile: ("maxStillBytes", .integer(\.maxStillBytes)),
        query: "max_bytes", clientMaySet: true,
        valid: .atLeast(1024, phrase: "at least 1024 bytes", atMost: OptionTable.byteLimitCeiling),
        help: "Largest output size in bytes.")
    /// The highest JPEG quality.
    public static let quality = OptionSpec(
        "quality", .quality(\.qualitySetting), flag: "quality", profile: ("maxQuality", .quality(\.qualitySetting)),
        query: "quality", clientMaySet: true, valid: .within(1...100),
        help: "Highest JPEG or WebP quality; the byte-limit search starts here. auto (or auto:SCORE): for each "
            + "size, the lowest JPEG or lossy WebP quality whose output scores at least SCORE (default 80) in "
            + "SSIMULACRA2 against the picture before encoding, under the byte limit. With a service, the "
            + "profile's: auto for every built-in one.")
    /// The lowest JPEG quality.
    public static let minQuality = OptionSpec(
        "minQuality", .integer(\.minQuality), flag: "min-quality", profile: ("minQuality", .integer(\.minQuality)),
        query: "min_quality", clientMaySet: true, valid: .fromOneUpToOption("quality"),
        help: "Lowest JPEG quality the byte-limit search may use before shrinking dimensions.")
    /// The dimension search's floor.
    public static let minShortEdge = OptionSpec(
        "minShortEdge", .integer(\.minShortEdge), valid: .atLeast(1, phrase: "a positive number of pixels"),
        help: "Smallest short edge the dimension search may go to.")
    /// `ImageLimits.maxDimension`.
    public static let limitsMaxDimension = OptionSpec(
        "limits.maxDimension", .integer(\.limits.maxDimension), flag: "max-dimension", query: "max_dimension",
        valid: .atLeast(1, phrase: "a positive limit"), help: "Refuse images wider or taller than this.")
    /// `ImageLimits.maxPixels`.
    public static let limitsMaxPixels = OptionSpec(
        "limits.maxPixels", .integer(\.limits.maxPixels), flag: "max-pixels", query: "max_pixels",
        valid: .atLeast(1, phrase: "a positive limit"),
        help: "Refuse images with more pixels than this (decompression bombs). Unset, 120 MP where the job holds a "
            + "full-resolution bitmap; an image its route streams (grid HEIC, JPEG shrunk on load, non-interlaced "
            + "PNG) may be larger, up to 1 GP, when its job is priced within --max-streamed-memory. "
            + "Set, it applies to every image as given.")
    /// `ImageLimits.maxFrames`.
    public static let limitsMaxFrames = OptionSpec(
        "limits.maxFrames", .integer(\.limits.maxFrames), flag: "max-frames", query: "max_frames",
        valid: .atLeast(1, phrase: "a positive limit"),
        help: "Refuse animations with more frames than this (checked on the header walk, before decoding).")
    /// `ImageLimits.maxTotalFramePixels`.
    public static let limitsMaxTotalFramePixels = OptionSpec(
        "limits.maxTotalFramePixels", .integer(\.limits.maxTotalFramePixels), flag: "max-frame-pixels",
        query: "max_frame_pixels", valid: .atLeast(1, phrase: "a positive limit"),
        help: "Refuse animations whose frames add up to more pixels than this (frames × width × height).")
    /// `ImageLimits.maxInputBytes`.
    public static let limitsMaxInputBytes = OptionSpec(
        "limits.maxInputBytes", .integer(\.limits.maxInputBytes), flag: "max-input-bytes", query: "max_input_bytes",
        valid: .atLeast(1, phrase: "a positive limit"),
        help: "Refuse input files larger than this many bytes, before reading them.")
    /// `ImageLimits.maxDecoderMemory`.
    public static let limitsMaxDecoderMemory = OptionSpec(
        "limits.maxDecoderMemory", .integer(\.limits.maxDecoderMemory), query: "max_decoder_memory",
        valid: .atLeast(1, phrase: "a positive limit"),
        help: "Largest memory libjpeg, libpng and libwebp may use for their own arrays, in bytes.")
    /// `ImageLimits.maxMetadataBytes`.
    public static let limitsMaxMetadataBytes = OptionSpec(
        "limits.maxMetadataBytes", .integer(\.limits.maxMetadataBytes), query: "max_metadata_bytes",
        valid: .atLeast(1, phrase: "a positive limit"),
        help: "Largest total of metadata read from an image's header, in bytes.")
    /// `ImageLimits.maxStreamedMemory`.
    public static let limitsMaxStreamedMemory = OptionSpec(
        "limits.maxStreamedMemory", .integer(\.limits.maxStreamedMemory), flag: "max-streamed-memory",
        query: "max_streamed_memory", valid: .atLeast(1, phrase: "a positive limit"),
        help: "Largest priced memory, in bytes, of a job whose image is over the default pixel limit (such an image "
            + "is taken only when its route streams it).")
    /// `ImageLimits.maxWorkPerInputByte`.
    public static let limitsMaxWorkPerInputByte = OptionSpec(
        "limits.maxWorkPerInputByte", .integer(\.limits.maxWorkPerInputByte), flag: "max-work-per-byte",
        query: "max_work_per_byte", valid: .atLeast(1, phrase: "a positive limit"),
        help: "Refuse, from the header, a job decoding over 64 MP (tiles, frames and passes counted) with more "
            + "pixels than this per byte of input: a small file declaring a huge image.")
    /// `ImageLimits.disabledFormats`.
    public static let limitsDisabledFormats = OptionSpec(
        "limits.disabledFormats", .families(\.limits.disabledFormats), flag: "disable", query: "disable",
        help: "Refuse inputs of these families, from their magic bytes, before any decoder library reads them: "
            + FormatFamily.allCases.map(\.rawValue).joined(separator: ", ")
            + " (png includes animated PNGs; heif keeps libheif and libde265 away, avif libavif and dav1d and "
            + "AV1-coded HEIFs). Comma-separated; none by default.")
    /// The output's width cap.
    public static let maxWidth = OptionSpec(
        "maxWidth", .optionalInteger(\.maxWidth), profile: ("maxWidth", .optionalInteger(\.caps.width)),
        valid: .atLeast(1, phrase: "a positive number"), help: "Largest output width in pixels.")
    /// The output's height cap.
    public static let maxHeight = OptionSpec(
        "maxHeight", .optionalInteger(\.maxHeight), profile: ("maxHeight", .optionalInteger(\.caps.height)),
        valid: .atLeast(1, phrase: "a positive number"), help: "Largest output height in pixels.")
    /// The output's width + height cap.
    public static let maxEdgeSum = OptionSpec(
        "maxEdgeSum", .optionalInteger(\.maxEdgeSum), profile: ("maxEdgeSum", .optionalInteger(\.caps.edgeSum)),
        valid: .atLeast(2, phrase: "at least 2 (a 1×1 image)"), help: "Largest output width + height in pixels.")
    /// `AnimationLimits.maxWidth`.
    public static let animationMaxWidth = OptionSpec(
        "animation.maxWidth", .optionalInteger(\.animation.maxWidth),
        profile: ("animated.maxWidth", .optionalInteger(\.animation.maxWidth)),
        valid: .atLeast(1, phrase: "a positive number"), help: "Largest width of an animated output in pixels.")
    /// `AnimationLimits.maxHeight`.
    public static let animationMaxHeight = OptionSpec(
        "animation.maxHeight", .optionalInteger(\.animation.maxHeight),
        profile: ("animated.maxHeight", .optionalInteger(\.animation.maxHeight)),
        valid: .atLeast(1, phrase: "a positive number"), help: "Largest height of an animated output in pixels.")
    /// `AnimationLimits.maxPixels`.
    public static let animationMaxPixels = OptionSpec(
        "animation.maxPixels", .optionalInteger(\.animation.maxPixels),
        profile: ("animated.maxPixels", .optionalInteger(\.animation.maxPixels)),
        valid: .atLeast(1, phrase: "a positive number"), help: "Largest width × height of an animated output.")
    /// `AnimationLimits.maxFrames`.
    public static let animationMaxFrames = OptionSpec(
        "animation.maxFrames", .optionalInteger(\.animation.maxFrames),
        profile: ("animated.maxFrames", .optionalInteger(\.animation.maxFrames)),
        valid: .atLeast(1, phrase: "a positive number"),
        help: "Largest number of frames of an animated output; more are decimated, keeping the total duration.")
    /// `AnimationLimits.maxTotalPixels`.
    public static let animationMaxTotalPixels = OptionSpec(
        "animation.maxTotalPixels", .optionalInteger(\.animation.maxTotalPixels),
        profile: ("animated.maxTotalPixels", .optionalInteger(\.animation.maxTotalPixels)),
        valid: .atLeast(1, phrase: "a positive number"),
        help: "Largest width × height × frames of an animated output; over it the size shrinks or frames are decimated."
    )
    /// `AnimationLimits.maxBytes`.
    public static let animationMaxBytes = OptionSpec(
        "animation.maxBytes", .optionalInteger(\.animation.maxBytes),
        profile: ("animated.maxBytes", .optionalInteger(\.animation.maxBytes)),
        valid: .atLeast(1024, phrase: "at least 1024 bytes", atMost: OptionTable.byteLimitCeiling),
        help: "Byte limit of an animated output; none means the still limit.")
    /// `AnimationLimits.allowed`.
    public static let animationAllowed = OptionSpec(
        "animation.allowed", .boolean(\.animation.allowed),
        profile: ("animated.allowed", .boolean(\.animation.allowed)),
        help: "Whether the destination shows animations; when false an animation becomes a still of its first frame.")
    // MARK: Animation as video

    /// `PrepareOptions.animationOutput`.
    public static let animationOutput = OptionSpec(
        "animationOutput", .animationOutput(\.animationOutput), flag: "animation",
        profile: ("animation", .animationOutput(\.animationOutput)), query: "animation", clientMaySet: true,
        help: "How an animation is written: gif (an animated GIF where accepted), video (an H.264 MP4 within the "
            + "video limits, for services that show animation only as video) or still (the first frame).")
    /// `VideoLimits.maxBytes`.
    public static let videoMaxBytes = OptionSpec(
        "video.maxBytes", .optionalInteger(\.video.maxBytes),
        profile: ("video.maxBytes", .optionalInteger(\.video.maxBytes)),
        valid: .atLeast(1024, phrase: "at least 1024 bytes", atMost: OptionTable.byteLimitCeiling),
        help: "Byte limit of an animation written as video; none means the animated limit.")
    /// `VideoLimits.maxDurationMilliseconds`.
    public static let videoMaxDuration = OptionSpec(
        "video.maxDurationMilliseconds", .optionalInteger(\.video.maxDurationMilliseconds),
        profile: ("video.maxDurationMilliseconds", .optionalInteger(\.video.maxDurationMilliseconds)),
        valid: .atLeast(100, phrase: "at least 100 milliseconds"),
        help: "Longest video in milliseconds; a longer animation is cut there.")
    /// `VideoLimits.minDurationMilliseconds`.
    public static let videoMinDuration = OptionSpec(
        "video.minDurationMilliseconds", .optionalInteger(\.video.minDurationMilliseconds),
        profile: ("video.minDurationMilliseconds", .optionalInteger(\.video.minDurationMilliseconds)),
        valid: .within(1...3_600_000),
        help: "Shortest video in milliseconds (at most an hour); a shorter animation is played several times in a row.")
    /// `VideoLimits.maxWidth`.
    public static let videoMaxWidth = OptionSpec(
        "video.maxWidth", .optionalInteger(\.video.maxWidth),
        profile: ("video.maxWidth", .optionalInteger(\.video.maxWidth)),
        valid: .atLeast(16, phrase: "at least 16 pixels"), help: "Largest width of a video in pixels.")
    /// `VideoLimits.maxHeight`.
    public static let videoMaxHeight = OptionSpec(
        "video.maxHeight", .optionalInteger(\.video.maxHeight),
        profile: ("video.maxHeight", .optionalInteger(\.video.maxHeight)),
        valid: .atLeast(16, phrase: "at least 16 pixels"), help: "Largest height of a video in pixels.")
    /// `VideoLimits.maxPixels`.
    public static let videoMaxPixels = OptionSpec(
        "video.maxPixels", .optionalInteger(\.video.maxPixels),
        profile: ("video.maxPixels", .optionalInteger(\.video.maxPixels)),
        valid: .atLeast(256, phrase: "at least 256 (16×16)"), help: "Largest width × height of a video.")
    /// `VideoLimits.maxFrameRate`.
    public static let videoMaxFrameRate = OptionSpec(
        "video.maxFrameRate", .optionalInteger(\.video.maxFrameRate),
        profile: ("video.maxFrameRate", .optionalInteger(\.video.maxFrameRate)),
        valid: .within(1...1000),
        help: "Highest frame rate of a video; a shorter frame is dropped, its time given to the frame before it.")
    /// `VideoLimits.minFrameRate`.
    public static let videoMinFrameRate = OptionSpec(
        "video.minFrameRate", .optionalInteger(\.video.minFrameRate),
        profile: ("video.minFrameRate", .optionalInteger(\.video.minFrameRate)),
        valid: .withinAndUpToOption(1...120, "video.maxFrameRate"),
        help: "Lowest frame rate of a video; a longer frame is shown as several samples of the same picture.")
    /// `VideoLimits.loops`.
    public static let videoLoops = OptionSpec(
        "video.loops", .boolean(\.video.loops), profile: ("video.loops", .boolean(\.video.loops)),
        help: "Whether the service plays a short video in a loop (said in the report: MP4 stores no loop count).")
    /// `VideoLimits.background`.
    public static let videoBackground = OptionSpec(
        "video.background", .integer(\.video.background), profile: ("video.background", .integer(\.video.background)),
        valid: .within(0...0xFF_FFFF),
        help: "The colour (0xRRGGBB as a number) transparent pixels are composited on in a video; white by default.")

    /// The accepted output formats.
    public static let acceptedFormats = OptionSpec(
        "acceptedFormats", .formats(\.acceptedFormats), profile: ("formats", .formatList(\.formats)),
        valid: .nonEmpty(phrase: "at least one format"),
        help: "Output formats the destination accepts (none: all); others are converted.")
    /// Whether a PNG may become a JPEG.
    public static let allowFormatChange = OptionSpec(
        "allowFormatChange", .boolean(\.allowFormatChange),
        profile: ("allowFormatChange", .boolean(\.allowFormatChange)),
        help: "Whether a PNG without meaningful alpha may become a JPEG to meet the byte limit.")
    /// The metadata mode.
    public static let strip = OptionSpec(
        "strip", .strip(\.strip), flag: "strip", profile: ("strip", .strip(\.strip)), query: "strip",
        clientMaySet: true,
        help:
            "Metadata to remove: all (keep only the colour profile; the default), gps (keep Exif without location), none."
    )
    /// Progressive JPEG output.
    public static let progressive = OptionSpec(
        "progressive", .boolean(\.progressive), flag: "progressive", query: "progressive", clientMaySet: true,
        help: "Write progressive JPEGs.")
    /// The fitting search's memory/CPU trade-off.
    public static let strategy = OptionSpec(
        "strategy", .strategy(\.strategy), flag: "strategy", query: "strategy",
        help: "memoryFirst (re-decode for each size) or cpuFirst (keep the first decode).")

    /// The job's deadline.
    public static let timeout = OptionSpec(
        "timeout", .optionalInteger(\.timeout), flag: "timeout",
        valid: .atLeast(1, phrase: "a positive number of seconds"),
        help: "Stop a file's job after this many seconds (timedOut; the batch goes on with the next file).")

    /// The placeholder's BlurHash components across.
    public static let blurHashXComponents = OptionSpec(
        "blurHashXComponents", .integer(\.blurHashXComponents), flag: "blurhash-x", query: "blurhash_x",
        clientMaySet: true, valid: .within(1...9),
        help: "BlurHash components across, 1 to 9 (the placeholder in the report, beside a ThumbHash).")
    /// The placeholder's BlurHash components down.
    public static let blurHashYComponents = OptionSpec(
        "blurHashYComponents", .integer(\.blurHashYComponents), flag: "blurhash-y", query: "blurhash_y",
        clientMaySet: true, valid: .within(1...9),
        help: "BlurHash components down, 1 to 9 (the placeholder in the report, beside a ThumbHash).")

    /// The named variants prepared beside the main output (`OutputVariant`): asked for by name, declared by the
    /// profile (a profile file's `variants` field declares them).
    public static let variants = OptionSpec(
        "variants", .names(\.variants), flag: "variant", profile: ("variants", .variantDeclarations(\.variants)),
        query: "variant", clientMaySet: true, valid: .declaredVariants,
        help: "A named variant the service profile declares (mastodon: small, at most 640×360 px), prepared from the "
            + "same decode and written beside the main output (IMG_1.small.jpg); repeat for several. None by "
            + "default. A profile file declares variants under `variants`: name, maxPixels, maxLongEdge, format, "
            + "quality, progressive.")
    /// The crop to a ratio around the focal point.
    public static let cropTo = OptionSpec(
        "cropTo", .aspectRatio(\.cropTo), flag: "crop-to", profile: ("cropTo", .aspectRatio(\.cropTo)),
        query: "crop_to", clientMaySet: true, valid: .aspectRatio,
        help: "Crop the output to this width:height ratio (1:1, 4:5) around the focal point rather than the centre; "
            + "stills only (an animation is refused). None by default.")

    /// The largest byte limit accepted (1 TiB): far above any output, and low enough that the memory
    /// estimate's multiples of it (an animation's output buffer: 4 × the limit, doubled) cannot overflow.
    public static let byteLimitCeiling = 1 << 40

    /// Every option, in the order `PrepareOptions.checked()` checks them (the first invalid one is reported).
    public static let all: [OptionSpec] = [
        maxShortEdge, maxLongEdge, maxPixels, maxBytes, quality, minQuality, minShortEdge,
        limitsMaxDimension, limitsMaxPixels, limitsMaxFrames, limitsMaxTotalFramePixels, limitsMaxInputBytes,
        limitsMaxDecoderMemory, limitsMaxMetadataBytes, limitsMaxStreamedMemory, limitsMaxWorkPerInputByte,
        limitsDisabledFormats,
        maxWidth, maxHeight, maxEdgeSum,
        animationMaxWidth, animationMaxHeight, animationMaxPixels, animationMaxFrames, animationMaxTotalPixels,
        animationMaxBytes, animationAllowed,
        animationOutput, videoMaxBytes, videoMaxDuration, videoMinDuration, videoMaxWidth, videoMaxHeight,
        videoMaxPixels, videoMaxFrameRate, videoMinFrameRate, videoLoops, videoBackground,
        acceptedFormats, allowFormatChange, strip, progressive, strategy, timeout,
        blurHashXComponents, blurHashYComponents, variants, cropTo,
    ]

    /// The row of the option `PrepareOptions` spells `name` (`minQuality`, `limits.maxPixels`).
    public static func option(named name: String) -> OptionSpec? { byName[name] }

    /// The row whose HTTP query name is `queryName` (`max_bytes`).
    public static func option(queryName: String) -> OptionSpec? { byQueryName[queryName] }

    /// How `surface` names the option `PrepareOptions` spells `name`; an option the surface cannot set is
    /// named as the nearest surface that can (see `OptionSurface`), else by its library name, in backquotes.
    public static func displayName(of name: String, on surface: OptionSurface) -> String {
        guard let spec = byName[name] else { return "`\(name)`" }
        return spec.displayName(on: surface)
    }

    private static let byName = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
    private static let byQueryName = Dictionary(
        uniqueKeysWithValues: all.compactMap { spec in spec.queryName.map { ($0, spec) } })
}
