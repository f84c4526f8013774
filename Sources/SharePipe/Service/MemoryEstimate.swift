import CSharePipe

/// Where a job's input bytes live while it runs.
public enum InputResidence: Sendable, Equatable, Codable {
    /// A file read through small buffers (`ImageSource.file`, or an upload spooled to disk).
    case file
    /// The whole encoded input held in memory (`ImageSource.bytes`, or a small upload kept as bytes).
    case memory

    /// Where `source`'s bytes live: in memory for `.bytes`, otherwise read from a file.
    init(of source: ImageSource) {
        if case .bytes = source { self = .memory } else { self = .file }
    }
}

/// An upper bound on the memory one `SharePipe.prepare` job needs, planned from the header alone.
///
/// A pure planner: a function of the probe (`ImageInfo`), the options and where the input lives; no I/O.
/// `SharePipeline` reserves `totalBytes` from its `MemoryBudget` before a job starts. The parts say where
/// the memory is, because only the first is something the pipeline can measure:
///
/// | part | what it covers | measured by |
/// |---|---|---|
/// | `meteredPixelBytes` | row buffers, resampler window, output bitmaps: what `PixelMemoryMeter` counts | `PreparedImage.peakPixelBytes` (the tests check the bound) |
/// | `unmeteredPixelBytes` | bitmaps alive beside the metered ones (the unrotated render during encode, `cpuFirst`'s kept render, alpha flattening, GIF canvases) | — |
/// | `decoderLibraryBytes` | the C decoder's own arrays: libjpeg's whole coefficient buffer for progressive files, its strip buffers and tables | — |
/// | `encoderLibraryBytes` | the C encoder's own arrays: the coefficients `optimize_coding` keeps (compacted by the shim), zlib's state | — |
/// | `outputBytes` | encoded outputs held at once during the quality search, and the metadata-only rewrite | — |
/// | `inputBytes` | the encoded input in memory, or the file read buffers | — |
/// | `metadataBytes` | metadata blocks held from the probe to the encoder, with their copies | — |
///
/// Every part is a bound for the largest fitting attempt, which is the first: later attempts are smaller
/// (`ScalePlan.shrink` only shrinks, and a smaller target never decodes at a larger DCT scale). The parts
/// are added although they peak at different steps, so the total is an over-estimate, never an
/// under-estimate.
///
/// Each format is modelled on its decoder and encoder (`JPEG/`, `PNG/`, `GIF/`): JPEG's DCT shrink-on-load
/// and libjpeg's coefficient buffers; PNG's Adam7 even rows; GIF's canvas twice (the screen and what a
/// "previous" disposal restores). `ServiceMemoryTests` checks `meteredPixelBytes` against the meter for
/// every image in `TestImages/` the pipeline supports; if a codec starts metering more, that test fails.
public struct MemoryEstimate: Sendable, Equatable, CustomStringConvertible {
    /// The size the decoder produces before resampling (after JPEG shrink-on-load), in stored orientation.
    public var decodedSize: PixelSize
    /// The first output size the fitting search tries, in stored orientation.
    public var targetSize: PixelSize
    /// Upper bound of `PreparedImage.peakPixelBytes`: what the pipeline's own meter counts.
    public var meteredPixelBytes: Int
    /// Pixel buffers alive beside the metered ones but not counted by the meter.
    public var unmeteredPixelBytes: Int
    /// Allocations inside the C decoder (libjpeg, libpng, giflib).
    public var decoderLibraryBytes: Int
    /// Allocations inside the C encoder (libjpeg, libpng/zlib, giflib).
    public var encoderLibraryBytes: Int
    /// Encoded bytes held at once: outputs kept by the quality search, the encoder's growing buffer.
    public var outputBytes: Int
    /// The encoded input in memory (`.memory`), or the read buffers of a file (`.file`).
    public var inputBytes: Int
    /// Metadata blocks and their copies, from the probe to the encoder.
    public var metadataBytes: Int

