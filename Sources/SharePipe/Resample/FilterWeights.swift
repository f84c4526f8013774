import CSharePipe

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Precomputed Lanczos-3 weights for one axis: for each output position, a run of input positions.
struct FilterWeights: Sendable {
    let inputSize: Int
    let outputSize: Int
    let maxTaps: Int
    private let starts: [Int]
    private let counts: [Int]
    private let weights: [Float]  // outputSize × maxTaps

    static let lobes = 3.0

    /// The filter's reach on either side of an output's centre, in input positions: wider when reducing
    /// (antialiasing).
    private static func support(scale: Double) -> Double {
        lobes * max(scale, 1)
    }

    /// `maxTaps` of the weights for these sizes, without making them (memory estimates). An upper bound for
    /// weights over a partial last input position too (`inputExtent` below `inputSize` only narrows them).
    static func maxTaps(inputSize: Int, outputSize: Int) -> Int {
        maxTaps(inputSize: inputSize, scale: Double(inputSize) / Double(outputSize))
    }

    private static func maxTaps(inputSize: Int, scale: Double) -> Int {
        min(inputSize, Int((support(scale: scale) * 2).rounded(.up)) + 2)
    }

    /// Weights mapping `inputExtent` input positions onto `outputSize` outputs. `inputExtent` (default
    /// `inputSize`) may end inside the last input position, in (inputSize − 1, inputSize]: a JPEG decoded at
    /// a DCT scale M/8 is ceil(W·M/8) pixels wide but shows W·M/8 of them, its last column covering less than
    /// 8/M source pixels. The scale is then the true extent's, so the picture is not stretched by the rounding,
    /// and the partial position counts for the part it covers: its centre is that part's centre, its weight
    /// the kernel there times its width (the rest of it is the encoder's edge padding).
    init(inputSize: Int, outputSize: Int, inputExtent: Double? = nil) {
        self.inputSize = inputSize
        self.outputSize = outputSize
        // At least 1/64 of the last position (a DCT-scaled decode's covers at least 1/8 of it).
        let extent = min(Double(inputSize), max(Double(inputSize - 1) + 1.0 / 64, inputExtent ?? Double(inputSize)))
        // The part of the last input position inside the extent: 1 unless it is partial.
        let lastCoverage = extent - Double(inputSize - 1)
        let scale = extent / Double(outputSize)
        let filterScale = max(scale, 1)  // widen the filter when reducing: antialiasing
        let support = FilterWeights.support(scale: scale)
        let maxTaps = FilterWeights.maxTaps(inputSize: inputSize, scale: scale)
        var starts = [Int](repeating: 0, count: outputSize)
        var counts = [Int](repeating: 0, count: outputSize)
        var weights = [Float](repeating: 0, count: outputSize * maxTaps)
        for i in 0..<outputSize {
            let center = (Double(i) + 0.5) * scale
            var low = max(0, Int((center - support).rounded(.down)))
            let high = min(inputSize, Int((center + support).rounded(.up)))
            if high - low > maxTaps { low = high - maxTaps }
            var values: [Double] = []
            var total = 0.0
            for j in low..<high {
                let w: Double
                if j == inputSize - 1 && lastCoverage < 1 {
                    w = FilterWeights.lanczos((Double(j) + lastCoverage / 2 - center) / filterScale) * lastCoverage
                } else {
                    w = FilterWeights.lanczos((Double(j) + 0.5 - center) / filterScale)
                }
                values.append(w)
                total += w
            }
            // Trim zero weights at both ends so the taps are tight.
            var first = 0, last = values.count
            while first < last - 1 && values[first] == 0 { first += 1 }
            while last > first + 1 && values[last - 1] == 0 { last -= 1 }
            starts[i] = low + first
            counts[i] = last - first
            for t in first..<last {
                weights[i * maxTaps + (t - first)] = Float(total != 0 ? values[t] / total : 1.0 / Double(values.count))
            }
        }
        self.maxTaps = maxTaps
        self.starts = starts
        self.counts = counts
        self.weights = weights
    }

    static func lanczos(_ x: Double) -> Double {
        let ax = abs(x)
        if ax < 1e-9 { return 1 }
        if ax >= lobes { return 0 }
        let px = Double.pi * x
        return lobes * sin(px) * sin(px / lobes) / (px * px)
    }

    @inline(__always) func start(_ i: Int) -> Int { starts[i] }
    @inline(__always) func count(_ i: Int) -> Int { counts[i] }
    /// One past the last input position output `i` reads.
    @inline(__always) func end(_ i: Int) -> Int { starts[i] + counts[i] }

