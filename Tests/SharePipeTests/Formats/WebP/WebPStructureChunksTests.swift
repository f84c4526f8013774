import Foundation
import Testing
@testable import SharePipe

/// The WebP chunks the metadata rewrite copies as structure carry nothing unparsed: VP8X is written as the ten
/// bytes the container defines (a longer one is refused, as libwebp refuses it), and an ANMF frame keeps only
/// its image chunks (ALPH, VP8, VP8L).
@Suite("WebP structure chunks")
struct WebPStructureChunksTests {
    static let vp8xMarker = "SPVP8X-TRAILING-W4"
    static let frameMarker = "SPANMF-UNKNOWN-J6"

    static func chunk(_ fourCC: String, _ payload: [UInt8]) -> [UInt8] { WebPBytes.chunk(fourCC, payload) }

    /// The `VP8 ` chunk payload and canvas of `TestImages/webp/icc.webp`.
    static func bitstream() throws -> (payload: [UInt8], width: Int, height: Int) {
        let bytes = try Fixtures.bytes(Fixtures.path("webp/icc.webp"))
        var position = 12
        while position + 8 <= bytes.count {
            let fourCC = String(decoding: bytes[position..<position + 4], as: UTF8.self)
            let size = WebPBytes.u32(bytes, position + 4)
            if fourCC == "VP8 " {
                let payload = Array(bytes[(position + 8)..<(position + 8 + size)])
                let header = try #require(WebPBitstreamHeader(fourCC: fourCC, payload: Array(payload[..<10])))
                return (payload, header.size.width, header.size.height)
            }
            position += 8 + size + (size & 1)
        }
        Issue.record("icc.webp has no VP8 chunk")
        throw SharePipeError.corrupt(file: "icc.webp", phase: .header, reason: "no VP8 chunk")
    }

    static func riff(_ body: [UInt8]) -> [UInt8] {
        Array("RIFF".utf8) + WebPBytes.le32(body.count + 4) + Array("WEBP".utf8) + body
    }

    @Test("A still: VP8X's reserved bytes are written as zero", arguments: [StripMode.all, .gps])
    func vp8xReservedBytesAreZero(mode: StripMode) throws {
        let (vp8, width, height) = try Self.bitstream()
        let vp8x: [UInt8] = [0, 7, 7, 7] + WebPBytes.le24(width - 1) + WebPBytes.le24(height - 1)
        let input = Self.riff(Self.chunk("VP8X", vp8x) + Self.chunk("VP8 ", vp8))
        let result = try SharePipe.prepare(.bytes(input), options: PrepareOptions(strip: mode))
        #expect(result.method == .metadataRewrite)
        #expect(
            Array(result.bytes[12..<30]) == Array("VP8X".utf8) + WebPBytes.le32(10) + [0, 0, 0, 0]
                + WebPBytes.le24(width - 1) + WebPBytes.le24(height - 1))
        #expect(try Decode.bitmap(result.bytes) == Decode.bitmap(input))
    }

    @Test("A VP8X longer than ten bytes is refused, as libwebp (and so Chromium) refuses it")
    func longVP8XIsRefused() throws {
        let (vp8, width, height) = try Self.bitstream()
        let vp8x: [UInt8] =
            [0, 0, 0, 0] + WebPBytes.le24(width - 1) + WebPBytes.le24(height - 1) + Array(Self.vp8xMarker.utf8)
        let input = Self.riff(Self.chunk("VP8X", vp8x) + Self.chunk("VP8 ", vp8))
        #expect(throws: SharePipeError.self) {
            try SharePipe.prepare(.bytes(input), options: PrepareOptions(strip: .all))
        }
    }

    @Test("A one-frame animation: an unknown chunk inside ANMF goes, the frame's image data is copied byte for byte")
    func frameKeepsOnlyImageChunks() throws {
        let (vp8, width, height) = try Self.bitstream()
        let vp8x: [UInt8] =
            [WebPFeatureFlags.animation.rawValue, 0, 0, 0] + WebPBytes.le24(width - 1) + WebPBytes.le24(height - 1)
        let anim: [UInt8] = [0, 0, 0, 0, 0, 0]  // background, loop forever
        let frameHeader: [UInt8] =
            [0, 0, 0, 0, 0, 0] + WebPBytes.le24(width - 1) + WebPBytes.le24(height - 1) + WebPBytes.le24(100) + [0]
        let frame = frameHeader + Self.chunk("VP8 ", vp8) + Self.chunk("PRVT", Array(Self.frameMarker.utf8))
        let input = Self.riff(Self.chunk("VP8X", vp8x) + Self.chunk("ANIM", anim) + Self.chunk("ANMF", frame))
        LeakScanner.expectPlanted(Self.frameMarker, in: input)
        let output = try WebPRewriter.rewrite(.bytes(input), keeping: [])
        LeakScanner.expectAbsent(Self.frameMarker, in: output, "rewritten ANMF")
        let expected = Self.riff(
            Self.chunk("VP8X", vp8x) + Self.chunk("ANIM", anim)
                + Self.chunk("ANMF", frameHeader + Self.chunk("VP8 ", vp8)))
        #expect(output == expected)
        // Through the pipeline too, whichever route a one-frame animation takes.
        let result = try SharePipe.prepare(.bytes(input), options: PrepareOptions(strip: .all))
        LeakScanner.expectAbsent(Self.frameMarker, in: result.bytes, "prepared (\(result.method))")
    }

    @Test("A truncated ANMF is refused, naming the chunk")
    func truncatedFrame() throws {
        #expect(throws: SharePipeError.self) { try WebPRewriter.frameWithImageDataOnly([0, 0, 0], file: "t.webp") }
        let header = [UInt8](repeating: 0, count: 16)
        do {
            _ = try WebPRewriter.frameWithImageDataOnly(
                header + Array("VP8 ".utf8) + WebPBytes.le32(100) + [1, 2], file: "t.webp")
            Issue.record("a sub-chunk past the frame was accepted")
        } catch let error as SharePipeError {
            #expect(error.file == "t.webp" && error.reason.contains("VP8 "), "\(error)")
        }
    }
}
