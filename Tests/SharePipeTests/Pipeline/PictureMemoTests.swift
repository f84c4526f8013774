import Testing

@testable import SharePipe

/// What the services of one source share (`PictureMemo`): an auto search or a lossless encode of the same
/// picture is made once, and every output is the one a job of its own writes.
struct PictureMemoTests {
    @Test func servicesRenderingTheSamePictureShareOneSearch() throws {
        // A JPEG with a comment, prepared for four services: two at the same size with different metadata, one
        // whose byte limit bites just under the first's file, one at a smaller size. Each output is the one a job
        // of its own writes (bytes, quality, score, attempts); the searches at the same size are answered once.
        let (png, bitmap) = try AutoQualityTests.scenePNG(PixelSize(width: 480, height: 320), seed: 2)
        let plain = try JPEGEncoder().encode(
            bitmap, settings: EncodeSettings(quality: 95, progressive: false), metadata: [])
        let jpeg = Plant.jpeg(plain, segments: [(0xFE, Array("a comment".utf8))])
        var first = PrepareOptions()
        first.acceptedFormats = [.jpeg]
        first.maxShortEdge = 240
        first.qualitySetting = .auto(target: 80)
        var keepingAll = first
        keepingAll.strip = .none
        let shared = try Self.expectSharedSearches(jpeg, first, alsoAtTheSameSize: [keepingAll])
        #expect(shared[1].bytes != shared[0].bytes && shared[1].quality == shared[0].quality)
        // A lossy WebP's search the same way (its candidates are the files written).
        var webp = first
        webp.acceptedFormats = [.webp]
        _ = try Self.expectSharedSearches(png, webp, alsoAtTheSameSize: [])
    }

    /// Prepares `source` under `first`, `others` (the same size), a service whose limit bites just under the
    /// first's output and one at a smaller size, together and each alone: the same outputs, and every search at
    /// the first size but the first answered from the memo. Returns the outputs in that order.
    static func expectSharedSearches(
        _ source: [UInt8], _ first: PrepareOptions, alsoAtTheSameSize others: [PrepareOptions]
    ) throws -> [PreparedImage] {
        let alone = try SharePipe.prepare(.bytes(source), options: first)
        var capped = first
        capped.maxBytes = alone.bytes.count - 1
        var smaller = first
        smaller.maxShortEdge = first.maxShortEdge * 5 / 6
        let services = [first] + others + [capped, smaller]
        let memo = PictureMemo()
        let shared = try services.map { try Pipeline.prepare(.bytes(source), options: $0.checked(), memo: memo) }
        #expect(memo.answersGiven == others.count + 1, "\(first.acceptedFormats)")
        let together = Pipeline.prepare(.bytes(source), forEach: services.map { .success(try! $0.checked()) })
        for (index, options) in services.enumerated() {
            let own = try SharePipe.prepare(.bytes(source), options: options)
            for output in [shared[index], try together[index].get()] {
                #expect(output.bytes == own.bytes && output.quality == own.quality, "service \(index)")
                #expect(output.score == own.score && output.attempts == own.attempts, "service \(index)")
                #expect(output.format == first.acceptedFormats?.first, "service \(index)")
            }
        }
        let last = shared.count - 1
        #expect(shared[last - 1].quality! < shared[0].quality! && shared[last].size != shared[0].size)
        return shared
    }

    @Test func servicesRenderingTheSamePNGShareItsEncodes() throws {
        // A PNG with alpha (no format change): the same size for two services, one with a byte limit the PNG
        // misses (it shrinks), and a smaller size. The first effort's encode is made once for the first two.
        let bitmap = JPEGByteCapTests.scene(PixelSize(width: 480, height: 320), saturatedEdges: true, seed: 5)
        var pixels = [UInt8](repeating: 255, count: bitmap.size.area * 4)
        for index in 0..<bitmap.size.area {
            for channel in 0..<3 { pixels[index * 4 + channel] = bitmap.pixels[index * 3 + channel] }
            pixels[index * 4 + 3] = UInt8(128 + index % 128)
        }
        let png = try PNGEncoder().encode(
            Bitmap(size: bitmap.size, layout: .rgba, pixels: pixels),
            settings: EncodeSettings(quality: 0, progressive: false), metadata: [])
        var first = PrepareOptions()
        first.acceptedFormats = [.png]
        first.maxShortEdge = 240
        let alone = try SharePipe.prepare(.bytes(png), options: first)
        #expect(alone.format == .png && alone.size == PixelSize(width: 360, height: 240))
        var capped = first
        capped.maxBytes = alone.bytes.count * 3 / 4
        var smaller = first
        smaller.maxShortEdge = 200
        let services = [first, capped, smaller]
        let memo = PictureMemo()
        let shared = try services.map { try Pipeline.prepare(.bytes(png), options: $0.checked(), memo: memo) }
        #expect(memo.encodesTaken == 1)
        let together = Pipeline.prepare(.bytes(png), forEach: services.map { .success(try! $0.checked()) })
        for (index, options) in services.enumerated() {
            let own = try SharePipe.prepare(.bytes(png), options: options)
            for output in [shared[index], try together[index].get()] {
                #expect(output.bytes == own.bytes && output.attempts == own.attempts, "service \(index)")
                #expect(output.format == .png && output.size == own.size, "service \(index)")
            }
        }
        #expect(shared[1].size.area < shared[0].size.area && shared[1].bytes.count <= capped.maxBytes!)
    }
}