    /// Calls `body` with the weights of output `i` (`count(i)` of them).
    @inline(__always)
    func withWeights<R>(of i: Int, _ body: (UnsafePointer<Float>) throws -> R) rethrows -> R {
        try weights.withUnsafeBufferPointer { try body($0.baseAddress! + i * maxTaps) }
    }

    /// The outputs whose taps read any input position in `inputs` (empty when none do). Outputs outside it
    /// do not change when only those inputs change.
    func outputs(reading inputs: Range<Int>) -> Range<Int> {
        guard !inputs.isEmpty else { return 0..<0 }
        var first = Int.max, last = Int.min
        for i in 0..<outputSize where starts[i] < inputs.upperBound && starts[i] + counts[i] > inputs.lowerBound {
            if i < first { first = i }
            last = i
        }
        return first == Int.max ? 0..<0 : first..<(last + 1)
    }

    /// The input positions that the outputs in `outputs` read.
    func inputs(readBy outputs: Range<Int>) -> Range<Int> {
        guard !outputs.isEmpty else { return 0..<0 }
        var low = Int.max, high = Int.min
        for i in outputs {
            low = min(low, starts[i])
            high = max(high, starts[i] + counts[i])
        }
        return low..<high
    }

    /// Filters one row of interleaved samples.
    func apply(input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, channels: Int) {
        apply(input: input, inputOrigin: 0, output: output, outputs: 0..<outputSize, channels: channels)
    }

