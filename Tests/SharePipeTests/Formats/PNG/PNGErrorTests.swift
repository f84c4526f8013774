import Foundation
import Testing
@testable import SharePipe

@Suite("PNG errors")
struct PNGErrorTests {
    /// Runs one file through the batch (which writes outputs) and returns its report and what the output
    /// directory holds afterwards.
    private func batch(_ path: String) throws -> (BatchReport, [String]) {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let batch = Batch(outputDirectory: directory, options: PrepareOptions())
        let report = try #require(batch.process(BatchItem(input: path, relativeName: "out.png")).first)
        return (report, FileIO.listFiles(in: directory, recursive: true))
    }

    private func modified(_ name: String, _ change: (inout [UInt8]) throws -> Void) throws -> ImageSource {
        var bytes = try PNGFixtures.bytes(name)
        try change(&bytes)
        return .bytes(bytes)
    }

    /// Offset of the first byte of the payload of the first chunk of `type`.
    private func payloadOffset(_ type: String, in bytes: [UInt8]) throws -> Int {
        var position = 8
        while position + 8 <= bytes.count {
            let length = bytes[position..<position + 4].reduce(0) { $0 << 8 | Int($1) }
            if String(decoding: bytes[position + 4..<position + 8], as: UTF8.self) == type { return position + 8 }
            position += 12 + length
        }
        throw SharePipeError.corrupt(file: "<test>", phase: .decode, reason: "no \(type) chunk")
    }

