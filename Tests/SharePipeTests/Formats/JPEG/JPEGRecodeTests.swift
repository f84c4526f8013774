import CSharePipe
import Testing

@testable import SharePipe

/// `JPEGEncoder.recode`: an encode made only to be scored (standard Huffman tables) written again from its
/// coefficients as the file the auto search writes.
struct JPEGRecodeTests {
    /// Recoded baseline and progressive are byte for byte the optimized encodes at the same quality, metadata and
    /// JFIF choice included; the cheaper encode is larger but decodes to the same pixels, so it scores what the
    /// written file scores.
    @Test(arguments: [PixelLayout.rgb, .gray])
    func aRecodeIsTheOptimizedEncodesFileAndPixels(layout: PixelLayout) throws {
        let size = PixelSize(width: 161, height: 97)
        let scene = JPEGByteCapTests.scene(size, saturatedEdges: true, seed: 3)
        let bitmap = layout == .rgb ? scene : JPEGPlanesTests.picture(size, layout: .gray, seed: 3)
        var scoring = JPEGEncoder()
        scoring.optimizeCoding = false
        let exif: [UInt8] = Array("MM\0*".utf8) + [0, 0, 0, 8, 0, 0]
        for (quality, metadata) in [(82, [MetadataBlock]()), (93, [.exif(exif), .comment(Array("kept".utf8))])] {
            let settings = EncodeSettings(quality: quality, progressive: false)
            let cheap = try scoring.encode(bitmap, settings: settings, metadata: [])
            let optimized = try JPEGEncoder().encode(bitmap, settings: settings, metadata: metadata)
            let recoded = try JPEGEncoder().recode(cheap, alsoBaseline: true, metadata: metadata)
            let progressive = try JPEGEncoder().encode(
                bitmap, settings: EncodeSettings(quality: quality, progressive: true), metadata: metadata)
            #expect(recoded.progressive == progressive, "\(layout) q\(quality) progressive")
            // The baseline file where it could be the smaller, and then the optimized encode's; left out only where
            // the progressive file is the smaller.
            if let baseline = recoded.baseline {
                #expect(baseline == optimized, "\(layout) q\(quality): \(baseline.count) vs \(optimized.count) bytes")
            } else {
                #expect(progressive.count < optimized.count, "\(layout) q\(quality)")
            }
            let progressiveOnly = try JPEGEncoder().recode(cheap, alsoBaseline: false, metadata: metadata)
            #expect(progressiveOnly.progressive == progressive && progressiveOnly.baseline == nil)
            #expect(cheap.count > optimized.count)
            let frame = try #require(JPEGByteCapTests.frame(recoded.progressive))
            #expect(frame.progressive && frame.factors.count == layout.channels)
            #expect(try Decode.bitmap(cheap) == Decode.bitmap(optimized))
            // The metadata is the recode's, not the source's: the same segments as the optimized encode.
            #expect(Self.segmentsBeforeTables(recoded.progressive) == Self.segmentsBeforeTables(optimized))
            if layout == .rgb {
                #expect(
                    try JPEGEncoder.ssimulacra2(cheap, against: bitmap)
                        == JPEGEncoder.ssimulacra2(optimized, against: bitmap))
            }
        }
    }

    /// The bound the recode compares the progressive file with (`sp_jpeg_baseline_bytes_bound`) is, on an
    /// optimized baseline file, exactly its size less the zero bytes stuffed after 0xFF in its entropy-coded
    /// data: every symbol counted, partial MCUs' dummy blocks included (odd sizes), at the code lengths libjpeg
    /// gives them, for 4:2:0, 4:4:4 and grey, at low and high qualities.
    @Test func theBaselineBoundIsTheFileLessItsStuffedBytes() throws {
        var checked = 0
        for (index, size) in [
            PixelSize(width: 161, height: 97), PixelSize(width: 17, height: 9), PixelSize(width: 200, height: 120),
        ]
        .enumerated() {
            let scene = JPEGByteCapTests.scene(size, saturatedEdges: true, seed: UInt64(index + 5))
            let grey = JPEGPlanesTests.picture(size, layout: .gray, seed: UInt64(index + 5))
            for (encoder, bitmap) in [
                (JPEGEncoder(), scene), (JPEGEncoder(subsample420: false), scene), (JPEGEncoder(), grey),
            ] {
                for quality in [30, 82, 97] {
                    let file = try encoder.encode(
                        bitmap, settings: EncodeSettings(quality: quality, progressive: false), metadata: [])
                    var bound = 0
                    var message = shimMessageBuffer()
                    let status = file.withUnsafeBufferPointer {
                        sp_jpeg_baseline_bytes_bound($0.baseAddress, $0.count, &bound, &message)
                    }
                    #expect(status == SP_OK)
                    #expect(bound == file.count - Self.stuffedBytes(file), "\(size) \(bitmap.layout) q\(quality)")
                    checked += 1
                }
            }
        }
        #expect(checked == 27)
    }

    /// The progressive recode counts each scan's Huffman symbols from the coefficients instead of running
    /// libjpeg's encoder over them without writing: the counts, so the tables and the file, are libjpeg's, for
    /// SharePipe's colour script at 4:2:0 and 4:4:4 and libjpeg's simple script for grey (DC with a point
    /// transform and refined, AC refined twice), partial MCUs (odd sizes), low and high qualities, and a flat
    /// picture whose end-of-band runs reach the coder's limit of 32767 blocks.
    @Test func theRecodesOwnScanCountsAreLibjpegs() throws {
        let flat = Bitmap(
            size: PixelSize(width: 1600, height: 1400), layout: .rgb,
            pixels: [UInt8](repeating: 120, count: 1600 * 1400 * 3))
        var pictures: [Bitmap] = [flat]
        for (index, size) in [
            PixelSize(width: 161, height: 97), PixelSize(width: 17, height: 9), PixelSize(width: 333, height: 250),
        ]
        .enumerated() {
            pictures.append(JPEGByteCapTests.scene(size, saturatedEdges: true, seed: UInt64(index + 11)))
            pictures.append(JPEGPlanesTests.picture(size, layout: .gray, seed: UInt64(index + 11)))
        }
        var scoring = JPEGEncoder()
        scoring.optimizeCoding = false
        var checked = 0
        for bitmap in pictures {
            for subsample420 in bitmap.layout == .rgb ? [true, false] : [true] {
                var encoder = scoring
                encoder.subsample420 = subsample420
                for quality in [30, 82, 97] {
                    let cheap = try encoder.encode(
                        bitmap, settings: EncodeSettings(quality: quality, progressive: false), metadata: [])
                    let before = sp_jpeg_recode_scans_counted_directly()
                    let counted = try JPEGEncoder().recode(cheap, alsoBaseline: false, metadata: [])
                    let scans = sp_jpeg_recode_scans_counted_directly() - before
                    sp_jpeg_recode_count_with_libjpeg(1)
                    defer { sp_jpeg_recode_count_with_libjpeg(0) }
                    let libjpegs = try JPEGEncoder().recode(cheap, alsoBaseline: false, metadata: [])
                    let label = "\(bitmap.size) \(bitmap.layout) \(subsample420 ? "4:2:0" : "4:4:4") q\(quality)"
                    // Every scan but a DC refinement's (grey's fifth) has its statistics pass.
                    #expect(scans == (bitmap.layout == .rgb ? 8 : 5), "\(label): \(scans) scans counted")
                    #expect(sp_jpeg_recode_scans_counted_directly() - before == scans, "\(label): libjpeg's count")
                    #expect(counted.progressive == libjpegs.progressive, "\(label)")
                    checked += 1
                }
            }
        }
        #expect(checked == 3 * (2 + 3 * 3))
    }

    /// The zero bytes stuffed after 0xFF in a baseline JPEG's entropy-coded data (one scan, no restart markers).
    static func stuffedBytes(_ jpeg: [UInt8]) -> Int {
        var at = 2
        while at + 4 <= jpeg.count, jpeg[at] == 0xFF, jpeg[at + 1] != 0xDA {
            at += 2 + (Int(jpeg[at + 2]) << 8 | Int(jpeg[at + 3]))
        }
        at += 2 + (Int(jpeg[at + 2]) << 8 | Int(jpeg[at + 3]))
        var stuffed = 0
        while at + 1 < jpeg.count, !(jpeg[at] == 0xFF && jpeg[at + 1] == 0xD9) {
            if jpeg[at] == 0xFF && jpeg[at + 1] == 0x00 {
                stuffed += 1
                at += 1
            }
            at += 1
        }
        return stuffed
    }

    /// A JPEG's bytes from SOI up to its first quantisation table: the JFIF header and the metadata segments.
    static func segmentsBeforeTables(_ jpeg: [UInt8]) -> ArraySlice<UInt8> {
        var at = 2
        while at + 4 <= jpeg.count, jpeg[at] == 0xFF, jpeg[at + 1] != 0xDB {
            at += 2 + (Int(jpeg[at + 2]) << 8 | Int(jpeg[at + 3]))
        }
        return jpeg[..<min(at, jpeg.count)]
    }

    /// Only a baseline JPEG is recoded; anything else is an error, never a crash.
    @Test func aRecodeRefusesWhatIsNotABaselineJPEG() throws {
        let bitmap = JPEGByteCapTests.scene(PixelSize(width: 64, height: 48), saturatedEdges: false, seed: 1)
        let progressive = try JPEGEncoder().encode(
            bitmap, settings: EncodeSettings(quality: 80, progressive: true), metadata: [])
        let baseline = try JPEGEncoder().encode(
            bitmap, settings: EncodeSettings(quality: 80, progressive: false), metadata: [])
        for input in [progressive, Array(baseline.prefix(baseline.count / 3)), [0xFF, 0xD8, 0xFF], []] {
            #expect(throws: EncoderFailure.self) { try JPEGEncoder().recode(input, alsoBaseline: true, metadata: []) }
        }
    }
}