    /// Filters the outputs in `outputs` of one row of interleaved samples: `input` holds the row from input
    /// position `inputOrigin` on (at least through `inputs(readBy: outputs)`), and output `outputs.lowerBound`
    /// goes to `output[0]`. Each output is exactly what the whole-row call computes for it.
    func apply(
        input: UnsafePointer<Float>, inputOrigin: Int, output: UnsafeMutablePointer<Float>, outputs: Range<Int>,
        channels: Int
    ) {
        let maxTaps = self.maxTaps
        starts.withUnsafeBufferPointer { startsBuffer in
            counts.withUnsafeBufferPointer { countsBuffer in
                weights.withUnsafeBufferPointer { weightsBuffer in
                    let starts = startsBuffer.baseAddress!, counts = countsBuffer.baseAddress!
                    let weights = weightsBuffer.baseAddress!
                    let first = outputs.lowerBound
                    switch channels {
                    case 4:
                        // Four sums over the taps: the optimiser packs them into one SIMD4<Float> multiply-add
                        // per tap (mulps/addps); written as scalars, because SIMD types are about 10× slower in
                        // debug builds (every test that resamples runs one).
                        for i in outputs {
                            var r: Float = 0, g: Float = 0, b: Float = 0, a: Float = 0
                            var p = input + (starts[i] - inputOrigin) * 4
                            let w = weights + i * maxTaps
                            for t in 0..<counts[i] {
                                let k = w[t]
                                r += k * p[0]; g += k * p[1]; b += k * p[2]; a += k * p[3]
                                p += 4
                            }
                            let o = output + (i - first) * 4
                            o[0] = r; o[1] = g; o[2] = b; o[3] = a
                        }
                    case 3:
                        for i in outputs {
                            var r: Float = 0, g: Float = 0, b: Float = 0
                            var p = input + (starts[i] - inputOrigin) * 3
                            let w = weights + i * maxTaps
                            for t in 0..<counts[i] {
                                let k = w[t]
                                r += k * p[0]; g += k * p[1]; b += k * p[2]
                                p += 3
                            }
                            let o = (i - first) * 3
                            output[o] = r; output[o + 1] = g; output[o + 2] = b
                        }
                    case 1:
                        for i in outputs {
                            var v: Float = 0
                            let p = input + (starts[i] - inputOrigin)
                            let w = weights + i * maxTaps
                            for t in 0..<counts[i] { v += w[t] * p[t] }
                            output[i - first] = v
                        }
                    default:
                        for i in outputs {
                            let w = weights + i * maxTaps
                            for c in 0..<channels {
                                var v: Float = 0
                                var p = input + (starts[i] - inputOrigin) * channels + c
                                for t in 0..<counts[i] { v += w[t] * p[0]; p += channels }
                                output[(i - first) * channels + c] = v
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `FilterWeights` in fixed point for the shim's kernels (`sp_resample.h`): each output's weights rounded to
/// int16 with `SP_RESAMPLE_WEIGHT_BITS` fraction bits, the rounding error put on its largest weight so they
/// sum to exactly 1 (a flat area stays flat), zeros after its taps up to `stride` (a multiple of 8).
struct FixedFilterWeights: Sendable {
    let stride: Int
    let starts: [Int32]
    let counts: [Int32]
    let weights: [Int16]

    init(starts: [Int], counts: [Int], weights: (Int, Int) -> Float, outputs: Int, maxTaps: Int) {
        let stride = (maxTaps + 7) / 8 * 8
        let one = 1 << Int(SP_RESAMPLE_WEIGHT_BITS)
        var fixed = [Int16](repeating: 0, count: outputs * stride)
        for i in 0..<outputs {
            var total = 0, largest = 0
            for t in 0..<counts[i] {
                let value = Int((Double(weights(i, t)) * Double(one)).rounded())
                fixed[i * stride + t] = Int16(clamping: value)
                total += Int(fixed[i * stride + t])
                if abs(Int(fixed[i * stride + t])) > abs(Int(fixed[i * stride + largest])) { largest = t }
            }
            fixed[i * stride + largest] = Int16(clamping: Int(fixed[i * stride + largest]) + one - total)
        }
        self.stride = stride
        self.starts = starts.map { Int32($0) }
        self.counts = counts.map { Int32($0) }
        self.weights = fixed
    }

    /// The horizontal pass over one row expanded by `sp_resample_expand_row` (and padded).
    func horizontal(_ expanded: UnsafePointer<Int16>, channels: Int, into out: UnsafeMutablePointer<Int16>) {
        starts.withUnsafeBufferPointer { starts in
            counts.withUnsafeBufferPointer { counts in
                weights.withUnsafeBufferPointer { weights in
                    sp_resample_horizontal(
                        expanded, Int32(channels), starts.baseAddress!, counts.baseAddress!, weights.baseAddress!,
                        Int32(stride), Int32(starts.count), out)
                }
            }
        }
    }

    /// Calls `body` with the weights of output `i`.
    func withWeights<R>(of i: Int, _ body: (UnsafePointer<Int16>) throws -> R) rethrows -> R {
        try weights.withUnsafeBufferPointer { try body($0.baseAddress! + i * stride) }
    }
}

extension FilterWeights {
    /// These weights in fixed point.
    func fixedPoint() -> FixedFilterWeights {
        FixedFilterWeights(
            starts: starts, counts: counts, weights: { i, t in self.weights[i * self.maxTaps + t] },
            outputs: outputSize, maxTaps: maxTaps)
    }

    /// These weights in fixed point, laid out for the RGBA horizontal kernel.
    func fixedPointRGBA() -> FixedRGBAWeights { FixedRGBAWeights(fixedPoint()) }
}

/// `FixedFilterWeights` laid out for `sp_resample_horizontal_rgba`: each output's taps in pairs, the pair's two
/// weights repeated over the four channels ([w0 w1 w0 w1 w0 w1 w0 w1], one `pmaddwd` operand), `pairStride`
/// pairs an output (zero weights after its taps).
struct FixedRGBAWeights: Sendable {
    let pairStride: Int
    let starts: [Int32]
    let counts: [Int32]
    let pairs: [Int16]

    init(_ fixed: FixedFilterWeights) {
        let pairStride = ((fixed.counts.max().map { Int($0) } ?? 0) + 1) / 2
        let outputs = fixed.counts.count
        var pairs = [Int16](repeating: 0, count: outputs * pairStride * 8)
        for i in 0..<outputs {
            for j in 0..<pairStride {
                let first = fixed.weights[i * fixed.stride + 2 * j],
                    second = fixed.weights[i * fixed.stride + 2 * j + 1]
                let base = (i * pairStride + j) * 8
                for c in 0..<4 {
                    pairs[base + 2 * c] = first
                    pairs[base + 2 * c + 1] = second
                }
            }
        }
        self.pairStride = pairStride
        self.starts = fixed.starts
        self.counts = fixed.counts
        self.pairs = pairs
    }

    /// The horizontal pass for the outputs in `outputs` over pairs made by `sp_resample_expand_rgba` whose
    /// first entry is input pixel `origin` (and that reach every pixel those outputs read): four Floats an
    /// output (premultiplied, 0...255), output `outputs.lowerBound` at `out`.
    func horizontal(
        _ expanded: UnsafePointer<Int16>, origin: Int, outputs: Range<Int>, into out: UnsafeMutablePointer<Float>
    ) {
        let first = outputs.lowerBound, pairStride = self.pairStride
        starts.withUnsafeBufferPointer { starts in
            counts.withUnsafeBufferPointer { counts in
                pairs.withUnsafeBufferPointer { pairs in
                    sp_resample_horizontal_rgba(
                        expanded, Int32(origin), starts.baseAddress! + first, counts.baseAddress! + first,
                        pairs.baseAddress! + first * pairStride * 8, Int32(pairStride), Int32(outputs.count), out)
                }
            }
        }
    }
}
