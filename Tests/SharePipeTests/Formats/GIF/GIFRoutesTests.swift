import Foundation
import Testing
@testable import SharePipe

/// One GIF metadata policy on every route (still, animated, converted to PNG and to JPEG), checked on the
/// output bytes and with exiftool; and the animation route fed by an `AnimationFrameSource`.
@Suite(.tags(.witness), .skipped(whenListed: "witness")) struct GIFRoutesTests {
    struct Route: CustomStringConvertible, Sendable {
        var description: String
        var file: String
        var options: @Sendable (StripMode) -> PrepareOptions
        var format: ImageFormat
        var frames: Int
    }

    static let routes: [Route] = [
        Route(
            description: "still GIF", file: "metadata-all-kinds-still.gif",
            options: { PrepareOptions(strip: $0) }, format: .gif, frames: 1),
        Route(
            description: "animated GIF", file: "metadata-all-kinds.gif",
            options: { PrepareOptions(strip: $0) }, format: .gif, frames: 2),
        Route(
            description: "animation → PNG (bluesky, animation shown still)", file: "metadata-all-kinds.gif",
            options: {
                var o = ServiceProfile.bluesky.options(); o.strip = $0; o.animationOutput = .still; return o
            }, format: .png, frames: 1),
        Route(
            description: "animation → JPEG", file: "metadata-all-kinds.gif",
            options: {
                var o = PrepareOptions(strip: $0); o.acceptedFormats = [.jpeg]; return o
            }, format: .jpeg, frames: 1),
        Route(
            description: "still → PNG", file: "metadata-all-kinds-still.gif",
            options: {
                var o = PrepareOptions(strip: $0); o.acceptedFormats = [.png]; return o
            }, format: .png, frames: 1),
    ]

    /// The marker an ICC profile leaves in each output format.
    static func iccMarker(_ format: ImageFormat) -> String {
        switch format {
        case .gif: return "ICCRGBG1012"
        case .png: return "iCCP"
        case .jpeg: return "ICC_PROFILE"
        case .webp: return "ICCP"
        default: return "prof"  // input-only formats (HEIF, AVIF): never an output
        }
    }

    @Test(arguments: [StripMode.all, .gps], routes)
    func sameOutcomeOnEveryRoute(_ mode: StripMode, _ route: Route) throws {
        let result = try SharePipe.prepare(.file(path: GIFFixtures.path(route.file)), options: route.options(mode))
        #expect(result.format == route.format)
        #expect(result.frameCount == route.frames)
        let bytes = result.bytes
        // Never, in either mode: XMP, IPTC, Photoshop resources, their location.
        for needle in ["XMP DataXMP", "xmpmeta", "GPSLatitude", "MGKIPTC0000", "MGK8BIM0000", "Berlin", "8BIM"] {
            #expect(GIFFixtures.count(needle, in: bytes) == 0, "\(route) \(mode): \(needle)")
        }
        // The colour profile stays in both modes, in the output format's own container.
        #expect(GIFFixtures.count(Self.iccMarker(route.format), in: bytes) == 1, "\(route) \(mode): ICC")
        switch mode {
        case .all:
            #expect(GIFFixtures.count("private comment", in: bytes) == 0, "\(route)")
            #expect(result.keptMetadata == [.icc], "\(route)")
            #expect(result.removedMetadata == [.comment, .xmp, .other], "\(route)")
        default:
            #expect(
                result.keptMetadata.isSuperset(of: [.icc]) && !result.keptMetadata.contains(.xmp)
                    && !result.keptMetadata.contains(.iptc) && !result.keptMetadata.contains(.other), "\(route)")
            #expect(result.removedMetadata.isSuperset(of: [.xmp, .other]), "\(route)")
        }
        try Witness.require("exiftool")
        do {
            let directory = Fixtures.temporaryDirectory()
            defer { Fixtures.cleanUp(directory) }
            let path = directory + "/out." + route.format.fileExtension
            try Fixtures.write(bytes, to: path)
            let listing = try Tool.run("exiftool", ["-a", "-G1", "-s", path]).stdout
            for group in ["[XMP", "[IPTC", "[Photoshop", "GPS"] {
                #expect(!listing.contains(group), "\(route) \(mode): exiftool sees \(group)\n\(listing)")
            }
            if mode == .all { #expect(!listing.contains("private comment"), "\(route): \(listing)") }
        }
    }

    @Test("`gps` and `all` give the same kept kinds on the still and the animated route")
    func stillAndAnimatedAgree() throws {
        for mode in [StripMode.all, .gps] {
            let still = try SharePipe.prepare(
                .file(path: GIFFixtures.path("metadata-all-kinds-still.gif")),
                options: PrepareOptions(strip: mode))
            let animated = try SharePipe.prepare(
                .file(path: GIFFixtures.path("metadata-all-kinds.gif")),
                options: PrepareOptions(strip: mode))
            #expect(still.keptMetadata == animated.keptMetadata, "\(mode)")
            #expect(still.removedMetadata == animated.removedMetadata, "\(mode)")
            #expect(
                try DecodedGIF(still.bytes).container.metadata == DecodedGIF(animated.bytes).container.metadata,
                "\(mode)")
        }
    }
}

