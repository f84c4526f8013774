import CSharePipe

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A separable, antialiased Lanczos-3 resampler that streams rows.
///
/// Horizontal pass first, on each row as it arrives; the horizontally resampled rows go into a ring
/// whose height is the vertical filter's support, and each output row is made as soon as its window is
/// complete. The filter's support widens with the reduction ratio, so a 1-pixel checkerboard reduced 3×
/// comes out flat grey instead of moiré. Alpha is premultiplied while filtering, so transparent pixels'
/// colours do not bleed into edges.
/// The resampler step: decoded rows go in top to bottom, one at a time (`push(row:)` with Float rows on a
/// 0...255 scale, 16-bit sources keeping their fraction, or 8-bit rows; straight alpha), and `finish()` gives
/// the small output bitmap. Only a window of rows is ever held, never the whole decoded image.
///
/// Gray and RGB filter in fixed point, as libvips and pillow-simd do: int16 samples and weights, int32 sums,
/// SSE2 kernels in the shim (`sp_resample.h`); the ring between the passes keeps six fraction bits. RGBA
/// filters its rows in fixed point too, premultiplied exactly (c × a in an int16 sample), into a Float ring,
/// then Float down the columns and divided by alpha (a pixel of alpha 1 keeps its colour, which an int16 ring
/// could not); the GIF picture resampler shares these kernels (`FixedRGBAWeights`,
/// `ResampleKernels.rgbaOutputRow`), so its pictures stay exactly what this resampler makes. Gray with alpha
/// filters in Float (premultiplied).
struct LanczosResampler {
    /// How the rows are filtered.
    enum Arithmetic {
        /// Gray and RGB: int16 samples, int32 sums, an int16 ring.
        case fixedPoint
        /// RGBA: int16 premultiplied samples and int32 sums along the rows into a Float ring, Float down the columns.
        case fixedPointRows
        /// Float throughout (gray with alpha; the reference the tests compare with).
        case float
    }

    let source: PixelSize
    let target: PixelSize
    let layout: PixelLayout
    let arithmetic: Arithmetic
    private let channels: Int
    private let horizontal: FilterWeights
    private let vertical: FilterWeights
    /// Float (`ring`, `inputRow`, `accumulator`) and RGBA fixed point (`ring`, `expandedPairs`; `inputRow` for
    /// Float pushes) share the Float ring.
    private var ring: [Float]
    private let ringRows: Int
    /// Float input rows (always in Float; in fixed point only for Float pushes, allocated on the first).
    private var inputRow: [Float]
    /// Horizontal sums: in Float, the vertical pass's sums; gray and RGB in fixed point, a Float row's horizontal
    /// pass (RGBA's goes straight into the ring).
    private var accumulator: [Float]
    private let fixedHorizontal: FixedFilterWeights?
    private let fixedVertical: FixedFilterWeights?
    /// Fixed point: `ringRows` rows of `ringStride` int16 samples (one spare sample each, see
    /// `sp_resample_horizontal`).
    private var fixedRing: [Int16]
    private let ringStride: Int
    /// Fixed point: the 8-bit row expanded for the horizontal kernel (allocated on the first 8-bit push).
    private var expandedRow: [Int16] = []
    /// RGBA fixed point: the row's pixels premultiplied in pairs (`sp_resample_expand_rgba`), allocated on the
    /// first 8-bit push.
    private var expandedPairs: [Int16] = []
    private let rgbaHorizontal: FixedRGBAWeights?
    /// The output bitmap, or with a row sink the one row being made.
    private var output: [UInt8]
    /// Where each output row goes as soon as it is made (`init(…rowSink:)`), or nil: rows into `output`.
    private let rowSink: ((UnsafeBufferPointer<UInt8>) throws -> Void)?
    private var rowsIn = 0
    private var rowsOut = 0
    private let meter: PixelMemoryMeter
    private let countedBytes: Int
    /// Whether `countedBytes` are still in the meter (until `finish` or `discard`).
    private var counted = true

