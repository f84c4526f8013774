/// `FittingLadder.animation`, in this order: smaller dimensions (down to half the planned short edge),
/// fewer colours (128, 64, 32), then frame decimation (keep every 2nd, 3rd, ... frame, adding the dropped
/// frames' delays to the kept ones so the total duration stays the same; at least 2 frames stay so the
/// animation never becomes a still), and finally smaller dimensions again down to `minShortEdge`. Each
/// step is one whole pass over the source.
struct AnimationLadder: LadderRunner {
    /// One pass with a plan; the global palette's usage from an earlier pass weights its reduction.
    typealias Pass = (AnimatedGIFPlan, _ globalUsage: [Int]?, Pipeline.Checkpoint) throws -> AnimatedGIFPass.Output

    static let colorSteps = [128, 64, 32]

    let run: Pass
    let initial: AnimatedGIFPlan
    let frameCount: Int
    let dimensionFloor: Int
    let minShortEdge: Int
    let metadata: MetadataOutcome
    let warnings: [String]
    private var plan: AnimatedGIFPlan
    private var lastBytes = 0
    private var globalUsage: [Int]?
    /// Source frames with partial transparency, as the first pass over the source counted them.
    private var partialAlphaFrames: Int?
    /// The first frame of the first pass, reduced for the placeholder.
    private(set) var placeholderThumbnail: PlaceholderThumbnail?

    init(
        run: @escaping Pass, initial: AnimatedGIFPlan, frameCount: Int, dimensionFloor: Int, minShortEdge: Int,
        metadata: MetadataOutcome, warnings: [String]
    ) {
        self.run = run
        self.initial = initial
        self.frameCount = frameCount
        self.dimensionFloor = dimensionFloor
        self.minShortEdge = minShortEdge
        self.metadata = metadata
        self.warnings = warnings
        plan = initial
    }

    mutating func attempt(_ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint) throws -> FittingDriver.Fit? {
        let output = try run(plan, globalUsage, checkpoint)
        if globalUsage == nil { globalUsage = output.globalUsage }
        if partialAlphaFrames == nil { partialAlphaFrames = output.framesWithPartialAlpha }
        if placeholderThumbnail == nil { placeholderThumbnail = output.firstPicture }
        lastBytes = output.byteCount
        guard
            log.record(
                size: plan.size, format: .gif, quality: nil, note: plan.note(frameCount: frameCount),
                bytes: lastBytes)
        else { return nil }
        // An attempt over the limit is dropped here: its temporary file (if any) goes with it.
        return FittingDriver.Fit(
            bytes: output.bytes, format: .gif, size: plan.size, quality: nil, metadata: metadata,
            frameCount: output.framesWritten, adjustments: adjustments(output), file: output.file)
    }

    mutating func advance(limit: Int) -> Bool {
        guard let next = nextPlan(after: plan, bytes: lastBytes, limit: limit) else { return false }
        plan = next
        return true
    }

    /// The next rung of the ladder, or nil when every lever is exhausted.
    func nextPlan(after plan: AnimatedGIFPlan, bytes: Int, limit: Int) -> AnimatedGIFPlan? {
        var next = plan
        // 1. Dimensions, while colours and frames are untouched, down to the floor.
        if plan.colorBudget == nil && plan.keepEvery == 1 && plan.size.shortEdge > dimensionFloor,
            let smaller = FittingDriver.shrink(
                plan.size, bytes: bytes, limit: limit, floor: dimensionFloor, landOnFloor: true)
        {
            next.size = smaller
            return next
        }
        // 2. Fewer colours.
        if plan.keepEvery == 1, let budget = Self.colorSteps.first(where: { $0 < (plan.colorBudget ?? 256) }) {
            next.colorBudget = budget
            return next
        }
        // 3. Frame decimation, estimated from how far over the limit the last attempt was.
        let maxKeepEvery = max(1, frameCount - 1)
        if plan.keepEvery < maxKeepEvery {
            let estimate = Int((Double(plan.keepEvery) * Double(bytes) / Double(limit)).rounded(.up))
            next.keepEvery = min(maxKeepEvery, max(plan.keepEvery + 1, estimate))
            return next
        }
        // 4. Dimensions again, down to the smallest short edge allowed.
        if let smaller = FittingDriver.shrink(
            plan.size, bytes: bytes, limit: limit, floor: minShortEdge, landOnFloor: true),
            smaller.shortEdge >= minShortEdge
        {
            next.size = smaller
            return next
        }
        return nil
    }

    /// What the fitting changed, for the report (the plan reports its own reductions).
    private func adjustments(_ output: AnimatedGIFPass.Output) -> [String] {
        var adjustments: [String] = []
        if plan.size != initial.size {
            adjustments.append("reduced to \(plan.size) (planned \(initial.size)) to meet the byte limit")
        }
        if let budget = plan.colorBudget {
            adjustments.append("palettes reduced to \(budget) colours to meet the byte limit")
        }
        if plan.keepEvery > 1 {
            let why = plan.keepEvery == initial.keepEvery ? "for the service's frame limits" : "to meet the byte limit"
            adjustments.append(
                "frames decimated \(plan.keepEvery):1 (\(frameCount) → \(output.framesWritten)) \(why), "
                    + "delays merged so the total duration is unchanged")
        }
        if let partial = partialAlphaFrames, partial > 0 {
            adjustments.append(
                "partial transparency in \(partial) of \(frameCount) frames not kept: GIF shows a pixel either "
                    + "opaque (alpha 50 % or more) or clear")
        }
        if output.statistics.delaysClamped > 0 {
            adjustments.append("\(output.statistics.delaysClamped) merged delay(s) clamped to 655.35 s")
        }
        return adjustments
    }
}
