#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The pictures of an animation at one output size, in an unlinked temporary file (`UnlinkedTemporaryFile`:
/// `mkstemp` in `$TMPDIR`, else `/tmp`, removed from the directory at once, so nothing is left behind): per frame
/// its duration, the canvas pixels it changed, and the rectangle of the output picture that differs from
/// the frame before (with its pixels). Read back frame by frame into one picture.
///
/// Spilling is best effort: when the file cannot be made or written, or grows past `maxBytes`, the spill
/// is dropped and the next pass reads the source again.
final class ResampledFrameSpill {
    /// Holds the spill of the last size read, across the passes of one ladder.
    final class Holder {
        var spill: ResampledFrameSpill?
        init() {}
    }

    /// The largest spill kept (beyond it, each pass decodes again).
    static let maxBytes = 1 << 30
    /// Bytes before each frame's pixels: duration (Int64), canvas rectangle and picture rectangle (4 × Int32 each).
    private static let headerBytes = 40

    /// A spill that cannot be read back (the pass then reads the source again).
    struct Unreadable: Error {}

    /// The output size.
    let size: PixelSize
    /// The source's canvas size and loop count.
    let canvasSize: PixelSize
    let loopCount: Int?
    private(set) var frameCount = 0
    private var file: UnsafeMutablePointer<FILE>?
    private var written = 0

    /// Starts an empty spill in `directory` (nil: `$TMPDIR`, else `/tmp`); without a file when none can be made.
    init(size: PixelSize, canvasSize: PixelSize, loopCount: Int?, directory: String? = nil) {
        self.size = size
        self.canvasSize = canvasSize
        self.loopCount = loopCount
        guard let descriptor = UnlinkedTemporaryFile.make(prefix: "sharepipe-frames", in: directory) else { return }
        file = fdopen(descriptor, "w+b")
        if file == nil { _ = close(descriptor) }
    }

    deinit { drop() }

    /// Appends a frame: `picture`'s pixels in `patch` (the rectangle that differs from the previous frame's
    /// picture), the canvas pixels that changed, and how long it is shown.
    func append(_ picture: [UInt8], patch: GIFRect, canvasChanged: GIFRect, durationMilliseconds: Int) {
        guard let file else { return }
        frameCount += 1
        written += Self.headerBytes + patch.area * 4
        guard written <= Self.maxBytes else { return drop() }
        var header = [Int64(durationMilliseconds)]
        var rects = [canvasChanged, patch].flatMap {
            [Int32($0.left), Int32($0.top), Int32($0.width), Int32($0.height)]
        }
        var ok = fwrite(&header, 8, 1, file) == 1 && fwrite(&rects, 4, 8, file) == 8
        picture.withUnsafeBufferPointer { pixels in
            for y in patch.top..<patch.bottom where ok {
                ok =
                    fwrite(pixels.baseAddress! + (y * size.width + patch.left) * 4, 1, patch.width * 4, file)
                    == patch.width * 4
            }
        }
        if !ok { drop() }
    }

    /// Ends writing; true when the spill holds every frame appended and can be read.
    func finishWriting() -> Bool {
        guard let file, fflush(file) == 0 else {
            drop()
            return false
        }
        return true
    }

    /// Closes and forgets the file.
    private func drop() {
        if let file { fclose(file) }
        file = nil
    }

    /// A reader from the first frame.
    func reader() throws -> Reader {
        guard let file, fseek(file, 0, SEEK_SET) == 0 else { throw Unreadable() }
        return Reader(spill: self, file: file)
    }

    /// Reads the frames in order.
    struct Reader {
        let spill: ResampledFrameSpill
        let file: UnsafeMutablePointer<FILE>
        private var index = 0

        fileprivate init(spill: ResampledFrameSpill, file: UnsafeMutablePointer<FILE>) {
            self.spill = spill
            self.file = file
        }

        /// The next frame's duration and changed canvas pixels, with `picture` (the previous frame's, or
        /// transparent before the first) patched to its picture; nil after the last frame.
        mutating func next(patching picture: inout [UInt8]) throws -> (
            canvasChanged: GIFRect, durationMilliseconds: Int
        )? {
            guard index < spill.frameCount else { return nil }
            index += 1
            var header: Int64 = 0
            var rects = [Int32](repeating: 0, count: 8)
            guard fread(&header, 8, 1, file) == 1, fread(&rects, 4, 8, file) == 8 else { throw Unreadable() }
            let canvasChanged = GIFRect(
                left: Int(rects[0]), top: Int(rects[1]), width: Int(rects[2]), height: Int(rects[3]))
            let patch = GIFRect(left: Int(rects[4]), top: Int(rects[5]), width: Int(rects[6]), height: Int(rects[7]))
            let width = spill.size.width
            guard patch.isEmpty || patch.clipped(to: spill.size) == patch else { throw Unreadable() }
            var ok = true
            picture.withUnsafeMutableBufferPointer { pixels in
                for y in patch.top..<patch.bottom where ok {
                    ok =
                        fread(pixels.baseAddress! + (y * width + patch.left) * 4, 1, patch.width * 4, file)
                        == patch.width * 4
                }
            }
            guard ok else { throw Unreadable() }
            return (canvasChanged, Int(header))
        }
    }
}
