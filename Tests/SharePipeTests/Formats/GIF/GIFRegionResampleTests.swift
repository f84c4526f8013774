import Foundation
import Testing
@testable import SharePipe

/// Animations made here: the benchmark's shape (scripts/fixtures/make-test-images `bench`) and random ones that
/// use every disposal, transparency, local tables, interlacing and frames reaching off the screen.
enum GIFRegionFixtures {
    /// The `bench` animation: an 800×600 first frame of bands, then 120×120 frames with a ball moving over
    /// them (disposal none), 128 colours, looping forever.
    static func bench(frames: Int, width: Int = 800, height: Int = 600) throws -> [UInt8] {
        var palette: [UInt8] = []
        for i in stride(from: 0, to: 256, by: 2) { palette += [UInt8(i), UInt8((i * 3) % 256), UInt8(255 - i)] }
        let writer = try GIFWriter()
        try writer.begin(
            GIFContainer(
                screenSize: PixelSize(width: width, height: height),
                globalPalette: GIFPalette(rgb: palette), backgroundIndex: 0, colorResolution: 8,
                aspectByte: 0, loopCount: 0, metadata: []))
        var first = [UInt8](repeating: 0, count: width * height)
        for y in 0..<height { for x in 0..<width { first[y * width + x] = UInt8((x / 7 + y / 11) % 120) } }
        try writer.putFrame(
            GIFFrame(
                rect: GIFRect(left: 0, top: 0, width: width, height: height), localPalette: nil,
                interlaced: false, control: GIFGraphicsControl(disposal: .none, delay: 4)),
            indices: &first)
        for n in 1..<max(1, frames) {
            let cx = 60 + (n * 7) % (width - 120), cy = 60 + (n * 5) % (height - 120)
            var ball = [UInt8](repeating: 0, count: 120 * 120)
            for y in 0..<120 {
                for x in 0..<120 {
                    ball[y * 120 + x] =
                        (x - 60) * (x - 60) + (y - 60) * (y - 60) < 3000 ? 127 : UInt8((x + y + n) % 120)
                }
            }
            try writer.putFrame(
                GIFFrame(
                    rect: GIFRect(left: cx - 60, top: cy - 60, width: 120, height: 120),
                    localPalette: nil, interlaced: false,
                    control: GIFGraphicsControl(disposal: .none, delay: 4)),
                indices: &ball)
        }
        return try writer.finish()
    }

    /// A deterministic random animation: frames anywhere (partly or wholly off the screen), every disposal,
    /// transparent indices, local tables, interlacing.
    static func random(seed: UInt64) throws -> [UInt8] {
        var rng = SplitMix(seed: seed)
        let width = 30 + rng.next(200), height = 30 + rng.next(160)
        func palette(_ count: Int) -> GIFPalette { GIFPalette(rgb: (0..<count * 3).map { _ in UInt8(rng.next(256)) }) }
        let global = palette([4, 16, 64, 128][rng.next(4)])
        let writer = try GIFWriter()
        try writer.begin(
            GIFContainer(
                screenSize: PixelSize(width: width, height: height), globalPalette: global,
                backgroundIndex: 0, colorResolution: 8, aspectByte: 0, loopCount: 0, metadata: []))
        for n in 0..<(2 + rng.next(12)) {
            var rect = GIFRect(
                left: rng.next(width), top: rng.next(height), width: 1 + rng.next(width + 20),
                height: 1 + rng.next(height + 20))
            if n == 0 || rng.next(5) == 0 { rect = GIFRect(left: 0, top: 0, width: width, height: height) }
            let local = rng.next(3) == 0 ? palette([2, 8, 32][rng.next(3)]) : nil
            let colors = (local ?? global).count
            let transparent = rng.next(2) == 0 ? rng.next(colors) : nil
            let pattern = rng.next(3)
            var indices = [UInt8](repeating: 0, count: rect.area)
            for y in 0..<rect.height {
                for x in 0..<rect.width {
                    indices[y * rect.width + x] = UInt8(
                        pattern == 0 ? rng.next(colors) : (x * 7 / pattern + y * 3 + n) % colors)
                }
            }
            let disposal = GIFDisposal(rawValue: [0, 1, 2, 3, 2, 3][rng.next(6)])
            try writer.putFrame(
                GIFFrame(
                    rect: rect, localPalette: local, interlaced: rng.next(5) == 0,
                    control: GIFGraphicsControl(
                        disposal: disposal, delay: rng.next(20),
                        transparentIndex: transparent)),
                indices: &indices)
        }
        return try writer.finish()
    }