    /// The memory a job may need at its peak: the sum of the parts.
    public var totalBytes: Int {
        meteredPixelBytes + unmeteredPixelBytes + decoderLibraryBytes + encoderLibraryBytes + outputBytes
            + inputBytes + metadataBytes
    }

    /// The part the pipeline does not meter (libraries, outputs, input, metadata, unmetered bitmaps).
    public var unmeteredBytes: Int { totalBytes - meteredPixelBytes }

    /// The total and each part, for logs and test messages.
    public var description: String {
        "\(totalBytes) bytes (metered pixels \(meteredPixelBytes), other pixels \(unmeteredPixelBytes), "
            + "decoder \(decoderLibraryBytes), encoder \(encoderLibraryBytes), output \(outputBytes), "
            + "input \(inputBytes), metadata \(metadataBytes); decode \(decodedSize) → \(targetSize))"
    }

    /// Plans the memory for preparing an image with `info` (from `SharePipe.inspect`) under `options`.
    ///
    /// - Parameters:
    ///   - info: the probe of the input; only its header facts are used.
    ///   - options: the options the job runs with (caps, quality, strategy, limits).
    ///   - input: whether the encoded input is in memory for the whole job or read from a file.
    /// - Throws: `SharePipeError.invalidOptions` when `options` would be refused by `SharePipe.prepare`.
    public init(info: ImageInfo, options: PrepareOptions, input: InputResidence = .file) throws(SharePipeError) {
        self.init(info: info, options: try options.checked(), input: input)
    }

    /// Plans the memory for checked options.
    init(info: ImageInfo, options: PrepareOptions.Checked, input: InputResidence = .file) {
        self.init(plan: PreparePlan(info: info, options: options), info: info, options: options, input: input)
    }

    /// Prices `plan`, the same value `Pipeline.prepare` executes.
    init(plan: PreparePlan, info: ImageInfo, options: PrepareOptions.Checked, input: InputResidence) {
        let keptPayload = plan.metadata.kept.reduce(0) { $0 + $1.payloadByteCount }
        let target = plan.renderTarget
        let animated = plan.route == .animation
        var parts =
            animated
            ? Self.animatedGIF(info, plan: plan, options: options, keptMetadata: keptPayload)
            : FormatRegistry.descriptor(for: info.format).memory(info, plan, options, keptPayload)
        if !animated {
            // Orienting holds the render, then the rotated copy, one at a time in the meter; the rotated copy
            // is made while the unrotated render is still referenced (not metered).
            parts.metered = max(parts.metered, parts.renderedSize.area * parts.channels)
            if info.orientation != .up { parts.unmetered += parts.renderedSize.area * parts.channels }
            if plan.crop != nil {
                // A crop holds the whole upright render while it copies the window out (`StillSizes`).
                let window = plan.target.area * parts.channels
                parts.metered = max(parts.metered, parts.renderedSize.area * parts.channels + window)
            }
            if options.strategy == .cpuFirst {
                // `cpuFirst` keeps the first render (unmetered once its resampler has finished) and resamples
                // it in memory for every smaller size; the window of that resample is metered.
                parts.unmetered += parts.renderedSize.area * parts.channels
                parts.metered = max(
                    parts.metered, Self.inMemoryResampleBound(from: parts.renderedSize, channels: parts.channels))
            } else if !options.variants.isEmpty {
                // Variants keep the main output's render the same way, and resample it in memory for each.
                parts.unmetered += parts.renderedSize.area * parts.channels
                parts.metered = max(
                    parts.metered, Self.inMemoryResampleBound(from: parts.renderedSize, channels: parts.channels))
            }
        }
        // An auto search scores rows that span the picture as shown: a turned still's render is the stored one
        // transposed.
        let shownRender = info.orientation.swapsAxes ? parts.renderedSize.transposed : parts.renderedSize
        if !animated, options.qualityTarget != nil, plan.outputFormat == .jpeg, case .quality = plan.ladder {
            // `--quality auto` (`QualityLadder.attemptAuto`): the render held whole beside the scorer and its 8
            // decoded rows (metered together), first with the probe's bands; the scoring decoder's libjpeg state; a
            // render with alpha composited over white (unmetered); at most two candidate encodes beside the written
            // one (within `output`). The written file is the chosen candidate recoded (`JPEGEncoder.recode`) once
            // the render is given back: its coefficients in libjpeg's arrays, 128 bytes a block, within
            // `jpegEncoderBytes`' 140 for the compact store it replaces there, and the recode's reader state the
            // scoring decoder's, no longer alive.
            let size = shownRender
            parts.metered = max(
                parts.metered,
                size.area * parts.channels + QualityLadder.scoringBytes(size) + QualityLadder.probeBytes(size))
            parts.encoder += Self.jpegFixedBytes
            if parts.channels == 2 || parts.channels == 4 { parts.unmetered += size.area * 3 }
        }
        if !animated, options.qualityTarget != nil, plan.outputFormat == .webp, case .quality = plan.ladder {
            // `--quality auto` on a lossy WebP (`QualityLadder.attemptWebPAuto`): the render held whole beside
            // libwebp's decode of a candidate and the scorer (metered together); a gray render widened to RGB
            // (unmetered).
            let size = shownRender
            let alpha = parts.channels == 2 || parts.channels == 4
            parts.metered = max(
                parts.metered, size.area * parts.channels + WebPEncoder.scoringBytes(size, alpha: alpha))
            if parts.channels <= 2 { parts.unmetered += size.area * (alpha ? 4 : 3) }
        }
        decodedSize = parts.decodedSize
        targetSize = target
        meteredPixelBytes = parts.metered
        unmeteredPixelBytes = parts.unmetered
        decoderLibraryBytes = parts.decoder
        encoderLibraryBytes = parts.encoder
        outputBytes = parts.output
        inputBytes = input == .memory ? info.byteCount : Self.fileReadBufferBytes
        // The probe's blocks live for the whole job; the policy's kept copies and the encoder's pinned
        // marker copies exist beside them while encoding.
        metadataBytes = info.metadata.reduce(0) { $0 + $1.payloadByteCount } + 2 * keptPayload
    }

