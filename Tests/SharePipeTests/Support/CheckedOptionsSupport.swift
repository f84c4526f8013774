@testable import SharePipe

// The pipeline, the planner and the estimate take only checked options. The tests that drive them directly
// with a plain `PrepareOptions` go through these, which check it first as a public entry point does (the
// planner and the estimate trap on invalid options: the tests give them valid ones).

extension Pipeline {
    static func prepare(_ source: ImageSource, options: PrepareOptions, checkpoint: @escaping Checkpoint = {}) throws
        -> PreparedImage
    {
        try prepare(source, options: options.checked(), checkpoint: checkpoint)
    }
}

extension PreparePlan {
    init(info: ImageInfo, options: PrepareOptions, sourceQuality: SourceQuality? = nil) {
        self.init(info: info, options: try! options.checked(), sourceQuality: sourceQuality)
    }
}

extension MemoryEstimate {
    init(plan: PreparePlan, info: ImageInfo, options: PrepareOptions, input: InputResidence) {
        self.init(plan: plan, info: info, options: try! options.checked(), input: input)
    }
}