/// Presents a GIF as an `AnimationFrameSource`, as animated WebP and APNG decoders will: each frame
/// composited on the canvas (the library's own GIF compositor), delays in milliseconds.
struct GIFAsFrameSource: AnimationFrameSource {
    private let decoded: DecodedGIF
    private var next = 0

    init(_ source: ImageSource) throws { decoded = try DecodedGIF(source) }

    var canvasSize: PixelSize { decoded.size }
    var frameCount: Int { decoded.frames.count }
    var loopCount: Int? { decoded.container.loopCount }

    mutating func nextFrame() throws -> AnimationFrame? {
        guard next < decoded.frames.count else { return nil }
        defer { next += 1 }
        return AnimationFrame(
            canvas: Bitmap(size: decoded.size, layout: .rgba, pixels: decoded.pictures[next]),
            durationMilliseconds: decoded.frames[next].delay * 10)
    }

    mutating func close() { next = decoded.frames.count }
}

@Suite(.tags(.witness), .skipped(whenListed: "witness")) struct AnimationFrameSourceTests {
    /// Runs the animation route over `GIFAsFrameSource` the way `Pipeline` runs it for a format whose
    /// descriptor offers `.frames`.
    static func prepare(_ name: String, options: PrepareOptions = PrepareOptions()) throws -> PreparedImage {
        let source = ImageSource.file(path: GIFFixtures.path(name))
        let info = try FormatRegistry.gif.decoder.probe(source, limits: options.limits)
        let plan = PreparePlan(info: info, options: options)
        try #require(plan.route == .animation)
        guard case .animation(let initial, let frameCount, let floor, let minShortEdge) = plan.ladder else {
            throw SharePipeError.corrupt(file: name, phase: .decode, reason: "no animation ladder")
        }
        let meter = PixelMemoryMeter()
        let pass = AnimationFramesPass(
            open: { try GIFAsFrameSource(source) }, metadata: plan.writtenMetadata.kept, meter: meter)
        var ladder = AnimationLadder(
            run: { try pass.run($0, globalUsage: $1, checkpoint: $2) }, initial: initial,
            frameCount: frameCount, dimensionFloor: floor, minShortEdge: minShortEdge,
            metadata: plan.writtenMetadata, warnings: [])
        return try FittingDriver(source: source, info: info, plan: plan, meter: meter).run(&ladder, checkpoint: {})
    }

    @Test(arguments: [
        "disposals.gif", "delays-loop0.gif", "loop3.gif", "noloop.gif", "frame-outside.gif", "interlaced.gif",
    ])
    func framesDelaysLoopAndPixelsSurvive(_ name: String) throws {
        let input = try DecodedGIF(.file(path: GIFFixtures.path(name)))
        let result = try Self.prepare(name)
        let output = try DecodedGIF(result.bytes)
        #expect(result.format == .gif && result.frameCount == input.frames.count)
        #expect(output.frames.count == input.frames.count)
        #expect(output.delays == input.delays)
        #expect(output.container.loopCount == input.container.loopCount)
        #expect(output.size == input.size)
        for (index, (ours, expected)) in zip(output.pictures, input.pictures).enumerated() {
            let difference = PictureDifference(ours, expected)
            #expect(difference.alphaMismatch == 0, "\(name) frame \(index): \(difference)")
            #expect(difference.meanColorError < 1, "\(name) frame \(index): \(difference)")
        }
    }

    @Test("resampled to the planned size, every frame matches the scaled source frame")
    func resampledFramesMatch() throws {
        var options = PrepareOptions()
        options.maxShortEdge = 600
        let result = try Self.prepare("large-1600x1200.gif", options: options)
        let output = try DecodedGIF(result.bytes)
        let target = PixelSize(width: 800, height: 600)
        #expect(output.size == target && output.delays == [20, 20, 20, 20] && output.container.loopCount == 0)
        let reference = try DecodedGIF(.file(path: GIFFixtures.path("large-1600x1200.gif"))).pictures(scaledTo: target)
        for (index, (ours, expected)) in zip(output.pictures, reference).enumerated() {
            let difference = PictureDifference(ours, expected)
            #expect(difference.alphaMismatch == 0, "frame \(index): \(difference)")
            #expect(difference.meanColorError < 3, "frame \(index): \(difference)")
        }
    }

    @Test("milliseconds become centiseconds on the running total: the sum never drifts")
    func centisecondsDoNotDrift() {
        var clock = CentisecondClock()
        let delays = (0..<30).map { _ in clock.advance(milliseconds: 33) }
        let total: Int = delays.reduce(0, +)
        #expect(total == 99)  // 990 ms
        #expect(Set(delays).isSubset(of: [3, 4]))
        var zero = CentisecondClock()
        let first = zero.advance(milliseconds: 0), second = zero.advance(milliseconds: 4),
            third = zero.advance(milliseconds: 2)
        #expect(first == 0)
        #expect(second == 0)
        #expect(third == 1)
    }
}