    /// Memory needed to receive an upload: the part kept in memory below the spool threshold (twice: the
    /// array grows by doubling and is copied once to its exact size), plus one chunk being copied.
    public static func receiving(spoolThreshold: Int) -> Int { 2 * spoolThreshold + spoolWriteBufferBytes }

    // MARK: - Allowances (each a bound for an allocation of fixed or format-bounded size)

    /// Read buffers of a file source: ByteReader's 64 KiB, libjpeg's 4 KiB `jpeg_stdio_src` buffer, stdio's
    /// own 4 KiB: rounded up.
    static let fileReadBufferBytes = 80 << 10
    /// One upload chunk held while it is written to the spool file.
    static let spoolWriteBufferBytes = 64 << 10
    /// libjpeg's fixed allocations per (de)compressor: the struct, Huffman and quantisation tables, range
    /// limit and IDCT tables, entropy state, pool headers (well under 100 KiB; 256 KiB allowed).
    static let jpegFixedBytes = 256 << 10
    /// Output rows libjpeg keeps per component in its strip buffers (context rows for fancy upsampling, the
    /// colour converter, the downsampler): at most 4 iMCU rows of 16 lines.
    static let jpegStripRows = 64
    /// zlib's deflate state at level 9 (about 268 KiB with default windowBits and memLevel), or inflate's
    /// state and 32 KiB window, with libpng's structs: rounded up.
    static let zlibBytes = 320 << 10
    /// A GIF frame's row of indices: a frame may be wider than the screen, but never wider than 65 535.
    static let gifFrameRowBytes = 64 << 10
    /// Colour quantisation (histogram boxes, nearest-colour caches) and LZW tables.
    static let gifCodecBytes = 512 << 10

    // MARK: - Per format

    /// The parts before the input and metadata are added.
    struct Parts {
        /// What the decoder produces before resampling.
        var decodedSize: PixelSize
        /// The bitmap a render produces (stored orientation), and its channel count.
        var renderedSize: PixelSize
        var channels: Int
        var metered: Int
        var unmetered: Int
        var decoder: Int
        var encoder: Int
        var output: Int
    }