    @Test("a truncated PNG is corrupt, says so, and leaves no output file")
    func truncated() throws {
        #expect {
            try Pipeline.prepare(.file(path: PNGFixtures.broken("truncated.png")), options: PrepareOptions())
        } throws: { error in
            guard case SharePipeError.corrupt(let file, _, let reason) = error else { return false }
            return file.hasSuffix("truncated.png") && reason.contains("truncated")
        }
        let (report, outputs) = try batch(PNGFixtures.broken("truncated.png"))
        #expect(report.error?.kind == "corrupt")
        #expect(report.output == nil)
        #expect(outputs.isEmpty)
    }

    @Test("libpng's own reading of a truncated file fails cleanly too (render without the probe's walk)")
    func truncatedInsideLibpng() throws {
        let whole = PNGFixtures.source("photo-160x120.png")
        let info = try PNGDecoder().probe(whole, limits: ImageLimits())
        #expect {
            try PNGDecoder().render(
                .file(path: PNGFixtures.broken("truncated.png")), info: info, target: PixelSize(width: 40, height: 30),
                limits: ImageLimits(), meter: PixelMemoryMeter())
        } throws: { error in
            guard case SharePipeError.corrupt(_, _, let reason) = error else { return false }
            return reason.contains("truncated")
        }
    }

    @Test("an IHDR claiming 100000×100000 is refused from the header: tooLarge, no pixel memory, no output")
    func hugeHeader() throws {
        #expect {
            try Pipeline.prepare(.file(path: PNGFixtures.broken("huge-ihdr.png")), options: PrepareOptions())
        } throws: { error in
            guard case SharePipeError.tooLarge(_, let exceeded) = error else { return false }
            return exceeded
                == ExceededLimit(
                    .dimension, found: 100_000, limit: 65_500,
                    size: PixelSize(width: 100_000, height: 100_000))
        }
        let (report, outputs) = try batch(PNGFixtures.broken("huge-ihdr.png"))
        #expect(report.error?.kind == "tooLarge")
        #expect(outputs.isEmpty)
    }

    @Test("render re-checks the header before libpng sizes anything: libpng's user limit, then the pixel limit")
    func hugeHeaderInsideRender() throws {
        let source = ImageSource.file(path: PNGFixtures.broken("huge-ihdr.png"))
        let info = ImageInfo(
            format: .png, size: PixelSize(width: 100_000, height: 100_000), colorModel: .rgba, bitDepth: 8,
            progressive: false, orientation: .up, storedOrientationValue: nil, frameCount: 1, hasAlpha: true,
            metadata: [], byteCount: 69)
        let meter = PixelMemoryMeter()
        #expect {
            try PNGDecoder().render(
                source, info: info, target: PixelSize(width: 1080, height: 1080), limits: ImageLimits(), meter: meter)
        } throws: { error in
            guard case SharePipeError.corrupt(_, _, let reason) = error else { return false }
            return reason.contains("exceeds user limit")  // png_set_user_limits, inside libpng's IHDR check
        }
        var wide = ImageLimits()
        wide.maxDimension = 200_000
        #expect {
            try PNGDecoder().render(
                source, info: info, target: PixelSize(width: 1080, height: 1080), limits: wide, meter: meter)
        } throws: { error in
            guard case SharePipeError.tooLarge(_, let exceeded) = error else { return false }
            return exceeded
                == ExceededLimit(
                    .pixelArea, found: 10_000_000_000, limit: ImageLimits().maxPixels,
                    size: PixelSize(width: 100_000, height: 100_000))
        }
        #expect(meter.peakBytes == 0)
    }

    @Test("damaged image data is corrupt: a bad IDAT CRC, or a broken deflate stream (caught by libpng)")
    func damagedImageData() throws {
        let crc = try modified("rgb-8.png") { bytes in
            let start = try payloadOffset("IDAT", in: bytes)
            let length = bytes[start - 8..<start - 4].reduce(0) { $0 << 8 | Int($1) }
            bytes[start + length] ^= 0x01  // first byte of the stored CRC; the data itself is intact
        }
        let stream = try modified("rgb-8.png") { bytes in bytes[try payloadOffset("IDAT", in: bytes) + 3] ^= 0x01 }
        for (source, words) in [(crc, "IDAT: CRC error"), (stream, "IDAT")] {
            #expect {
                try Pipeline.prepare(source, options: PrepareOptions())
            } throws: { error in
                guard case SharePipeError.corrupt(_, _, let reason) = error else { return false }
                return reason.contains(words)
            }
        }
    }

    @Test("a damaged IHDR CRC is corrupt; a damaged signature is not a PNG")
    func headerDamage() throws {
        let ihdr = try modified("rgb-8.png") { bytes in bytes[try payloadOffset("IHDR", in: bytes)] ^= 0x01 }
        #expect {
            try Pipeline.prepare(ihdr, options: PrepareOptions())
        } throws: { error in
            guard case SharePipeError.corrupt(_, _, let reason) = error else { return false }
            return reason == "IHDR: CRC error"
        }
        let signature = try modified("rgb-8.png") { bytes in bytes[1] = 0x51 }
        #expect {
            try Pipeline.prepare(signature, options: PrepareOptions())
        } throws: { error in
            if case SharePipeError.unsupportedFormat = error { return true } else { return false }
        }
    }

    @Test("an invalid colour type or bit depth in IHDR is corrupt")
    func invalidHeaderFields() throws {
        for (offset, value, words) in [(9, UInt8(1), "colour type"), (8, UInt8(3), "bit depth")] {
            let source = try modified("rgb-8.png") { bytes in
                let start = try payloadOffset("IHDR", in: bytes)
                bytes[start + offset] = value
                let crc = PNGCRC.checksum(type: .IHDR, data: Array(bytes[start..<start + 13]))
                bytes.replaceSubrange(
                    start + 13..<start + 17,
                    with: [
                        UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF),
                        UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF),
                    ])
            }
            #expect {
                try Pipeline.prepare(source, options: PrepareOptions())
            } throws: { error in
                guard case SharePipeError.corrupt(_, _, let reason) = error else { return false }
                return reason.contains(words)
            }
        }
    }

    @Test("an ancillary chunk with a bad CRC is ignored, as libpng does: the image still prepares")
    func ancillaryCRC() throws {
        let source = try modified("colour-chunks.png") { bytes in bytes[try payloadOffset("tEXt", in: bytes)] ^= 0x20 }
        let info = try PNGDecoder().probe(source, limits: ImageLimits())
        #expect(info.metadata.isEmpty)
        let result = try Pipeline.prepare(source, options: PrepareOptions(strip: .none))
        #expect(!(try PNGListing(result.bytes)).types.contains("tEXt"))
    }
}