    /// `fixedPoint`: nil (the pipeline) and true pick fixed point for every layout but gray with alpha; false
    /// Float (tests compare both). `sourceExtent`: how much of `source` the picture covers, when its last
    /// column or row is partial (a DCT-scaled JPEG: `ScalePlan.jpegDecodedExtent`); the whole of it by default.
    /// The extent, not the rounded-up size, is mapped onto `target` (`FilterWeights.init`).
    /// `rowSink`: each output row is handed to it as soon as it is made, top to bottom (valid only during the
    /// call), and only that row is held, never the output bitmap (`finishRows` instead of `finish`).
    init(
        from source: PixelSize, to target: PixelSize, layout: PixelLayout, meter: PixelMemoryMeter,
        fixedPoint: Bool? = nil, sourceExtent: (width: Double, height: Double)? = nil,
        rowSink: ((UnsafeBufferPointer<UInt8>) throws -> Void)? = nil
    ) {
        precondition(target.width >= 1 && target.height >= 1 && source.width >= 1 && source.height >= 1)
        precondition(fixedPoint != true || layout != .grayAlpha, "gray with alpha filters in Float only")
        self.source = source
        self.target = target
        self.layout = layout
        self.channels = layout.channels
        self.horizontal = FilterWeights(
            inputSize: source.width, outputSize: target.width, inputExtent: sourceExtent?.width)
        self.vertical = FilterWeights(
            inputSize: source.height, outputSize: target.height, inputExtent: sourceExtent?.height)
        self.ringRows = vertical.maxTaps
        let rowLength = target.width * layout.channels
        let arithmetic: Arithmetic =
            fixedPoint == false || layout == .grayAlpha ? .float : layout == .rgba ? .fixedPointRows : .fixedPoint
        self.arithmetic = arithmetic
        self.rgbaHorizontal = arithmetic == .fixedPointRows ? horizontal.fixedPointRGBA() : nil
        if arithmetic == .fixedPoint {
            self.fixedHorizontal = horizontal.fixedPoint()
            self.fixedVertical = vertical.fixedPoint()
            self.ringStride = rowLength + 1
            self.fixedRing = [Int16](repeating: 0, count: ringRows * (rowLength + 1))
            self.ring = []
            self.inputRow = []
            self.accumulator = []
        } else {
            self.fixedHorizontal = nil
            self.fixedVertical = nil
            self.ringStride = rowLength
            self.fixedRing = []
            self.ring = [Float](repeating: 0, count: ringRows * rowLength)
            // RGBA fixed point: Float rows only for Float pushes, allocated on the first.
            let float = arithmetic == .float
            self.inputRow = float ? [Float](repeating: 0, count: source.width * layout.channels) : []
            self.accumulator = float ? [Float](repeating: 0, count: rowLength) : []
        }
        self.rowSink = rowSink
        self.output = [UInt8](repeating: 0, count: (rowSink == nil ? target.height : 1) * rowLength)
        self.meter = meter
        // What the Float resampler holds, for every layout: the fixed-point buffers (an int16 ring, and either
        // an expanded int16 row or a Float row and its horizontal sums; for RGBA the Float ring and either the
        // premultiplied pairs, 16 bytes a pixel as the Float row, or a Float row) never hold more, so the
        // estimate and the meter stay what they were.
        // With a row sink, one output row instead of the bitmap.
        let estimate = Self.memoryEstimate(from: source, to: target, channels: layout.channels)
        self.countedBytes = rowSink == nil ? estimate : estimate - target.area * layout.channels + rowLength
        meter.allocate(countedBytes)
    }

    /// What a resampler for these sizes counts in the meter (for memory estimates): its Float buffers, an upper
    /// bound for the fixed-point ones.
    static func memoryEstimate(from source: PixelSize, to target: PixelSize, channels: Int) -> Int {
        let taps = FilterWeights.maxTaps(inputSize: source.height, outputSize: target.height)
        let floats = (taps * target.width + source.width + target.width) * channels
        return floats * MemoryLayout<Float>.stride + target.area * channels
    }

    /// Pushes the next 8-bit row. Every `PixelMemoryMeter.rowsPerCheck` rows it runs the job's checkpoint
    /// (`PixelMemoryMeter.checkCancellation()`), so a cancelled job stops in the middle of an image.
    mutating func push(row: UnsafeBufferPointer<UInt8>) throws {
        if rowsIn % PixelMemoryMeter.rowsPerCheck == 0 { try meter.checkCancellation() }
        precondition(row.count >= source.width * channels)
        switch arithmetic {
        case .fixedPoint:
            try consumeFixedRow(row.baseAddress!)
            return
        case .fixedPointRows:
            try consumeRGBARow(row.baseAddress!)
            return
        case .float:
            break
        }
        let count = source.width * channels
        inputRow.withUnsafeMutableBufferPointer { floats in
            ResampleKernels.load(row.baseAddress!, count: count, into: floats.baseAddress!)
        }
        try consumeInputRow()
    }

