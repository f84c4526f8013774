import Foundation
import Testing
@testable import SharePipe

/// The planner by table (format × mode × service → plan), the GIF metadata rule on every route, the
/// estimate priced from the plan, and the animation route fed by an `AnimationFrameSource`.
@Suite struct PreparePlanTests {
    /// A probe as a decoder would report it, without a file.
    static func info(
        _ format: ImageFormat, _ width: Int, _ height: Int, frames: Int = 1, orientation: Orientation = .up,
        colorModel: ColorModel = .rgb, metadata: [MetadataBlock] = []
    ) -> ImageInfo {
        ImageInfo(
            format: format, size: PixelSize(width: width, height: height), colorModel: colorModel, bitDepth: 8,
            progressive: false, orientation: orientation, storedOrientationValue: nil, frameCount: frames,
            hasAlpha: false, metadata: metadata, byteCount: 100_000)
    }

    static let icc = MetadataBlock.icc([UInt8](repeating: 7, count: 200))
    static let xmp = MetadataBlock.xmp(Array("<x:xmpmeta/>".utf8))
    static let comment = MetadataBlock.comment(Array("hello".utf8))
    static let gifIPTC = MetadataBlock.other(tag: "GIF:FF:MGKIPTC0000", data: [11] + Array("MGKIPTC0000".utf8))

    enum Expected: Equatable { case rewrite, turn, still, animation }

    // format, size, frames, orientation, service (nil: defaults), strip → route, output, target, adjustments
    static let table:
        [(
            ImageFormat, PixelSize, Int, Orientation, ServiceProfile?, StripMode,
            Expected, ImageFormat, PixelSize, [String]
        )] = [
            (
                .jpeg, PixelSize(width: 800, height: 600), 1, .up, nil, .all, .rewrite, .jpeg,
                PixelSize(width: 800, height: 600), []
            ),
            (
                .jpeg, PixelSize(width: 800, height: 600), 1, .right, nil, .all, .turn, .jpeg,
                PixelSize(width: 800, height: 600), []
            ),
            (
                .jpeg, PixelSize(width: 4000, height: 3000), 1, .up, .x, .gps, .still, .jpeg,
                PixelSize(width: 1440, height: 1080), []
            ),
            (
                .jpeg, PixelSize(width: 3000, height: 4000), 1, .right, nil, .none, .still, .jpeg,
                PixelSize(width: 1080, height: 1440), []
            ),
            (
                .png, PixelSize(width: 640, height: 480), 1, .up, nil, .all, .rewrite, .png,
                PixelSize(width: 640, height: 480), []
            ),
            (
                .png, PixelSize(width: 2000, height: 2000), 1, .up, .bluesky, .gps, .still, .png,
                PixelSize(width: 1080, height: 1080), []
            ),
            (
                .png, PixelSize(width: 2000, height: 1500), 1, .up, .instagram, .all, .still, .jpeg,
                PixelSize(width: 1440, height: 1080),
                ["PNG → JPEG (accepted formats)"]
            ),
            (
                .gif, PixelSize(width: 400, height: 300), 1, .up, nil, .all, .rewrite, .gif,
                PixelSize(width: 400, height: 300), []
            ),
            (
                .gif, PixelSize(width: 400, height: 300), 5, .up, nil, .gps, .animation, .gif,
                PixelSize(width: 400, height: 300), []
            ),
            (
                .gif, PixelSize(width: 1600, height: 1200), 5, .up, .x, .all, .animation, .gif,
                PixelSize(width: 1280, height: 960), []
            ),
            (
                .gif, PixelSize(width: 400, height: 300), 5, .up, stillsOnly, .all, .still, .png,
                PixelSize(width: 400, height: 300),
                ["first frame only (of 5; the service shows no animation)", "GIF → PNG (accepted formats)"]
            ),
            // Bluesky shows animation only as video: an MP4 at the same size (even edges already).
            (
                .gif, PixelSize(width: 400, height: 300), 5, .up, .bluesky, .all, .animation, .mp4,
                PixelSize(width: 400, height: 300), ["animated GIF → MP4 (the service shows animation only as video)"]
            ),
            // Odd edges are rounded down to even for H.264 4:2:0.
            (
                .gif, PixelSize(width: 401, height: 301), 5, .up, .bluesky, .all, .animation, .mp4,
                PixelSize(width: 400, height: 300),
                [
                    "animated GIF → MP4 (the service shows animation only as video)",
                    "resized to 400×300 (caps allow 401×301): H.264 4:2:0 needs even edges, OpenH264 at least 16 pixels "
                        + "and at most 4096",
                ]
            ),
        ]

