import Testing
@testable import SharePipe

/// `FilterWeights` over an input whose extent ends inside its last position (a DCT-scaled JPEG's partial last
/// column): the true extent is mapped onto the output, and a whole extent leaves the weights as they were.
struct FilterWeightsExtentTests {
    static func taps(_ weights: FilterWeights) -> [(start: Int, values: [Float])] {
        (0..<weights.outputSize).map { i in
            (
                weights.start(i),
                weights.withWeights(of: i) { Array(UnsafeBufferPointer(start: $0, count: weights.count(i))) }
            )
        }
    }

    @Test(arguments: [(1662, 1620), (887, 400), (1, 1), (7, 3), (300, 301), (2000, 1024)])
    func wholeExtentKeepsTheWeights(_ sizes: (input: Int, output: Int)) {
        let plain = FilterWeights(inputSize: sizes.input, outputSize: sizes.output)
        let whole = FilterWeights(inputSize: sizes.input, outputSize: sizes.output, inputExtent: Double(sizes.input))
        #expect(plain.maxTaps == whole.maxTaps)
        let a = Self.taps(plain), b = Self.taps(whole)
        #expect(a.map(\.start) == b.map(\.start) && a.map(\.values) == b.map(\.values))
    }

    /// A ramp over the true extent (the partial last position holding the value at the centre of the part it
    /// covers) comes out as the ramp at the outputs' centres, to the far edge's last few outputs; mapped from
    /// the rounded-up size it is off by the stretch there.
    @Test(arguments: [(1662, 1661.875, 1620), (1109, 1108.125, 1080), (302, 301.5, 150), (501, 500.5, 498)])
    func partialLastPositionMapsTheTrueExtent(_ sizes: (input: Int, extent: Double, output: Int)) {
        let ramp = { (position: Double) in position * 100 / sizes.extent }
        let input: [Float] = (0..<sizes.input).map { j in
            Float(ramp(j == sizes.input - 1 ? (Double(j) + sizes.extent) / 2 : Double(j) + 0.5))
        }
        let scale = sizes.extent / Double(sizes.output)
        func worstError(_ weights: FilterWeights) -> Double {
            var output = [Float](repeating: 0, count: sizes.output)
            input.withUnsafeBufferPointer { inputBuffer in
                output.withUnsafeMutableBufferPointer { outputBuffer in
                    weights.apply(input: inputBuffer.baseAddress!, output: outputBuffer.baseAddress!, channels: 1)
                }
            }
            // Away from the edges, where the kernel is cut and a ramp is no longer reproduced.
            let margin = 4
            return (margin..<(sizes.output - margin)).map { i in
                abs(Double(output[i]) - ramp((Double(i) + 0.5) * scale))
            }.max() ?? 0
        }
        let exact = FilterWeights(inputSize: sizes.input, outputSize: sizes.output, inputExtent: sizes.extent)
        let rounded = FilterWeights(inputSize: sizes.input, outputSize: sizes.output)
        let step = 100 / Double(sizes.output)  // the ramp's rise over one output
        #expect(worstError(exact) < 0.02 * step, "exact extent: \(worstError(exact) / step) outputs off")
        // The rounded-up size's stretch reaches (size − extent) / scale outputs at the far edge.
        let stretch = (Double(sizes.input) - sizes.extent) / scale
        #expect(
            worstError(rounded) > 0.8 * stretch * step,
            "rounded-up size: \(worstError(rounded) / step) outputs off, \(stretch) expected")
        for i in 0..<sizes.output {
            let sum = exact.withWeights(of: i) { w in (0..<exact.count(i)).reduce(0.0) { $0 + Double(w[$1]) } }
            #expect(abs(sum - 1) < 1e-5, "output \(i): weights sum to \(sum)")
        }
    }
}