    /// Pushes the next Float row (checks for cancellation as the 8-bit `push(row:)` does).
    mutating func push(row: UnsafeBufferPointer<Float>) throws {
        if rowsIn % PixelMemoryMeter.rowsPerCheck == 0 { try meter.checkCancellation() }
        precondition(row.count >= source.width * channels)
        let count = source.width * channels
        if inputRow.isEmpty {
            inputRow = [Float](repeating: 0, count: count)
            if arithmetic == .fixedPoint { accumulator = [Float](repeating: 0, count: target.width * channels) }
        }
        inputRow.withUnsafeMutableBufferPointer { floats in
            floats.baseAddress!.update(from: row.baseAddress!, count: count)
        }
        if arithmetic == .fixedPoint {
            try consumeFixedFloatRow()
            return
        }
        try consumeInputRow()
    }

    /// Fixed point, an 8-bit row: expanded to int16, then the horizontal kernel into the ring.
    private mutating func consumeFixedRow(_ row: UnsafePointer<UInt8>) throws {
        guard rowsIn < source.height, let weights = fixedHorizontal else { return }
        let samplesPerPixel = channels == 3 ? 4 : channels
        if expandedRow.isEmpty {
            expandedRow = [Int16](
                repeating: 0, count: (source.width + Int(SP_RESAMPLE_ROW_PADDING)) * samplesPerPixel)
        }
        let slot = rowsIn % ringRows
        let ringStride = self.ringStride, channels = self.channels, width = source.width
        expandedRow.withUnsafeMutableBufferPointer { expanded in
            sp_resample_expand_row(row, Int32(width), Int32(channels), expanded.baseAddress!)
            fixedRing.withUnsafeMutableBufferPointer { ringBuffer in
                weights.horizontal(
                    UnsafePointer(expanded.baseAddress!), channels: channels,
                    into: ringBuffer.baseAddress! + slot * ringStride)
            }
        }
        rowsIn += 1
        try emitReadyRows()
    }

    /// Fixed point, a Float row (16-bit sources): the horizontal pass in Float, its sums rounded to the ring's
    /// fraction bits.
    private mutating func consumeFixedFloatRow() throws {
        guard rowsIn < source.height else { return }
        let slot = rowsIn % ringRows
        let rowLength = target.width * channels
        let ringStride = self.ringStride, channels = self.channels, horizontal = self.horizontal
        inputRow.withUnsafeBufferPointer { input in
            accumulator.withUnsafeMutableBufferPointer { sums in
                horizontal.apply(input: input.baseAddress!, output: sums.baseAddress!, channels: channels)
                fixedRing.withUnsafeMutableBufferPointer { ringBuffer in
                    let out = ringBuffer.baseAddress! + slot * ringStride
                    let scale = Float(1 << SP_RESAMPLE_RING_BITS)
                    for i in 0..<rowLength {
                        out[i] = Int16(min(max((sums[i] * scale).rounded(), -32768), 32767))
                    }
                }
            }
        }
        rowsIn += 1
        try emitReadyRows()
    }

    /// RGBA fixed point, an 8-bit row: premultiplied into pairs, then the horizontal kernel into the Float ring.
    private mutating func consumeRGBARow(_ row: UnsafePointer<UInt8>) throws {
        guard rowsIn < source.height, let weights = rgbaHorizontal else { return }
        if expandedPairs.isEmpty { expandedPairs = [Int16](repeating: 0, count: source.width * 8) }
        let slot = rowsIn % ringRows
        let rowLength = target.width * 4, width = source.width, outputs = 0..<target.width
        expandedPairs.withUnsafeMutableBufferPointer { pairs in
            sp_resample_expand_rgba(row, Int32(width), pairs.baseAddress!)
            ring.withUnsafeMutableBufferPointer { ringBuffer in
                weights.horizontal(
                    UnsafePointer(pairs.baseAddress!), origin: 0, outputs: outputs,
                    into: ringBuffer.baseAddress! + slot * rowLength)
            }
        }
        rowsIn += 1
        try emitReadyRows()
    }

    private mutating func emitReadyRows() throws {
        while rowsOut < target.height && vertical.end(rowsOut) <= rowsIn {
            switch arithmetic {
            case .fixedPoint: emitFixedOutputRow()
            case .fixedPointRows:
                let y = rowsOut, rowLength = target.width * 4, offset = outputOffset(of: y)
                let ringRows = self.ringRows, vertical = self.vertical
                ring.withUnsafeBufferPointer { ringBuffer in
                    output.withUnsafeMutableBufferPointer { out in
                        ResampleKernels.rgbaOutputRow(
                            y, ring: ringBuffer.baseAddress!, ringRows: ringRows, rowLength: rowLength,
                            vertical: vertical, into: out.baseAddress! + offset)
                    }
                }
                rowsOut += 1
            case .float: emitOutputRow()
            }
            if let rowSink { try output.withUnsafeBufferPointer { try rowSink($0) } }
        }
    }

