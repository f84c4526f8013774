import CSharePipe
import Foundation
import Testing
@testable import SharePipe

@Suite("PNG encoding and the byte limit")
struct PNGFitTests {
    /// Encoded sizes of a fixture at the first (default) and the strongest setting, as the fitter will see them.
    private func encodedSizes(_ name: String) throws -> (first: Int, zlib9: Int) {
        let bitmap = try Decode.bitmap(try PNGFixtures.bytes(name))
        let encoder = PNGEncoder()
        let first = try encoder.encode(
            bitmap,
            settings: EncodeSettings(
                quality: 85, progressive: false,
                effort: PNGEncoder.defaultEffort), metadata: [])
        let zlib9 = try encoder.encode(
            bitmap, settings: EncodeSettings(quality: 85, progressive: false, effort: 9), metadata: [])
        return (first.count, zlib9.count)
    }

    @Test("over the limit at the default setting, the strongest lossless setting is tried first")
    func strongestLosslessFirst() throws {
        // Fine detail gains from zlib 9's longer matches (the noisy photo does not: grain is incompressible).
        let sizes = try encodedSizes("detail-rgba-8.png")
        try #require(sizes.zlib9 < sizes.first - 1, "zlib 9 must be smaller for this test to mean anything")
        // Between the two, and close enough to the first for the ladder to try zlib 9 at this size.
        let limit = max(
            (sizes.first + sizes.zlib9) / 2,
            Int((Double(sizes.first) / LosslessLadder.strongerEffortReach).rounded(.up)))
        try #require(limit < sizes.first && limit >= sizes.zlib9, "sizes \(sizes)")
        let result = try Pipeline.prepare(
            PNGFixtures.source("detail-rgba-8.png"),
            options: PrepareOptions(maxBytes: limit, allowFormatChange: true))
        #expect(result.format == .png)
        #expect(result.size == PixelSize(width: 123, height: 97))
        #expect(result.byteCount <= limit)
        #expect(result.adjustments == ["zlib 9"])
        #expect(result.attempts.map(\.note) == ["zlib 1", "zlib 9"])
        #expect(result.attempts.last?.fits == true)
        #expect(result.quality == nil)
    }

    @Test("where a format change is allowed and nothing is transparent, the PNG becomes a JPEG before shrinking")
    func formatChange() throws {
        let sizes = try encodedSizes("photo-160x120.png")
        let limit = 20_000
        try #require(sizes.zlib9 > limit)
        // More than 10 % over at zlib 1: zlib 9 (a few per cent smaller at best) is not tried at this size.
        try #require(Double(sizes.first) > Double(limit) * LosslessLadder.strongerEffortReach)
        let result = try Pipeline.prepare(
            PNGFixtures.source("photo-160x120.png"),
            options: PrepareOptions(maxBytes: limit, allowFormatChange: true))
        #expect(result.format == .jpeg)
        #expect(result.size == PixelSize(width: 160, height: 120))
        #expect(result.byteCount <= limit)
        #expect(result.adjustments == ["PNG → JPEG"])
        #expect(result.quality != nil)
        #expect(result.attempts.first?.note == "zlib 1")
        #expect(result.attempts.dropFirst().allSatisfy { $0.format == .jpeg && $0.note == "PNG → JPEG" })
        #expect(ImageFormat.sniff(result.bytes) == .jpeg)
        #expect(try Decode.bitmap(result.bytes).size == PixelSize(width: 160, height: 120))
    }

    @Test("without a format change the PNG gets smaller dimensions, at the strongest setting")
    func smallerDimensions() throws {
        let limit = 20_000
        let sizes = try encodedSizes("photo-160x120.png")
        try #require(Double(sizes.first) > Double(limit) * LosslessLadder.strongerEffortReach)
        let result = try Pipeline.prepare(
            PNGFixtures.source("photo-160x120.png"),
            options: PrepareOptions(maxBytes: limit, allowFormatChange: false))
        #expect(result.format == .png)
        #expect(result.byteCount <= limit)
        #expect(result.size.width < 160 && result.size.height < 120)
        #expect(result.adjustments == ["zlib 9", "dimensions reduced to fit"])
        #expect(result.attempts.allSatisfy { $0.format == .png })
        // Far over the limit at zlib 1, so no zlib 9 at the first size; the smaller sizes start at zlib 9.
        #expect(result.attempts.first?.note == "zlib 1")
        #expect(result.attempts.dropFirst().allSatisfy { $0.note == "zlib 9" }, "smaller sizes start at zlib 9")
        #expect(try Decode.bitmap(result.bytes).size == result.size)
    }