    /// JPEG: DCT-scaled decode streamed into the resampler (`JPEGDecoder.render`), orient, libjpeg encode.
    static func jpeg(_ info: ImageInfo, plan: PreparePlan, options: PrepareOptions.Checked, keptMetadata: Int) -> Parts
    {
        let target = plan.renderTarget
        let isCMYK = info.colorModel == .cmyk || info.colorModel == .ycck
        let components = info.colorModel == .gray ? 1 : isCMYK ? 4 : 3
        let channels = info.colorModel == .gray ? 1 : 3

        // What `JPEGDecoder.render` meters for one target: the resampler, the row batch, the CMYK row.
        func render(_ wanted: PixelSize, sharp: Bool = false)
            -> (numerator: Int, decoded: PixelSize, output: PixelSize, metered: Int)
        {
            let numerator =
                sharp
                ? ScalePlan.sharpJPEGScaleNumerator(stored: info.size, target: wanted)
                : ScalePlan.jpegScaleNumerator(stored: info.size, target: wanted)
            let decoded = PixelSize(
                width: (info.size.width * numerator + 7) / 8,
                height: (info.size.height * numerator + 7) / 8)
            let output = PixelSize(width: min(wanted.width, decoded.width), height: min(wanted.height, decoded.height))
            let resampler = LanczosResampler.memoryEstimate(from: decoded, to: output, channels: channels)
            let rows = decoded.width * components * JPEGDecoder.rowBatch + (isCMYK ? decoded.width * 3 : 0)
            return (numerator, decoded, output, resampler + rows)
        }

        let main = render(target)
        var metered = main.metered
        // A JPEG output under a byte limit that bites is rendered again, sharp (`PreparePlan.sharpRenderWhenCapped`):
        // a larger DCT scale, so a wider decode, a taller resampler window and, for a progressive file, more
        // coefficients kept.
        var decode = main
        if plan.sharpRenderWhenCapped {
            decode = render(target, sharp: true)
            metered = max(metered, decode.metered)
        }
        var rewriteOutput = 0
        if plan.route == .metadataRewrite {
            // The metadata-only path first proves the data whole with a 1/8-scale decode.
            metered = max(metered, render(ScalePlan.scaled(info.size, by: 0.125)).metered)
            rewriteOutput = rewriteOutputBytes(info, keptMetadata: keptMetadata)
        }

        // libjpeg decompressor: a progressive (multi-scan) file's coefficients live in the shim's compact store
        // (`sp_jpeg_coefficients.c`), which keeps per block a non-zero map and the coefficients the DCT scale
        // reads. The probe does not report the chroma sampling: the bound is the larger of 4:4:4 (every
        // component at the luma scale) and 4:2:0 (chroma blocks a quarter as many, at twice the scale). Past
        // the band budget the file is decoded in bands (`JPEGReader.start`). The store fails past
        // `maxDecoderMemory`, so that caps it.
        let coefficients =
            info.progressive
            ? min(
                progressiveStoreBytes(
                    info.size, components: components,
                    numerator: decode.numerator,
                    budget: min(JPEGDecoder.storeBudget, options.limits.maxDecoderMemory / 2),
                    maxBands: JPEGDecoder.maxBands),
                options.limits.maxDecoderMemory) : 0
        var decoder = jpegFixedBytes + coefficients + (decode.decoded.width + 16) * components * jpegStripRows
        if plan.route == .losslessTurn {
            // `JPEGTurner` (it falls back to the still route, priced above): the input read whole, TurboJPEG's
            // source coefficient arrays and the turned ones (128 bytes per block, blocks padded to the MCU),
            // its output buffer and our copy; the rewriter's output and its 1/8-scale check decode.
            let blocks = ((info.size.width + 15) / 16 + 1) * ((info.size.height + 15) / 16 + 1) * 4
            decoder += info.byteCount + 2 * components * blocks * 128 + jpegFixedBytes
            rewriteOutput =
                2 * (info.byteCount + keptMetadata + 1024) + rewriteOutputBytes(info, keptMetadata: keptMetadata)
            metered = max(metered, render(ScalePlan.scaled(info.size, by: 0.125)).metered)
        }

        return Parts(
            decodedSize: main.decoded, renderedSize: main.output, channels: channels, metered: metered,
            unmetered: 0, decoder: decoder,
            encoder: jpegEncoderBytes(main.output, channels: channels, capped: plan.byteLimit != nil),
            output: max(
                jpegOutputBytes(
                    main.output, channels: channels, keptMetadata: keptMetadata, capped: plan.byteLimit != nil),
                rewriteOutput))
    }

