/// An animation read frame by frame, each frame already composited onto the whole canvas.
///
/// This is how an animated input that is not a GIF (animated WebP, APNG) reaches the animation route:
/// the format's decoder applies its own rectangles, dispose and blend operations and hands over what a
/// browser would show at each step, one canvas at a time. The animation route resamples each canvas to
/// the target size and writes an animated GIF (changed rectangles, delays, loop count) within the byte
/// limit, or takes the first frame as a still where the service shows no animation.
///
/// Memory: a source holds at most the canvas it composits into plus what its codec needs for the
/// next frame (and the previous canvas where a "restore previous" dispose asks for it). Frames are
/// never collected. Every pixel buffer it holds is counted in the job's `PixelMemoryMeter` (the one the
/// descriptor's opener is given) from the moment it is allocated until `close`, once.
protocol AnimationFrameSource {
    /// The canvas every frame is composited onto (stored orientation).
    var canvasSize: PixelSize { get }
    /// How many frames the container declares.
    var frameCount: Int { get }
    /// How often the animation repeats after its first play, as the container stores it for GIF's
    /// NETSCAPE2.0 extension: `nil` means play once (no loop extension is written), 0 means forever.
    /// Formats that store the total number of plays convert: APNG `num_plays` or WebP `loop_count` of
    /// 0 → 0, 1 → nil, N → N − 1 (browsers play a GIF's NETSCAPE value + 1 times).
    var loopCount: Int? { get }
    /// The next composited frame (straight-alpha RGBA8, canvas size, rows top to bottom), or nil after
    /// the last one. Throws `SharePipeError` naming the file on damage the format cannot recover from.
    mutating func nextFrame() throws -> AnimationFrame?
    /// Frees the canvases and uncounts them from the meter; later `nextFrame` calls return nil. Happens by
    /// itself after the last frame; callers that stop early (a still, an error, a cancelled job) call it.
    mutating func close()
}

extension AnimationFrameSource {
    /// The first composited frame, for an animation prepared as a still; an animation without frames is
    /// corrupt (named after `file`).
    mutating func firstFrame(file: String) throws -> AnimationFrame {
        guard let frame = try nextFrame() else {
            throw SharePipeError.corrupt(file: file, phase: .decode, reason: "the animation has no frames")
        }
        return frame
    }
}

/// One composited frame of an `AnimationFrameSource`.
struct AnimationFrame {
    /// Straight-alpha RGBA8 pixels of the whole canvas.
    var canvas: Bitmap
    /// How long the frame is shown, in milliseconds, as the source stores it (0 included).
    var durationMilliseconds: Int
    /// The canvas pixels that may differ from the previous frame's canvas; nil: any (always for the first
    /// frame, and for sources that do not track it). Lets the animation route resample only what changed.
    var changed: GIFRect? = nil
}

/// The RGBA canvas an `AnimationFrameSource` composits into, and the bytes counted for it (with whatever else
/// the source holds for its whole life) in the job's meter, from `init` until `release`.
struct MeteredCanvas {
    let size: PixelSize
    /// Straight-alpha RGBA8, rows top to bottom; transparent at first.
    var pixels: [UInt8]
    private let meter: PixelMemoryMeter
    private var countedBytes: Int

    /// Counts `countedBytes` (the canvas and what else the source holds until it closes) in `meter`.
    init(size: PixelSize, countedBytes: Int, meter: PixelMemoryMeter) {
        self.size = size
        self.meter = meter
        self.countedBytes = countedBytes
        meter.allocate(countedBytes)
        pixels = [UInt8](repeating: 0, count: size.area * 4)
    }

    /// Whether the canvas is still held (not yet released).
    var isOpen: Bool { countedBytes > 0 }

    /// The canvas as it stands, as a frame shown for `durationMilliseconds`.
    func frame(durationMilliseconds: Int) -> AnimationFrame {
        AnimationFrame(
            canvas: Bitmap(size: size, layout: .rgba, pixels: pixels), durationMilliseconds: durationMilliseconds)
    }

    /// Frees the canvas and uncounts what `init` counted (once).
    mutating func release() {
        meter.release(countedBytes)
        countedBytes = 0
        pixels = []
    }
}

/// How a source hands out its frames: `decode`'s frame while `more`; nil once it is not (or `decode` finds
/// no frame), after calling `close`; on an error, `close` and the error. So the canvases are freed right after
/// the last frame or the first failure, whoever the caller is.
func nextAnimationFrame(more: Bool, close: () -> Void, _ decode: () throws -> AnimationFrame?) throws -> AnimationFrame?
{
    guard more else {
        close()
        return nil
    }
    do {
        guard let frame = try decode() else {
            close()
            return nil
        }
        return frame
    } catch {
        close()
        throw error
    }
}
