/// One APNG frame control (`fcTL`): where a frame goes on the canvas, how long it shows, and what
/// happens to its rectangle before the next frame (APNG 1.0, "fcTL").
struct APNGFrameControl: Sendable, Equatable {
    /// How the frame's rectangle is left for the next frame.
    enum Dispose: UInt8, Sendable {
        /// Leave the canvas as it is.
        case none = 0
        /// Clear the rectangle to transparent black.
        case background = 1
        /// Restore the rectangle to what it was before this frame was drawn.
        case previous = 2
    }

    /// How the frame's pixels meet the canvas.
    enum Blend: UInt8, Sendable {
        /// Replace the rectangle, alpha included.
        case source = 0
        /// Composite over the rectangle (Porter-Duff "over", straight alpha).
        case over = 1
    }

    var width: Int
    var height: Int
    var x: Int
    var y: Int
    /// Delay as stored: numerator and denominator of seconds (a denominator of 0 means 100).
    var delayNumerator: Int
    var delayDenominator: Int
    var dispose: Dispose
    var blend: Blend

    /// The delay in milliseconds, rounded to the nearest.
    var durationMilliseconds: Int {
        let denominator = delayDenominator == 0 ? 100 : delayDenominator
        return (delayNumerator * 1000 + denominator / 2) / denominator
    }

    /// Parses the 26-byte payload (its sequence number is the caller's to check); fails with the reason
    /// when a field is out of range or the rectangle leaves the canvas.
    static func parse(_ data: [UInt8], canvas: PixelSize) -> Result<APNGFrameControl, APNGAnimation.Broken> {
        guard data.count == 26 else { return .failure(.init("fcTL has \(data.count) bytes, not 26")) }
        func u32(_ at: Int) -> Int {
            Int(data[at]) << 24 | Int(data[at + 1]) << 16 | Int(data[at + 2]) << 8 | Int(data[at + 3])
        }
        func u16(_ at: Int) -> Int { Int(data[at]) << 8 | Int(data[at + 1]) }
        let width = u32(4), height = u32(8), x = u32(12), y = u32(16)
        guard width > 0, height > 0 else { return .failure(.init("a frame is empty (\(width)×\(height))")) }
        guard x + width <= canvas.width, y + height <= canvas.height else {
            return .failure(.init("a frame (\(width)×\(height) at \(x),\(y)) leaves the \(canvas) canvas"))
        }
        guard let dispose = Dispose(rawValue: data[24]), let blend = Blend(rawValue: data[25]) else {
            return .failure(.init("unknown dispose (\(data[24])) or blend (\(data[25])) operation"))
        }
        return .success(
            APNGFrameControl(
                width: width, height: height, x: x, y: y, delayNumerator: u16(20),
                delayDenominator: u16(22), dispose: dispose, blend: blend))
    }
}

/// What a PNG's animation chunks describe, found by the chunk walk of `PNGScan` without inflating
/// anything: the frames, the play count, and whether the default image (IDAT) is the first frame.
///
/// An animation that breaks the APNG rules (sequence numbers out of order, a frame outside the canvas, a
/// frame without data, chunks in the wrong place) is not shown as an animation: like Chromium, which then
/// displays the default image, the file is prepared as the still PNG its IDAT holds, and `broken` says why
/// (the pipeline reports it as a warning).
struct APNGAnimation: Sendable, Equatable {
    /// Why an animation was set aside.
    struct Broken: Error, Sendable, Equatable {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// The frames in display order (the default image first when it is part of the animation).
    var frames: [APNGFrameControl]
    /// `num_plays` as stored: 0 forever, N plays in all.
    var plays: Int
    /// Whether the IDAT image is frame 0 (an fcTL came before IDAT) rather than a fallback only.
    var defaultImageIsFirstFrame: Bool

    /// The play count in the GIF convention of `AnimationFrameSource.loopCount`.
    var loopCount: Int? { plays == 0 ? 0 : plays == 1 ? nil : plays - 1 }
}

/// Follows the animation chunks during `PNGScan`'s walk and checks them as a browser does. Any rule broken
/// ends the animation (`result` becomes `.broken`); the still image is unaffected.
struct APNGScanner {
    private let canvas: PixelSize
    private var declaredFrames = 0
    private var plays = 0
    private var sawControl = false
    private var nextSequence = 0
    private var frames: [APNGFrameControl] = []
    private var defaultImageIsFirstFrame = false
    /// Whether the last frame control has received image data (IDAT or fdAT) yet.
    private var currentFrameHasData = true
    private var broken: APNGAnimation.Broken?
    /// Damage no browser shows anything for (the file is refused, not shown as its default image).
    private var refusal: String?
    private var warnings: [String] = []

    init(canvas: PixelSize) { self.canvas = canvas }

    /// Whether the walk should hand this chunk type to `observe`.
    static func wants(_ type: PNGChunkType) -> Bool { type == .acTL || type == .fcTL || type == .fdAT }