    /// PNG (`PNGDecoder.render`): no shrink-on-load; one row at a time, or for Adam7 the even rows
    /// (⌈height / 2⌉ rows) held until the last pass; 16-bit rows widened to Float; encoded as PNG (reduced
    /// to gray or a palette where lossless), or as JPEG where `allowFormatChange` lets it.
    static func png(_ info: ImageInfo, plan: PreparePlan, options: PrepareOptions.Checked, keptMetadata: Int) -> Parts {
        let target = plan.renderTarget
        // `PNGRowFormat`: libpng's expanded rows (palette → RGB, tRNS → alpha, 1/2/4-bit → 8).
        let channels: Int
        switch info.colorModel {
        case .gray: channels = info.hasAlpha ? 2 : 1
        case .grayAlpha: channels = 2
        case .rgb, .palette: channels = info.hasAlpha ? 4 : 3
        default: channels = 4
        }
        let size = info.size
        let rowBytes = size.width * channels * (info.bitDepth == 16 ? 2 : 1)
        let rows = info.progressive ? ((size.height + 1) / 2 + 1) * rowBytes : rowBytes
        let floatRow = info.bitDepth == 16 ? size.width * channels * 4 : 0

        func render(_ wanted: PixelSize) -> (output: PixelSize, metered: Int) {
            let output = PixelSize(width: min(wanted.width, size.width), height: min(wanted.height, size.height))
            return (
                output, LanczosResampler.memoryEstimate(from: size, to: output, channels: channels) + rows + floatRow
            )
        }
        let main = render(target)
        var metered = main.metered
        if info.pngAnimation != nil {
            // An APNG as a still is its first frame composited onto an RGBA canvas (`APNGStill`).
            metered +=
                APNGFrameSource.meteredBytes(info)
                + LanczosResampler.memoryEstimate(from: size, to: main.output, channels: 4)
        }
        var rewriteOutput = 0
        if plan.route == .metadataRewrite {
            metered = max(metered, render(ScalePlan.scaled(size, by: 0.125)).metered)
            rewriteOutput = rewriteOutputBytes(info, keptMetadata: keptMetadata)
        }
        let out = main.output
        // `PNGStoredImage`: alpha dropped, gray made, first-seen palette slots and indices: copies of the output.
        let unmetered = out.area * channels * 2 + out.area * 2
        // 8-bit RGBA with a filter byte per row, and deflate's worst-case growth (5 bytes per 16 KiB block).
        let raw = out.area * 4 + out.height
        let onePNG = raw + raw / 1000 + 1024 + keptMetadata + info.pngStructuralChunks.reduce(0) { $0 + $1.data.count }
        // At zlib 9 the encoder keeps both filter strategies' files; each is libpng's buffer and its copy.
        var output = max(4 * onePNG + onePNG, rewriteOutput)
        var encoder = zlibBytes + 2 * (out.width * 4 + 1) * 2
        if options.allowFormatChange {
            let jpegChannels = channels <= 2 ? 1 : 3
            encoder += jpegEncoderBytes(out, channels: jpegChannels)
            output = max(output, jpegOutputBytes(out, channels: jpegChannels, keptMetadata: keptMetadata))
        }
        return Parts(
            decodedSize: size, renderedSize: out, channels: channels, metered: metered,
            unmetered: unmetered + (options.allowFormatChange ? out.area * 3 : 0),  // flattened over white
            decoder: zlibBytes + 2 * (rowBytes + 1) + (64 << 10), encoder: encoder, output: output)
    }

