/// A service's rules for images, as data: byte limits, size caps, formats, defaults.
///
/// Built-in profiles carry the numbers gathered 2026-11 (revised 2026-11-26) from each service's public
/// documentation and source (see `source` and `confidence` on each, and each profile's doc comment for where
/// every number comes from); a user profile file can override any of them.
public struct ServiceProfile: Sendable, Equatable, Codable {
    /// Short name used on the command line ("x", "weibo").
    public var name: String
    /// Human-readable name.
    public var displayName: String
    /// Byte limit for still images (and single-frame GIFs).
    public var maxStillBytes: Int
    /// Size caps for stills: short edge (SharePipe's rule: 1080 unless the profile says otherwise), long
    /// edge, width, height, area, width + height.
    public var caps: SizeCaps
    /// Limits for animated GIFs; `animation.allowed == false` when the service shows no animation.
    public var animation: AnimationLimits
    /// How an animation is posted: `gif` where the service takes animated GIFs, `video` where it shows animation
    /// only as video (an H.264 MP4 within `video`), `still` where it shows none.
    public var animationOutput: AnimationOutput
    /// The service's video limits (bytes, duration, size, frame rate), for animations written as video.
    public var video: VideoLimits
    /// Formats the service accepts. Formats SharePipe only reads (HEIF, AVIF) are listed where the service
    /// takes them, but an output is never written in them (`options(basedOn:)` leaves them out).
    public var formats: [ImageFormat]
    /// Whether SharePipe may change format to meet the limits (PNG without alpha → JPEG).
    public var allowFormatChange: Bool
    /// Default metadata mode for this service.
    public var strip: StripMode
    /// JPEG quality range of the byte search: the floor, and the ceiling where the quality is fixed
    /// (`qualityTarget` nil).
    public var minQuality: Int
    /// Setting it fixes the quality: it clears `qualityTarget`.
    public var maxQuality: Int { didSet { qualityTarget = nil } }
    /// The SSIMULACRA2 score the quality search aims at (`qualitySetting`: `maxQuality: "auto"`), or nil for the
    /// fixed `maxQuality`. Every built-in profile aims at `QualitySetting.defaultTarget` (80): each photo gets
    /// the lowest quality that scores it, the byte limit staying a hard cap.
    public var qualityTarget: Double?
    /// Where the numbers come from, and how sure we are.
    public var source: String
    public var confidence: String
    /// The named variants the service makes of an upload (`OutputVariant`), prepared only when asked for.
    public var variants: [OutputVariant] = []
    /// The ratio the service's feed shows (`PrepareOptions.cropTo`), nil for none (the default).
    public var cropTo: AspectRatio? = nil

    public init(
        name: String, displayName: String, maxStillBytes: Int, caps: SizeCaps = SizeCaps(shortEdge: 1080),
        animation: AnimationLimits = AnimationLimits(), animationOutput: AnimationOutput = .gif,
        video: VideoLimits = VideoLimits(), formats: [ImageFormat] = [.jpeg, .png, .gif],
        allowFormatChange: Bool = true, strip: StripMode = .all, minQuality: Int = 40, maxQuality: Int = 85,
        qualityTarget: Double? = QualitySetting.defaultTarget, source: String, confidence: String,
        variants: [OutputVariant] = []
    ) {
        self.name = name
        self.displayName = displayName
        self.maxStillBytes = maxStillBytes
        self.caps = caps
        self.animation = animation
        self.animationOutput = animationOutput
        self.video = video
        self.formats = formats
        self.allowFormatChange = allowFormatChange
        self.strip = strip
        self.minQuality = minQuality
        self.maxQuality = maxQuality
        self.qualityTarget = qualityTarget
        self.source = source
        self.confidence = confidence
        self.variants = variants
    }

    /// Options meeting this service's rules, starting from `base` for everything a profile does not
    /// decide (limits, strategy, progressive).
    public func options(basedOn base: PrepareOptions = PrepareOptions()) -> PrepareOptions {
        var options = base
        options.maxShortEdge = caps.shortEdge
        options.maxLongEdge = caps.longEdge
        options.maxWidth = caps.width
        options.maxHeight = caps.height
        options.maxPixels = caps.pixels
        options.maxEdgeSum = caps.edgeSum
        options.maxBytes = maxStillBytes
        options.animation = animation
        options.animationOutput = animationOutput
        options.video = video
        options.allowFormatChange = allowFormatChange
        // Only the formats SharePipe writes: a HEIC for a service that takes HEIC is still written as JPEG.
        let writable = formats.filter { FormatRegistry.descriptor(for: $0).writtenAs == nil }
        options.acceptedFormats = writable.isEmpty ? formats : writable
        options.strip = strip
        options.quality = maxQuality
        options.qualityTarget = qualityTarget
        options.minQuality = minQuality
        options.declaredVariants = variants
        if let cropTo { options.cropTo = cropTo }
        return options
    }
}