    /// The committed GIFs (TestImages/gif), the benchmark's shape, and random animations.
    static func all() throws -> [(name: String, bytes: [UInt8])] {
        let folder = Fixtures.path("gif")
        var files: [(String, [UInt8])] = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
            .filter { $0.hasSuffix(".gif") }.map { ($0, try Fixtures.bytes(folder + "/" + $0)) }
        #expect(files.count >= 10, "TestImages/gif holds the committed GIFs")
        files.append(("bench 800×600", try bench(frames: 6)))
        for seed in 0..<12 { files.append(("random \(seed)", try random(seed: UInt64(seed)))) }
        return files
    }

    /// Output sizes to try: the bench's 640×480 ratio (0.8) and odd ones; fewer for large screens, whose
    /// whole-canvas references are slow in debug builds.
    static func sizes(for screen: PixelSize) -> [PixelSize] {
        let sizes =
            [0.8, 0.37, 0.5, 0.13].map {
                PixelSize(
                    width: max(1, Int(Double(screen.width) * $0)), height: max(1, Int(Double(screen.height) * $0 + 1)))
            } + [PixelSize(width: max(1, screen.width * 2 / 3), height: max(1, screen.height - 1))]
        return Array(sizes.prefix(screen.area > 1_000_000 ? 2 : screen.area > 200_000 ? 3 : 5))
    }

    struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
    }
}

/// Byte equality through memcmp (fast in debug builds too).
func sameBytes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    a.count == b.count
        && a.withUnsafeBytes { x in b.withUnsafeBytes { y in memcmp(x.baseAddress!, y.baseAddress!, a.count) == 0 } }
}