    /// A still GIF, or the first frame of an animation a service shows as a still (`GIFDecoder.render`):
    /// rows straight into the resampler, or through an RGBA canvas of the screen when the frame does not
    /// cover it; encoded as a one-frame GIF (`GIFEncoder`).
    static func stillGIF(_ info: ImageInfo, plan: PreparePlan, options: PrepareOptions.Checked, keptMetadata: Int)
        -> Parts
    {
        let target = plan.renderTarget
        let screen = info.size
        let channels = info.hasAlpha ? 4 : 3
        let out = PixelSize(width: min(target.width, screen.width), height: min(target.height, screen.height))
        // The canvas, and the rectangle a "restore to previous" first frame saves, each up to the screen.
        let canvas = 2 * screen.area * 4
        let metered =
            LanczosResampler.memoryEstimate(from: screen, to: out, channels: channels)
            + screen.width * channels + canvas + gifFrameRowBytes
        // `GIFEncoder`: an RGBA copy and the indices of the output.
        let unmetered = out.area * 4 + out.area
        // LZW codes are at most 12 bits per pixel: 1.5 bytes, plus sub-block lengths and headers.
        let oneGIF = out.area * 3 / 2 + out.area / 255 + 2048 + keptMetadata
        let rewriteOutput = plan.route == .metadataRewrite ? rewriteOutputBytes(info, keptMetadata: keptMetadata) : 0
        return Parts(
            decodedSize: screen, renderedSize: out, channels: channels, metered: metered, unmetered: unmetered,
            decoder: gifCodecBytes, encoder: gifCodecBytes, output: max(6 * oneGIF, rewriteOutput))
    }

    /// The animation route (`AnimationRoute`): the source's canvases — GIF's native pass holds the canvas
    /// (RGBA) and the rectangle a "previous" disposal restores (up to a second canvas); a frame source (APNG,
    /// WebP) what its descriptor's `meteredBytes` says — then, at the output size, the viewer model, the
    /// picture being written, the next one, its indices and its changed pixels; the resampler between them.
    static func animatedGIF(_ info: ImageInfo, plan: PreparePlan, options: PrepareOptions.Checked, keptMetadata: Int)
        -> Parts
    {
        let target = plan.renderTarget
        let screen = info.size
        let out = target
        var source = 2 * screen.area * 4 + gifFrameRowBytes
        var decoder = gifCodecBytes
        if case .frames(_, let sourceBytes)? = FormatRegistry.descriptor(for: info.format).animation {
            // A frame's compressed data, which the source (or libwebp's input buffer) holds, is at most the file.
            source = sourceBytes(info)
            decoder += info.byteCount
        }
        var metered =
            source
            + LanczosResampler.memoryEstimate(from: screen, to: out, channels: 4)
            + 3 * out.area * 4 + out.area + out.area * 4
        if case .frames? = FormatRegistry.descriptor(for: info.format).animation {
            // A frame-dropping pass from a frame source resamples the dropped frames too (for its spill) while
            // the encoder holds the last kept picture: one picture more (`AnimationFramesPass`).
            metered += out.area * 4
        }
        // The changed-pixel mask (one Bool per output pixel) and the frame summary (a record and a possible
        // local colour table per frame).
        var unmetered = out.area + info.frameCount * 1024
        // The writer streams each pass's output to a temporary file through a 64 KiB buffer; the one that fits
        // is read back whole, once, when the caller takes bytes (the server; a batch copies the file to its
        // place instead). LZW's bound (1.5 bytes per pixel per frame) is far above what frame differencing
        // produces, so the output is bounded by 4 × the larger of the input and the byte limit (a practical
        // bound, not a strict one), and by LZW's, whichever is smaller.
        let lzw = info.frameCount * (out.area * 3 / 2 + out.area / 255 + 1024)
        let practical = 4 * max(info.byteCount, options.animatedMaxBytes ?? 0) + (1 << 20)
        var output = min(lzw, practical) + keptMetadata + 2048 + (64 << 10)
        if plan.metadataCopyFirst { output = max(output, rewriteOutputBytes(info, keptMetadata: keptMetadata)) }
        if case .video = plan.ladder {
            // The video route holds no GIF encoder state but OpenH264's pictures (`H264Encoder.meteredBytes`);
            // its output is bounded like the GIF's.
            metered += H264Encoder.meteredBytes(for: out)
            if let rate = options.video.minFrameRate {
                // A minimum frame rate adds samples that repeat a picture (`FramePacing`), each a size and a start
                // in the writer's tables and their boxes (about 24 bytes): at most the longest video at that rate,
                // and at most `VideoRoute.mostRepeats`.
                let repeats = options.video.maxDurationMilliseconds.map { $0 / 1000 * rate + rate } ?? Int.max
                unmetered += min(repeats, VideoRoute.mostRepeats) * 24
            }
        }
        return Parts(
            decodedSize: screen, renderedSize: out, channels: 4, metered: metered, unmetered: unmetered,
            decoder: decoder, encoder: gifCodecBytes, output: output)
    }

