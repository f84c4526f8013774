import CSharePipe
import Foundation
import Testing
@testable import SharePipe

/// `MemoryEstimate`: the planner by a table of cases, and its bound against the pipeline's own meter on
/// every committed test image the pipeline supports.
@Suite struct ServiceMemoryTests {
    // MARK: - The planner, by table

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var info: ImageInfo
        var options: PrepareOptions = PrepareOptions()
        var input: InputResidence = .file
        var decoded: PixelSize
        var target: PixelSize
        /// The metered part, worked out by hand from the decoder's buffers.
        var metered: Int
        var testDescription: String { name }
    }

    static func info(
        _ format: ImageFormat, _ width: Int, _ height: Int, _ color: ColorModel = .rgb,
        progressive: Bool = false, orientation: Int = 1, bitDepth: Int = 8, alpha: Bool = false,
        frames: Int = 1, bytes: Int = 1_000_000
    ) -> ImageInfo {
        ImageInfo(
            format: format, size: PixelSize(width: width, height: height), colorModel: color, bitDepth: bitDepth,
            progressive: progressive, orientation: Orientation(exifValue: orientation),
            storedOrientationValue: orientation, frameCount: frames, hasAlpha: alpha, metadata: [], byteCount: bytes)
    }

    /// A 4032×3024 HEIC stored as an iPhone stores it: 8×6 tiles of 512×512, 4:2:0, no transform.
    static func gridInfo() -> ImageInfo {
        var grid = info(.heif, 4032, 3024)
        grid.heifGrid = HEIFGrid(
            columns: 8, rows: 6, size: PixelSize(width: 4032, height: 3024),
            tileSize: PixelSize(width: 512, height: 512), chroma: 1, parameterSets: [[]],
            tileParameterSets: Array(repeating: 0, count: 48), tileExtents: Array(repeating: [], count: 48),
            orientation: .up, tileColour: nil,
            bitstreamColour: HEIFGrid.Colour(primaries: 1, transfer: 13, matrix: 6, fullRange: true))
        return grid
    }

    static func window(_ from: (Int, Int), _ to: (Int, Int), _ channels: Int) -> Int {
        LanczosResampler.memoryEstimate(
            from: PixelSize(width: from.0, height: from.1),
            to: PixelSize(width: to.0, height: to.1), channels: channels)
    }

    static let cases: [Case] = {
        var cpuFirst = PrepareOptions()
        cpuFirst.strategy = .cpuFirst
        return [
            // 4000×3000 → 1440×1080: DCT scale 3/8 decodes 1500×1125; 16 RGB rows of 1500 are the batch.
            Case(
                name: "12 MP baseline JPEG", info: info(.jpeg, 4000, 3000),
                decoded: PixelSize(width: 1500, height: 1125), target: PixelSize(width: 1440, height: 1080),
                metered: window((1500, 1125), (1440, 1080), 3) + 1500 * 3 * 16),
            Case(
                name: "12 MP progressive JPEG", info: info(.jpeg, 4000, 3000, progressive: true),
                decoded: PixelSize(width: 1500, height: 1125), target: PixelSize(width: 1440, height: 1080),
                metered: window((1500, 1125), (1440, 1080), 3) + 1500 * 3 * 16),
            // Under a byte limit the JPEG output is rendered again, sharp: scale 6/8 decodes 3000×2250, and its
            // resampler and row batch are what the meter can reach (the decode reported is the first, 3/8).
            Case(
                name: "12 MP JPEG under a byte limit", info: info(.jpeg, 4000, 3000),
                options: PrepareOptions(maxBytes: 200_000),
                decoded: PixelSize(width: 1500, height: 1125), target: PixelSize(width: 1440, height: 1080),
                metered: window((3000, 2250), (1440, 1080), 3) + 3000 * 3 * 16),
            // 8000×6000 → 1440×1080: scale 2/8 decodes 2000×1500.
            Case(
                name: "48 MP baseline JPEG", info: info(.jpeg, 8000, 6000, bytes: 12_000_000),
                decoded: PixelSize(width: 2000, height: 1500), target: PixelSize(width: 1440, height: 1080),
                metered: window((2000, 1500), (1440, 1080), 3) + 2000 * 3 * 16),
            // Orientation 6: the caps apply to the displayed 4000×3000; the decoder works on stored 3000×4000.
            Case(
                name: "rotated JPEG", info: info(.jpeg, 3000, 4000, orientation: 6),
                decoded: PixelSize(width: 1125, height: 1500), target: PixelSize(width: 1080, height: 1440),
                metered: window((1125, 1500), (1080, 1440), 3) + 1125 * 3 * 16),
            Case(
                name: "gray JPEG", info: info(.jpeg, 2000, 1500, .gray),
                decoded: PixelSize(width: 1500, height: 1125), target: PixelSize(width: 1440, height: 1080),
                metered: window((1500, 1125), (1440, 1080), 1) + 1500 * 1 * 16),
            // CMYK: four components decoded, converted to RGB one row at a time; never a metadata rewrite.
            Case(
                name: "CMYK JPEG, no resize", info: info(.jpeg, 400, 400, .cmyk),
                decoded: PixelSize(width: 400, height: 400), target: PixelSize(width: 400, height: 400),
                metered: window((400, 400), (400, 400), 3) + 400 * 4 * 16 + 400 * 3),
            // No resize, upright: the metadata rewrite's 1/8 probe decode is smaller than the full render.
            Case(
                name: "small JPEG held in memory", info: info(.jpeg, 600, 400, bytes: 5_000), input: .memory,
                decoded: PixelSize(width: 600, height: 400), target: PixelSize(width: 600, height: 400),
                metered: window((600, 400), (600, 400), 3) + 600 * 3 * 16),
            Case(
                name: "cpuFirst JPEG", info: info(.jpeg, 4000, 3000), options: cpuFirst,
                decoded: PixelSize(width: 1500, height: 1125), target: PixelSize(width: 1440, height: 1080),
                metered: max(
                    window((1500, 1125), (1440, 1080), 3) + 1500 * 3 * 16,
                    MemoryEstimate.inMemoryResampleBound(from: PixelSize(width: 1440, height: 1080), channels: 3))),
            // Adam7: ⌈6000 / 2⌉ even rows of 4000 RGBA pixels wait for the last pass (plus the odd row).
            Case(
                name: "interlaced RGBA PNG", info: info(.png, 4000, 6000, .rgba, progressive: true, alpha: true),
                decoded: PixelSize(width: 4000, height: 6000), target: PixelSize(width: 1080, height: 1620),
                metered: window((4000, 6000), (1080, 1620), 4) + 3001 * 4000 * 4),
            // 16-bit rows arrive as bytes and are widened to Float before the resampler.
            Case(
                name: "16-bit RGB PNG", info: info(.png, 3000, 2000, .rgb, bitDepth: 16),
                decoded: PixelSize(width: 3000, height: 2000), target: PixelSize(width: 1620, height: 1080),
                metered: window((3000, 2000), (1620, 1080), 3) + 3000 * 3 * 2 + 3000 * 3 * 4),
            // HEIF: libheif's whole-image planes (priced at 4:4:4, twice while decoding), then Float rows.
            Case(
                name: "12 MP HEIC", info: info(.heif, 4032, 3024),
                decoded: PixelSize(width: 4032, height: 3024), target: PixelSize(width: 1440, height: 1080),
                metered: 2 * 3 * 4032 * 3024 + window((4032, 3024), (1440, 1080), 3) + 4032 * 3 * 4),
            // A grid HEIC of 8×6 HEVC tiles (the tile route): one row of tiles (4:2:0) and two libde265 decoders
            // instead of the whole image's planes (the plan settled everything that would need libheif).
            Case(
                name: "12 MP grid HEIC", info: gridInfo(),
                decoded: PixelSize(width: 4032, height: 3024), target: PixelSize(width: 1440, height: 1080),
                metered: 4032 * 512 + 2 * 2016 * 256 + 2 * (512 * 512 * 6 + (256 << 10))
                    + window((4032, 3024), (1440, 1080), 3) + 4032 * 3 * 4),
            // Animated: canvas and saved rectangle at the screen size, pictures and the viewer model at the output.
            Case(
                name: "animated GIF", info: info(.gif, 500, 280, .palette, frames: 40, bytes: 400_000),
                decoded: PixelSize(width: 500, height: 280), target: PixelSize(width: 500, height: 280),
                metered: 2 * 500 * 280 * 4 + MemoryEstimate.gifFrameRowBytes + window((500, 280), (500, 280), 4)
                    + 3 * 500 * 280 * 4 + 500 * 280 + 500 * 280 * 4),
        ]
    }()

    @Test(arguments: cases)
    func plansTheDecodeAndTheMeteredBuffers(_ row: Case) throws {
        let estimate = try MemoryEstimate(info: row.info, options: row.options, input: row.input)
        #expect(estimate.decodedSize == row.decoded)
        #expect(estimate.targetSize == row.target)
        #expect(estimate.meteredPixelBytes == row.metered, "\(estimate)")
        #expect(estimate.totalBytes == estimate.meteredPixelBytes + estimate.unmeteredBytes)
        #expect(estimate.inputBytes == (row.input == .memory ? row.info.byteCount : MemoryEstimate.fileReadBufferBytes))
    }

    @Test func progressiveJPEGAddsTheCompactCoefficientStore() throws {
        let baseline = try MemoryEstimate(info: Self.info(.jpeg, 4000, 3000), options: PrepareOptions())
        let progressive = try MemoryEstimate(
            info: Self.info(.jpeg, 4000, 3000, progressive: true), options: PrepareOptions())
        // Decoded at 3/8: the store keeps per block a summary byte, up to 8 bytes of non-zero map and 11
        // coefficients (the 3×3 IDCT's and smoothing's ten), 31 bytes, for 3 components (4:4:4 is the larger
        // bound) — well under libjpeg's own 128 bytes per block (72 MB here). That is over the band budget: the
        // file is decoded in bands and the store holds the budget.
        let extra = progressive.decoderLibraryBytes - baseline.decoderLibraryBytes
        #expect(extra >= min(500 * 375 * 3 * 31, JPEGDecoder.storeBudget))
        #expect(extra < JPEGDecoder.storeBudget + 4 << 20)  // plus windows of expanded rows and row tables
        #expect(progressive.meteredPixelBytes == baseline.meteredPixelBytes)  // the meter never sees it
    }

    /// The estimate's store part against the store's measured peak, for every progressive committed image
    /// decoded at the scale the estimate plans.
    @Test func theStoreBoundHoldsForTheCommittedProgressiveImages() throws {
        let files = ProgressiveStoreTests.files().filter { !$0.contains("/broken/") && !$0.contains("/Fuzz/") }
        var checked = 0
        for path in files {
            guard let info = try? SharePipe.inspect(.file(path: path)), info.progressive else { continue }
            let estimate = try MemoryEstimate(info: info, options: PrepareOptions())
            let numerator = ScalePlan.jpegScaleNumerator(stored: info.size, target: estimate.targetSize)
            let measured = ProgressiveStoreTests.decode(path, scale: numerator, full: false)
            #expect(measured.status == SP_OK, "\(path)")
            let components = info.colorModel == .gray ? 1 : 3
            let bound = MemoryEstimate.progressiveStoreBytes(info.size, components: components, numerator: numerator)
            #expect(
                measured.storePeak > 0 && measured.storePeak <= bound, "\(path): store \(measured.storePeak) > \(bound)"
            )
            // In bands, with a budget of a third of the one-decode peak: the banded bound holds too.
            let budget = measured.storePeak / 3
            let banded = ProgressiveStoreTests.decode(
                path, scale: numerator, full: false, bands: JPEGDecoder.maxBands,
                budget: budget)
            let bandedBound = MemoryEstimate.progressiveStoreBytes(
                info.size, components: components, numerator: numerator,
                budget: budget, maxBands: JPEGDecoder.maxBands)
            #expect(banded.status == SP_OK && banded.pixels == measured.pixels, "\(path) in bands")
            #expect(banded.storePeak <= bandedBound, "\(path): banded store \(banded.storePeak) > \(bandedBound)")
            checked += 1
        }
        #expect(checked >= 10)
    }

    @Test func libjpegsCoefficientBufferIsCappedByTheDecoderMemoryLimit() throws {
        var options = PrepareOptions()
        // 8000×6000: the non-zero maps of every block (up to 20 MB) and the smallest of 8 bands exceed a
        // 10 MB budget (half the limit), and the limit caps them.
        options.limits.maxDecoderMemory = 20 << 20
        let capped = try MemoryEstimate(info: Self.info(.jpeg, 8000, 6000, progressive: true), options: options)
        let baseline = try MemoryEstimate(info: Self.info(.jpeg, 8000, 6000), options: options)
        #expect(capped.decoderLibraryBytes - baseline.decoderLibraryBytes == 20 << 20)
    }

    @Test func encoderBuffersFollowTheOutputNotTheInput() throws {
        let small = try MemoryEstimate(info: Self.info(.jpeg, 4000, 3000), options: PrepareOptions())
        let large = try MemoryEstimate(info: Self.info(.jpeg, 8000, 6000), options: PrepareOptions())
        #expect(small.encoderLibraryBytes == large.encoderLibraryBytes)
        // optimize_coding: 1440×1080 at 4:2:0 is 90 × 68 MCUs of 6 blocks of 128 bytes ≈ w × h × 1.5 × 2.
        #expect(small.encoderLibraryBytes >= 90 * 68 * 6 * 128)
        #expect(small.outputBytes >= 6 * 1440 * 1080 * 3 / 2)
    }

    @Test func anInputHeldInMemoryIsCountedWhole() throws {
        let info = Self.info(.jpeg, 4000, 3000, bytes: 9_000_000)
        let onDisk = try MemoryEstimate(info: info, options: PrepareOptions(), input: .file)
        let inMemory = try MemoryEstimate(info: info, options: PrepareOptions(), input: .memory)
        #expect(inMemory.totalBytes - onDisk.totalBytes == 9_000_000 - MemoryEstimate.fileReadBufferBytes)
    }

    @Test func rotationAndCPUFirstAddUnmeteredBitmaps() throws {
        let upright = try MemoryEstimate(info: Self.info(.jpeg, 3000, 4000), options: PrepareOptions())
        let rotated = try MemoryEstimate(info: Self.info(.jpeg, 3000, 4000, orientation: 6), options: PrepareOptions())
        #expect(upright.unmeteredPixelBytes == 0)
        #expect(rotated.unmeteredPixelBytes == 1080 * 1440 * 3)
        var options = PrepareOptions()
        options.strategy = .cpuFirst
        let kept = try MemoryEstimate(info: Self.info(.jpeg, 3000, 4000), options: options)
        #expect(kept.unmeteredPixelBytes == 1080 * 1440 * 3)
    }

    @Test func receivingAnUploadReservesTheThresholdTwiceAndAChunk() {
        #expect(MemoryEstimate.receiving(spoolThreshold: 1 << 20) == (2 << 20) + MemoryEstimate.spoolWriteBufferBytes)
    }

    // MARK: - The bound, against the meter

    /// Options the upper-bound check runs every image under.
    static let boundOptions: [(String, PrepareOptions)] = {
        var cpuFirst = PrepareOptions()
        cpuFirst.strategy = .cpuFirst
        return [("default", PrepareOptions()), ("x", ServiceProfile.x.options()), ("cpuFirst", cpuFirst)]
    }()

    /// Every image in every `TestImages/` folder (but `broken/`) under each option set: the estimate's
    /// metered part is at least `PreparedImage.peakPixelBytes`. Formats the pipeline does not read yet, and
    /// images refused at the header, are skipped and listed.
    @Test func estimateIsAnUpperBoundOfTheMeteredPeakForEveryTestImage() throws {
        let root = Fixtures.path("")
        let folders = try FileManager.default.contentsOfDirectory(atPath: root).sorted().filter {
            $0 != "broken" && FileIO.isDirectory(root + $0)
        }
        var report = ["image | options | estimate (metered) | measured peakPixelBytes | estimate (total) | headroom"]
        var skipped: [String] = []
        var measured = 0
        for folder in folders {
            let files = try FileManager.default.contentsOfDirectory(atPath: root + folder).sorted()
                .filter { !$0.hasPrefix(".") && !Batch.isSidecar($0) }
            for file in files {
                let source = ImageSource.file(path: root + folder + "/" + file)
                let info: ImageInfo
                do {
                    info = try SharePipe.inspect(source)
                } catch let error as SharePipeError {
                    skipped.append("\(folder)/\(file): \(error.kind)")
                    continue
                }
                for (label, options) in Self.boundOptions {
                    let estimate = try MemoryEstimate(info: info, options: options)
                    let result: PreparedImage
                    do {
                        result = try SharePipe.prepare(source, options: options)
                    } catch let error as SharePipeError {
                        skipped.append("\(folder)/\(file) [\(label)]: \(error.kind)")
                        continue
                    }
                    measured += 1
                    #expect(
                        result.peakPixelBytes <= estimate.meteredPixelBytes,
                        "\(folder)/\(file) [\(label)]: measured \(result.peakPixelBytes) > estimated \(estimate.meteredPixelBytes)"
                    )
                    // The planner's first size is the pipeline's (displayed orientation in the attempts).
                    if let first = result.attempts.first {
                        // Stills plan in stored orientation; an animation plans its oriented canvas.
                        let planned =
                            info.orientation.swapsAxes && PreparePlan(info: info, options: options).route != .animation
                            ? estimate.targetSize.transposed : estimate.targetSize
                        #expect(
                            first.size.width <= planned.width && first.size.height <= planned.height,
                            "\(folder)/\(file) [\(label)]: first attempt \(first.size), planned \(planned)")
                    }
                    let headroom = Double(estimate.meteredPixelBytes) / Double(max(1, result.peakPixelBytes))
                    report.append(
                        "\(folder)/\(file) | \(label) | \(estimate.meteredPixelBytes) | \(result.peakPixelBytes) | "
                            + "\(estimate.totalBytes) | \(String(format: "%.2f", headroom))×")
                }
            }
        }
        print(report.joined(separator: "\n"))
        print("skipped: " + (skipped.isEmpty ? "none" : skipped.joined(separator: "; ")))
        #expect(measured > 0)
    }

    /// An animated APNG or WebP job counts its frame source's buffers in the job's meter: `peakPixelBytes` is at
    /// least the canvases the source holds at once (APNG: its canvas; WebP: its canvas and libwebp's buffer for
    /// a first frame as large as the canvas), and the estimate still bounds it. The output is 4 pixels high so
    /// that everything else the estimate prices stays under one canvas (checked): a source counting in a meter
    /// of its own would fail the first bound.
    @Test(arguments: [
        ("apng/dispose-blend.png", 1), ("apng/exif-gps-orient6.png", 1), ("webp/animated.webp", 2),
        ("webp/disposals-mixed.webp", 2), ("webp/disposals-lossy.webp", 2),
    ])
    func animationSourcesCountTheirCanvasesInTheJobsMeter(_ file: String, _ canvases: Int) throws {
        var options = ServiceProfile.x.options()
        options.maxShortEdge = 4
        let source = ImageSource.file(path: Fixtures.path(file))
        let info = try SharePipe.inspect(source)
        #expect(info.frameCount > 1)
        #expect(PreparePlan(info: info, options: options).route == .animation)
        guard case .frames(_, let sourceBytes)? = FormatRegistry.descriptor(for: info.format).animation else {
            Issue.record("\(file): no frame source")
            return
        }
        let result = try SharePipe.prepare(source, options: options)
        #expect(result.format == .gif && result.frameCount == info.frameCount)
        let estimate = try MemoryEstimate(info: info, options: options)
        let canvasBytes = info.size.area * 4
        #expect(estimate.meteredPixelBytes - sourceBytes(info) < canvasBytes, "\(file): \(estimate)")
        #expect(result.peakPixelBytes >= canvases * canvasBytes, "\(file): peak \(result.peakPixelBytes)")
        #expect(
            result.peakPixelBytes <= estimate.meteredPixelBytes, "\(file): peak \(result.peakPixelBytes), \(estimate)")
    }

    /// Shrinking under a tight byte limit re-renders at smaller sizes; every attempt stays within the plan.
    @Test func fittingAttemptsStayUnderTheFirstAttemptsPlan() throws {
        let source = ImageSource.file(path: Fixtures.path("jpeg/noisy-2000x1500.jpg"))
        let info = try SharePipe.inspect(source)
        for strategy in FitStrategy.allCases {
            var options = PrepareOptions(maxBytes: 12_000)
            options.strategy = strategy
            let result = try SharePipe.prepare(source, options: options)
            #expect(Set(result.attempts.map(\.size)).count > 1, "the byte limit should force smaller sizes")
            #expect(result.peakPixelBytes <= (try MemoryEstimate(info: info, options: options).meteredPixelBytes))
        }
    }

    /// The output allowance (one byte per coded sample) holds for pure noise at quality 100.
    @Test func noiseAtQuality100FitsTheOutputAllowance() throws {
        let source = ImageSource.file(path: Fixtures.path("jpeg/noisy-2000x1500.jpg"))
        let options = PrepareOptions(maxShortEdge: 1499, quality: 100, minQuality: 100)
        let result = try SharePipe.prepare(source, options: options)
        let estimate = try MemoryEstimate(info: try SharePipe.inspect(source), options: options)
        print(
            "noise at quality 100: \(result.byteCount) bytes for \(result.size), "
                + "\(String(format: "%.2f", Double(result.byteCount) / Double(result.size.area * 3 / 2))) bytes per 4:2:0 sample"
        )
        #expect(result.method == .reencoded)
        #expect(6 * result.byteCount <= estimate.outputBytes)
    }
}