@Suite("GIF region resampling")
struct GIFRegionResampleTests {
    /// Updating the picture only where the canvas changed gives, after every frame, byte for byte what
    /// resampling the whole canvas gives (at the canvas's size: the canvas itself); and no pixel outside
    /// the reported area changed.
    @Test func regionUpdatesEqualWholeCanvasResampling() throws {
        for (name, bytes) in try GIFRegionFixtures.all() {
            try GIFReader.with(.bytes(bytes)) { reader in
                let stream = GIFStream(reader)
                let screen = stream.container.screenSize
                let canvas = GIFCanvas(size: screen, meter: PixelMemoryMeter())
                let sizes = [screen] + GIFRegionFixtures.sizes(for: screen).filter { $0 != screen }
                let resamplers = sizes.map { GIFPictureResampler(from: screen, to: $0, meter: PixelMemoryMeter()) }
                var index = 0
                while let frame = try stream.nextFrame() {
                    try canvas.draw(frame, globalPalette: stream.container.globalPalette, from: stream)
                    let changes = canvas.takeChanges()
                    for (size, resampler) in zip(sizes, resamplers) {
                        let before = resampler.output
                        let area =
                            changes.map { changed in
                                canvas.pixels.withUnsafeBufferPointer { resampler.update(canvas: $0, changed: changed) }
                            } ?? .empty
                        let whole = try AnimatedGIFPass.picture(of: canvas, at: size, meter: PixelMemoryMeter())
                        #expect(
                            sameBytes(resampler.output, whole),
                            "\(name) → \(size), frame \(index): region update differs")
                        // The previous picture with only `area` taken from the new one is the new one.
                        var patched = before
                        for y in area.top..<area.bottom {
                            let start = (y * size.width + area.left) * 4, end = start + area.width * 4
                            patched.replaceSubrange(start..<end, with: resampler.output[start..<end])
                        }
                        #expect(
                            sameBytes(patched, resampler.output),
                            "\(name) → \(size), frame \(index): pixels changed outside \(area)")
                    }
                    canvas.dispose(frame)
                    index += 1
                }
            }
        }
    }

    /// Whole passes: the incremental pass (region resampling, change detection only where pictures changed)
    /// writes the same bytes as the reference pass that resamples and compares whole pictures, with the
    /// source palettes, reduced colour budgets and decimated frames.
    @Test func incrementalPassWritesTheSameFile() throws {
        for (name, bytes) in try GIFRegionFixtures.all() {
            let summary = try GIFSummary.read(.bytes(bytes), limits: ImageLimits())
            guard summary.frameCount > 1 else { continue }
            let screen = summary.container.screenSize
            let sizes = GIFRegionFixtures.sizes(for: screen)
            var plans = ([screen] + sizes.prefix(2)).map { AnimatedGIFPlan(size: $0, colorBudget: nil) }
            plans.append(AnimatedGIFPlan(size: sizes[0], colorBudget: 64))
            plans.append(AnimatedGIFPlan(size: screen, colorBudget: 32, keepEvery: 2))
            plans.append(AnimatedGIFPlan(size: sizes[1], colorBudget: 32, keepEvery: 3))
            for plan in plans {
                var reference = AnimatedGIFPass(
                    source: .bytes(bytes), summary: summary, metadata: [], meter: PixelMemoryMeter())
                reference.incremental = false
                let incremental = AnimatedGIFPass(
                    source: .bytes(bytes), summary: summary, metadata: [], meter: PixelMemoryMeter())
                let expected = try reference.run(plan, globalUsage: nil, checkpoint: {})
                let actual = try incremental.run(plan, globalUsage: nil, checkpoint: {})
                #expect(
                    sameBytes(actual.bytes, expected.bytes),
                    "\(name) with \(plan): the incremental pass wrote other bytes")
                #expect(actual.globalUsage == expected.globalUsage, "\(name) with \(plan)")
            }
        }
    }

    /// The nearest-colour mapper (cache, cell lists, green-ordered search) finds what a scan of every entry
    /// finds: the smallest squared distance, the lowest index among equals, never the excluded entry.
    @Test func nearestColorMatchesExhaustiveSearch() {
        var rng = GIFRegionFixtures.SplitMix(seed: 7)
        for round in 0..<40 {
            let count = [1, 2, 3, 16, 100, 256][round % 6]
            // Few distinct values, so ties and duplicate entries are common.
            let levels = round % 2 == 0 ? 4 : 256
            let rgb = (0..<count * 3).map { _ in UInt8(rng.next(levels) * (255 / max(1, levels - 1))) }
            let palette = GIFPalette(rgb: rgb)
            let excluded = count > 1 && round % 3 == 0 ? rng.next(count) : nil
            let nearest = GIFNearestColor(palette: palette, excluding: excluded)
            for _ in 0..<3000 {
                let r = UInt8(rng.next(256)), g = UInt8(rng.next(256)), b = UInt8(rng.next(256))
                let best = Self.exhaustiveNearest(palette, count: count, excluding: excluded, r, g, b)
                let found = nearest.index(r, g, b)
                #expect(found == best, "round \(round): (\(r), \(g), \(b)) → \(found), exhaustive \(best)")
                #expect(nearest.index(r, g, b) == found, "the cached answer is the same")
                if found != best { return }
            }
        }
    }

    /// The mapper's cell lists (an inverse colour map per 8×8×8 cell) and its fallback search for cells with
    /// long lists find what a scan of every entry finds, for palettes spread out, crowded into one corner
    /// (so far cells list many entries) and on a coarse grid (many ties), and for colours that revisit cells.
    @Test func nearestColorCellListsMatchExhaustiveSearch() {
        var rng = GIFRegionFixtures.SplitMix(seed: 11)
        for round in 0..<60 {
            let count = [2, 16, 100, 255, 256][round % 5]
            let shape = round % 3
            let rgb = (0..<count * 3).map { _ -> UInt8 in
                switch shape {
                case 0: return UInt8(100 + rng.next(24))  // crowded
                case 1: return UInt8(rng.next(8) * 36)  // grid: equal distances everywhere
                default: return UInt8(rng.next(256))
                }
            }
            let palette = GIFPalette(rgb: rgb)
            let excluded = round % 4 == 0 ? rng.next(count) : nil
            let nearest = GIFNearestColor(palette: palette, excluding: excluded)
            for sample in 0..<4000 {
                // Every other colour near the crowded corner, so cells are listed once and used again.
                let near = sample % 2 == 1
                let r = UInt8(near ? 90 + rng.next(40) : rng.next(256))
                let g = UInt8(near ? 90 + rng.next(40) : rng.next(256))
                let b = UInt8(rng.next(256))
                let best = Self.exhaustiveNearest(palette, count: count, excluding: excluded, r, g, b)
                let found = nearest.index(r, g, b)
                #expect(found == best, "round \(round): (\(r), \(g), \(b)) → \(found), exhaustive \(best)")
                if found != best { return }
            }
        }
    }

    /// The median cut's counting sort orders samples as a sort by (channel value, position) does.
    @Test func medianCutCountingSortIsStable() {
        var rng = GIFRegionFixtures.SplitMix(seed: 5)
        for round in 0..<30 {
            let samples = (0..<(round * 37 + 1)).map { _ in
                GIFQuantizer.Sample(
                    r: UInt8(rng.next(round % 2 == 0 ? 4 : 256)), g: UInt8(rng.next(256)), b: UInt8(rng.next(8)),
                    weight: rng.next(1000))
            }
            for channel in 0..<3 {
                func value(_ s: GIFQuantizer.Sample) -> UInt8 { channel == 0 ? s.r : channel == 1 ? s.g : s.b }
                let expected = samples.indices.sorted { (value(samples[$0]), $0) < (value(samples[$1]), $1) }
                    .map { samples[$0] }
                let sorted = GIFQuantizer.sortedStably(samples, byChannel: channel)
                #expect(
                    sorted.map { [$0.r, $0.g, $0.b] } == expected.map { [$0.r, $0.g, $0.b] }
                        && sorted.map(\.weight) == expected.map(\.weight), "round \(round), channel \(channel)")
            }
        }
    }

    /// A frame with its own table that changes nothing, written under a colour budget, gets a one-entry
    /// table whose only entry is the transparent index; that used to trip the nearest-colour mapper's
    /// precondition (a crash) although nothing needs mapping.
    @Test func unchangedFrameWithLocalTableUnderColorBudget() throws {
        let writer = try GIFWriter()
        let red = GIFPalette(rgb: [255, 0, 0, 0, 0, 255])
        try writer.begin(
            GIFContainer(
                screenSize: PixelSize(width: 20, height: 10), globalPalette: red, backgroundIndex: 0,
                colorResolution: 8, aspectByte: 0, loopCount: 0, metadata: []))
        var first = [UInt8](repeating: 0, count: 200)
        try writer.putFrame(
            GIFFrame(
                rect: GIFRect(left: 0, top: 0, width: 20, height: 10), localPalette: nil, interlaced: false,
                control: GIFGraphicsControl(disposal: .none, delay: 5)), indices: &first)
        var same = [UInt8](repeating: 1, count: 200)
        try writer.putFrame(
            GIFFrame(
                rect: GIFRect(left: 0, top: 0, width: 20, height: 10),
                localPalette: GIFPalette(rgb: [0, 0, 0, 255, 0, 0]), interlaced: false,
                control: GIFGraphicsControl(disposal: .none, delay: 5)), indices: &same)
        let bytes = try writer.finish()
        let summary = try GIFSummary.read(.bytes(bytes), limits: ImageLimits())
        let pass = AnimatedGIFPass(source: .bytes(bytes), summary: summary, metadata: [], meter: PixelMemoryMeter())
        let output = try pass.run(
            AnimatedGIFPlan(size: PixelSize(width: 20, height: 10), colorBudget: 64), globalUsage: nil,
            checkpoint: {})
        let decoded = try DecodedGIF(output.bytes)
        #expect(decoded.frames.count == 2)
        #expect(decoded.pictures[1] == decoded.pictures[0])
    }

    /// The nearest entry by a scan of every entry (the lowest index among equals): what the mapper must find.
    static func exhaustiveNearest(
        _ palette: GIFPalette, count: Int, excluding excluded: Int?, _ r: UInt8, _ g: UInt8, _ b: UInt8
    ) -> Int {
        var best = -1, bestDistance = Int.max
        for entry in 0..<count where entry != excluded {
            let (pr, pg, pb) = palette.color(entry)
            let dr = Int(pr) - Int(r), dg = Int(pg) - Int(g), db = Int(pb) - Int(b)
            let distance = dr * dr + dg * dg + db * db
            if distance < bestDistance { bestDistance = distance; best = entry }
        }
        return best
    }
}