extension ServiceProfile {
    /// X/Twitter. Stills ≤ 5 MB, animated GIF ≤ 15 MB (X developer docs, media best practices: "Image
    /// size <= 5 MB, animated GIF size <= 15 MB"; MB taken as 10^6, the safe reading). GIF ≤ 1280×1080,
    /// ≤ 350 frames, width × height × frames ≤ 300 M; stills ≤ 8192×8192. Formats JPEG, PNG, GIF, WebP.
    /// Animations stay GIFs (X turns them into MP4 itself). Video, where asked for (`--animation video`): ≤ 512 MB,
    /// 0.5–140 s, ≤ 1920×1200, ≤ 40 fps (the same page, "Video"); X plays short videos in a loop.
    public static let x = ServiceProfile(
        name: "x", displayName: "X/Twitter", maxStillBytes: 5_000_000,
        caps: SizeCaps(shortEdge: 1080, width: 8192, height: 8192),
        animation: AnimationLimits(
            maxBytes: 15_000_000, maxWidth: 1280, maxHeight: 1080, maxFrames: 350,
            maxTotalPixels: 300_000_000),
        video: VideoLimits(
            maxBytes: 512_000_000, maxDurationMilliseconds: 140_000, minDurationMilliseconds: 500, maxWidth: 1920,
            maxHeight: 1200, maxFrameRate: 40, loops: true),
        formats: [.jpeg, .png, .gif, .webp],
        source: "X developer docs, media best practices", confidence: "high (bytes), medium (caps)")

    /// Weibo: "< 5M" (open API statuses/upload_pic), short edge 1080 (the original app's rule). No
    /// separate animated limit is stated: 5 MB for animations too.
    public static let weibo = ServiceProfile(
        name: "weibo", displayName: "Weibo", maxStillBytes: 5_000_000,
        animation: AnimationLimits(maxBytes: 5_000_000),
        source: "Weibo open API statuses/upload_pic", confidence: "medium")

    /// Mastodon 4.x defaults: 16 MiB for images and GIFs (app/models/media_attachment.rb
    /// IMAGE_LIMIT); stills are scaled by the server to ≤ 8,294,400 px (we do it first); GIFs above
    /// 921,600 px (1280×720) are refused. Formats: IMAGE_MIME_TYPES, which also lists HEIC, HEIF and AVIF
    /// (the server converts them to JPEG); SharePipe writes those as JPEG or PNG itself. Animations stay GIFs: the
    /// server converts GIF and APNG to H.264 MP4 itself. Video, where asked for: VIDEO_LIMIT 99 MiB,
    /// MAX_VIDEO_MATRIX_LIMIT 8,294,400 px, MAX_VIDEO_FRAME_RATE 120 (app/models/media_attachment.rb).
    ///
    /// Variant `small`, the preview Mastodon stores beside the image (`IMAGE_STYLES[:small]`, `pixels:
    /// 230_400`, "640x360px"): at most 230,400 px, aspect kept, never enlarged (lib/paperclip/lazy_thumbnail.rb
    /// `PixelGeometryParser`: width √(230400 · w/h), height √(230400 · h/w)); in the image's own format (HEIC,
    /// HEIF and AVIF as JPEG, `IMAGE_CONVERTED_STYLES`); a JPEG at quality 90, interlaced (`save_options`:
    /// `Q: 90, interlace: true`).
    public static let mastodon = ServiceProfile(
        name: "mastodon", displayName: "Mastodon", maxStillBytes: 16_777_216,
        caps: SizeCaps(shortEdge: 1080, pixels: 8_294_400),
        animation: AnimationLimits(maxBytes: 16_777_216, maxPixels: 921_600),
        video: VideoLimits(maxBytes: 103_809_024, maxPixels: 8_294_400, maxFrameRate: 120),
        formats: [.jpeg, .png, .gif, .webp, .heif, .avif],
        source: "mastodon app/models/media_attachment.rb, instance API", confidence: "high",
        variants: [OutputVariant(name: "small", maxPixels: 230_400, quality: 90, progressive: true)])

