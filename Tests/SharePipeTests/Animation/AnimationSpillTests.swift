import Foundation
import Testing

@testable import SharePipe

/// A GIF as an `AnimationFrameSource` that also says which canvas pixels changed from one frame to the
/// next (the bounding box of the pixels that differ), as the APNG and WebP sources do; counts its opens.
private struct DiffingFrameSource: AnimationFrameSource {
    private var frames: GIFAsFrameSource
    private var previous: [UInt8]?

    init(_ source: ImageSource, opens: Locked<Int>) throws {
        frames = try GIFAsFrameSource(source)
        opens.withLock { $0 += 1 }
    }

    var canvasSize: PixelSize { frames.canvasSize }
    var frameCount: Int { frames.frameCount }
    var loopCount: Int? { frames.loopCount }

    mutating func nextFrame() throws -> AnimationFrame? {
        guard var frame = try frames.nextFrame() else { return nil }
        if let previous {
            var box = BoundingBox()
            let width = canvasSize.width
            for p in 0..<(previous.count / 4)
            where previous[p * 4..<p * 4 + 4] != frame.canvas.pixels[p * 4..<p * 4 + 4] {
                box.add(x: p % width, y: p / width)
            }
            frame.changed = box.rect ?? .empty
        }
        previous = frame.canvas.pixels
        return frame
    }

    mutating func close() { frames.close() }
}

@Suite struct AnimationSpillTests {
    /// Plans as the ladder takes them: a size, its colour and decimation steps, another size, and back.
    static func plans(_ first: PixelSize, _ second: PixelSize) -> [AnimatedGIFPlan] {
        [
            AnimatedGIFPlan(size: first, colorBudget: nil),
            AnimatedGIFPlan(size: first, colorBudget: 64),
            AnimatedGIFPlan(size: first, colorBudget: 32, keepEvery: 2),
            AnimatedGIFPlan(size: first, colorBudget: 32, keepEvery: 3),
            AnimatedGIFPlan(size: second, colorBudget: nil),
            AnimatedGIFPlan(size: second, colorBudget: 32, keepEvery: 2),
            AnimatedGIFPlan(size: first, colorBudget: 128),
        ]
    }

    @Test(
        "a pass at a size already read replays the spilled pictures: the same bytes as reading the source again",
        arguments: [
            ("disposals.gif", Orientation.up), ("delays-loop0.gif", .up), ("frame-outside.gif", .up),
            ("disposals.gif", .right), ("frame-outside.gif", .upMirrored),
        ])
    func spilledPassesMatchFreshOnes(_ name: String, orientation: Orientation) throws {
        let source = ImageSource.file(path: GIFFixtures.path(name))
        let opens = Locked(0), freshOpens = Locked(0)
        let meter = PixelMemoryMeter()
        var spilling = AnimationFramesPass(
            open: { try DiffingFrameSource(source, opens: opens) }, metadata: [], meter: meter)
        spilling.orientation = orientation
        var fresh = AnimationFramesPass(
            open: { try DiffingFrameSource(source, opens: freshOpens) }, metadata: [], meter: meter)
        fresh.orientation = orientation
        fresh.spills = nil
        let canvas = try GIFAsFrameSource(source).canvasSize
        let upright = orientation.swapsAxes ? PixelSize(width: canvas.height, height: canvas.width) : canvas
        let first = ScalePlan.scaled(upright, by: 0.75), second = ScalePlan.scaled(upright, by: 0.5)
        var frames: [Int] = []
        for plan in Self.plans(first, second) {
            let spilled = try spilling.run(plan, globalUsage: nil, checkpoint: {})
            let read = try fresh.run(plan, globalUsage: nil, checkpoint: {})
            #expect(spilled.bytes == read.bytes, "\(name) \(plan)")
            #expect(spilled.framesWritten == read.framesWritten, "\(name) \(plan)")
            let decoded = try DecodedGIF(spilled.bytes)
            #expect(decoded.size == plan.size)
            frames.append(decoded.frames.count)
        }
        // The source was read once for each size change (first, second, first again), the fresh pass every time.
        #expect(opens.withLock { $0 } == 3)
        #expect(freshOpens.withLock { $0 } == Self.plans(first, second).count)
        let count = try GIFAsFrameSource(source).frameCount
        #expect(frames[0] <= count && frames[0] >= 2)
        #expect(meter.currentBytes == 0, "every picture uncounted after the passes")
    }

