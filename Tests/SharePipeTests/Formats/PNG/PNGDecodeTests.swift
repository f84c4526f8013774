import Foundation
import Testing
@testable import SharePipe

/// One colour-type picture: what the probe must say and the RGBA expected at each quadrant's centre
/// (TL, TR, BL, BR). Colour is only compared where alpha > 0 (it is undefined under full transparency).
struct PNGColourCase: CustomTestStringConvertible, Sendable {
    var file: String
    var colorModel: ColorModel
    var bitDepth: Int
    var hasAlpha: Bool
    var quadrants: [[Int]]
    var testDescription: String { file }
}

private let red = [255, 0, 0], green = [0, 255, 0], blue = [0, 0, 255], brown = [128, 64, 32]
private func gray(_ v: Int, _ a: Int = 255) -> [Int] { [v, v, v, a] }
private let grayRamp = [gray(0), gray(85), gray(170), gray(255)]

private let colourCases: [PNGColourCase] =
    [
        PNGColourCase(
            file: "gray-1.png", colorModel: .gray, bitDepth: 1, hasAlpha: false,
            quadrants: [gray(0), gray(255), gray(255), gray(0)]),
        PNGColourCase(file: "gray-2.png", colorModel: .gray, bitDepth: 2, hasAlpha: false, quadrants: grayRamp),
        PNGColourCase(file: "gray-4.png", colorModel: .gray, bitDepth: 4, hasAlpha: false, quadrants: grayRamp),
        PNGColourCase(
            file: "gray-4-trns.png", colorModel: .gray, bitDepth: 4, hasAlpha: true,
            quadrants: [gray(0), gray(85), gray(170, 0), gray(255)]),
        PNGColourCase(file: "gray-8.png", colorModel: .gray, bitDepth: 8, hasAlpha: false, quadrants: grayRamp),
        PNGColourCase(file: "gray-16.png", colorModel: .gray, bitDepth: 16, hasAlpha: false, quadrants: grayRamp),
        PNGColourCase(
            file: "gray-alpha-8.png", colorModel: .grayAlpha, bitDepth: 8, hasAlpha: true,
            quadrants: [gray(0, 255), gray(85, 128), gray(170, 64), gray(255, 0)]),
        PNGColourCase(
            file: "gray-alpha-16.png", colorModel: .grayAlpha, bitDepth: 16, hasAlpha: true,
            quadrants: [gray(0, 255), gray(85, 128), gray(170, 64), gray(255, 0)]),
        PNGColourCase(
            file: "rgb-8.png", colorModel: .rgb, bitDepth: 8, hasAlpha: false,
            quadrants: [red + [255], green + [255], blue + [255], brown + [255]]),
        PNGColourCase(
            file: "rgb-8-trns.png", colorModel: .rgb, bitDepth: 8, hasAlpha: true,
            quadrants: [red + [255], green + [255], blue + [255], brown + [0]]),
        PNGColourCase(
            file: "rgb-16.png", colorModel: .rgb, bitDepth: 16, hasAlpha: false,
            quadrants: [red + [255], green + [255], blue + [255], brown + [255]]),
        PNGColourCase(
            file: "rgba-8.png", colorModel: .rgba, bitDepth: 8, hasAlpha: true,
            quadrants: [red + [255], green + [128], blue + [64], brown + [0]]),
        PNGColourCase(
            file: "rgba-16.png", colorModel: .rgba, bitDepth: 16, hasAlpha: true,
            quadrants: [red + [255], green + [128], blue + [64], brown + [0]]),
        PNGColourCase(
            file: "palette-1.png", colorModel: .palette, bitDepth: 1, hasAlpha: false,
            quadrants: [red + [255], green + [255], green + [255], red + [255]]),
        PNGColourCase(
            file: "palette-1-trns.png", colorModel: .palette, bitDepth: 1, hasAlpha: true,
            quadrants: [red + [128], green + [255], green + [255], red + [128]]),
    ]
    + [2, 4, 8].flatMap { depth in
        [
            PNGColourCase(
                file: "palette-\(depth).png", colorModel: .palette, bitDepth: depth, hasAlpha: false,
                quadrants: [red + [255], green + [255], blue + [255], brown + [255]]),
            PNGColourCase(
                file: "palette-\(depth)-trns.png", colorModel: .palette, bitDepth: depth, hasAlpha: true,
                quadrants: [red + [255], green + [128], blue + [64], brown + [0]]),
        ]
    }

