import CFuzzDriver
import SharePipe
#if canImport(Glibc)
    import Glibc
#endif

/// What every fuzz target does with one input: run the public pipeline on `.bytes(data)` with small limits
/// (so each run is fast and a header can never make it allocate much), and check what a caller relies on.
///
/// An input whose magic bytes are not the target's format is rejected (returns -1, so libFuzzer does not keep
/// it): each target spends its time in its own decoder. The input's length picks the strip mode, the byte
/// limit and the fit strategy, so the seed corpus (plain image files) reaches every metadata path without a
/// header byte of its own.
///
/// Any of these ends the run with a crash report, which libFuzzer saves as a crasher:
/// - an error that is not a `SharePipeError`, or one whose message does not name the source;
/// - an output that is not an image of the reported format and size, when read back;
/// - metadata the strip mode removes (GPS, thumbnail, XMP, IPTC, …) still present in the output;
/// - an output over the byte limit, or with a short edge over the cap.
public enum FuzzHarness {
    /// The limits every target runs under: a 4 MP, 4096 px, 1 MiB, 64-frame world.
    public static let limits = ImageLimits(
        maxDimension: 4096, maxPixels: 4_000_000, maxFrames: 64,
        maxTotalFramePixels: 16_000_000, maxInputBytes: 1 << 20,
        maxDecoderMemory: 64 << 20)

    /// The options for an input of `count` bytes.
    public static func options(forLength count: Int) -> PrepareOptions {
        let strip = StripMode.allCases[count % StripMode.allCases.count]
        var options = PrepareOptions(
            maxShortEdge: 96, maxBytes: (count / 3) % 2 == 1 ? 2048 : nil, strip: strip,
            limits: limits, strategy: (count / 6) % 2 == 1 ? .cpuFirst : .memoryFirst,
            minShortEdge: 16)
        options.animation.maxFrames = 16
        return options
    }

    /// Hands the process to libFuzzer (its flags and corpus directories come from the command line).
    public static func main(_ entry: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, entry))
    }

    /// Whether the four ASCII letters of a chunk type occur anywhere in the input (APNG's acTL).
    public static func containsChunkType(_ type: String, _ data: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        let pattern = Array(type.utf8)
        guard count >= pattern.count else { return false }
        for i in 0...(count - pattern.count) where (0..<pattern.count).allSatisfy({ data[i + $0] == pattern[$0] }) {
            return true
        }
        return false
    }

    /// `bytes` through the public pipeline: the output, or nil after checking the `SharePipeError` it threw (any
    /// other error ends the run).
    static func prepared(_ bytes: [UInt8], options: PrepareOptions) -> PreparedImage? {
        do {
            return try SharePipe.prepare(.bytes(bytes), options: options)
        } catch let error as SharePipeError {
            check(error)
            return nil
        } catch {
            fatalError("prepare threw something that is not a SharePipeError: \(error)")
        }
    }

    public static func run(_ data: UnsafePointer<UInt8>?, _ count: Int, format: ImageFormat) -> CInt {
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
        guard ImageFormat.sniff(Array(bytes.prefix(16))) == format else { return -1 }
        let options = options(forLength: count)
        guard let result = prepared(bytes, options: options) else { return 0 }
        check(result, options: options)
        return 0
    }

    /// One animated input (GIF, WebP, PNG by its magic bytes) prepared with `animationOutput` `.video`: an MP4 must
    /// come out for an animation (a still for a one-frame file), within the video byte limit, with even edges, its
    /// `ftyp`, `moov` and `mdat` boxes in that order and covering the file.
    public static func runVideo(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
        let animatedFormats: [ImageFormat] = [.gif, .webp, .png]
        guard let format = ImageFormat.sniff(Array(bytes.prefix(16))), animatedFormats.contains(format) else {
            return -1
        }
        var options = options(forLength: count)
        options.animationOutput = .video
        options.video.maxBytes = (count / 3) % 2 == 1 ? 4096 : nil
        options.video.maxFrameRate = count % 5 == 0 ? 25 : nil
        if count % 7 == 0 {
            // Instagram's and Threads' minimum: long frames become repeats, within a duration as the profiles have.
            options.video.minFrameRate = 23
            options.video.maxDurationMilliseconds = 60_000
        }
        guard let result = prepared(bytes, options: options) else { return 0 }
        guard result.format == .mp4 else {
            if result.frameCount > 1 { fatalError("an animation came out as \(result.format), not MP4") }
            check(result, options: options)
            return 0
        }
        if let limit = options.videoMaxBytes, result.byteCount > limit {
            fatalError("video has \(result.byteCount) bytes, over the limit of \(limit)")
        }
        guard result.size.width % 2 == 0, result.size.height % 2 == 0, result.size.shortEdge >= 16 else {
            fatalError("video size \(result.size) is not even or under 16")
        }
        var offset = 0
        var types: [String] = []
        while offset + 8 <= result.bytes.count {
            let size = result.bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            types.append(String(decoding: result.bytes[offset + 4..<offset + 8], as: UTF8.self))
            guard size >= 8 else { fatalError("a box of \(size) bytes at \(offset)") }
            offset += size
        }
        guard types == ["ftyp", "moov", "mdat"], offset == result.bytes.count else {
            fatalError("MP4 boxes \(types) cover \(offset) of \(result.bytes.count) bytes")
        }
        return 0
    }

    static func check(_ error: SharePipeError) {
        let text = error.description
        guard text.hasPrefix("<memory>: ") else {
            fatalError("error does not name the source: \(text)")
        }
        if case .tooLarge(_, let exceeded) = error {
            let numbers = [exceeded.found, exceeded.limit, exceeded.size?.width, exceeded.size?.height].compactMap {
                $0
            }
            guard numbers.allSatisfy({ $0 >= 0 }) else { fatalError("tooLarge with a negative number: \(text)") }
        }
    }

    static func check(_ result: PreparedImage, options: PrepareOptions) {
        guard !result.bytes.isEmpty else { fatalError("empty output") }
        guard ImageFormat.sniff(Array(result.bytes.prefix(16))) == result.format else {
            fatalError("output is not a \(result.format) by its magic bytes")
        }
        let limit = result.frameCount > 1 ? options.animatedMaxBytes : options.maxBytes
        if let limit, result.byteCount > limit {
            fatalError("output has \(result.byteCount) bytes, over the limit of \(limit)")
        }
        let info: ImageInfo
        do {
            info = try SharePipe.inspect(.bytes(result.bytes))
        } catch {
            fatalError("output cannot be read back: \(error)")
        }
        guard info.format == result.format, info.size == result.size else {
            fatalError("output reads back as \(info.format) \(info.size), reported \(result.format) \(result.size)")
        }
        if result.method == .reencoded, result.size.shortEdge > options.maxShortEdge {
            fatalError("output short edge \(result.size.shortEdge) over the cap \(options.maxShortEdge)")
        }
        let kinds = info.metadataKinds
        switch options.strip {
        case .all:
            let left = kinds.subtracting([.icc])
            guard left.isEmpty else { fatalError("strip all left \(left.sorted()) in the output") }
        case .gps:
            let left = kinds.intersection([.gps, .exifThumbnail, .xmp, .iptc])
            guard left.isEmpty else { fatalError("strip gps left \(left.sorted()) in the output") }
        case .none:
            break
        }
    }
}
