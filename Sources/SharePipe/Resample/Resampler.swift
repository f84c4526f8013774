#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The resampler role: takes decoded rows top to bottom, one at a time, and produces the small output
/// bitmap. Only a window of rows is ever held, never the whole decoded image.
protocol Resampler {
    /// Accepts the next row: `source.width × channels` samples on a 0...255 scale (16-bit sources keep
    /// their fraction), straight alpha.
    mutating func push(row: UnsafeBufferPointer<Float>)
    /// Accepts the next row of 8-bit samples.
    mutating func push(row: UnsafeBufferPointer<UInt8>)
    /// The finished output; call after the last row.
    mutating func finish() throws -> Bitmap
}

/// A separable, antialiased Lanczos-3 resampler that streams rows.
///
/// Horizontal pass first, on each row as it arrives; the horizontally resampled rows go into a ring
/// whose height is the vertical filter's support, and each output row is made as soon as its window is
/// complete. The filter's support widens with the reduction ratio, so a 1-pixel checkerboard reduced 3×
/// comes out flat grey instead of moiré. Alpha is premultiplied while filtering, so transparent pixels'
/// colours do not bleed into edges.
struct LanczosResampler: Resampler {
    let source: PixelSize
    let target: PixelSize
    let layout: PixelLayout
    private let channels: Int
    private let horizontal: FilterWeights
    private let vertical: FilterWeights
    private var ring: [Float]
    private let ringRows: Int
    private var inputRow: [Float]
    private var accumulator: [Float]
    private var output: [UInt8]
    private var rowsIn = 0
    private var rowsOut = 0
    private let meter: PixelMemoryMeter
    private let countedBytes: Int

    init(from source: PixelSize, to target: PixelSize, layout: PixelLayout, meter: PixelMemoryMeter) {
        precondition(target.width >= 1 && target.height >= 1 && source.width >= 1 && source.height >= 1)
        self.source = source
        self.target = target
        self.layout = layout
        self.channels = layout.channels
        self.horizontal = FilterWeights(inputSize: source.width, outputSize: target.width)
        self.vertical = FilterWeights(inputSize: source.height, outputSize: target.height)
        self.ringRows = vertical.maxTaps
        self.ring = [Float](repeating: 0, count: ringRows * target.width * layout.channels)
        self.inputRow = [Float](repeating: 0, count: source.width * layout.channels)
        self.accumulator = [Float](repeating: 0, count: target.width * layout.channels)
        self.output = [UInt8](repeating: 0, count: target.area * layout.channels)
        self.meter = meter
        self.countedBytes = (ring.count + inputRow.count + accumulator.count) * MemoryLayout<Float>.stride + output.count
        meter.allocate(countedBytes)
    }

    /// What a resampler for these sizes counts in the meter (for memory estimates).
    static func memoryEstimate(from source: PixelSize, to target: PixelSize, channels: Int) -> Int {
        let taps = FilterWeights(inputSize: source.height, outputSize: target.height).maxTaps
        let floats = (taps * target.width + source.width + target.width) * channels
        return floats * MemoryLayout<Float>.stride + target.area * channels
    }

    mutating func push(row: UnsafeBufferPointer<UInt8>) {
        precondition(row.count >= source.width * channels)
        inputRow.withUnsafeMutableBufferPointer { floats in
            for i in 0..<source.width * channels { floats[i] = Float(row[i]) }
        }
        consumeInputRow()
    }

    mutating func push(row: UnsafeBufferPointer<Float>) {
        precondition(row.count >= source.width * channels)
        inputRow.withUnsafeMutableBufferPointer { floats in
            for i in 0..<source.width * channels { floats[i] = row[i] }
        }
        consumeInputRow()
    }

    private mutating func consumeInputRow() {
        guard rowsIn < source.height else { return }
        if layout.hasAlpha { premultiply(&inputRow, pixels: source.width) }
        let slot = rowsIn % ringRows
        let rowLength = target.width * channels
        let channels = self.channels
        let horizontal = self.horizontal
        inputRow.withUnsafeBufferPointer { input in
            ring.withUnsafeMutableBufferPointer { ringBuffer in
                let out = ringBuffer.baseAddress! + slot * rowLength
                horizontal.apply(input: input.baseAddress!, output: out, channels: channels)
            }
        }
        rowsIn += 1
        while rowsOut < target.height && vertical.end(rowsOut) <= rowsIn {
            emitOutputRow()
        }
    }