    /// Bluesky's rules with animation turned off: a service that shows no animation.
    static let stillsOnly: ServiceProfile = {
        var profile = ServiceProfile.bluesky
        profile.animation.allowed = false
        return profile
    }()

    @Test(arguments: table.indices)
    func planTable(_ row: Int) {
        let (format, size, frames, orientation, service, strip, route, output, target, adjustments) = Self.table[row]
        var options = service?.options() ?? PrepareOptions()
        options.strip = strip
        let plan = PreparePlan(
            info: Self.info(format, size.width, size.height, frames: frames, orientation: orientation),
            options: options)
        let expectedRoute: PreparePlan.Route
        switch route {
        case .rewrite: expectedRoute = .metadataRewrite
        case .turn: expectedRoute = .losslessTurn
        case .still: expectedRoute = .still
        case .animation: expectedRoute = .animation
        }
        #expect(plan.route == expectedRoute, "row \(row)")
        #expect(plan.outputFormat == output, "row \(row)")
        #expect(plan.target == target, "row \(row): \(plan.target)")
        #expect(plan.adjustments == adjustments, "row \(row)")
        #expect(plan.orientation == (route == .still || route == .turn ? orientation : .up), "row \(row)")
        let limit =
            output == .mp4 ? options.videoMaxBytes : route == .animation ? options.animatedMaxBytes : options.maxBytes
        #expect(plan.byteLimit == limit, "row \(row)")
        switch (output, plan.ladder) {
        case (.jpeg, .quality(let range, nil, _)),
            (.gif, .quality(let range, nil, _)) where route != .animation:
            #expect(range == options.minQuality...options.qualityCeiling)
        case (.png, .lossless(let efforts, _, let change, _)):
            #expect(efforts == [PNGEncoder.defaultEffort, PNGEncoder.strongestEffort])
            #expect((change != nil) == options.allowFormatChange)
        case (.gif, .animation(let initial, let count, _, _)):
            #expect(initial.size == target && count == frames)
        case (.mp4, .video(let initial, _)):
            #expect(initial.size == target && initial.quantizer == VideoRoute.quantizers[0])
        default:
            Issue.record("row \(row): unexpected ladder \(plan.ladder)")
        }
    }