    // MARK: - Shared pieces

    /// The rewritten file is at most the input plus the kept metadata; its array grows by doubling.
    static func rewriteOutputBytes(_ info: ImageInfo, keptMetadata: Int) -> Int {
        2 * (info.byteCount + keptMetadata + 1024)
    }

    /// Bound of the compact coefficient store for a multi-scan JPEG decoded at `numerator`/8: the blocks
    /// (padded to the MCU) times the store's per-block bound, plus its windows of expanded block rows
    /// (6 iMCU rows of up to 2 block rows per component, 128 bytes a block) and row tables.
    ///
    /// With a band `budget` (bytes, 0: none) the store keeps values only for a band of rows and shrinks the
    /// band to stay within the budget: it then holds the budget, or, when the non-zero map of every block
    /// (a summary byte and up to 8 map bytes each) and the smallest band (1/`maxBands` of the image plus the
    /// margins of 9 iMCU rows, up to 2 block rows each) exceed it, those; plus one window's growth between
    /// two checks. (A Huffman-coded file's reads keep nothing outside their band, not even the maps: each scan
    /// is read over the band's rows only; the maps stay in the bound for arithmetic-coded and multi-scan
    /// baseline files, which the probe does not tell apart.) A banded decode also keeps the entropy decoder's
    /// checkpoints, at most `sp_jpeg_band_skip_table_bytes` for `JPEGReader.maxScans` scans.
    static func progressiveStoreBytes(
        _ size: PixelSize, components: Int, numerator: Int, budget: Int = 0,
        maxBands: Int = 1
    ) -> Int {
        let blocksWide = (size.width + 7) / 8 + 2, blocksHigh = (size.height + 7) / 8 + 2
        let blocks = blocksWide * blocksHigh
        func perBlock(_ scaled: Int) -> Int { Int(sp_jpeg_coefficient_store_block_bound(Int32(scaled))) }
        let full = components * blocks * perBlock(numerator)
        let subsampled =
            blocks * perBlock(numerator) + (components - 1) * (blocks / 4 + blocksWide) * perBlock(2 * numerator)
        let windows = components * 12 * blocksWide * 128
        let tables = components * blocksHigh * 24
        let whole = max(full, subsampled) + windows + tables
        guard budget > 0, maxBands > 1 else { return whole }
        let maps = components * blocks * 9
        let smallestBand = max(full, subsampled) * (blocksHigh / maxBands + 1 + 9 * 2) / blocksHigh
        let checkpoints = Int(sp_jpeg_band_skip_table_bytes(Int32(JPEGReader.maxScans)))
        return min(whole, max(budget, maps + smallestBand) + windows + tables) + checkpoints
    }