    /// An acTL, fcTL or fdAT chunk, reached before or after the first IDAT.
    mutating func observe(_ chunk: PNGChunkWalker.Header, walker: PNGChunkWalker, afterImageData: Bool) throws {
        guard broken == nil else { return }
        switch chunk.type {
        case .acTL:
            if afterImageData { return note("acTL after the image data is ignored (not an animation)") }
            if sawControl { return fail("a second acTL chunk") }
            let (data, crcMatches) = try walker.payload(of: chunk)
            guard crcMatches, data.count == 8 else { return fail("acTL is damaged") }
            declaredFrames = Self.u32(data, 0)
            plays = Self.u32(data, 4)
            sawControl = true
            if declaredFrames == 0 { fail("acTL declares no frames") }
        case .fcTL:
            guard sawControl else { return }
            if !currentFrameHasData { return fail("frame \(frames.count - 1) has no image data") }
            let (data, crcMatches) = try walker.payload(of: chunk)
            guard crcMatches else { return fail("fcTL CRC error") }
            guard data.count == 26 else { return fail("fcTL has \(data.count) bytes, not 26") }
            guard checkSequence(data) else { return }
            switch APNGFrameControl.parse(data, canvas: canvas) {
            case .failure(let reason): return fail(reason.reason)
            case .success(let control):
                if !afterImageData {
                    guard frames.isEmpty, control.x == 0, control.y == 0,
                        control.width == canvas.width, control.height == canvas.height
                    else {
                        return fail("the frame before the image data does not cover the whole image")
                    }
                    defaultImageIsFirstFrame = true
                }
                frames.append(control)
                currentFrameHasData = false
            }
        case .fdAT:
            guard sawControl else { return }
            if !afterImageData { return fail("fdAT before the image data") }
            if frames.isEmpty {
                // No fcTL at all: Chromium fails the whole image (it draws nothing, not even the default image).
                refusal = "an fdAT chunk but no fcTL"
                return fail("fdAT without a frame control")
            }
            if defaultImageIsFirstFrame && frames.count == 1 {
                // After a default image that is frame 0: Chromium shows that image, as this broken animation does.
                return fail("fdAT without a frame control")
            }
            guard chunk.length >= 4 else { return fail("fdAT too short") }
            guard checkSequence(try walker.prefix(of: chunk, count: 4)) else { return }
            // A zero-length fdAT (its sequence number only) is allowed and carries nothing, as in browsers.
            if chunk.length > 4 { currentFrameHasData = true }
        default:
            return
        }
    }

    /// The image data (IDAT) was reached.
    mutating func observeImageData() {
        if defaultImageIsFirstFrame && frames.count == 1 { currentFrameHasData = true }
    }

    /// The verdict after IEND, with the frame and limit checks: nil for a PNG without (valid) animation
    /// chunks; throws `tooLarge` when the animation is over a frame limit.
    mutating func finish(limits: ImageLimits, file: String) throws -> (animation: APNGAnimation?, warnings: [String]) {
        guard sawControl else { return (nil, warnings) }
        if let refusal {
            throw SharePipeError.corrupt(
                file: file, phase: .header, reason: "APNG has \(refusal) (browsers show nothing for it)")
        }
        if broken == nil && !currentFrameHasData { fail("frame \(frames.count - 1) has no image data") }
        if broken == nil && frames.isEmpty { fail("acTL but no frame control") }
        if broken == nil && frames.count > declaredFrames {
            fail("\(frames.count) frames where acTL declares \(declaredFrames)")
        }
        if let broken {
            return (nil, warnings + ["animation ignored, the still default image is used instead: \(broken.reason)"])
        }
        if frames.count < declaredFrames {
            note("acTL declares \(declaredFrames) frames but \(frames.count) are present; those are shown")
        }
        // Every frame is composited onto the whole canvas, so the work and the canvases handed on grow with
        // frames × canvas, whatever the frame rectangles.
        try limits.checkAnimation(frames: frames.count, canvas: canvas, file: file)
        return (
            APNGAnimation(frames: frames, plays: plays, defaultImageIsFirstFrame: defaultImageIsFirstFrame), warnings
        )
    }

    private mutating func checkSequence(_ data: [UInt8]) -> Bool {
        let sequence = Self.u32(data, 0)
        guard sequence == nextSequence else {
            fail("sequence number \(sequence) where \(nextSequence) was expected")
            return false
        }
        nextSequence += 1
        return true
    }

    private mutating func fail(_ reason: String) { broken = APNGAnimation.Broken(reason) }
    private mutating func note(_ warning: String) { warnings.append(warning) }

    static func u32(_ data: [UInt8], _ at: Int) -> Int {
        Int(data[at]) << 24 | Int(data[at + 1]) << 16 | Int(data[at + 2]) << 8 | Int(data[at + 3])
    }
}
