import CSharePipe
import Foundation
import Testing
@testable import SharePipe

/// The grid route (HEIFGrid, HEIFTileDecoding) on the committed grid HEICs in TestImages/heif-grid (made by
/// scripts/fixtures/make-test-images, section heifgrid: the 600×400 corner picture as 256×256 HEVC tiles, stored
/// turned or mirrored with irot/imir on the grid item): exact against libheif's own RGB (heif-convert), close
/// to the libheif route when downscaled, transforms applied once, the fallbacks, damaged files, memory.
@Suite(.tags(.witness), .skipped(whenListed: "witness")) struct HEIFGridTests {
    static let files = [
        "grid.heic", "grid-444.heic", "grid-422.heic", "grid-709-limited.heic", "grid-iphone-irot1.heic",
        "grid-irot1.heic", "grid-irot2.heic", "grid-irot3.heic", "grid-imir0.heic",
        "grid-imir1.heic", "grid-mirror-rotate.heic",
    ]

    static func path(_ file: String) -> String { Fixtures.path("heif-grid/" + file) }

    /// Per-channel differences between two bitmaps of one size: the largest and the mean.
    static func difference(_ a: Bitmap, _ b: Bitmap) -> (max: Int, mean: Double) {
        precondition(a.size == b.size && a.layout == b.layout)
        var largest = 0, total = 0
        for i in 0..<a.pixels.count {
            let d = abs(Int(a.pixels[i]) - Int(b.pixels[i]))
            largest = max(largest, d)
            total += d
        }
        return (largest, Double(total) / Double(a.pixels.count))
    }

    static func render(
        _ source: ImageSource, target: PixelSize? = nil, tileRoute: Bool = true,
        limits: ImageLimits = ImageLimits(), meter: PixelMemoryMeter = PixelMemoryMeter()
    ) throws -> Bitmap {
        let probe = try HEIFDecoding.probe(source, limits: limits)
        return try HEIFDecoding.render(
            source, grid: tileRoute ? probe.grid : nil, target: target ?? probe.size,
            limits: limits, meter: meter
        ).bitmap
    }

    @Test(arguments: files)
    func gridIsReadFromTheBoxes(file: String) throws {
        let source = ImageSource.file(path: Self.path(file))
        let probe = try HEIFDecoding.probe(source, limits: ImageLimits())
        let grid = try #require(probe.grid)
        #expect(probe.size == PixelSize(width: 600, height: 400))
        #expect(grid.displayedSize == probe.size)
        let turned = ["grid-irot1.heic", "grid-iphone-irot1.heic", "grid-irot3.heic", "grid-mirror-rotate.heic"]
            .contains(file)
        #expect(grid.size == (turned ? PixelSize(width: 400, height: 600) : PixelSize(width: 600, height: 400)))
        #expect(grid.tileSize == PixelSize(width: 256, height: 256))
        #expect(grid.columns == (turned ? 2 : 3) && grid.rows == (turned ? 3 : 2))
        #expect(
            grid.chroma
                == (file == "grid-444.heic"
                    ? HEIFChroma.yuv444 : file == "grid-422.heic" ? HEIFChroma.yuv422 : HEIFChroma.yuv420))
        let expected: [String: Orientation] = [
            "grid.heic": .up, "grid-444.heic": .up, "grid-422.heic": .up, "grid-709-limited.heic": .up,
            "grid-iphone-irot1.heic": .left, "grid-irot1.heic": .left, "grid-irot2.heic": .down,
            "grid-irot3.heic": .right, "grid-imir0.heic": .downMirrored,
            "grid-imir1.heic": .upMirrored, "grid-mirror-rotate.heic": .leftMirrored,
        ]
        #expect(grid.orientation == expected[file])
        // Each tile's own hvcC, or one shared by all (grid-iphone-irot1.heic, whose grid descriptor is in idat).
        #expect(grid.parameterSets.count == (file == "grid-iphone-irot1.heic" ? 1 : grid.columns * grid.rows))
    }

    /// At full size the tile route gives libheif's own RGB (heif-convert) exactly: the same libde265 decodes the
    /// same tiles, and libheif 1.15 converts grid tiles to RGB with nearest chroma and each tile's VUI matrix and
    /// range (grid-709-limited.heic: BT.709, limited), as HEIFRowConverter does here.
    @Test(arguments: files)
    func fullSizeMatchesLibheifRGBExactly(file: String) throws {
        try Witness.require("heif-convert")
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let png = directory + "/reference.png"
        let run = try Tool.run("heif-convert", [Self.path(file), png])
        #expect(run.status == 0, "\(run.stderr)")
        let reference = try Decode.bitmap(try Fixtures.bytes(png))
        let ours = try Self.render(.file(path: Self.path(file)))
        #expect(ours.size == reference.size)
        guard ours.size == reference.size else { return }
        #expect(reference.layout == .rgb)
        let d = Self.difference(ours, reference)
        // Limited range: HEIFRowConverter's float arithmetic and libheif's fixed point are a step apart on most
        // pixels (as for single images, HEIFDecodeTests.conversionMatchesLibheif); full range is exact.
        let limited = file == "grid-709-limited.heic"
        #expect(
            d.max <= (limited ? 1 : 0) && d.mean <= (limited ? 1 : 0),
            "largest channel difference \(d.max), mean \(d.mean)")
    }

    /// Downscaled, the tile route (resampled as coded, then turned) stays within a step of the libheif route
    /// (turned, then resampled; its grid passes through libheif's RGB and back to YCbCr 4:2:0).
    @Test(arguments: files)
    func downscaledIsCloseToTheLibheifRoute(file: String) throws {
        let source = ImageSource.file(path: Self.path(file))
        let target = PixelSize(width: 150, height: 100)
        let tiles = try Self.render(source, target: target)
        let libheif = try Self.render(source, target: target, tileRoute: false)
        #expect(tiles.size == target && libheif.size == target)
        let d = Self.difference(tiles, libheif)
        // Measured: identical but for grid-709-limited.heic (one step on most pixels: the libheif route's tiles
        // are converted by libheif, whose limited-range rounding differs from HEIFRowConverter's by one).
        let limited = file == "grid-709-limited.heic"
        #expect(d.max <= 1 && d.mean <= (limited ? 1 : 0.05), "largest channel difference \(d.max), mean \(d.mean)")
        // grid-709-limited.heic's colours are shifted on purpose (coded BT.601 full range, VUI says BT.709 limited).
        if file != "grid-709-limited.heic" { HEIFDecodeTests.expectCorners(tiles, tolerance: 20) }
    }

    /// The row of tiles, the decoders, the resampler and the Float row are metered, all released after; the
    /// peak stays far below the whole image's planes.
    @Test func memoryIsMeteredAndBelowTheWholeImage() throws {
        let meter = PixelMemoryMeter()
        let source = ImageSource.file(path: Self.path("grid-irot1.heic"))
        _ = try Self.render(source, target: PixelSize(width: 150, height: 100), meter: meter)
        let grid = try #require(try HEIFDecoding.probe(source, limits: ImageLimits()).grid)
        #expect(meter.peakBytes >= HEIFTileDecoding.decodeMemory(grid))
        #expect(meter.currentBytes == 0)
        // One row of tiles: 400 wide × 256 high at 4:2:0.
        #expect(HEIFTileDecoding.rowPlaneBytes(width: 400, tileHeight: 256, chroma: 1) == 400 * 256 + 2 * 200 * 128)
    }

    @Test func decoderMemoryLimitIsCheckedBeforeDecoding() throws {
        let meter = PixelMemoryMeter()
        #expect {
            try Self.render(
                .file(path: Self.path("grid.heic")), limits: ImageLimits(maxDecoderMemory: 200_000), meter: meter)
        } throws: { error in
            guard case SharePipeError.tooLarge(_, let exceeded) = error else { return false }
            return exceeded.kind == .decoderMemory && exceeded.limit == 200_000
        }
        #expect(meter.peakBytes == 0)
    }

    /// The tile size is checked against the limits where the grid is planned, so the probe refuses it before
    /// any size arithmetic (the render used to be the only place that checked it), and a tile side past
    /// `maxTileSide` leaves the file to libheif.
    @Test func tileSizeIsCheckedWhereTheGridIsPlanned() throws {
        let file = try HEIFFileBytes(.file(path: Self.path("grid.heic")))
        for limits in [ImageLimits(maxDimension: 255), ImageLimits(maxPixels: 256 * 256 - 1)] {
            #expect { try HEIFGrid.plan(file, limits: limits) } throws: { error in
                guard case SharePipeError.tooLarge(_, let exceeded) = error else { return false }
                return exceeded.size == PixelSize(width: 256, height: 256)
            }
        }
        #expect(try HEIFGrid.plan(file, limits: ImageLimits(maxDimension: 256, maxPixels: 256 * 256)) != nil)
        // Tile and grid ispe past the largest tile side: not planned (the SPS check never runs on them).
        var bytes = try Fixtures.bytes(Self.path("grid.heic"))
        let tileISPE = try #require(Self.find(Array("ispe".utf8) + [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0], in: bytes))
        bytes.replaceSubrange((tileISPE + 8)..<(tileISPE + 16), with: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(
            try HEIFGrid.plan(HEIFFileBytes(memory: bytes), limits: ImageLimits(maxDimension: .max, maxPixels: .max))
                == nil)
    }

    /// The render decodes the grid it is given (the one the probe found and the estimate priced) without
    /// reading the boxes again: the same file with the plan's orientation changed comes out turned.
    @Test func renderDecodesTheGridItIsGiven() throws {
        let source = ImageSource.file(path: Self.path("grid.heic"))
        var grid = try #require(try HEIFDecoding.probe(source, limits: ImageLimits()).grid)
        let plain = try HEIFDecoding.render(
            source, grid: grid, target: grid.size, limits: ImageLimits(),
            meter: PixelMemoryMeter()
        ).bitmap
        grid.orientation = .down
        let turned = try HEIFDecoding.render(
            source, grid: grid, target: grid.size, limits: ImageLimits(),
            meter: PixelMemoryMeter()
        ).bitmap
        #expect(turned == plain.applying(.down))
        #expect(turned != plain)
    }

    @Test func bytesInMemoryDecodeLikeTheFile() throws {
        let bytes = try Fixtures.bytes(Self.path("grid-irot2.heic"))
        #expect(try Self.render(.bytes(bytes)) == (try Self.render(.file(path: Self.path("grid-irot2.heic")))))
    }

    /// What the tile route does not handle goes to libheif: images that are neither grids nor single 8-bit HEVC
    /// images (AVIF, 10-bit; single images: HEIFSingleImageTests), and grids with a property the route does not
    /// apply (here irot's box renamed clap).
    @Test func otherImagesStayWithLibheif() throws {
        for file in ["corners.avif", "alpha.avif", "ten-bit.heic"] {
            let probe = try HEIFDecoding.probe(.file(path: Fixtures.path("heif/" + file)), limits: ImageLimits())
            #expect(probe.grid == nil, "\(file)")
        }
        var bytes = try Fixtures.bytes(Self.path("grid-irot1.heic"))
        let irot = try #require(Self.find(Array("irot".utf8), in: bytes))
        bytes.replaceSubrange(irot..<(irot + 4), with: Array("clap".utf8))
        let file = HEIFFileBytes(memory: bytes)
        let meta = try #require(try file.metaBody(maxBytes: 1 << 20))
        #expect(
            try HEIFGrid.parse(meta: meta, fileSize: bytes.count, read: { try file.read(at: $0, count: $1) }) == nil)

        // Tiles whose ispe (280×280) is not what their SPS codes (256×256): libde265 would allocate the SPS's size.
        var resized = try Fixtures.bytes(Self.path("grid.heic"))
        let tileISPE = try #require(Self.find(Array("ispe".utf8) + [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0], in: resized))
        resized.replaceSubrange((tileISPE + 8)..<(tileISPE + 16), with: [0, 0, 1, 24, 0, 0, 1, 24])
        let resizedFile = HEIFFileBytes(memory: resized)
        let resizedMeta = try #require(try resizedFile.metaBody(maxBytes: 1 << 20))
        #expect(
            try HEIFGrid.parse(
                meta: resizedMeta, fileSize: resized.count, read: { try resizedFile.read(at: $0, count: $1) }) == nil)
        // The SPS of the committed tiles says 256×256, 4:2:0.
        let grid = try #require(try HEIFDecoding.probe(.file(path: Self.path("grid.heic")), limits: ImageLimits()).grid)
        var sets = grid.parameterSets[0][...]
        var sizes: [(width: Int, height: Int, chroma: Int)] = []
        while sets.count >= 4 {
            let length = sets.prefix(4).reduce(0) { $0 << 8 | Int($1) }
            let unit = Array(sets.dropFirst(4).prefix(length))
            if (unit[0] >> 1) & 0x3F == 33, let size = HEIFGrid.spsSize(unit) { sizes.append(size) }
            sets = sets.dropFirst(4 + length)
        }
        #expect(sizes.count == 1 && sizes.first?.width == 256 && sizes.first?.height == 256 && sizes.first?.chroma == 1)
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }

    /// Cut anywhere, or with bytes overwritten anywhere, a grid HEIC either decodes or fails with a
    /// `SharePipeError` naming the source; neither the box parser nor libde265 ends the process.
    @Test func damagedGridsFailCleanly() throws {
        let whole = try Fixtures.bytes(Self.path("grid-mirror-rotate.heic"))
        let damaged = Fixtures.damagedCopies(of: whole, cuts: 60, flips: 120, seed: 0x2545_F491_4F6C_DD1D)
        var decoded = 0
        for bytes in damaged {
            do {
                _ = try Self.render(.bytes(bytes), target: PixelSize(width: 60, height: 40))
                decoded += 1
            } catch let error as SharePipeError {
                #expect("\(error)".hasPrefix("<memory>: "), "\(error)")
            }
        }
        #expect(decoded < damaged.count)
    }

    /// A tile libde265 cannot decode is an error naming the file and the tile (libheif decodes the same tiles
    /// with the same libde265 and fails on it too), never a fallback after rows were decoded: the meter ends
    /// balanced and its peak is the tile route's, which the estimate (the tile route alone) bounds.
    @Test func undecodableTileIsCorrupt() throws {
        var bytes = try Fixtures.bytes(Self.path("grid.heic"))
        let grid = try #require(try HEIFGrid.plan(HEIFFileBytes(memory: bytes), limits: ImageLimits()))
        let tile = grid.tileExtents[4][0]
        // Keep the NAL length, wipe the slice: a NAL header with the forbidden bit set.
        for at in (tile.offset + 4)..<(tile.offset + tile.length) { bytes[at] = 0xFF }
        let meter = PixelMemoryMeter()
        #expect { try Self.render(.bytes(bytes), meter: meter) } throws: { error in
            guard case SharePipeError.corrupt(let file, _, let reason) = error else { return false }
            return file == ImageSource.bytes([]).displayName && reason.contains("tile 4")
        }
        // libheif's route fails on it too.
        #expect(throws: SharePipeError.self) { try Self.render(.bytes(bytes), tileRoute: false) }
        #expect(meter.currentBytes == 0)
        let tileRoute =
            HEIFTileDecoding.decodeMemory(grid)
            + LanczosResampler.memoryEstimate(from: grid.size, to: grid.size, channels: 3)
            + grid.size.width * 3 * MemoryLayout<Float>.stride
        #expect(meter.peakBytes > 0 && meter.peakBytes <= tileRoute)
        let info = try HEIFDecoder(format: .heif).probe(.bytes(bytes), limits: ImageLimits())
        #expect(info.heifGrid != nil)
        let options = try PrepareOptions(maxShortEdge: 400).checked()
        let parts = MemoryEstimate.heif(
            info, plan: PreparePlan(info: info, options: options), options: options, keptMetadata: 0)
        #expect(parts.metered >= meter.peakBytes)
        // Priced as the tile route alone (no libheif planes added for a fallback that no longer happens).
        #expect(
            parts.metered == HEIFTileDecoding.decodeMemory(grid)
                + LanczosResampler.memoryEstimate(from: grid.size, to: grid.size, channels: 3) + grid.size.width * 3 * 4
        )
    }

    /// The SPS NAL unit of a grid's first hvcC.
    static func sps(_ grid: HEIFGrid) throws -> [UInt8] {
        var sets = grid.parameterSets[0][...]
        while sets.count >= 4 {
            let length = sets.prefix(4).reduce(0) { $0 << 8 | Int($1) }
            let unit = Array(sets.dropFirst(4).prefix(length))
            if (unit[0] >> 1) & 0x3F == 33 { return unit }
            sets = sets.dropFirst(4 + length)
        }
        throw SharePipeError.corrupt(file: "", phase: .decode, reason: "no SPS")
    }

    /// The tiles' colour is read from their hvcC's SPS VUI by the plan, exactly (independently: ffprobe on the
    /// tiles' Annex B stream says "pc smpte170m" for all but grid-709-limited.heic, "tv bt709"; primaries and
    /// transfer unspecified), and libde265 reports the same for every decoded tile (HEIFTileDecoding checks).
    @Test(arguments: files)
    func spsColourIsReadFromTheHvcC(file: String) throws {
        let grid = try #require(try HEIFGrid.plan(HEIFFileBytes(.file(path: Self.path(file))), limits: ImageLimits()))
        let limited = file == "grid-709-limited.heic"
        let expected = HEIFGrid.Colour(primaries: 2, transfer: 2, matrix: limited ? 1 : 6, fullRange: !limited)
        #expect(grid.tileColour == nil)
        #expect(grid.bitstreamColour == expected)
        #expect(grid.colour == expected)
        #expect(HEIFGrid.sequenceParameters(try Self.sps(grid))?.colour == expected)
        // Decoded: libde265's VUI values agree (a disagreement would throw).
        _ = try Self.render(.file(path: Self.path(file)), target: PixelSize(width: 60, height: 40))
    }

    /// A corrupted SPS (every byte changed in turn, every cut) never crashes the parser: it reads a colour or
    /// says nil, and the plan with such an SPS either takes the grid or leaves it to libheif.
    @Test func corruptedSPSNeverCrashes() throws {
        let whole = try Fixtures.bytes(Self.path("grid-709-limited.heic"))
        let grid = try #require(try HEIFGrid.plan(HEIFFileBytes(memory: whole), limits: ImageLimits()))
        let sps = try Self.sps(grid)
        var read = 0, refused = 0
        for cut in 0..<sps.count {
            if HEIFGrid.sequenceParameters(Array(sps.prefix(cut)))?.colour != nil { read += 1 } else { refused += 1 }
        }
        for at in 2..<sps.count {
            for value: UInt8 in [0, 0xFF, sps[at] ^ 0x01, sps[at] ^ 0x80, 3] {
                var copy = sps
                copy[at] = value
                if HEIFGrid.sequenceParameters(copy)?.colour != nil { read += 1 } else { refused += 1 }
            }
        }
        #expect(read > 0 && refused > 0)
        // In the file: each byte of the first hvcC's SPS flipped; planned (with the colour read then) or not.
        let at = try #require(Self.find(Array(sps.prefix(12)), in: whole))
        var planned = 0
        for offset in 2..<sps.count {
            var copy = whole
            copy[at + offset] ^= 0xFF
            if let changed = try? HEIFGrid.plan(HEIFFileBytes(memory: copy), limits: ImageLimits()) {
                #expect(changed.colour != nil && HEIFTileDecoding.matrix(changed.colour!) != nil)
                planned += 1
            }
        }
        #expect(planned < sps.count - 2)
    }

    /// What the plan settles before decoding: tiles whose SPS colours differ, or whose matrix is 12, go to
    /// libheif from the start (the SPS's matrix_coefficients rewritten in the file's hvcC boxes).
    @Test func colourThatNeedsLibheifIsFoundByThePlan() throws {
        let whole = try Fixtures.bytes(Self.path("grid-709-limited.heic"))
        let grid = try #require(try HEIFGrid.plan(HEIFFileBytes(memory: whole), limits: ImageLimits()))
        let sps = try Self.sps(grid)
        let original = try #require(HEIFGrid.sequenceParameters(sps)?.colour)
        /// `unit` with the 8 bits at `bit` (after the NAL header's 16) set to `value`.
        func writing(_ value: Int, at bit: Int, in unit: [UInt8]) -> [UInt8] {
            var copy = unit
            for k in 0..<8 {
                let mask = UInt8(0x80) >> UInt8((bit + k) & 7)
                copy[(bit + k) >> 3] =
                    (value >> (7 - k)) & 1 == 1 ? copy[(bit + k) >> 3] | mask : copy[(bit + k) >> 3] & ~mask
            }
            return copy
        }
        // The matrix field: where writing 9 changes the parsed matrix to 9 and nothing else.
        let matrixBit = try #require(
            (16...(sps.count * 8 - 8)).first { bit in
                let parsed = HEIFGrid.sequenceParameters(writing(9, at: bit, in: sps))
                return parsed?.colour
                    == HEIFGrid.Colour(
                        primaries: original.primaries, transfer: original.transfer, matrix: 9,
                        fullRange: original.fullRange)
                    && parsed?.width == 256 && parsed?.height == 256
            })
        // Matrix 12: the SPS still reads (its size), its colour does not (libde265 replaces values ≥ 11).
        let twelve = writing(12, at: matrixBit, in: sps)
        #expect(HEIFGrid.sequenceParameters(twelve)?.width == 256 && HEIFGrid.sequenceParameters(twelve)?.colour == nil)
        /// The file with the SPS of the hvcC boxes numbered in `boxes` (all when nil) replaced by `unit`.
        func plan(_ unit: [UInt8], boxes: Set<Int>? = nil) throws -> HEIFGrid? {
            var copy = whole, seen = 0, position = 0
            while let found = Self.find(sps, in: Array(copy[position...])) {
                let at = position + found
                if boxes?.contains(seen) ?? true { copy.replaceSubrange(at..<(at + sps.count), with: unit) }
                seen += 1
                position = at + sps.count
            }
            #expect(seen == grid.parameterSets.count)
            return try HEIFGrid.plan(HEIFFileBytes(memory: copy), limits: ImageLimits())
        }
        #expect(try plan(writing(9, at: matrixBit, in: sps))?.colour?.matrix == 9)
        #expect(try plan(twelve) == nil)
        // One tile's hvcC says matrix 9, the others 1: colours that differ, libheif's business.
        #expect(try plan(writing(9, at: matrixBit, in: sps), boxes: [2]) == nil)
        #expect(try plan(sps) == grid)
        // Primaries 12 (Display P3) just before the transfer and matrix: read as libde265 1.0.11 reports them (2),
        // planned, and the decoded tiles agree (HEIFTileDecoding checks matrix and range against the plan).
        let p3 = writing(12, at: matrixBit - 16, in: sps)
        #expect(HEIFGrid.sequenceParameters(p3)?.colour == original)
        var p3File = whole, position = 0
        while let found = Self.find(sps, in: Array(p3File[position...])) {
            p3File.replaceSubrange((position + found)..<(position + found + sps.count), with: p3)
            position += found + sps.count
        }
        #expect(try HEIFGrid.plan(HEIFFileBytes(memory: p3File), limits: ImageLimits())?.colour == original)
        #expect(try Self.render(.bytes(p3File)) == (try Self.render(.file(path: Self.path("grid-709-limited.heic")))))
    }

    /// A tile carrying its own parameter sets (its data's first NAL unit made a PPS) is found by the plan
    /// before any row is decoded and goes to libheif from the start.
    @Test func inBandParameterSetsAreFoundByThePlan() throws {
        var bytes = try Fixtures.bytes(Self.path("grid.heic"))
        let grid = try #require(try HEIFGrid.plan(HEIFFileBytes(memory: bytes), limits: ImageLimits()))
        let tile = grid.tileExtents[4][0]
        bytes[tile.offset + 4] = 34 << 1
        #expect(try HEIFGrid.plan(HEIFFileBytes(memory: bytes), limits: ImageLimits()) == nil)
        // A NAL length that runs past the tile's data: not planned either.
        var cut = try Fixtures.bytes(Self.path("grid.heic"))
        cut[tile.offset] = 0x7F
        #expect(try HEIFGrid.plan(HEIFFileBytes(memory: cut), limits: ImageLimits()) == nil)
    }

    /// The parser on every cut of the meta box and on single-byte changes: nil, a grid, or a thrown error;
    /// never a crash (the FuzzHEIF target runs the same on random inputs).
    @Test func parserSurvivesDamagedMeta() throws {
        let whole = try Fixtures.bytes(Self.path("grid-mirror-rotate.heic"))
        let file = HEIFFileBytes(memory: whole)
        let meta = try #require(try file.metaBody(maxBytes: 1 << 20))
        let parsed = try HEIFGrid.parse(meta: meta, fileSize: whole.count, read: { try file.read(at: $0, count: $1) })
        #expect(parsed != nil)
        for cut in 0..<meta.count {
            _ = try? HEIFGrid.parse(
                meta: Array(meta.prefix(cut)), fileSize: whole.count, read: { try file.read(at: $0, count: $1) })
        }
        for at in 0..<meta.count {
            for value: UInt8 in [0, 0xFF, meta[at] ^ 0x80] {
                var copy = meta
                copy[at] = value
                _ = try? HEIFGrid.parse(meta: copy, fileSize: whole.count, read: { try file.read(at: $0, count: $1) })
            }
        }
    }
}