    /// Bluesky: blobs ≤ 2,000,000 bytes, decimal (atproto lexicon app.bsky.embed.images, bsky-docs PR 414;
    /// was 1,000,000 until 2026-04). The official app resizes to 4000 px on the long edge since 2026-03
    /// (social-app PR 10073; it was 2000). Image embeds never animate: the app posts a GIF through its video
    /// uploader, so an animation becomes an MP4 (`animation: video`). Video: ≤ 100 MB and ≤ 3 minutes (atproto
    /// lexicon app.bsky.embed.video, the video service's upload limits; 3 minutes since 2025-03); short videos
    /// play in a loop in the app (as its GIFs do). Blobs are stored as uploaded: stripping here is what protects
    /// the user.
    public static let bluesky = ServiceProfile(
        name: "bluesky", displayName: "Bluesky", maxStillBytes: 2_000_000,
        caps: SizeCaps(shortEdge: 1080, longEdge: 4000),
        animationOutput: .video,
        video: VideoLimits(maxBytes: 100_000_000, maxDurationMilliseconds: 180_000, loops: true),
        formats: [.jpeg, .png],
        source: "atproto lexicon app.bsky.embed.images, bsky-docs PR 414, social-app PR 10073",
        confidence: "high (bytes), medium (dims)")

    /// Telegram (Bot API sendPhoto): photos ≤ 10 MB, width + height ≤ 10000, aspect ≤ 20; animations ≤ 50 MB.
    public static let telegram = ServiceProfile(
        name: "telegram", displayName: "Telegram", maxStillBytes: 10_000_000,
        caps: SizeCaps(shortEdge: 1080, edgeSum: 10_000),
        animation: AnimationLimits(maxBytes: 50_000_000),
        formats: [.jpeg, .png, .gif, .webp],
        source: "Telegram Bot API sendPhoto, TDLib docs", confidence: "high")

    /// Discord: 10 MiB (10,485,760 bytes) per attachment, still or animated. The docs say 20 MiB since
    /// discord/discord-api-docs#8578, but the API still enforced 10 MiB through 2026-09
    /// (discord/discord-api-docs#8572): 10 MiB is the limit every upload meets; a user profile can raise it.
    public static let discord = ServiceProfile(
        name: "discord", displayName: "Discord", maxStillBytes: 10_485_760,
        animation: AnimationLimits(maxBytes: 10_485_760),
        formats: [.jpeg, .png, .gif, .webp],
        source:
            "discord-api-docs reference (uploading files); 10 MiB enforced (discord/discord-api-docs#8572) though #8578 documents 20 MiB",
        confidence: "medium")

    /// Instagram (content publishing API): JPEG only, ≤ 8 MB, width 320–1440 (the service scales to 1440
    /// wide), aspect 4:5 to 1.91:1 (not enforced: SharePipe does not crop). It takes no GIF: an animation becomes an
    /// MP4 (`animation: video`) within the API's video rules (reels): ≤ 300 MB, 3 s to 15 min, ≤ 1920 columns,
    /// 23–60 fps, H.264, moov atom first (Meta content-publishing API, IG User Media reference, reel
    /// specifications: "Frame rate: 23-60 FPS"): a frame shown for longer than 1/23 s is written as repeats of its
    /// picture (`VideoLimits.minFrameRate`). Reels play in a loop.
    public static let instagram = ServiceProfile(
        name: "instagram", displayName: "Instagram", maxStillBytes: 8_000_000,
        caps: SizeCaps(shortEdge: 1080, width: 1440),
        animationOutput: .video,
        video: VideoLimits(
            maxBytes: 300_000_000, maxDurationMilliseconds: 900_000, minDurationMilliseconds: 3000, maxWidth: 1920,
            maxFrameRate: 60, minFrameRate: 23, loops: true),
        formats: [.jpeg],
        source: "Meta content-publishing API", confidence: "medium")

    /// Threads: ≤ 8 MB, width ≤ 1440, JPEG or PNG. It takes no GIF: an animation becomes an MP4
    /// (`animation: video`) within the API's video rules: ≤ 1 GB, ≤ 5 min, ≤ 1920 columns, 23–60 fps (Meta Threads
    /// API, media specifications, video: "Frame rate: 23-60 FPS"; a frame shown for longer than 1/23 s is written
    /// as repeats of its picture, `VideoLimits.minFrameRate`), H.264, moov atom first.
    public static let threads = ServiceProfile(
        name: "threads", displayName: "Threads", maxStillBytes: 8_000_000,
        caps: SizeCaps(shortEdge: 1080, width: 1440),
        animationOutput: .video,
        video: VideoLimits(
            maxBytes: 1_000_000_000, maxDurationMilliseconds: 300_000, maxWidth: 1920, maxFrameRate: 60,
            minFrameRate: 23),
        formats: [.jpeg, .png],
        source: "Meta Threads API", confidence: "medium")

    /// Facebook: Meta's own figure is "we recommend under 4 MB" (developers.facebook.com, photo uploads; a
    /// PNG under 1 MB, or it may look pixelated). The 10 MB limit and the 2048×2048 box appear only in
    /// third-party summaries; the box is kept (the service resizes to it anyway). Animated GIFs are allowed,
    /// their size not stated: the still limit applies.
    public static let facebook = ServiceProfile(
        name: "facebook", displayName: "Facebook", maxStillBytes: 4_000_000,
        caps: SizeCaps(shortEdge: 1080, width: 2048, height: 2048),
        source: "developers.facebook.com photo uploads (bytes); third-party summaries (2048 box)", confidence: "medium")