@Suite("PNG decoding")
struct PNGDecodeTests {
    @Test("every colour type and depth probes and decodes to the right pixels", arguments: colourCases)
    func colourTypes(_ colourCase: PNGColourCase) throws {
        let source = PNGFixtures.source(colourCase.file)
        let info = try PNGDecoder().probe(source, limits: ImageLimits())
        #expect(info.format == .png)
        #expect(info.size == PixelSize(width: 61, height: 47))
        #expect(info.colorModel == colourCase.colorModel)
        #expect(info.bitDepth == colourCase.bitDepth)
        #expect(info.hasAlpha == colourCase.hasAlpha)
        #expect(!info.progressive)

        let bitmap = try Decode.bitmap(try PNGFixtures.bytes(colourCase.file))
        #expect(bitmap.size == info.size)
        #expect(bitmap.layout.hasAlpha == colourCase.hasAlpha)
        for (index, (x, y)) in PNGFixtures.quadrantCentres.enumerated() {
            var got = bitmap.rgb(x, y)
            if got.count == 3 { got.append(255) }
            let want = colourCase.quadrants[index]
            #expect(abs(got[3] - want[3]) <= 1, "alpha of quadrant \(index): \(got) vs \(want)")
            if want[3] > 0 {
                #expect(
                    close(Array(got.prefix(3)), Array(want.prefix(3)), tolerance: 1),
                    "quadrant \(index): \(got) vs \(want)")
            }
        }
    }

    @Test(
        "Adam7 images decode exactly like their non-interlaced twins, at full size and reduced",
        arguments: ["detail-rgba-8", "detail-rgb-16", "detail-palette-4-trns", "detail-gray-1"])
    func interlacedMatchesProgressive(_ name: String) throws {
        let plain = PNGFixtures.source(name + ".png"), interlaced = PNGFixtures.source(name + "-interlaced.png")
        let decoder = PNGDecoder()
        let plainInfo = try decoder.probe(plain, limits: ImageLimits())
        let interlacedInfo = try decoder.probe(interlaced, limits: ImageLimits())
        #expect(interlacedInfo.progressive && !plainInfo.progressive)
        #expect(interlacedInfo.size == PixelSize(width: 123, height: 97))
        for target in [interlacedInfo.size, PixelSize(width: 41, height: 33)] {
            let a = try decoder.render(
                plain, info: plainInfo, target: target, limits: ImageLimits(), meter: PixelMemoryMeter())
            let b = try decoder.render(
                interlaced, info: interlacedInfo, target: target, limits: ImageLimits(), meter: PixelMemoryMeter())
            #expect(a.bitmap.size == target)
            #expect(a.bitmap == b.bitmap, "\(name) at \(target)")
        }
    }

    @Test("an interlaced decode holds half the decoded image, counted, and is refused over the decoder memory limit")
    func interlacedMemoryIsBounded() throws {
        let source = PNGFixtures.source("detail-rgba-8-interlaced.png")
        let decoder = PNGDecoder()
        let info = try decoder.probe(source, limits: ImageLimits())
        let target = PixelSize(width: 41, height: 33)
        let meter = PixelMemoryMeter()
        _ = try decoder.render(source, info: info, target: target, limits: ImageLimits(), meter: meter)
        let rowBytes = 123 * 4
        let evenRows = 49 * rowBytes
        let resampler = LanczosResampler.memoryEstimate(from: info.size, to: target, channels: 4)
        #expect(meter.peakBytes >= evenRows)
        #expect(meter.peakBytes <= evenRows + 2 * rowBytes + resampler)
        #expect(meter.peakBytes < 97 * rowBytes, "less than a whole decoded image")
        #expect(meter.currentBytes == 0)

        var tight = ImageLimits()
        tight.maxDecoderMemory = evenRows - 1
        #expect {
            try decoder.render(source, info: info, target: target, limits: tight, meter: PixelMemoryMeter())
        } throws: { error in
            guard case SharePipeError.tooLarge(_, let exceeded) = error else { return false }
            return exceeded.kind == .decoderMemory && exceeded.found == evenRows && exceeded.limit == evenRows - 1
                && exceeded.size == PixelSize(width: 123, height: 97)
        }
        // The same limit does not touch a non-interlaced image, which streams one row at a time.
        let plain = PNGFixtures.source("detail-rgba-8.png")
        let plainMeter = PixelMemoryMeter()
        _ = try decoder.render(
            plain, info: try decoder.probe(plain, limits: tight), target: target, limits: tight, meter: plainMeter)
        #expect(plainMeter.peakBytes <= rowBytes + resampler)
    }

    @Test("16-bit samples keep their fraction through resampling and become 8-bit only at the end")
    func sixteenBitPrecision() throws {
        let source = PNGFixtures.source("gray-16-stripes.png")
        let decoder = PNGDecoder()
        let info = try decoder.probe(source, limits: ImageLimits())
        let full = try decoder.render(
            source, info: info, target: info.size, limits: ImageLimits(), meter: PixelMemoryMeter()
        ).bitmap
        #expect(full.pixel(x: 0, y: 0).first == 129)  // 33050 / 257 = 128.60
        #expect(full.pixel(x: 1, y: 0).first == 130)  // 33307 / 257 = 129.60
        // Halving averages each stripe pair: 129.10 → 129. Rounding to 8 bits first would give 129.5 → 130.
        let half = try decoder.render(
            source, info: info, target: PixelSize(width: 32, height: 32), limits: ImageLimits(),
            meter: PixelMemoryMeter()
        ).bitmap
        for x in 4..<28 {
            #expect(half.pixel(x: x, y: 16).first == 129, "column \(x)")
        }
    }

    @Test("alpha is resampled premultiplied: no green from the transparent background reaches the red edge")
    func premultipliedAlphaEdges() throws {
        var options = PrepareOptions(maxShortEdge: 67)
        options.strip = .all
        let result = try Pipeline.prepare(PNGFixtures.source("red-on-clear-green.png"), options: options)
        #expect(result.format == .png)
        #expect(result.size == PixelSize(width: 101, height: 67))
        let bitmap = try Decode.bitmap(result.bytes)
        #expect(bitmap.layout == .rgba)
        var edgePixels = 0
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let pixel = bitmap.rgb(x, y)
                guard pixel[3] > 0 else { continue }
                if pixel[3] < 255 { edgePixels += 1 }
                #expect(pixel[1] <= 1 && pixel[0] >= 254 && pixel[2] <= 1, "pixel \(x),\(y) is \(pixel)")
            }
        }
        #expect(edgePixels > 0, "the reduction must produce partly transparent edge pixels")
    }

    @Test("the probe reads metadata from both sides of the image data without decoding pixels")
    func probeMetadata() throws {
        let info = try PNGDecoder().probe(PNGFixtures.source("gps-orient6.png"), limits: ImageLimits())
        #expect(info.size == PixelSize(width: 48, height: 64))
        #expect(info.orientation == .right)
        #expect(info.storedOrientationValue == 6)
        #expect(info.orientedSize == PixelSize(width: 64, height: 48))
        #expect(info.metadataKinds == [.exif, .gps, .text, .time])
        let texts = info.metadata.compactMap { block -> String? in
            guard case .pngText(let type, let data) = block else { return nil }
            return type + ":" + String(decoding: data.prefix { $0 != 0 }, as: UTF8.self)
        }
        #expect(
            texts.sorted() == ["iTXt:XML:com.adobe.xmp", "tEXt:Comment", "tEXt:Title", "zTXt:Raw profile type iptc"])
        #expect(info.metadata.contains(.other(tag: "tIME", data: [0x07, 0xE5, 6, 15, 14, 30, 0])))
        #expect(info.pngStructuralChunks.map(\.type) == [.pHYs])
    }

    @Test("the probe inflates an iCCP profile and keeps colour chunks out of the metadata")
    func probeColour() throws {
        let icc = try PNGDecoder().probe(PNGFixtures.source("icc-p3.png"), limits: ImageLimits())
        guard case .icc(let profile)? = icc.metadata.first else {
            Issue.record("no ICC block first: \(icc.metadata)")
            return
        }
        #expect(ICCProfile.colorSpace(profile) == "RGB")
        #expect(profile.count == Int(profile[0]) << 24 | Int(profile[1]) << 16 | Int(profile[2]) << 8 | Int(profile[3]))
        let colour = try PNGDecoder().probe(PNGFixtures.source("colour-chunks.png"), limits: ImageLimits())
        #expect(colour.pngStructuralChunks.map(\.type.name) == ["sRGB", "gAMA", "cHRM", "pHYs"])
        #expect(colour.metadataKinds == [.text])
    }
}
