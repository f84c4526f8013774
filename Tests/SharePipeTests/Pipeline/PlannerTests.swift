import Testing
@testable import SharePipe

/// The pure planners, by tables of cases.
@Suite struct PlannerTests {
    @Test(arguments: [
        (PixelSize(width: 4000, height: 3000), 1080, PixelSize(width: 1440, height: 1080)),
        (PixelSize(width: 3000, height: 4000), 1080, PixelSize(width: 1080, height: 1440)),
        (PixelSize(width: 6000, height: 4000), 1080, PixelSize(width: 1620, height: 1080)),
        (PixelSize(width: 1000, height: 800), 1080, PixelSize(width: 1000, height: 800)),  // never upscaled
        (PixelSize(width: 1081, height: 1081), 1080, PixelSize(width: 1080, height: 1080)),
        (PixelSize(width: 100_000, height: 10), 1080, PixelSize(width: 100_000, height: 10)),
    ])
    func targetSizeCapsTheShortEdge(_ size: PixelSize, _ cap: Int, _ expected: PixelSize) {
        #expect(ScalePlan.targetSize(for: size, maxShortEdge: cap) == expected)
    }

    @Test func longEdgeAndAreaCapsApply() {
        #expect(
            ScalePlan.targetSize(for: PixelSize(width: 4000, height: 3000), maxShortEdge: 1080, maxLongEdge: 1280)
                == PixelSize(width: 1280, height: 960))
        let capped = ScalePlan.targetSize(
            for: PixelSize(width: 4000, height: 3000), maxShortEdge: 1080, maxPixels: 921_600)
        #expect(capped.area <= 921_600)
        #expect(capped.width >= 1100)
    }

    @Test(arguments: [
        (PixelSize(width: 6000, height: 4000), PixelSize(width: 1620, height: 1080), 3),  // 2250×1500
        (PixelSize(width: 4000, height: 3000), PixelSize(width: 1440, height: 1080), 3),  // 1500×1125
        (PixelSize(width: 2000, height: 1500), PixelSize(width: 1440, height: 1080), 6),  // 1500×1125
        (PixelSize(width: 8000, height: 6000), PixelSize(width: 1000, height: 750), 1),  // 1000×750 exactly
        (PixelSize(width: 600, height: 400), PixelSize(width: 600, height: 400), 8),
        // 6/8 would decode 1620×1080 (rounded up from 1619.25×1079.25): a quarter of its last row is padding.
        (PixelSize(width: 2159, height: 1439), PixelSize(width: 1620, height: 1080), 7),  // 1889.1×1259.1
    ])
    func jpegShrinkOnLoadKeepsBothEdgesAtLeastTheTarget(_ stored: PixelSize, _ target: PixelSize, _ numerator: Int) {
        let chosen = ScalePlan.jpegScaleNumerator(stored: stored, target: target)
        #expect(chosen == numerator)
        let extent = ScalePlan.jpegDecodedExtent(stored: stored, numerator: chosen)
        #expect(extent.width >= Double(target.width) && extent.height >= Double(target.height))
    }

    @Test func shrinkAlwaysMakesProgress() {
        let size = PixelSize(width: 1440, height: 1080)
        let next = ScalePlan.shrink(size, bytes: 1_000_000, limit: 990_000)
        #expect(next.width <= 1296 && next.height <= 972)  // at least 10% smaller
        let big = ScalePlan.shrink(size, bytes: 100_000_000, limit: 1_000_000)
        #expect(big.width == 360)  // at most 4× smaller per step
    }

    @Test func qualitySearchFindsTheHighestFittingQuality() {
        // Size grows with quality, 1000 bytes per step.
        let outcome = QualitySearch.highestFitting(range: 40...85, limit: 70_500) { q in ((), q * 1000) }
        #expect(outcome.best?.quality == 70)
        #expect(outcome.attempts.count <= 8)
    }

    @Test func qualitySearchNeverReturnsAnUnmeasuredOrOversizeResult() {
        // Non-monotonic sizes: every answer must be a measured fit.
        let sizes: [Int: Int] = Dictionary(uniqueKeysWithValues: (40...85).map { ($0, ($0 * 7919) % 5000 + 50_000) })
        let outcome = QualitySearch.highestFitting(range: 40...85, limit: 52_000) { q in (q, sizes[q]!) }
        if let best = outcome.best {
            #expect(best.bytes <= 52_000)
            #expect(sizes[best.quality] == best.bytes)
        }
        let none = QualitySearch.highestFitting(range: 40...85, limit: 10) { q in (q, 1000) }
        #expect(none.best == nil)
        #expect(none.smallestBytes == 1000)
    }

    @Test func qualitySearchTakesTheCeilingWhenItFits() {
        let outcome = QualitySearch.highestFitting(range: 40...85, limit: 1_000_000) { q in ((), q) }
        #expect(outcome.best?.quality == 85)
        #expect(outcome.attempts.count == 1)
    }
}

/// The resampler on synthetic pixels.
@Suite struct ResamplerTests {
    @Test func onePixelCheckerboardReducedThreeTimesIsFlatGrey() throws {
        let size = PixelSize(width: 300, height: 300)
        var pixels = [UInt8](repeating: 0, count: size.area)
        for y in 0..<300 { for x in 0..<300 where (x + y) % 2 == 0 { pixels[y * 300 + x] = 255 } }
        let bitmap = Bitmap(size: size, layout: .gray, pixels: pixels)
        let small = try InMemoryResample.resize(
            bitmap, to: PixelSize(width: 100, height: 100), meter: PixelMemoryMeter())
        let values = small.pixels.map(Int.init)
        #expect(values.min()! >= 118 && values.max()! <= 137, "range \(values.min()!)...\(values.max()!)")
    }

    @Test func transparentNeighboursDoNotBleedIntoEdges() throws {
        // A red opaque square on a fully transparent green background.
        let size = PixelSize(width: 64, height: 64)
        var pixels = [UInt8](repeating: 0, count: size.area * 4)
        for y in 0..<64 {
            for x in 0..<64 {
                let i = (y * 64 + x) * 4
                if (16..<48).contains(x) && (16..<48).contains(y) {
                    pixels[i] = 255; pixels[i + 3] = 255
                } else {
                    pixels[i + 1] = 255
                }
            }
        }
        let small = try InMemoryResample.resize(
            Bitmap(size: size, layout: .rgba, pixels: pixels),
            to: PixelSize(width: 21, height: 21), meter: PixelMemoryMeter())
        for y in 0..<21 {
            for x in 0..<21 {
                let p = small.rgb(x, y)
                if p[3] > 8 { #expect(p[1] <= 8, "green bleeds at \(x),\(y): \(p)") }
            }
        }
    }

    @Test func meterReturnsToZeroAndCountsTheWindow() throws {
        let meter = PixelMemoryMeter()
        let bitmap = Bitmap(size: PixelSize(width: 400, height: 300), layout: .rgb)
        _ = try InMemoryResample.resize(bitmap, to: PixelSize(width: 100, height: 75), meter: meter)
        #expect(meter.currentBytes == 0)
        #expect(meter.peakBytes > 100 * 75 * 3)
        #expect(meter.peakBytes < 400 * 300 * 3)  // a window, not the whole input
    }
}