    @Test("cpuFirst (one decode, resampled again for smaller sizes) makes the same PNG as memoryFirst")
    func cpuFirstMatches() throws {
        var options = PrepareOptions(maxBytes: 20_000, allowFormatChange: false)
        let memoryFirst = try Pipeline.prepare(PNGFixtures.source("photo-160x120.png"), options: options)
        options.strategy = .cpuFirst
        let cpuFirst = try Pipeline.prepare(PNGFixtures.source("photo-160x120.png"), options: options)
        #expect(cpuFirst.attempts.map(\.size) == memoryFirst.attempts.map(\.size))
        #expect(cpuFirst.size == memoryFirst.size)
        #expect(cpuFirst.byteCount <= 20_000)
    }

    @Test("meaningful alpha blocks the format change: the PNG shrinks instead")
    func alphaKeepsPNG() throws {
        let limit = 20_000
        let result = try Pipeline.prepare(
            PNGFixtures.source("photo-alpha-160x120.png"),
            options: PrepareOptions(maxBytes: limit, allowFormatChange: true))
        #expect(result.format == .png)
        #expect(result.byteCount <= limit)
        #expect(result.attempts.allSatisfy { $0.format == .png })
        #expect(try Decode.bitmap(result.bytes).layout == .rgba)
    }