    private mutating func emitOutputRow() {
        let y = rowsOut
        let rowLength = target.width * channels
        let start = vertical.start(y), taps = vertical.count(y)
        let ringRows = self.ringRows
        let vertical = self.vertical
        accumulator.withUnsafeMutableBufferPointer { acc in
            for i in 0..<rowLength { acc[i] = 0 }
            ring.withUnsafeBufferPointer { ringBuffer in
                for t in 0..<taps {
                    let weight = vertical.weight(y, t)
                    let row = ringBuffer.baseAddress! + ((start + t) % ringRows) * rowLength
                    for i in 0..<rowLength { acc[i] += weight * row[i] }
                }
            }
        }
        let outOffset = y * rowLength
        let channels = self.channels
        let hasAlpha = layout.hasAlpha
        accumulator.withUnsafeBufferPointer { acc in
            output.withUnsafeMutableBufferPointer { out in
                if hasAlpha {
                    var p = 0
                    while p < rowLength {
                        let alpha = min(max(acc[p + channels - 1], 0), 255)
                        let scale: Float = alpha > 0.001 ? 255 / alpha : 0
                        for c in 0..<(channels - 1) { out[outOffset + p + c] = clampToByte(acc[p + c] * scale) }
                        out[outOffset + p + channels - 1] = clampToByte(alpha)
                        p += channels
                    }
                } else {
                    for i in 0..<rowLength { out[outOffset + i] = clampToByte(acc[i]) }
                }
            }
        }
        rowsOut += 1
    }

    mutating func finish() throws -> Bitmap {
        defer { meter.release(countedBytes) }
        guard rowsIn == source.height, rowsOut == target.height else {
            throw ResamplerError.incomplete(rowsIn: rowsIn, expected: source.height)
        }
        return Bitmap(size: target, layout: layout, pixels: output)
    }

    private func premultiply(_ row: inout [Float], pixels: Int) {
        let channels = self.channels
        row.withUnsafeMutableBufferPointer { buffer in
            for p in 0..<pixels {
                let base = p * channels
                let alpha = buffer[base + channels - 1] / 255
                for c in 0..<(channels - 1) { buffer[base + c] *= alpha }
            }
        }
    }
}

enum ResamplerError: Error {
    case incomplete(rowsIn: Int, expected: Int)
}

@inline(__always)
func clampToByte(_ value: Float) -> UInt8 {
    if value <= 0 { return 0 }
    if value >= 255 { return 255 }
    return UInt8(value + 0.5)
}

/// Precomputed Lanczos-3 weights for one axis: for each output position, a run of input positions.
struct FilterWeights: Sendable {
    let inputSize: Int
    let outputSize: Int
    let maxTaps: Int
    private let starts: [Int]
    private let counts: [Int]
    private let weights: [Float]  // outputSize × maxTaps

    static let lobes = 3.0

    init(inputSize: Int, outputSize: Int) {
        self.inputSize = inputSize
        self.outputSize = outputSize
        let scale = Double(inputSize) / Double(outputSize)
        let filterScale = max(scale, 1)           // widen the filter when reducing: antialiasing
        let support = FilterWeights.lobes * filterScale
        let maxTaps = min(inputSize, Int((support * 2).rounded(.up)) + 2)
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
                let w = FilterWeights.lanczos((Double(j) + 0.5 - center) / filterScale)
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
    @inline(__always) func weight(_ i: Int, _ tap: Int) -> Float { weights[i * maxTaps + tap] }

    /// Filters one row of interleaved samples.
    func apply(input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, channels: Int) {
        starts.withUnsafeBufferPointer { starts in
            counts.withUnsafeBufferPointer { counts in
                weights.withUnsafeBufferPointer { weights in
                    switch channels {
                    case 3:
                        for i in 0..<outputSize {
                            var r: Float = 0, g: Float = 0, b: Float = 0
                            var p = input + starts[i] * 3
                            let w = weights.baseAddress! + i * maxTaps
                            for t in 0..<counts[i] {
                                let k = w[t]
                                r += k * p[0]; g += k * p[1]; b += k * p[2]
                                p += 3
                            }
                            output[i * 3] = r; output[i * 3 + 1] = g; output[i * 3 + 2] = b
                        }
                    case 1:
                        for i in 0..<outputSize {
                            var v: Float = 0
                            let p = input + starts[i]
                            let w = weights.baseAddress! + i * maxTaps
                            for t in 0..<counts[i] { v += w[t] * p[t] }
                            output[i] = v
                        }
                    default:
                        for i in 0..<outputSize {
                            let w = weights.baseAddress! + i * maxTaps
                            for c in 0..<channels {
                                var v: Float = 0
                                var p = input + starts[i] * channels + c
                                for t in 0..<counts[i] { v += w[t] * p[0]; p += channels }
                                output[i * channels + c] = v
                            }
                        }
                    }
                }
            }
        }
    }
}
