import CSharePipe
import Testing
@testable import SharePipe

/// The still route's JPEG encodes from 4:2:0 planes made once per size (`JPEGEncoder.staged`), not from the
/// RGB bitmap: the planes must encode to exactly the file libjpeg writes from the bitmap's scanlines.
struct JPEGPlanesTests {
    /// Noise with smooth ramps (so every chroma bias and edge padding shows), reproducible.
    static func picture(_ size: PixelSize, layout: PixelLayout, seed: UInt64) -> Bitmap {
        var state = seed
        var pixels = [UInt8](repeating: 0, count: size.area * layout.channels)
        for y in 0..<size.height {
            for x in 0..<size.width {
                for c in 0..<layout.channels {
                    state = state &* 6364136223846793005 &+ 1442695040888963407
                    let noise = Int(state >> 58)  // 0...63
                    let ramp = (x * 255 / max(1, size.width - 1) + y * 97 + c * 61) % 256
                    pixels[(y * size.width + x) * layout.channels + c] = UInt8((ramp + noise) % 256)
                }
            }
        }
        return Bitmap(size: size, layout: layout, pixels: pixels)
    }

    @Test(arguments: [
        PixelSize(width: 1, height: 1), PixelSize(width: 2, height: 2), PixelSize(width: 17, height: 9),
        PixelSize(width: 33, height: 31), PixelSize(width: 16, height: 16), PixelSize(width: 1621, height: 13),
        PixelSize(width: 7, height: 250), PixelSize(width: 240, height: 161),
    ])
    func planesEncodeToTheBitmapsBytes(size: PixelSize) throws {
        let encoder = JPEGEncoder()
        for layout in [PixelLayout.rgb, .rgba] {
            let bitmap = Self.picture(size, layout: layout, seed: UInt64(size.area * layout.channels))
            let staged = try encoder.staged(bitmap)
            #expect(!staged.isBitmap && staged.size == size)
            // Whole 8×8 blocks of luma plus two chroma planes at half the size each way.
            let luma = (size.width + 7) / 8 * 8 * ((size.height + 7) / 8 * 8)
            let chroma = (size.width + 15) / 16 * 8 * ((size.height + 15) / 16 * 8)
            #expect(staged.byteCount == luma + 2 * chroma)
            #expect(JPEGPlanes.byteCount(size) == staged.byteCount)
            #expect(JPEGPlanes.byteCount(size) == luma + 2 * chroma)
            // Staging uses up the pixels it is given; a bitmap still held elsewhere was copied first.
            #expect(bitmap == Self.picture(size, layout: layout, seed: UInt64(size.area * layout.channels)))
            for (quality, progressive) in [(85, false), (40, false), (95, true)] {
                let settings = EncodeSettings(quality: quality, progressive: progressive)
                let expected = try encoder.encode(bitmap, settings: settings, metadata: [])
                let got = try staged.encode(settings, [])
                let same = got == expected  // not the arrays themselves in the message
                #expect(
                    same,
                    "\(size) \(layout) q\(quality) progressive \(progressive): \(got.count) vs \(expected.count) bytes")
            }
        }
    }

    /// A render's rows streamed into the encoder one at a time (`JPEGRowEncode`, one 16-row band of planes at a
    /// time) write exactly the planes' bytes, and reduce to the same placeholder thumbnail as the bitmap.
    @Test(arguments: [
        PixelSize(width: 1, height: 1), PixelSize(width: 2, height: 3), PixelSize(width: 17, height: 9),
        PixelSize(width: 33, height: 31), PixelSize(width: 16, height: 16), PixelSize(width: 1621, height: 13),
        PixelSize(width: 7, height: 250), PixelSize(width: 240, height: 161), PixelSize(width: 130, height: 1080),
    ])
    func streamedRowsEncodeToThePlanesBytes(size: PixelSize) throws {
        let encoder = JPEGEncoder()
        let bitmap = Self.picture(size, layout: .rgb, seed: UInt64(size.area))
        let staged = try encoder.staged(bitmap)
        let metadata: [MetadataBlock] = [.comment(Array("streamed".utf8))]
        for (quality, progressive) in [(85, false), (40, false), (95, true)] {
            let settings = EncodeSettings(quality: quality, progressive: progressive)
            let meter = PixelMemoryMeter()
            let sink = JPEGRowEncode(
                encoder: encoder, settings: settings, metadata: metadata, meter: meter, thumbnail: true)
            try sink.begin(size: size, layout: .rgb)
            let rowBytes = size.width * 3
            try bitmap.pixels.withUnsafeBufferPointer { pixels in
                for y in 0..<size.height {
                    try sink.push(row: UnsafeBufferPointer(rebasing: pixels[y * rowBytes..<(y + 1) * rowBytes]))
                }
            }
            let got = try sink.finish()
            let expected = try staged.encode(settings, metadata)
            let same = got == expected
            #expect(same, "\(size) q\(quality) progressive \(progressive): \(got.count) vs \(expected.count) bytes")
            // Its band is all the meter held, and it is given back.
            #expect(meter.peakBytes == sp_jpeg_row_encoder_band_bytes(Int32(size.width)))
            #expect(meter.currentBytes == 0)
            #expect(sink.thumbnail() == PlaceholderThumbnail(bitmap))
        }
    }

    @Test func streamedRowsPastTheImageOrUnfinishedAreRefused() throws {
        let size = PixelSize(width: 20, height: 3)
        let sink = JPEGRowEncode(
            encoder: JPEGEncoder(), settings: EncodeSettings(quality: 80, progressive: false), metadata: [],
            meter: PixelMemoryMeter(), thumbnail: false)
        try sink.begin(size: size, layout: .rgb)
        let row = [UInt8](repeating: 90, count: size.width * 3)
        try row.withUnsafeBufferPointer { try sink.push(row: $0) }
        #expect(throws: EncoderFailure.self) { _ = try sink.finish() }
        let complete = JPEGRowEncode(
            encoder: JPEGEncoder(), settings: EncodeSettings(quality: 80, progressive: false), metadata: [],
            meter: PixelMemoryMeter(), thumbnail: false)
        try complete.begin(size: size, layout: .rgb)
        try row.withUnsafeBufferPointer { row in
            for _ in 0..<size.height { try complete.push(row: row) }
            #expect(throws: EncoderFailure.self) { try complete.push(row: row) }
        }
        #expect(try Decode.bitmap(try complete.finish()).size == size)
    }

    /// The compact coefficient store is lossless: the files equal those libjpeg writes from its own arrays, for
    /// rows of small values (one byte each), of many large ones (noise at quality 100: 16-bit rows) and mixed.
    @Test(arguments: [(85, false), (100, false), (40, true), (100, true)])
    func theCoefficientStoreWritesLibjpegsBytes(quality: Int, progressive: Bool) throws {
        var state: UInt64 = 7
        let size = PixelSize(width: 203, height: 77)
        var noise = [UInt8](repeating: 0, count: size.area * 3)
        for i in noise.indices {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            noise[i] = UInt8(truncatingIfNeeded: state >> 56)
        }
        let pictures = [
            Self.picture(size, layout: .rgb, seed: 11), Bitmap(size: size, layout: .rgb, pixels: noise),
        ]
        let settings = EncodeSettings(quality: quality, progressive: progressive)
        for (index, bitmap) in pictures.enumerated() {
            for encoder in [JPEGEncoder(), JPEGEncoder(subsample420: false)] {
                let compact = try encoder.encode(bitmap, settings: settings, metadata: [])
                sp_jpeg_encode_use_libjpeg_arrays(1)
                defer { sp_jpeg_encode_use_libjpeg_arrays(0) }
                let plain = try encoder.encode(bitmap, settings: settings, metadata: [])
                let same = compact == plain
                #expect(same, "picture \(index), 4:2:0 \(encoder.subsample420): \(compact.count) vs \(plain.count)")
            }
        }
    }

    @Test func planesByteCountOutsideJPEGsSize() {
        #expect(JPEGPlanes.byteCount(PixelSize(width: 65_500, height: 1)) == 65_504 * 8 + 2 * 32_752 * 8)
        #expect(JPEGPlanes.byteCount(PixelSize(width: 65_501, height: 1)) == 0)
        #expect(JPEGPlanes.byteCount(PixelSize(width: 0, height: 10)) == 0)
    }

    @Test func grayAnd444StayBitmaps() throws {
        let gray = Self.picture(PixelSize(width: 20, height: 10), layout: .gray, seed: 1)
        #expect(try JPEGEncoder().staged(gray).isBitmap)
        let rgb = Self.picture(PixelSize(width: 20, height: 10), layout: .rgb, seed: 2)
        #expect(try JPEGEncoder(subsample420: false).staged(rgb).isBitmap)
    }

    @Test("a failed allocation in the compressor's coefficient store is out of memory, not an encoder error")
    func encodeStoreOutOfMemory() throws {
        let bitmap = Self.picture(PixelSize(width: 240, height: 161), layout: .rgb, seed: 3)
        let staged = try JPEGEncoder().staged(Self.picture(bitmap.size, layout: .rgb, seed: 3))
        let settings = EncodeSettings(quality: 85, progressive: true)
        // The store's first and a later allocation (its row table, then a compacted row), from the bitmap's
        // scanlines and from the planes. The hook counts this thread's allocations; the test body runs on one.
        for nth in [1, 40] {
            for planes in [false, true] {
                sp_jpeg_encode_store_fail_allocation(Int32(nth))
                defer { sp_jpeg_encode_store_fail_allocation(0) }
                let failure = #expect(throws: EncoderFailure.self) {
                    if planes {
                        _ = try staged.encode(settings, [])
                    } else {
                        _ = try JPEGEncoder().encode(bitmap, settings: settings, metadata: [])
                    }
                }
                #expect(
                    failure?.outOfMemory == true, "allocation \(nth), planes \(planes): \(String(describing: failure))")
                if case .tooLarge? = failure?.error(file: "x.jpg") {
                } else {
                    Issue.record(
                        "allocation \(nth), planes \(planes): \(String(describing: failure?.error(file: "x.jpg")))")
                }
            }
        }
        // Without the hook the same encodes succeed, to the same bytes.
        #expect(try staged.encode(settings, []) == JPEGEncoder().encode(bitmap, settings: settings, metadata: []))
    }
}