    /// Where output row `y` is written in `output`: its place in the bitmap, or with a row sink the one row.
    @inline(__always)
    private func outputOffset(of y: Int) -> Int { rowSink == nil ? y * target.width * channels : 0 }

    private mutating func emitFixedOutputRow() {
        guard let weights = fixedVertical else { return }
        let y = rowsOut
        let rowLength = target.width * channels, offset = outputOffset(of: y)
        let start = vertical.start(y), taps = vertical.count(y)
        let ringRows = self.ringRows, ringStride = self.ringStride
        fixedRing.withUnsafeBufferPointer { ringBuffer in
            output.withUnsafeMutableBufferPointer { out in
                withUnsafeTemporaryAllocation(of: UnsafePointer<Int16>?.self, capacity: taps) { rows in
                    for t in 0..<taps {
                        rows[t] = ringBuffer.baseAddress! + ((start + t) % ringRows) * ringStride
                    }
                    weights.withWeights(of: y) { w in
                        sp_resample_vertical(
                            rows.baseAddress!, w, Int32(taps), Int32(rowLength), out.baseAddress! + offset)
                    }
                }
            }
        }
        rowsOut += 1
    }

    private mutating func consumeInputRow() throws {
        guard rowsIn < source.height else { return }
        let slot = rowsIn % ringRows
        let rowLength = target.width * channels
        let channels = self.channels
        let horizontal = self.horizontal
        let pixels = source.width
        let hasAlpha = layout.hasAlpha
        inputRow.withUnsafeMutableBufferPointer { input in
            if hasAlpha { ResampleKernels.premultiply(input.baseAddress!, pixels: pixels, channels: channels) }
            ring.withUnsafeMutableBufferPointer { ringBuffer in
                let out = ringBuffer.baseAddress! + slot * rowLength
                horizontal.apply(input: UnsafePointer(input.baseAddress!), output: out, channels: channels)
            }
        }
        rowsIn += 1
        try emitReadyRows()
    }

    // The per-row functions here (and `FilterWeights.apply`) nest their own `withUnsafe…` closures rather
    // than use `withUnsafeBufferPointers`: with it, a 12 MP JPEG to 1080p ran 0.7 % more instructions
    // (callgrind: 1 086.6 M against 1 078.8 M), most in `FilterWeights.apply` once it became a closure.
    private mutating func emitOutputRow() {
        let y = rowsOut
        let rowLength = target.width * channels, offset = outputOffset(of: y)
        let start = vertical.start(y), taps = vertical.count(y)
        let ringRows = self.ringRows
        let vertical = self.vertical
        let channels = self.channels
        let hasAlpha = layout.hasAlpha
        ring.withUnsafeBufferPointer { ringBuffer in
            accumulator.withUnsafeMutableBufferPointer { acc in
                output.withUnsafeMutableBufferPointer { out in
                    vertical.withWeights(of: y) { weights in
                        withUnsafeTemporaryAllocation(of: UnsafePointer<Float>.self, capacity: taps) { rows in
                            for t in 0..<taps {
                                rows[t] = ringBuffer.baseAddress! + ((start + t) % ringRows) * rowLength
                            }
                            ResampleKernels.verticalSum(
                                rows: UnsafePointer(rows.baseAddress!), weights: weights, taps: taps,
                                length: rowLength, into: acc.baseAddress!)
                        }
                    }
                    ResampleKernels.store(
                        UnsafePointer(acc.baseAddress!), count: rowLength, channels: channels,
                        hasAlpha: hasAlpha, into: out.baseAddress! + offset)
                }
            }
        }
        rowsOut += 1
    }

    /// Gives the resampler's bytes back to the meter when it will not be finished (its caller gave up on
    /// the rows, e.g. the grid route falling back to libheif). `finish` afterwards throws `incomplete` or
    /// returns as usual without releasing twice.
    mutating func discard() {
        if counted { meter.release(countedBytes) }
        counted = false
    }

    mutating func finish() throws -> Bitmap {
        precondition(rowSink == nil, "a resampler with a row sink finishes with finishRows")
        defer { discard() }
        guard rowsIn == source.height, rowsOut == target.height else {
            throw ResamplerError.incomplete(rowsIn: rowsIn, expected: source.height)
        }
        return Bitmap(size: target, layout: layout, pixels: output)
    }