    @Test("a pass the ladder follows with a smaller size (all colours and frames, above the floor) writes no spill")
    func noSpillWhereTheNextStepShrinks() throws {
        let source = ImageSource.file(path: GIFFixtures.path("disposals.gif"))
        let opens = Locked(0)
        var pass = AnimationFramesPass(
            open: { try DiffingFrameSource(source, opens: opens) }, metadata: [], meter: PixelMemoryMeter())
        let size = PixelSize(width: 120, height: 90)
        pass.dimensionFloor = 45
        let first = try pass.run(AnimatedGIFPlan(size: size, colorBudget: nil), globalUsage: nil, checkpoint: {})
        #expect(pass.spills?.spill == nil && opens.withLock { $0 } == 1)
        // At the floor, or with fewer colours, the next step keeps the size: spilled, then read back.
        let fewer = try pass.run(AnimatedGIFPlan(size: size, colorBudget: 64), globalUsage: nil, checkpoint: {})
        #expect(pass.spills?.spill != nil && opens.withLock { $0 } == 2)
        let fewest = try pass.run(AnimatedGIFPlan(size: size, colorBudget: 32), globalUsage: nil, checkpoint: {})
        #expect(opens.withLock { $0 } == 2)
        for output in [first, fewer, fewest] { #expect(try DecodedGIF(output.bytes).size == size) }
    }

    @Test("the spill file is unlinked at once (nothing left in its directory) and reads back what was written")
    func spillLeavesNoFile() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let spill = ResampledFrameSpill(
            size: PixelSize(width: 2, height: 1), canvasSize: PixelSize(width: 4, height: 2), loopCount: 0,
            directory: directory)
        let picture: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        spill.append(
            picture, patch: GIFRect(left: 1, top: 0, width: 1, height: 1),
            canvasChanged: GIFRect(left: 2, top: 0, width: 2, height: 2), durationMilliseconds: 70)
        #expect(spill.finishWriting())
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        var reader = try spill.reader()
        var read = [UInt8](repeating: 9, count: 8)
        let frame = try #require(try reader.next(patching: &read))
        #expect(read == [9, 9, 9, 9, 5, 6, 7, 8])
        #expect(
            frame.durationMilliseconds == 70 && frame.canvasChanged == GIFRect(left: 2, top: 0, width: 2, height: 2))
        #expect(try reader.next(patching: &read) == nil)
    }
}

@Suite struct AnimationSpillLeftoverTests {
    @Test("the ladder's first plan writes no spill, even at the dimension floor; the next pass at its size spills")
    func firstPlanWritesNoSpill() throws {
        let source = ImageSource.file(path: GIFFixtures.path("disposals.gif"))
        let opens = Locked(0)
        var pass = AnimationFramesPass(
            open: { try DiffingFrameSource(source, opens: opens) }, metadata: [], meter: PixelMemoryMeter())
        let size = PixelSize(width: 120, height: 90)
        let first = AnimatedGIFPlan(size: size, colorBudget: nil)
        pass.dimensionFloor = size.shortEdge  // a small animation: its first size is its floor
        pass.initialPlan = first
        let fitted = try pass.run(first, globalUsage: nil, checkpoint: {})
        #expect(pass.spills?.spill == nil && opens.withLock { $0 } == 1)
        let fewer = try pass.run(AnimatedGIFPlan(size: size, colorBudget: 128), globalUsage: nil, checkpoint: {})
        #expect(pass.spills?.spill != nil && opens.withLock { $0 } == 2)
        let fewest = try pass.run(AnimatedGIFPlan(size: size, colorBudget: 64), globalUsage: nil, checkpoint: {})
        #expect(opens.withLock { $0 } == 2, "read back from the spill")
        // The same bytes as passes that never spill.
        var fresh = AnimationFramesPass(
            open: { try DiffingFrameSource(source, opens: Locked(0)) }, metadata: [], meter: PixelMemoryMeter())
        fresh.spills = nil
        for (output, budget) in [(fitted, nil), (fewer, 128), (fewest, 64)] as [(AnimatedGIFPass.Output, Int?)] {
            let reference = try fresh.run(
                AnimatedGIFPlan(size: size, colorBudget: budget), globalUsage: nil, checkpoint: {})
            #expect(output.bytes == reference.bytes, "\(String(describing: budget))")
        }
    }

    /// Jobs that drop frames from the start (the service's frame limit): their passes hold the last kept picture
    /// while the resampler goes on through the dropped frames, and the meter counts it; the estimate bounds it.
    @Test(arguments: ["webp/animated.webp", "webp/disposals-mixed.webp", "apng/dispose-blend.png", "avif sequence"])
    func frameDroppingPassesStayWithinTheEstimate(_ input: String) throws {
        let source =
            input == "avif sequence"
            ? ImageSource.bytes(try #require(try AVIFTests.sequences().first).bytes)
            : .file(path: Fixtures.path(input))
        let info = try SharePipe.inspect(source)
        try #require(info.frameCount >= 3, "\(input): \(info.frameCount) frames")
        var options = ServiceProfile.x.options()
        options.animation.maxFrames = info.frameCount - 1
        let result = try SharePipe.prepare(source, options: options)
        #expect(result.format == .gif && result.frameCount < info.frameCount, "\(input): \(result.adjustments)")
        let estimate = try MemoryEstimate(info: info, options: options)
        let picture = result.size.area * 4
        #expect(
            result.peakPixelBytes <= estimate.meteredPixelBytes,
            "\(input): peak \(result.peakPixelBytes), \(estimate)")
        // The same job keeping every frame peaks lower by that picture (give or take the encoder's indices,
        // sized by each written frame's rectangle: at most one byte a pixel).
        var everyFrame = options
        everyFrame.animation.maxFrames = nil
        let whole = try SharePipe.prepare(source, options: everyFrame)
        #expect(whole.size == result.size)
        #expect(result.peakPixelBytes >= whole.peakPixelBytes + picture - result.size.area, "\(input)")
    }
}