    @Test("a limit nothing can meet above the smallest short edge is an error, not an oversize file")
    func cannotMeetLimit() throws {
        #expect {
            try Pipeline.prepare(
                PNGFixtures.source("photo-alpha-160x120.png"),
                options: PrepareOptions(maxBytes: 1024, minShortEdge: 100))
        } throws: { error in
            guard case SharePipeError.cannotMeetLimit(_, 1024, let best) = error else { return false }
            return best > 1024
        }
    }

    // MARK: Stored form

    private func encodeAndList(_ bitmap: Bitmap, metadata: [MetadataBlock] = []) throws -> (PNGListing, Bitmap) {
        let bytes = try PNGEncoder().encode(
            bitmap, settings: EncodeSettings(quality: 85, progressive: false), metadata: metadata)
        return (try PNGListing(bytes), try Decode.bitmap(bytes))
    }

    /// A 40×30 bitmap whose pixels come from `pixel(x, y)`.
    private func bitmap(_ layout: PixelLayout, _ pixel: (Int, Int) -> [UInt8]) -> Bitmap {
        var pixels: [UInt8] = []
        for y in 0..<30 { for x in 0..<40 { pixels += pixel(x, y) } }
        return Bitmap(size: PixelSize(width: 40, height: 30), layout: layout, pixels: pixels)
    }

    @Test("an opaque RGBA bitmap is written as RGB, losslessly")
    func opaqueRGBAasRGB() throws {
        let source = bitmap(.rgba) { x, y in [UInt8(x * 6), UInt8(y * 8), UInt8((x * y) & 255), 255] }
        let (listing, decoded) = try encodeAndList(source)
        #expect(listing.colorType == 2)
        #expect(decoded == source.droppingAlpha())
    }

    @Test("an RGB bitmap whose channels are equal is written as gray, losslessly")
    func grayAsGray() throws {
        let source = bitmap(.rgb) { x, y in
            let v = UInt8((x * 7 + y * 3) & 255); return [v, v, v]
        }
        let (listing, decoded) = try encodeAndList(source)
        #expect(listing.colorType == 0)
        #expect(decoded.layout == .gray)
        #expect(decoded.rgb(13, 17) == source.rgb(13, 17))
    }

    @Test(
        "few colours become a palette of the smallest depth, translucent entries first in tRNS",
        arguments: [(2, 1), (4, 2), (9, 4), (200, 8)])
    func palette(colours: Int, depth: Int) throws {
        let source = bitmap(.rgba) { x, y in
            let c = (x + y * 40) % colours
            return [UInt8(c), UInt8(255 - c), UInt8(c * 7 & 255), c == 1 ? 100 : 255]
        }
        let (listing, decoded) = try encodeAndList(source)
        #expect(listing.colorType == 3)
        #expect(listing.bitDepth == depth)
        #expect(listing.data("PLTE")?.count == colours * 3)
        #expect(listing.data("tRNS") == [100], "only the one translucent entry, sorted first")
        #expect(decoded == source)
    }

    // MARK: Filter choice

    /// A 240×160 RGB bitmap: a smooth photo-like field with grain, or a drawing (flat panels, hard-edged
    /// strokes, a faint gradient so it has more than 256 colours and stays truecolour).
    private func filterFixture(photo: Bool) -> Bitmap {
        var pixels: [UInt8] = []
        var seed: UInt32 = 12345
        for y in 0..<160 {
            for x in 0..<240 {
                if photo {
                    seed = seed &* 1_103_515_245 &+ 12345
                    let grain = Int(seed >> 28) - 8
                    let base = 90 + Int(60 * sin(Double(x) / 23) * cos(Double(y) / 17))
                    pixels += [base + grain, base / 2 + 40 + grain, 200 - base / 2 + grain].map { UInt8(clamping: $0) }
                } else {
                    let panel = (x / 60 + y / 40) % 3
                    let stroke = (y % 20 < 2) || (x % 37 == 0 && y % 40 < 30)
                    let colour = [[240, 240, 250], [150, 170, 240], [230, 230, 230]][panel]
                    // Red falls one level every 2 rows, blue every 2 columns: thousands of colours, in steps.
                    let drawn = [colour[0] - y / 2, colour[1], colour[2] - x / 2].map { UInt8($0) }
                    pixels += stroke ? [20, 20, 30] : drawn
                }
            }
        }
        return Bitmap(size: PixelSize(width: 240, height: 160), layout: .rgb, pixels: pixels)
    }

    /// The filter type byte of every row of an RGB PNG written at zlib 0 (stored deflate blocks).
    private func rowFilters(_ png: [UInt8], width: Int) throws -> [UInt8] {
        let listing = try PNGListing(png)
        try #require(listing.colorType == 2, "truecolour")
        let zlib = listing.chunks.filter { $0.type == "IDAT" }.flatMap(\.data)
        var position = 2
        var raw: [UInt8] = []
        while position + 5 <= zlib.count {
            let header = zlib[position]
            try #require(header & 0b110 == 0, "stored blocks only at zlib 0")
            let length = Int(zlib[position + 1]) | Int(zlib[position + 2]) << 8
            raw += zlib[position + 5..<position + 5 + length]
            position += 5 + length
            if header & 1 == 1 { break }
        }
        let stride = 1 + width * 3
        try #require(raw.count % stride == 0)
        return Swift.stride(from: 0, to: raw.count, by: stride).map { raw[$0] }
    }

    /// Bytes of a zlib 1 encode with one filter type for every row, straight through the shim.
    private func singleFilterSize(_ bitmap: Bitmap, filter: Int32) throws -> Int {
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        var message = [CChar](repeating: 0, count: Int(SP_MESSAGE_LENGTH))
        let format = sp_png_image_format(
            color_type: 2, bit_depth: 8, palette: nil, palette_count: 0, palette_alpha: nil, palette_alpha_count: 0)
        let status = bitmap.pixels.withUnsafeBufferPointer {
            sp_png_encode(
                $0.baseAddress, 240, 160, format, sp_png_encode_settings(zlib_level: 1, filter: filter), nil, 0,
                nil, nil, 0, &output, &length, &message)
        }
        try #require(status == SP_OK)
        sp_free(output)
        return length
    }

    @Test("truecolour rows all get one filter type: the one whose encode is smallest, chosen on a sample")
    func sampledFilter() throws {
        var chosen: [UInt8] = []
        for photo in [true, false] {
            let source = filterFixture(photo: photo)
            let stored = try PNGEncoder().encode(
                source, settings: EncodeSettings(quality: 85, progressive: false, effort: 0), metadata: [])
            let filters = try rowFilters(stored, width: 240)
            #expect(filters.count == 160)
            #expect(Set(filters).count == 1, "one filter type for every row")
            let sizes = try (0...4).map { try singleFilterSize(source, filter: Int32($0)) }
            let smallest = sizes.indices.min { sizes[$0] < sizes[$1] }!
            #expect(Int(filters[0]) == smallest, "sizes at zlib 1 by filter type: \(sizes)")
            chosen.append(filters[0])
            let first = try PNGEncoder().encode(
                source, settings: EncodeSettings(quality: 85, progressive: false, effort: PNGEncoder.defaultEffort),
                metadata: [])
            #expect(first.count == sizes[smallest], "the first attempt is that filter at zlib 1")
            #expect(try Decode.bitmap(first) == source)
        }
        #expect(chosen[0] != chosen[1], "the picture decides the filter")
    }

    @Test("a gray ICC profile keeps the image out of the palette; an RGB profile keeps it out of gray")
    func profileConstrainsReduction() throws {
        let stored = PNGStoredImage(reducing: bitmap(.gray) { x, _ in [UInt8(x % 3 * 100)] }, profileColorSpace: "GRAY")
        #expect(stored.colorType == 0)
        let colour = PNGStoredImage(
            reducing: bitmap(.rgb) { x, _ in
                let v = UInt8(x * 5); return [v, v, v]
            },
            profileColorSpace: "RGB")
        #expect(colour.colorType == 3 || colour.colorType == 2)
        let free = PNGStoredImage(
            reducing: bitmap(.rgb) { x, _ in
                let v = UInt8(x * 5); return [v, v, v]
            },
            profileColorSpace: nil)
        #expect(free.colorType == 0)
    }
}