    /// With a row sink: checks that every row went in and every output row went to the sink.
    mutating func finishRows() throws {
        precondition(rowSink != nil, "a resampler without a row sink finishes with finish")
        defer { discard() }
        guard rowsIn == source.height, rowsOut == target.height else {
            throw ResamplerError.incomplete(rowsIn: rowsIn, expected: source.height)
        }
    }
}

/// The row kernels the resamplers share (the streaming `LanczosResampler` and the GIF picture resampler), so
/// the same input always gives the same bits whichever of them computes it. Raw pointers, no bounds checks;
/// each sum runs over the taps in order from 0, as the scalar code always did, so vectorised code gives
/// exactly the scalar result.
enum ResampleKernels {
    /// RGBA fixed point: output row `y` from the Float ring of horizontally filtered rows (input row `r` at
    /// `ring + (r % ringRows) * rowLength`, the same positions for every row): Float sums down the columns,
    /// divided by alpha, to `rowLength` bytes at `out` (`sp_resample_vertical_rgba`).
    static func rgbaOutputRow(
        _ y: Int, ring: UnsafePointer<Float>, ringRows: Int, rowLength: Int, vertical: FilterWeights,
        into out: UnsafeMutablePointer<UInt8>
    ) {
        let start = vertical.start(y), taps = vertical.count(y)
        withUnsafeTemporaryAllocation(of: UnsafePointer<Float>?.self, capacity: taps) { rows in
            for t in 0..<taps { rows[t] = ring + ((start + t) % ringRows) * rowLength }
            vertical.withWeights(of: y) { weights in
                sp_resample_vertical_rgba(rows.baseAddress!, weights, Int32(taps), Int32(rowLength / 4), out)
            }
        }
    }

    /// 8-bit samples to floats.
    @inline(__always)
    static func load(_ row: UnsafePointer<UInt8>, count: Int, into out: UnsafeMutablePointer<Float>) {
        for i in 0..<count { out[i] = Float(row[i]) }
    }

    /// Multiplies the colour samples of each pixel by its alpha / 255 (alpha is the last channel).
    static func premultiply(_ row: UnsafeMutablePointer<Float>, pixels: Int, channels: Int) {
        if channels == 4 {
            var p = row
            for _ in 0..<pixels {
                let alpha = p[3] / 255
                p[0] *= alpha; p[1] *= alpha; p[2] *= alpha
                p += 4
            }
            return
        }
        for p in 0..<pixels {
            let base = p * channels
            let alpha = row[base + channels - 1] / 255
            for c in 0..<(channels - 1) { row[base + c] *= alpha }
        }
    }

    /// `out[i] = Σ weights[t] × rows[t][i]` over the taps in order, for `length` samples. Tap by tap over the
    /// whole row (the sums stay in L1): the optimiser vectorises the inner loop, and debug builds stay fast,
    /// which hand-written SIMD types are not (about 8× slower than scalar code without optimisation).
    static func verticalSum(
        rows: UnsafePointer<UnsafePointer<Float>>, weights: UnsafePointer<Float>, taps: Int,
        length: Int, into out: UnsafeMutablePointer<Float>
    ) {
        out.update(repeating: 0, count: length)
        for t in 0..<taps {
            let w = weights[t], row = rows[t]
            for i in 0..<length { out[i] += w * row[i] }
        }
    }

    /// Filtered samples to bytes: with alpha, colours are divided by it again (un-premultiplied).
    static func store(
        _ acc: UnsafePointer<Float>, count: Int, channels: Int, hasAlpha: Bool,
        into out: UnsafeMutablePointer<UInt8>
    ) {
        guard hasAlpha else {
            for i in 0..<count { out[i] = clampToByte(acc[i]) }
            return
        }
        if channels == 4 {
            var p = 0
            while p < count {
                let alpha = min(max(acc[p + 3], 0), 255)
                let scale: Float = alpha > 0.001 ? 255 / alpha : 0
                out[p] = clampToByte(acc[p] * scale)
                out[p + 1] = clampToByte(acc[p + 1] * scale)
                out[p + 2] = clampToByte(acc[p + 2] * scale)
                out[p + 3] = clampToByte(alpha)
                p += 4
            }
            return
        }
        var p = 0
        while p < count {
            let alpha = min(max(acc[p + channels - 1], 0), 255)
            let scale: Float = alpha > 0.001 ? 255 / alpha : 0
            for c in 0..<(channels - 1) { out[p + c] = clampToByte(acc[p + c] * scale) }
            out[p + channels - 1] = clampToByte(alpha)
            p += channels
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