    /// libjpeg's compressor with `optimize_coding` (always on in `JPEGEncoder`) keeps every coefficient of
    /// the output for its second pass: 4:2:0 is 6 blocks of 128 bytes per 16×16 MCU (≈ w × h × 1.5 × 2
    /// bytes), gray one block per 8×8. Plus its strip buffers and fixed tables.
    /// `capped` (a colour output under a byte limit, `QualityLadder`): the 4:4:4 search's encodes, 3 blocks per
    /// 8×8 (twice 4:2:0's), and the chroma choice's scorer (`JPEGEncoder.ssimulacra2`: a decoder's fixed tables,
    /// its 8 rows and the streaming scorer).
    static func jpegEncoderBytes(_ out: PixelSize, channels: Int, capped: Bool = false) -> Int {
        // The coefficients live in the shim's compact store (`sp_jpeg_encode_store.c`): usually a fraction of
        // libjpeg's 128 bytes a block, at worst (every coefficient non-zero) a 64-bit map beside all 64 (a row
        // never stores more than 16-bit values) and a 4-byte header per block row (4 bytes a block bound it),
        // plus a window of one iMCU row of full blocks.
        let blocksWide = (out.width + 7) / 8, blocksHigh = (out.height + 7) / 8
        let coefficients =
            channels == 1
            ? blocksWide * blocksHigh * 140 + blocksWide * 128
            : capped
                ? blocksWide * blocksHigh * 3 * 140 + blocksWide * 3 * 128
                : ((out.width + 15) / 16) * ((out.height + 15) / 16) * 6 * 140 + ((out.width + 15) / 16) * 6 * 128
        let chromaScorer = capped && channels == 3 ? jpegFixedBytes + QualityLadder.scoringBytes(out) : 0
        return jpegFixedBytes + coefficients + (out.width + 16) * channels * jpegStripRows + chromaScorer
    }

    /// Encoded JPEGs held at once: the quality search can hold the ceiling's, the floor's and the best fit's
    /// while a fourth is copied out of libjpeg's destination buffer (which doubles: 2×) — 6 outputs. One
    /// output is bounded by one byte per coded sample (4:2:0: 1.5 per pixel): noise at quality 100 measures
    /// 0.45 (`ServiceMemoryTests.noiseAtQuality100FitsTheOutputAllowance`).
    /// `capped` (a colour output under a byte limit): the 4:4:4 search holds its 6 beside the 4:2:0 answer, each
    /// bounded by 3 bytes a pixel (and at the end the two fits and their two baseline twins: fewer).
    static func jpegOutputBytes(_ out: PixelSize, channels: Int, keptMetadata: Int, capped: Bool = false) -> Int {
        if capped && channels == 3 { return 7 * max(out.area * 3 + keptMetadata + 4096, 64 << 10) }
        let samples = channels == 1 ? out.area : (out.area * 3 + 1) / 2
        return 6 * max(samples + keptMetadata + 4096, 64 << 10)
    }

    /// The largest window `InMemoryResample` may meter when `cpuFirst` resamples a kept render of `kept`
    /// to any smaller size: the largest over the shrink factors the fitting search can reach.
    static func inMemoryResampleBound(from kept: PixelSize, channels: Int) -> Int {
        var largest = 0
        var factor = 0.9
        while factor > 0.02 {
            let size = ScalePlan.scaled(kept, by: factor)
            largest = max(largest, LanczosResampler.memoryEstimate(from: kept, to: size, channels: channels))
            factor -= 0.01
        }
        return largest
    }
}

extension MetadataBlock {
    /// Bytes of the block's payload.
    var payloadByteCount: Int {
        switch self {
        case .exif(let bytes), .xmp(let bytes), .extendedXMP(let bytes), .iptc(let bytes), .icc(let bytes),
            .comment(let bytes):
            return bytes.count
        case .pngText(let type, let data): return type.utf8.count + data.count
        case .other(let tag, let data): return tag.utf8.count + data.count
        // Not held: the probe keeps only where the video lies; a copy keeping it is within the input's size.
        case .embeddedVideo: return 0
        }
    }
}