    @Test("an animated GIF that needs no resize and no frame change tries its metadata-only copy first")
    func animatedGIFCopyFirst() {
        let small = Self.info(.gif, 400, 300, frames: 5)
        #expect(PreparePlan(info: small, options: PrepareOptions()).metadataCopyFirst)
        #expect(
            !PreparePlan(info: Self.info(.gif, 1600, 1200, frames: 5), options: ServiceProfile.x.options())
                .metadataCopyFirst)
        var fewerFrames = PrepareOptions()
        fewerFrames.animation.maxFrames = 2
        #expect(!PreparePlan(info: small, options: fewerFrames).metadataCopyFirst)
        #expect(!PreparePlan(info: Self.info(.jpeg, 400, 300), options: PrepareOptions()).metadataCopyFirst)
    }

    @Test("the source's quality caps the ceiling only when the format stays")
    func sourceQualityCap() {
        let info = Self.info(.jpeg, 4000, 3000)
        let q72 = SourceQuality(sameScale: 72)
        let same = PreparePlan(info: info, options: PrepareOptions(), sourceQuality: q72)
        #expect(
            same.ladder == .quality(range: 40...72, sourceQualityCap: q72, minShortEdge: PrepareOptions().minShortEdge))
        // Another encoder's q75 whose tables are as fine as SharePipe's q72: the ceiling caps, not the q75.
        let annexK75 = SourceQuality(saved: 75, ceiling: 72)
        let compared = PreparePlan(info: info, options: PrepareOptions(), sourceQuality: annexK75)
        #expect(
            compared.ladder
                == .quality(range: 40...72, sourceQualityCap: annexK75, minShortEdge: PrepareOptions().minShortEdge))
        // Another encoder's q85, not under the default ceiling of 85, but as fine as SharePipe's q84 only: capped.
        let annexK85 = SourceQuality(saved: 85, ceiling: 84)
        let finer = PreparePlan(info: info, options: PrepareOptions(), sourceQuality: annexK85)
        #expect(
            finer.ladder
                == .quality(range: 40...84, sourceQualityCap: annexK85, minShortEdge: PrepareOptions().minShortEdge))
        let higher = PreparePlan(info: info, options: PrepareOptions(), sourceQuality: SourceQuality(sameScale: 95))
        #expect(
            higher.ladder
                == .quality(range: 40...85, sourceQualityCap: nil, minShortEdge: PrepareOptions().minShortEdge))
        let png = PreparePlan(
            info: Self.info(.png, 4000, 3000), options: ServiceProfile.instagram.options(),
            sourceQuality: SourceQuality(sameScale: 50))
        if case .quality(_, let cap, _) = png.ladder {
            #expect(cap == nil)
        } else {
            Issue.record("PNG → JPEG is a quality ladder")
        }
    }

    @Test(arguments: [StripMode.all, .gps, .none])
    func gifMetadataIsDecidedOnceForEveryRoute(_ mode: StripMode) {
        let metadata = [Self.comment, Self.xmp, Self.icc, Self.gifIPTC]
        var options = PrepareOptions()
        options.strip = mode
        let still = PreparePlan(info: Self.info(.gif, 80, 60, metadata: metadata), options: options)
        let animated = PreparePlan(info: Self.info(.gif, 80, 60, frames: 3, metadata: metadata), options: options)
        var bluesky = Self.stillsOnly.options()
        bluesky.strip = mode
        let converted = PreparePlan(info: Self.info(.gif, 80, 60, frames: 3, metadata: metadata), options: bluesky)
        #expect(still.route == .metadataRewrite && animated.route == .animation && converted.outputFormat == .png)
        #expect(still.metadata == animated.metadata && animated.metadata == converted.metadata)
        let kept = MetadataOutcome.kinds(of: still.metadata.kept)
        switch mode {
        case .all: #expect(kept == [.icc])
        case .gps: #expect(kept == [.icc, .comment])
        case .none: #expect(kept == [.icc, .comment, .xmp, .other])
        }
    }

    @Test("the estimate is priced from the plan: route, target and kept metadata")
    func estimateFollowsThePlan() throws {
        let animated = Self.info(.gif, 800, 600, frames: 10)
        // A service showing no animation and taking no GIF: the plan goes still, and so does the estimate.
        let blueskyOptions = Self.stillsOnly.options()
        let still = try MemoryEstimate(info: animated, options: blueskyOptions)
        let stillPlan = PreparePlan(info: animated, options: blueskyOptions)
        #expect(stillPlan.route == .still)
        #expect(still == MemoryEstimate(plan: stillPlan, info: animated, options: blueskyOptions, input: .file))
        #expect(still.targetSize == stillPlan.target)
        let stillParts = MemoryEstimate.stillGIF(
            animated, plan: stillPlan, options: try blueskyOptions.checked(), keptMetadata: 0)
        #expect(still.meteredPixelBytes >= stillParts.metered)
        let animation = try MemoryEstimate(info: animated, options: PrepareOptions())
        let animationParts = MemoryEstimate.animatedGIF(
            animated, plan: PreparePlan(info: animated, options: PrepareOptions()),
            options: try PrepareOptions().checked(), keptMetadata: 0)
        #expect(animation.meteredPixelBytes == animationParts.metered)
        #expect(animation.meteredPixelBytes != still.meteredPixelBytes)

        // A metadata rewrite also prices the 1/8-scale check decode and the rewritten copy.
        let photo = Self.info(.jpeg, 800, 600)
        let rewrite = PreparePlan(info: photo, options: PrepareOptions())
        #expect(rewrite.route == .metadataRewrite)
        var smaller = PrepareOptions()
        smaller.maxShortEdge = 300
        let resized = PreparePlan(info: photo, options: smaller)
        #expect(resized.route == .still)
        #expect(
            try MemoryEstimate(info: photo, options: PrepareOptions()).outputBytes
                >= MemoryEstimate.rewriteOutputBytes(photo, keptMetadata: 0))
        #expect(try MemoryEstimate(info: photo, options: smaller).targetSize == resized.target)
    }
}
