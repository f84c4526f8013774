import Foundation
import Testing
@testable import SharePipe

/// APNGs whose default image is not part of the animation, read as Chromium reads them:
/// with one animation frame, browsers show that frame, whether its data is in one fdAT, split over
/// two, or led by a zero-length one; fdAT chunks in a file without any fcTL make it unreadable to browsers,
/// so it is refused. (What headless Chromium draws for each was checked with tools/browser_frames.py.) The files are built here chunk by chunk: a magenta default image and a blue frame.
@Suite struct APNGDefaultImageTests {
    static let size = PixelSize(width: 8, height: 6)
    static let magenta: [UInt8] = [255, 0, 255], blue: [UInt8] = [0, 0, 255]

    /// How the one animation frame's data is stored.
    enum FrameData: String, CaseIterable {
        case oneChunk, split, zeroLengthFirst, noFrameControl
    }

    static func u32(_ value: Int) -> [UInt8] {
        [UInt8((value >> 24) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    /// A zlib stream of stored (uncompressed) deflate blocks around `data`.
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65_535, data.count - offset)
            out += [
                offset + count == data.count ? 1 : 0, UInt8(count & 0xFF), UInt8(count >> 8),
                UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF),
            ]
            out += data[offset..<offset + count]
            offset += count
        } while offset < data.count
        var a = 1, b = 0
        for byte in data { a = (a + Int(byte)) % 65_521; b = (b + a) % 65_521 }
        return out + u32(b << 16 | a)
    }

    /// RGB8 rows of one colour, filter byte 0, as zlib data.
    static func imageData(_ rgb: [UInt8]) -> [UInt8] {
        var raw: [UInt8] = []
        for _ in 0..<size.height {
            raw.append(0)
            for _ in 0..<size.width { raw += rgb }
        }
        return zlibStored(raw)
    }

    /// The APNG: acTL (one frame, loop forever), the magenta IDAT outside the animation, then (unless
    /// `noFrameControl`) an fcTL covering the canvas and the blue frame's fdAT chunks.
    static func apng(_ layout: FrameData) -> [UInt8] {
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            PNGChunk(type: PNGChunkType(name: type)!, data: data).serialized
        }
        var out = PNGChunkWalker.signature
        out += chunk("IHDR", u32(size.width) + u32(size.height) + [8, 2, 0, 0, 0])
        out += chunk("acTL", u32(1) + u32(0))
        out += chunk("IDAT", imageData(magenta))
        var sequence = 0
        if layout != .noFrameControl {
            // Sequence 0, the whole canvas at 0,0, 1/10 s, dispose none, blend source.
            out += chunk("fcTL", u32(0) + u32(size.width) + u32(size.height) + u32(0) + u32(0) + [0, 1, 0, 10, 0, 0])
            sequence = 1
        }
        let frame = imageData(blue)
        let pieces: [[UInt8]]
        switch layout {
        case .oneChunk, .noFrameControl: pieces = [frame]
        case .split: pieces = [Array(frame.prefix(9)), Array(frame.dropFirst(9))]
        case .zeroLengthFirst: pieces = [[], frame]
        }
        for piece in pieces {
            out += chunk("fdAT", u32(sequence) + piece)
            sequence += 1
        }
        return out + chunk("IEND", [])
    }

    @Test(arguments: [FrameData.oneChunk, .split, .zeroLengthFirst])
    func theOneAnimationFrameIsShownNotTheDefaultImage(_ layout: FrameData) throws {
        let bytes = Self.apng(layout)
        let info = try PNGDecoder().probe(.bytes(bytes), limits: ImageLimits())
        #expect(info.frameCount == 1)
        #expect(info.pngAnimation?.defaultImageIsFirstFrame == false)
        #expect(info.probeWarnings.isEmpty, "\(info.probeWarnings)")
        // No service (nothing to change but metadata), X (animations shown) and Bluesky (stills only): the
        // output shows the blue frame everywhere, as Chromium does.
        for options in [PrepareOptions(), ServiceProfile.x.options(), ServiceProfile.bluesky.options()] {
            let result = try SharePipe.prepare(.bytes(bytes), options: options)
            #expect(result.format == .png && result.size == Self.size)
            #expect(result.method != .metadataRewrite, "a metadata rewrite keeps the default image")
            let decoded = try Decode.bitmap(result.bytes)
            for (x, y) in [(0, 0), (7, 0), (0, 5), (7, 5), (4, 3)] {
                #expect(Array(decoded.pixel(x: x, y: y).prefix(3)) == Self.blue, "\(layout) (\(x),\(y))")
            }
            #expect(!PNGListing.containsAnimationChunks(result.bytes))
        }
    }

    @Test func fdATWithoutAFrameControlIsRefusedAsBrowsersRefuseIt() throws {
        let bytes = Self.apng(.noFrameControl)
        #expect {
            _ = try SharePipe.prepare(.bytes(bytes), options: ServiceProfile.x.options())
        } throws: { error in
            guard case SharePipeError.corrupt(let file, _, let reason)? = error as? SharePipeError else { return false }
            return file == "<memory>" && reason.contains("fdAT") && reason.contains("no fcTL")
        }
        // An fdAT after a default image that is frame 0, with no second fcTL: Chromium shows the default image
        // (headless Chromium, tools/browser_frames.py), and so does SharePipe, with a warning.
        let extra = Self.apngWithExtraDataAfterFrameZero()
        let info = try PNGDecoder().probe(.bytes(extra), limits: ImageLimits())
        #expect(info.pngAnimation == nil && info.probeWarnings.contains { $0.contains("fdAT without a frame control") })
        let result = try SharePipe.prepare(.bytes(extra), options: ServiceProfile.x.options())
        #expect(Array(try Decode.bitmap(result.bytes).pixel(x: 4, y: 3).prefix(3)) == Self.magenta)
    }

    @Test(arguments: [2, Int(Int32.max), Int(Int32.max) + 2, Int(UInt32.max)])
    func farMoreDeclaredFramesThanPresentShowTheOneFrame(_ declared: Int) throws {
        // acTL declares `declared` frames (2^31 + 1 among them), one fcTL follows the default image: Chromium shows
        // the one animation frame (blue), not the default image (magenta), and so does SharePipe, with a warning.
        var bytes = Self.apng(.oneChunk)
        let acTL = PNGChunkWalker.signature.count + 25  // after the signature and IHDR
        bytes.replaceSubrange((acTL + 8)..<(acTL + 12), with: Self.u32(declared))
        let crc = PNGChunk(type: PNGChunkType(name: "acTL")!, data: Array(bytes[(acTL + 8)..<(acTL + 16)])).serialized
        bytes.replaceSubrange(acTL..<(acTL + 20), with: crc)
        let info = try PNGDecoder().probe(.bytes(bytes), limits: ImageLimits())
        #expect(info.pngAnimation?.defaultImageIsFirstFrame == false)
        #expect(info.probeWarnings.contains { $0.contains("acTL declares \(declared) frames but 1 are present") })
        for options in [PrepareOptions(), ServiceProfile.x.options(), ServiceProfile.bluesky.options()] {
            let result = try SharePipe.prepare(.bytes(bytes), options: options)
            #expect(result.frameCount == 1)
            #expect(Array(try Decode.bitmap(result.bytes).pixel(x: 4, y: 3).prefix(3)) == Self.blue, "\(declared)")
        }
    }

    /// acTL of one frame, an fcTL before the IDAT (the default image is frame 0), then an fdAT no fcTL announced.
    static func apngWithExtraDataAfterFrameZero() -> [UInt8] {
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            PNGChunk(type: PNGChunkType(name: type)!, data: data).serialized
        }
        var out = PNGChunkWalker.signature
        out += chunk("IHDR", u32(size.width) + u32(size.height) + [8, 2, 0, 0, 0])
        out += chunk("acTL", u32(1) + u32(0))
        out += chunk("fcTL", u32(0) + u32(size.width) + u32(size.height) + u32(0) + u32(0) + [0, 1, 0, 10, 0, 0])
        out += chunk("IDAT", imageData(magenta))
        out += chunk("fdAT", u32(1) + imageData(blue))
        return out + chunk("IEND", [])
    }
}