    /// LinkedIn: ≤ 5 MB, < 36,152,320 px.
    public static let linkedin = ServiceProfile(
        name: "linkedin", displayName: "LinkedIn", maxStillBytes: 5_000_000,
        caps: SizeCaps(shortEdge: 1080, pixels: 36_152_319),
        animation: AnimationLimits(maxBytes: 5_000_000),
        source: "third-party summaries", confidence: "low–medium")

    /// Reddit: stills ≤ 20 MB, GIFs ≤ 20 MB (third-party summaries; the 100 MB GIF figure is in no source).
    /// Reddit turns GIFs into video.
    public static let reddit = ServiceProfile(
        name: "reddit", displayName: "Reddit", maxStillBytes: 20_000_000,
        animation: AnimationLimits(maxBytes: 20_000_000),
        formats: [.jpeg, .png, .gif, .webp],
        source: "third-party summaries", confidence: "low")

    /// Tumblr: stills and GIFs ≤ 10 MB (third-party summaries of help.tumblr.com; the 20 MB figure has no
    /// source); shown ~1280 wide. Since 2026 a GIF over 3 MB is turned into a video there: it still posts,
    /// but to stay a GIF set a user profile's `animated.maxBytes` to 3000000.
    public static let tumblr = ServiceProfile(
        name: "tumblr", displayName: "Tumblr", maxStillBytes: 10_000_000,
        animation: AnimationLimits(maxBytes: 10_000_000),
        formats: [.jpeg, .png, .gif, .webp],
        source: "help.tumblr.com via third parties", confidence: "low–medium")

    /// Pixelfed (a default instance): `max_photo_size` 15000 KB (config/pixelfed.php, checked by Laravel's
    /// `max:` file rule in KiB: 15,360,000 bytes). The server resizes to 1080×1080 (square), 1080×1350
    /// (portrait) or 1920×1080 (landscape) (app/Util/Media/Image.php): with the 1080 short edge that is a
    /// width ≤ 1920 and a height ≤ 1350. It re-encodes JPEG and PNG at q80 with GD; GIFs are kept as sent
    /// (gifsicle -O3 only), so their stripping happens here. JPEG, PNG, GIF (no HEIC or AVIF).
    public static let pixelfed = ServiceProfile(
        name: "pixelfed", displayName: "Pixelfed", maxStillBytes: 15_360_000,
        caps: SizeCaps(shortEdge: 1080, width: 1920, height: 1350),
        animation: AnimationLimits(maxBytes: 15_360_000),
        formats: [.jpeg, .png, .gif],
        source: "pixelfed config/pixelfed.php (max_photo_size), app/Util/Media/Image.php", confidence: "medium")

    /// Lemmy with pict-rs defaults (pict-rs defaults.toml): files ≤ 40 MB (`max_file_size`, in MB: taken as
    /// 10^6, the safe reading), stills ≤ 10000×10000 and ≤ 40,000,000 px, animations ≤ 1920×1920,
    /// ≤ 2,073,600 px and ≤ 900 frames. Lemmy asks pict-rs to resize uploads to 1024 px by default
    /// (crates/routes/src/images/upload.rs), so larger stills are wasted bytes: both edges 1024. pict-rs strips
    /// with `exiftool -all=` (the ICC profile too). AVIF, PNG, JPEG, JXL, WebP, GIF, APNG; no HEIC.
    public static let lemmy = ServiceProfile(
        name: "lemmy", displayName: "Lemmy", maxStillBytes: 40_000_000,
        caps: SizeCaps(shortEdge: 1024, longEdge: 1024, width: 10_000, height: 10_000, pixels: 40_000_000),
        animation: AnimationLimits(
            maxBytes: 40_000_000, maxWidth: 1920, maxHeight: 1920, maxPixels: 2_073_600,
            maxFrames: 900),
        formats: [.jpeg, .png, .gif, .webp, .avif],
        source: "pict-rs defaults.toml; Lemmy crates/routes/src/images/upload.rs", confidence: "medium")

    /// Built-in profiles, in the order `sharepipe services` lists them.
    public static let builtIn: [ServiceProfile] = [
        .x, .weibo, .mastodon, .bluesky, .telegram, .discord, .instagram, .threads, .facebook, .linkedin, .reddit,
        .tumblr,
        .pixelfed, .lemmy,
    ]

    /// The built-in profile with this name.
    public static func named(_ name: String) -> ServiceProfile? {
        builtIn.first { $0.name == name.lowercased() }
    }
}
