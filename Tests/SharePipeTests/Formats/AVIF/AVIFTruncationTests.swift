import Foundation
import Testing
@testable import SharePipe

/// Hostile AVIF inputs refused quickly (as the AVIF reader's fuzz target checks): every AVIF made by
/// `AVIFTests` (a still, one with alpha, a turned one, an image sequence) cut at every box boundary — each
/// box's start and end, at every depth of the box tree libavif reads — is refused naming the source, each in
/// bounded time; a sequence whose `ispe` and track header say 70000×70000, and one declaring 100,000 frames
/// under limits that let them pass the header, end quickly. (A still's huge `ispe` and 100,000 declared frames
/// over the limit: `AVIFTests.framesAndPixelsOverTheLimitsAreRefusedFromTheHeader`.)
@Suite struct AVIFTruncationTests {
    /// Boxes whose payload is more boxes, and the bytes before the first child (full-box headers, entry counts,
    /// sample entry fields).
    static let containers: [String: Int] = [
        "moov": 0, "trak": 0, "mdia": 0, "minf": 0, "stbl": 0, "dinf": 0, "edts": 0, "iprp": 0, "ipco": 0, "udta": 0,
        "grpl": 0, "meta": 4, "iref": 4, "dref": 8, "stsd": 8, "av01": 78,
    ]

    /// The offsets (strictly inside the file) where a box starts or ends, at every depth.
    static func boundaries(_ bytes: [UInt8]) -> [Int] {
        var found = Set<Int>()
        func walk(_ start: Int, _ end: Int) {
            var position = start
            while position + 8 <= end {
                var size = bytes[position..<position + 4].reduce(0) { $0 << 8 | Int($1) }
                var header = 8
                if size == 1, position + 16 <= end {
                    size = bytes[position + 8..<position + 16].reduce(0) { $0 << 8 | Int($1) }
                    header = 16
                } else if size == 0 {
                    size = end - position
                }
                guard size >= header, position + size <= end else { return }
                let type = String(decoding: bytes[position + 4..<position + 8], as: UTF8.self)
                found.insert(position)
                found.insert(position + size)
                if let skip = containers[type], position + header + skip <= position + size {
                    walk(position + header + skip, position + size)
                }
                position += size
            }
        }
        walk(0, bytes.count)
        // `iinf` holds `infe` boxes after a full-box header and an entry count (2 bytes at version 0, else 4).
        var at = 0
        while let offset = AVIFTests.box("iinf", in: Array(bytes[at...])).map({ $0 + at }) {
            let size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let version = Int(bytes[offset + 8])
            walk(offset + 12 + (version == 0 ? 2 : 4), min(offset + size, bytes.count))
            at = offset + 8
        }
        return found.filter { $0 > 0 && $0 < bytes.count }.sorted()
    }

    @Test(arguments: ["quadrants.avif", "alpha.avif", "turned.avif", "sequence.avif"])
    func truncatedAtEveryBoxBoundaryIsRefusedQuickly(name: String) throws {
        let whole = try AVIFTests.bytes(name)
        let cuts = Self.boundaries(whole)
        // ftyp, meta and its property boxes, the item data; a sequence's moov tree too.
        #expect(cuts.count >= (name == "sequence.avif" ? 40 : 12), "\(name): only \(cuts.count) boundaries")
        var slowest = 0.0
        for cut in cuts {
            let start = Date()
            do {
                let result = try SharePipe.prepare(.bytes(Array(whole[..<cut])), options: ServiceProfile.x.options())
                Issue.record(
                    "\(name) cut at \(cut) of \(whole.count) was prepared: \(result.size), \(result.frameCount) frame(s)"
                )
            } catch let error as SharePipeError {
                #expect("\(error)".hasPrefix("<memory>: "), "\(name) cut at \(cut): \(error)")
                #expect(!"\(error)".hasSuffix("\n"), "\(name) cut at \(cut): a message ending in a newline")
            }
            slowest = max(slowest, Date().timeIntervalSince(start))
        }
        // Each refusal reads at most the header and one frame: well under a second even in a debug build.
        #expect(slowest < 2, "\(name): slowest refusal \(slowest) s")
    }

    /// Replaces the 8 bytes at `offset` in every `type` box of `bytes`.
    static func patchEvery(_ type: String, at offset: Int, with value: [UInt8], in bytes: inout [UInt8]) {
        var at = 0
        while let box = AVIFTests.box(type, in: Array(bytes[at...])).map({ $0 + at }) {
            bytes.replaceSubrange(box + offset..<box + offset + value.count, with: value)
            at = box + 8
        }
    }

    @Test func aSequenceThatSaysItIsHugeIsRefusedQuickly() throws {
        // Every ispe (the still item's and the sequence's) and the track header's 16.16 width and height say
        // 70000×70000; the coded frames are 32×24.
        var huge = try AVIFTests.bytes("sequence.avif")
        Self.patchEvery("ispe", at: 12, with: [0, 1, 0x11, 0x70, 0, 1, 0x11, 0x70], in: &huge)
        if let tkhd = AVIFTests.box("tkhd", in: huge) {
            let fields = tkhd + (huge[tkhd + 8] == 1 ? 96 : 84)
            huge.replaceSubrange(fields..<fields + 8, with: [0x11, 0x70, 0, 0, 0x11, 0x70, 0, 0])
        }
        let start = Date()
        #expect {
            _ = try SharePipe.prepare(.bytes(huge), options: ServiceProfile.x.options())
        } throws: { error in
            guard let error = error as? SharePipeError else { return false }
            return "\(error)".hasPrefix("<memory>: ")
        }
        #expect(Date().timeIntervalSince(start) < 2)
    }

    @Test func a100000FrameSequenceUnderLimitsThatAllowItEndsQuickly() throws {
        // 100,000 frames declared (stsz, stsc, stts), three in the file, and limits raised so the header passes:
        // the frames present are the animation (or the job is refused), in bounded time, never 100,000 attempts.
        var many = try AVIFTests.bytes("sequence.avif")
        Self.patchEvery("stsz", at: 12, with: [0, 0, 0, 16, 0, 1, 0x86, 0xA0], in: &many)
        Self.patchEvery("stsc", at: 20, with: [0, 1, 0x86, 0xA0], in: &many)
        Self.patchEvery("stts", at: 16, with: [0, 1, 0x86, 0xA0], in: &many)
        var options = ServiceProfile.x.options()
        options.limits = ImageLimits(maxFrames: 1_000_000)
        let start = Date()
        do {
            let result = try SharePipe.prepare(.bytes(many), options: options)
            #expect(result.frameCount <= 3, "\(result.frameCount) frames written")
        } catch let error as SharePipeError {
            #expect("\(error)".hasPrefix("<memory>: "), "\(error)")
        }
        #expect(Date().timeIntervalSince(start) < 5)
    }
}
