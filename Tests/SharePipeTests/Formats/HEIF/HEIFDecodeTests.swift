import CSharePipe
import Foundation
import Testing
@testable import SharePipe

/// The HEIF/AVIF codec layer on the committed images in TestImages/heif (made by scripts/fixtures/make-test-images):
/// header facts, metadata items, transforms, YCbCr conversion against libheif's own (heif-convert), alpha,
/// 10-bit samples, nclx colour and the limits.
@Suite(.tags(.witness), .skipped(whenListed: "witness")) struct HEIFDecodeTests {
    static func render(
        _ file: String, target: PixelSize? = nil, limits: ImageLimits = ImageLimits(),
        meter: PixelMemoryMeter = PixelMemoryMeter()
    ) throws -> Bitmap {
        let source = ImageSource.file(path: Fixtures.path("heif/" + file))
        let probe = try HEIFDecoding.probe(source, limits: limits)
        return try HEIFDecoding.render(
            source, grid: probe.grid, target: target ?? probe.size, limits: limits, meter: meter
        ).bitmap
    }

    /// Red top-left, green top-right, blue bottom-right, grey bottom-left and centre (100-px squares).
    static func expectCorners(_ bitmap: Bitmap, tolerance: Int = 12, sourceLocation: SourceLocation = #_sourceLocation)
    {
        let w = bitmap.width, h = bitmap.height
        let s = max(1, 50 * w / 600)
        let expected: [(Int, Int, [Int])] = [
            (s, s, [255, 0, 0]), (w - s, s, [0, 255, 0]), (w - s, h - s, [0, 0, 255]),
            (s, h - s, [128, 128, 128]), (w / 2, h / 2, [128, 128, 128]),
        ]
        for (x, y, colour) in expected {
            let got = Array(bitmap.rgb(min(x, w - 1), min(y, h - 1)).prefix(3))
            #expect(
                close(got, colour, tolerance: tolerance), "(\(x), \(y)) is \(got), expected \(colour)",
                sourceLocation: sourceLocation)
        }
    }

    @Test func probeReportsDisplayedSizeMetadataAndInformationalExifOrientation() throws {
        let probe = try HEIFDecoding.probe(.file(path: Fixtures.path("heif/gps-irot.heic")), limits: ImageLimits())
        #expect(probe.size == PixelSize(width: 600, height: 400))
        #expect(probe.codedSize == PixelSize(width: 400, height: 600))
        #expect(probe.exifOrientationValue == 6)
        #expect(!probe.hasAlpha && probe.bitDepth == 8 && !probe.monochrome)
        let exif = probe.metadata.compactMap { if case .exif(let tiff) = $0 { return tiff } else { return nil } }
        #expect(exif.count == 1)
        #expect(try ExifEditor(tiff: exif[0]).hasGPS)
        let xmp = probe.metadata.compactMap { if case .xmp(let packet) = $0 { return packet } else { return nil } }
        #expect(xmp.count == 1 && String(decoding: xmp[0], as: UTF8.self).contains("Berlin"))
        #expect(!probe.metadata.contains { $0.kind == .icc })
        #expect(probe.thumbnails == 0 && probe.otherImages == 0 && !probe.hasDepth)
    }

    /// irot is applied by libheif; the Exif orientation 6 inside must not turn the picture a second time.
    @Test func irotIsAppliedOnceAndExifOrientationIgnored() throws {
        let bitmap = try Self.render("gps-irot.heic")
        #expect(bitmap.size == PixelSize(width: 600, height: 400))
        Self.expectCorners(bitmap)
    }

    @Test(arguments: ["mirror.heic", "mirror-rotate.heic", "corners-444.heic", "corners.avif"])
    func transformsAndChromaFormatsKeepTheCorners(file: String) throws {
        let bitmap = try Self.render(file)
        #expect(bitmap.size == PixelSize(width: 600, height: 400))
        #expect(bitmap.layout == .rgb)
        Self.expectCorners(bitmap)
    }

    @Test func downscalesWhileStreamingRows() throws {
        let meter = PixelMemoryMeter()
        let bitmap = try Self.render("gps-irot.heic", target: PixelSize(width: 150, height: 100), meter: meter)
        #expect(bitmap.size == PixelSize(width: 150, height: 100))
        Self.expectCorners(bitmap, tolerance: 20)
        // The planes (4:2:0, 600×400: 360 000 bytes, twice while decoding) are counted; all released after.
        #expect(
            meter.peakBytes
                >= HEIFDecoding.decodeMemory(
                    size: PixelSize(width: 600, height: 400), bitDepth: 8,
                    hasAlpha: false, monochrome: false))
        #expect(meter.currentBytes == 0)
    }

    /// SharePipe's row conversion agrees with libheif's own YCbCr → RGB (heif-convert) on every pixel.
    @Test(arguments: [
        "gps-irot.heic", "mirror.heic", "mirror-rotate.heic", "corners-444.heic", "corners.avif", "p3-nclx.heic",
        "ten-bit.heic",
    ])
    func conversionMatchesLibheif(file: String) throws {
        try Witness.require("heif-convert")
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let png = directory + "/reference.png"
        let run = try Tool.run("heif-convert", [Fixtures.path("heif/" + file), png])
        #expect(run.status == 0, "\(run.stderr)")
        let reference = try Decode.bitmap(try Fixtures.bytes(png))
        let ours = try Self.render(file)
        #expect(ours.size == reference.size)
        guard ours.size == reference.size else { return }
        var worst = 0, total = 0
        for y in 0..<ours.height {
            for x in 0..<ours.width {
                let a = ours.rgb(x, y), b = reference.rgb(x, y)
                for c in 0..<3 { worst = max(worst, abs(a[c] - b[c])); total += abs(a[c] - b[c]) }
            }
        }
        let mean = Double(total) / Double(3 * ours.size.area)
        // libheif rounds its fixed-point arithmetic differently (and its 10-bit path reduces to 8 bits before
        // the PNG is written): at most one step apart. Subsampled chroma is replicated here and interpolated
        // by libheif's RGB path, which moves pixels at sharp colour edges by a few steps.
        let subsampled = ["gps-irot.heic", "mirror.heic", "mirror-rotate.heic", "corners.avif"].contains(file)
        #expect(worst <= (subsampled ? 4 : 1), "largest channel difference \(worst), mean \(mean)")
        #expect(mean <= (subsampled ? 0.1 : 0.5), "mean channel difference \(mean)")
    }

    @Test func alphaIsStraightAndKept() throws {
        let probe = try HEIFDecoding.probe(.file(path: Fixtures.path("heif/alpha.avif")), limits: ImageLimits())
        #expect(probe.hasAlpha)
        let bitmap = try Self.render("alpha.avif")
        #expect(bitmap.layout == .rgba && bitmap.size == PixelSize(width: 300, height: 200))
        let opaqueRed = bitmap.rgb(40, 40), halfBlue = bitmap.rgb(220, 60), clear = bitmap.rgb(40, 160)
        #expect(close(opaqueRed, [255, 0, 0, 255], tolerance: 12), "\(opaqueRed)")
        #expect(close(halfBlue, [0, 0, 255, 128], tolerance: 12), "\(halfBlue)")
        #expect(clear[3] <= 2, "\(clear)")
    }

    @Test func tenBitSamplesKeepTheirRange() throws {
        let probe = try HEIFDecoding.probe(.file(path: Fixtures.path("heif/ten-bit.heic")), limits: ImageLimits())
        #expect(probe.bitDepth == 10)
        let bitmap = try Self.render("ten-bit.heic")
        let row = (0..<bitmap.width).map { bitmap.rgb($0, 32)[0] }
        #expect(row.first! <= 3 && row.last! >= 252, "ends \(row.first!) … \(row.last!)")
        // Monotonic ramp without the steps a truncation to 8 bits before conversion would leave doubled.
        #expect(zip(row, row.dropFirst()).allSatisfy { $1 >= $0 - 1 })
    }

    /// An nclx-only file (Display P3 primaries, sRGB transfer) comes out with an ICC profile that a
    /// colour-managed decoder (ImageMagick with Little CMS) reads exactly as an independent Display P3
    /// profile (the one scripts/fixtures/make-test-images synthesises into jpeg/icc-p3.jpg), and the colours agree
    /// with the P3 → sRGB matrix computed here.
    @Test func nclxBecomesAnEquivalentICCProfile() throws {
        try Witness.require(Witness.convert)
        let probe = try HEIFDecoding.probe(.file(path: Fixtures.path("heif/p3-nclx.heic")), limits: ImageLimits())
        let nclx = try #require(probe.nclx)
        #expect(nclx.color_primaries == 12 && nclx.transfer_characteristics == 13)
        let ours = try #require(
            probe.metadata.compactMap { if case .icc(let p) = $0 { return p } else { return nil } }.first)
        let jpeg = try SharePipe.inspect(.file(path: Fixtures.path("jpeg/icc-p3.jpg")))
        let reference = try #require(
            jpeg.metadata.compactMap { if case .icc(let p) = $0 { return p } else { return nil } }.first)
        let bitmap = try Self.render("p3-nclx.heic")

        var srgb = sp_heif_nclx(
            present: 1, color_primaries: 1, transfer_characteristics: 13, matrix_coefficients: 6,
            full_range: 1, red_x: 0.64, red_y: 0.33, green_x: 0.30, green_y: 0.60,
            blue_x: 0.15, blue_y: 0.06, white_x: 0.3127, white_y: 0.3290)
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        var message = shimMessageBuffer()
        #expect(sp_heif_icc_from_nclx(&srgb, "sRGB", &out, &length, &message) == SP_OK)
        let srgbProfile = Array(UnsafeBufferPointer(start: out, count: length))
        sp_free(out)

        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Fixtures.write(srgbProfile, to: directory + "/srgb.icc")
        func toSRGB(_ profile: [UInt8], _ name: String) throws -> Bitmap {
            let png = try PNGEncoder().encode(
                bitmap, settings: EncodeSettings(quality: 90, progressive: false),
                metadata: [.icc(profile)])
            try Fixtures.write(png, to: directory + "/\(name).png")
            let run = try Tool.run(
                Witness.convert,
                [
                    directory + "/\(name).png", "-profile", directory + "/srgb.icc",
                    "-strip", "PNG24:" + directory + "/\(name)-srgb.png",
                ])
            #expect(run.status == 0, "\(run.stderr)")
            return try Decode.bitmap(try Fixtures.bytes(directory + "/\(name)-srgb.png"))
        }
        let viaNCLX = try toSRGB(ours, "nclx"), viaReference = try toSRGB(reference, "reference")
        for (x, y, p3) in [
            (32, 32, [200, 60, 40]), (96, 32, [40, 180, 90]), (32, 96, [60, 80, 200]), (96, 96, [230, 230, 230]),
        ] {
            let a = Array(viaNCLX.rgb(x, y).prefix(3)), b = Array(viaReference.rgb(x, y).prefix(3))
            #expect(close(a, b, tolerance: 2), "patch \(p3): nclx profile gives \(a), reference P3 profile \(b)")
            #expect(
                close(a, Self.displayP3ToSRGB(p3), tolerance: 4),
                "patch \(p3): \(a), expected \(Self.displayP3ToSRGB(p3))")
        }
        // Not a no-op: the saturated patches really move in sRGB.
        #expect(!close(Array(viaNCLX.rgb(96, 32).prefix(3)), [40, 180, 90], tolerance: 4))
    }

    /// Display P3 → sRGB by the book: sRGB curve, the D65 P3 → BT.709 matrix, sRGB curve.
    static func displayP3ToSRGB(_ p3: [Int]) -> [Int] {
        func linear(_ v: Double) -> Double { v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4) }
        func encoded(_ v: Double) -> Double { v <= 0.0031308 ? 12.92 * v : 1.055 * pow(v, 1 / 2.4) - 0.055 }
        let l = p3.map { linear(Double($0) / 255) }
        let m = [[1.2249, -0.2247, 0.0], [-0.0420, 1.0419, 0.0], [-0.0197, -0.0786, 1.0979]]
        return m.map { row in
            let v = row[0] * l[0] + row[1] * l[1] + row[2] * l[2]
            return Int((encoded(min(max(v, 0), 1)) * 255).rounded())
        }
    }

    @Test func hugeHeaderIsRefusedBeforeDecoding() throws {
        let source = ImageSource.file(path: Fixtures.path("broken/huge-ispe.heic"))
        #expect { try HEIFDecoding.probe(source, limits: ImageLimits()) } throws: { error in
            guard case SharePipeError.tooLarge(let file, _) = error else { return false }
            return file.hasSuffix("huge-ispe.heic")
        }
        // libheif's own limit, set from maxDimension, refuses it while parsing.
        #expect { try HEIFDecoding.probe(source, limits: ImageLimits(maxDimension: 4096)) } throws: { error in
            if case SharePipeError.tooLarge = error { return true } else { return false }
        }
    }

    @Test func decoderMemoryLimitIsCheckedBeforeDecoding() throws {
        let meter = PixelMemoryMeter()
        #expect {
            try Self.render("gps-irot.heic", limits: ImageLimits(maxDecoderMemory: 100_000), meter: meter)
        } throws: { error in
            guard case SharePipeError.tooLarge(_, let exceeded) = error else { return false }
            return exceeded.kind == .decoderMemory && exceeded.limit == 100_000
        }
        #expect(meter.peakBytes == 0)
    }

    @Test func truncatedFileFailsNamingIt() throws {
        let path = Fixtures.path("broken/truncated.heic")
        #expect { try Self.renderPath(path) } throws: { error in
            guard let error = error as? SharePipeError else { return false }
            return "\(error)".contains("truncated.heic")
        }
    }

    static func renderPath(_ path: String) throws -> Bitmap {
        let source = ImageSource.file(path: path)
        let probe = try HEIFDecoding.probe(source, limits: ImageLimits())
        return try HEIFDecoding.render(
            source, grid: probe.grid, target: probe.size, limits: ImageLimits(), meter: PixelMemoryMeter()
        ).bitmap
    }

    @Test func bytesInMemoryDecodeLikeTheFile() throws {
        let bytes = try Fixtures.bytes(Fixtures.path("heif/corners.avif"))
        let probe = try HEIFDecoding.probe(.bytes(bytes), limits: ImageLimits())
        let fromBytes = try HEIFDecoding.render(
            .bytes(bytes), grid: probe.grid, target: probe.size, limits: ImageLimits(), meter: PixelMemoryMeter())
        #expect(fromBytes.bitmap == (try Self.render("corners.avif")))
    }

    /// Cut anywhere, or with bytes overwritten anywhere, a HEIF/AVIF either decodes or fails with a
    /// `SharePipeError` naming the source; libheif's errors never end the process.
    @Test(arguments: ["gps-irot.heic", "corners.avif", "alpha.avif"])
    func damagedFilesFailCleanly(file: String) throws {
        let whole = try Fixtures.bytes(Fixtures.path("heif/" + file))
        var limits = ImageLimits()
        limits.maxDecoderMemory = 64 << 20
        let damaged = Fixtures.damagedCopies(of: whole, cuts: 80, flips: 80, seed: 0x9E37_79B9_7F4A_7C15)
        var failures = 0
        for bytes in damaged {
            do {
                let source = ImageSource.bytes(bytes)
                let probe = try HEIFDecoding.probe(source, limits: limits)
                _ = try HEIFDecoding.render(
                    source, grid: probe.grid, target: PixelSize(width: 64, height: 64), limits: limits,
                    meter: PixelMemoryMeter())
                _ = probe
            } catch let error as SharePipeError {
                failures += 1
                #expect("\(error)".hasPrefix("<memory>: "), "\(error)")
            }
        }
        #expect(failures >= 70, "only \(failures) of \(damaged.count) damaged copies failed")
    }

    /// The coded chroma format is read from hvcC/av1C, so libheif hands over the coded planes unconverted.
    @Test func codedChromaFormatIsRead() throws {
        func chroma(_ file: String) throws -> Int32 {
            try HEIFChroma.coded(.file(path: Fixtures.path("heif/" + file)), maxMetaBytes: 1 << 20)
        }
        #expect(try chroma("gps-irot.heic") == HEIFChroma.yuv420)
        #expect(try chroma("corners.avif") == HEIFChroma.yuv420)
        #expect(try chroma("corners-444.heic") == HEIFChroma.yuv444)
        // alpha.avif: 4:2:2 colour plus a monochrome alpha item, which does not count.
        #expect(try chroma("alpha.avif") == HEIFChroma.yuv422)
    }
}
