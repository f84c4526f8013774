import CSharePipe
import Foundation
import Testing
@testable import SharePipe

/// A single-image HEIC (one `hvc1` primary item, no grid: what converters, cameras and editors write) through
/// libde265 alone: read as a grid of one tile (`HEIFGrid.isSingleImage`), its rows converted
/// straight from libde265's picture. Fixtures are made here by ImageMagick and libheif's `heif-enc`
/// (scripts/install-deps: libheif-examples), once per run; the committed single images of TestImages/heif carry
/// the transforms. Compared with the libheif route (`HEIFDecoding.render(grid: nil)`) and libheif's own RGB.
@Suite(.tags(.witness), .skipped(whenListed: "witness"), .serialized) struct HEIFSingleImageTests {
    /// The folder of generated HEICs (made once per test process).
    static let fixtures: String = {
        let directory = NSTemporaryDirectory() + "sharepipe-heif-single-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func run(_ tool: String, _ arguments: [String]) {
            let output = try? Tool.run(tool, arguments)
            if output?.status != 0 { print("fixture: \(tool) \(arguments) failed: \(output?.stderr ?? "not run")") }
        }
        // A photo-like picture: a colour gradient with a plasma texture and hard-edged coloured squares.
        run(
            Witness.convert,
            [
                "-seed", "19", "-size", "640x480", "gradient:#c04020-#2060d0", "(", "-size", "640x480",
                "plasma:fractal", ")", "-compose", "blend", "-define", "compose:args=40", "-composite",
                "-fill", "red", "-draw", "rectangle 20,20 120,120", "-fill", "lime", "-draw",
                "rectangle 500,20 620,120",
                "-fill", "blue", "-draw", "rectangle 500,360 620,460", "PNG24:" + directory + "/photo.png",
            ])
        run("heif-enc", ["-q", "60", directory + "/photo.png", "-o", directory + "/single.heic"])
        run(
            "heif-enc",
            ["-q", "60", "-p", "chroma=444", directory + "/photo.png", "-o", directory + "/single-444.heic"])
        // What stays with libheif: alpha. (An odd width: heif-enc 1.15 writes it as a 1×1 grid of an even tile,
        // which the grid route takes.)
        run(
            Witness.convert,
            [
                directory + "/photo.png", "-alpha", "set", "-channel", "A", "-evaluate", "set", "60%", "+channel",
                "PNG32:" + directory + "/alpha.png",
            ])
        run("heif-enc", ["-q", "60", directory + "/alpha.png", "-o", directory + "/alpha.heic"])
        return directory
    }()

    static let generated = ["single.heic", "single-444.heic"]
    /// Committed single images with transforms (irot, imir, both), 4:2:0 and 4:4:4, an nclx box (P3). (heif-enc
    /// 1.15 writes no nclx box for a PNG input, whatever its --matrix_coefficients says.)
    static let committed = ["gps-irot.heic", "mirror.heic", "mirror-rotate.heic", "corners-444.heic", "p3-nclx.heic"]

    static func path(_ name: String) throws -> String {
        try Witness.require(Witness.convert, "heif-enc")
        let path =
            generated.contains(name) || name == "alpha.heic"
            ? fixtures + "/" + name
            : Fixtures.path("heif/" + name)
        try #require(
            FileManager.default.fileExists(atPath: path),
            "\(name) was not made (is heif-enc installed? scripts/install-deps)")
        return path
    }

    static func render(
        _ path: String, target: PixelSize? = nil, libde265: Bool = true,
        meter: PixelMemoryMeter = PixelMemoryMeter()
    ) throws -> Bitmap {
        let source = ImageSource.file(path: path)
        let probe = try HEIFDecoding.probe(source, limits: ImageLimits())
        return try HEIFDecoding.render(
            source, grid: libde265 ? probe.grid : nil, target: target ?? probe.size,
            limits: ImageLimits(), meter: meter
        ).bitmap
    }

    @Test(arguments: generated + committed)
    func aSingleHEVCImageIsPlannedAsOneTile(name: String) throws {
        let source = ImageSource.file(path: try Self.path(name))
        let probe = try HEIFDecoding.probe(source, limits: ImageLimits())
        let grid = try #require(probe.grid, "\(name) went to libheif")
        #expect(grid.isSingleImage && grid.columns == 1 && grid.rows == 1 && grid.tileSize == grid.size)
        #expect(grid.displayedSize == probe.size)
        // irot 1; imir axis 0 (libheif 1.15: top and bottom exchanged); both (HEIFDecodeTests checks the corners).
        let expected: [String: Orientation] = [
            "gps-irot.heic": .left, "mirror.heic": .downMirrored, "mirror-rotate.heic": .leftMirrored,
        ]
        #expect(grid.orientation == expected[name] ?? .up, "\(name): \(grid.orientation)")
        #expect(
            grid.chroma
                == (["single-444.heic", "corners-444.heic", "p3-nclx.heic"].contains(name)
                    ? HEIFChroma.yuv444 : HEIFChroma.yuv420))
    }

    @Test(arguments: ["alpha.heic", "ten-bit.heic"])
    func whatLibde265AloneCannotDoStaysWithLibheif(name: String) throws {
        let source = ImageSource.file(path: try Self.path(name))
        let probe = try HEIFDecoding.probe(source, limits: ImageLimits())
        #expect(probe.grid == nil, "\(name) was planned for libde265")
        // And is still prepared, by libheif.
        let result = try SharePipe.prepare(source, options: ServiceProfile.x.options())
        #expect(result.size == probe.size)
    }

    /// Both routes convert with the same HEIFRowConverter and matrix, but the samples differ a little: libde265's
    /// picture, read here, is the bitstream's exact decode (equal to FFmpeg's HEVC decoder, sample for sample, on
    /// single.heic), while the planes libheif 1.15 hands over differ from it at hard edges (single.heic: 649 of
    /// 307,200 luma and 272 of 76,800 chroma samples, around the coloured squares), so a few pixels there are a
    /// few steps apart; elsewhere the outputs are identical. Downscaled, the differences average out; with
    /// irot/imir the libde265 route also resamples as coded and turns the small result (libheif turns first).
    @Test(arguments: generated + committed)
    func pixelsAreWithinAFewStepsOfTheLibheifRoute(name: String) throws {
        let path = try Self.path(name)
        let full = try Self.render(path), fullLibheif = try Self.render(path, libde265: false)
        #expect(full.size == fullLibheif.size && full.layout == fullLibheif.layout)
        let d = HEIFGridTests.difference(full, fullLibheif)
        #expect(d.max <= 8 && d.mean <= 0.05, "\(name) full size: largest channel difference \(d.max), mean \(d.mean)")
        let target = PixelSize(width: full.width / 4, height: full.height / 4)
        let small = try Self.render(path, target: target),
            smallLibheif = try Self.render(path, target: target, libde265: false)
        #expect(small.size == target && smallLibheif.size == target)
        let e = HEIFGridTests.difference(small, smallLibheif)
        #expect(e.max <= 4 && e.mean <= 0.1, "\(name) downscaled: largest \(e.max), mean \(e.mean)")
        print(
            "single image \(name): full size largest \(d.max), mean \(d.mean); quarter size largest \(e.max), mean \(e.mean)"
        )
    }

    /// Against libheif's own RGB (heif-convert): as the libheif route is (HEIFDecodeTests.conversionMatchesLibheif):
    /// a step apart where libheif's fixed point rounds otherwise, a few at sharp chroma edges where libheif
    /// interpolates subsampled chroma and HEIFRowConverter replicates it.
    @Test(arguments: generated)
    func pixelsAreCloseToLibheifsOwnRGB(name: String) throws {
        try Witness.require("heif-convert")
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let run = try Tool.run("heif-convert", [try Self.path(name), directory + "/reference.png"])
        #expect(run.status == 0, "\(run.stderr)")
        let reference = try Decode.bitmap(try Fixtures.bytes(directory + "/reference.png"))
        let ours = try Self.render(try Self.path(name))
        try #require(ours.size == reference.size && reference.layout == .rgb)
        let d = HEIFGridTests.difference(ours, reference)
        let subsampled = name != "single-444.heic"
        #expect(
            d.max <= (subsampled ? 40 : 2) && d.mean <= (subsampled ? 1.0 : 0.6),
            "\(name): largest \(d.max), mean \(d.mean)")
    }

    /// The libde265 route meters libde265's decoder and picture as priced (the picture, its per-block metadata,
    /// the coded data) and releases everything; the job is priced well below the libheif route's (libheif's
    /// planes twice, its codec's working memory), which is what the posting service reserves. (Peak RSS:
    /// bench/compare's heic-single row.)
    @Test func memoryIsMeteredAndPricedBelowTheLibheifRoute() throws {
        let path = try Self.path("single.heic")
        let meter = PixelMemoryMeter()
        _ = try Self.render(path, target: PixelSize(width: 160, height: 120), meter: meter)
        let grid = try #require(try HEIFDecoding.probe(.file(path: path), limits: ImageLimits()).grid)
        #expect(meter.peakBytes >= HEIFTileDecoding.decodeMemory(grid))
        #expect(meter.currentBytes == 0)
        var info = try SharePipe.inspect(.file(path: path))
        let options = ServiceProfile.x.options()
        let ours = try MemoryEstimate(info: info, options: options)
        let prepared = try SharePipe.prepare(.file(path: path), options: options)
        #expect(prepared.peakPixelBytes <= ours.meteredPixelBytes)
        info.heifGrid = nil
        let libheif = try MemoryEstimate(info: info, options: options)
        #expect(ours.totalBytes < libheif.totalBytes, "libde265 route \(ours), libheif route \(libheif)")
    }

    /// Orientation and colour profile through the whole pipeline, as before: the corners land where they
    /// belong, the nclx becomes an ICC profile, no Exif or GPS is left.
    @Test(arguments: committed)
    func preparedOutputsKeepOrientationAndColour(name: String) throws {
        let source = ImageSource.file(path: try Self.path(name))
        let result = try SharePipe.prepare(source, options: ServiceProfile.x.options())
        let size = try SharePipe.inspect(source).size
        #expect(result.format == .jpeg && result.size == size)
        if name != "p3-nclx.heic" { HEIFDecodeTests.expectCorners(try Decode.bitmap(result.bytes), tolerance: 20) }
        let info = try SharePipe.inspect(.bytes(result.bytes))
        #expect(!info.metadataKinds.contains(.gps) && !info.metadataKinds.contains(.exif))
        let expectICC = try SharePipe.inspect(source).metadataKinds.contains(.icc)
        #expect(info.metadataKinds.contains(.icc) == expectICC, "\(name): \(info.metadataKinds)")
    }

    /// The planes of `name`'s image decoded by libde265 (`sp_hevc_image_open`, then `sp_hevc_image_decode`), row
    /// by row without stride padding. `overwrite`: the coded data is zeroed between the two calls, as the
    /// route frees its copy there.
    static func decodedPlanes(_ name: String, overwrite: Bool) throws -> [[UInt8]] {
        let source = ImageSource.file(path: try path(name))
        let grid = try #require(try HEIFDecoding.probe(source, limits: ImageLimits()).grid)
        var data = try HEIFTileDecoding.codedData(grid, tile: 0, file: try HEIFFileBytes(source))
        var image: OpaquePointer?
        var message = shimMessageBuffer()
        let opened = data.withUnsafeBufferPointer { buffer in
            sp_hevc_image_open(
                buffer.baseAddress, buffer.count, Int32(grid.size.width), Int32(grid.size.height), grid.chroma,
                &image, &message)
        }
        defer { sp_hevc_image_free(image) }
        try #require(opened == SP_OK, "\(name): \(shimText(message))")
        if overwrite { data.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
        var decoded = sp_hevc_planes()
        try #require(sp_hevc_image_decode(image, &decoded, &message) == SP_OK, "\(name): \(shimText(message))")
        let chroma = HEIFTileDecoding.chromaSize(grid.size, chroma: grid.chroma)
        func rows(_ plane: UnsafePointer<UInt8>, stride: Int32, _ size: PixelSize) -> [UInt8] {
            (0..<size.height).flatMap { y in
                Array(UnsafeBufferPointer(start: plane + y * Int(stride), count: size.width))
            }
        }
        return [
            rows(decoded.y, stride: decoded.y_stride, grid.size), rows(decoded.cb, stride: decoded.cb_stride, chroma),
            rows(decoded.cr, stride: decoded.cr_stride, chroma),
        ]
    }

    /// The route frees its copy of the coded data once `sp_hevc_image_open` returns (libde265 holds its own
    /// copy of every NAL unit), so the copy is not held through the decode: with the caller's bytes zeroed
    /// after opening, the decode gives the same samples, plane for plane.
    @Test(arguments: generated + committed)
    func codedDataIsNotNeededAfterOpening(name: String) throws {
        let zeroed = try Self.decodedPlanes(name, overwrite: true)
        let kept = try Self.decodedPlanes(name, overwrite: false)
        for plane in 0..<3 {
            #expect(zeroed[plane].count > 0 && zeroed[plane] == kept[plane], "\(name): plane \(plane) differs")
        }
    }

    /// A decode that fails after opening (the slice data cut short, its bytes flipped) leaves the decoder to
    /// `sp_hevc_image_free` (ASan: scripts/sanitize --subset runs this suite): every copy is an error or a
    /// picture, never a crash or a leak.
    @Test func failedDecodeAfterOpeningIsFreed() throws {
        let source = ImageSource.file(path: try Self.path("single.heic"))
        let grid = try #require(try HEIFDecoding.probe(source, limits: ImageLimits()).grid)
        let data = try HEIFTileDecoding.codedData(grid, tile: 0, file: try HEIFFileBytes(source))
        var failures = 0
        for damaged in Fixtures.damagedCopies(of: data, cuts: 6, flips: 12, seed: 19) where !damaged.isEmpty {
            var image: OpaquePointer?
            var message = shimMessageBuffer()
            var status = damaged.withUnsafeBufferPointer { buffer in
                sp_hevc_image_open(
                    buffer.baseAddress, buffer.count, Int32(grid.size.width), Int32(grid.size.height), grid.chroma,
                    &image, &message)
            }
            var decoded = sp_hevc_planes()
            if status == SP_OK { status = sp_hevc_image_decode(image, &decoded, &message) }
            sp_hevc_image_free(image)
            if status != SP_OK {
                failures += 1
                #expect(
                    (status == SP_ERR_LIBRARY || status == SP_ERR_MEMORY) && shimText(message).hasPrefix("image"),
                    "\(shimText(message))")
            }
        }
        #expect(failures > 0)
    }

    /// 8-bit rows go through the converter's per-sample tables (`HEIFRowConverter`): every luma value against
    /// Cb and Cr over their whole range gives exactly the per-pixel formula's Float values (BT.601 limited and
    /// BT.709 full range, 4:4:4 so that every pixel has its own chroma).
    @Test(arguments: [(Int32(6), false), (Int32(1), true)])
    func eightBitTablesGiveTheFormulasValues(matrix: Int32, fullRange: Bool) throws {
        var nclx = sp_heif_nclx()
        nclx.present = 1
        nclx.matrix_coefficients = matrix
        nclx.full_range = fullRange ? 1 : 0
        let ycbcr = try #require(YCbCrMatrix(nclx: nclx))
        guard case .luma(let kr, let kb) = ycbcr.kind else {
            Issue.record("matrix \(matrix) is not a luma-weights matrix")
            return
        }
        let size = 256
        let luma = (0..<size * size).map { UInt8($0 % size) }
        let cb = (0..<size * size).map { UInt8(($0 % size + 7 * ($0 / size)) % size) }
        let cr = (0..<size * size).map { UInt8((3 * ($0 % size) + $0 / size) % size) }
        let yScale: Float = fullRange ? 255 / Float(255) : 255 / (219 * Float(1))
        let yOffset: Float = fullRange ? 0 : 16, cOffset: Float = 128
        let cScale: Float = fullRange ? 255 / Float(255) : 255 / (224 * Float(1))
        let kg = 1 - kr - kb
        let rCr = 2 * (1 - kr), bCb = 2 * (1 - kb)
        let gCb = -2 * kb * (1 - kb) / kg, gCr = -2 * kr * (1 - kr) / kg
        var row = [Float](repeating: 0, count: size * 3)
        var mismatches = 0
        withUnsafeBufferPointers(luma, cb, cr) { y, cbPlane, crPlane in
            var planes = sp_heif_planes()
            planes.width = Int32(size)
            planes.height = Int32(size)
            planes.chroma = 3
            planes.bits = 8
            planes.chroma_bits = 8
            planes.y = y.baseAddress
            planes.cb = cbPlane.baseAddress
            planes.cr = crPlane.baseAddress
            planes.y_stride = Int32(size)
            planes.cb_stride = Int32(size)
            planes.cr_stride = Int32(size)
            planes.chroma_width = Int32(size)
            planes.chroma_height = Int32(size)
            let converter = HEIFRowConverter(planes: planes, matrix: ycbcr, premultiplied: false)
            for line in 0..<size {
                row.withUnsafeMutableBufferPointer { converter.convertRow(line, into: $0.baseAddress!) }
                for x in 0..<size {
                    let i = line * size + x
                    let l = (Float(luma[i]) - yOffset) * yScale
                    let b = (Float(cb[i]) - cOffset) * cScale, r = (Float(cr[i]) - cOffset) * cScale
                    let expected = [
                        min(max(l + rCr * r, 0), 255), min(max(l + gCb * b + gCr * r, 0), 255),
                        min(max(l + bCb * b, 0), 255),
                    ]
                    if Array(row[(3 * x)..<(3 * x + 3)]) != expected { mismatches += 1 }
                }
            }
        }
        #expect(mismatches == 0)
    }

    /// A damaged coded image is an error naming the file, never a crash: cut short, or its slice data flipped.
    @Test func damagedImageDataIsAnErrorNamingTheFile() throws {
        let whole = try Fixtures.bytes(try Self.path("single.heic"))
        for (index, damaged) in Fixtures.damagedCopies(of: whole, cuts: 8, flips: 16, seed: 6).enumerated() {
            do {
                _ = try SharePipe.prepare(.bytes(damaged), options: ServiceProfile.x.options())
            } catch let error as SharePipeError {
                #expect("\(error)".hasPrefix("<memory>: "), "copy \(index): \(error)")
            }
        }
    }
}
