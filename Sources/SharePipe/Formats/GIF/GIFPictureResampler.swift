import CSharePipe

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Resamples an animation's canvas (RGBA, straight alpha) to the output size, picture after picture, keeping
/// the last output and recomputing only the output pixels that read changed canvas pixels. At the canvas's
/// own size the pictures are copies of the canvas, made the same way: only changed areas are copied.
///
/// An output pixel reads the canvas pixels under its horizontal and vertical filter taps (`FilterWeights`),
/// so when only the canvas pixels in a rectangle changed, only the outputs whose taps reach into it can
/// change: `outputArea(reading:)`. Those are recomputed with the same weights and the same row kernels as
/// `LanczosResampler` (`FixedRGBAWeights`, `ResampleKernels.rgbaOutputRow`: fixed point along the rows, Float
/// down the columns), so every picture is, byte for byte, what resampling the whole canvas gives. The output starts transparent, which is what the transparent starting canvas resamples to.
///
/// Two output pictures take turns: `output`, the current one, which is handed on (to the encoder, sharing the
/// array), and a spare one update behind, into which the next update copies the area the last one changed
/// and then resamples its own area. So an update touches only the changed areas, never copies a whole
/// picture, and the encoder's two pictures (the one being written and the one after it) are these two
/// arrays, counted here once.
///
/// Memory, all counted in the meter: less than `LanczosResampler.memoryEstimate` (a Float ring of horizontally
/// filtered rows as tall as the vertical filter's taps, one canvas row premultiplied in pairs, one output
/// picture) plus the spare picture; without resizing, only the two pictures.
final class GIFPictureResampler {
    let source: PixelSize
    let target: PixelSize
    /// Same size: pictures are copies of the canvas.
    private let copies: Bool
    private let horizontal: FilterWeights
    private let rgbaHorizontal: FixedRGBAWeights?
    private let vertical: FilterWeights
    private let ringRows: Int
    private var ring: [Float]
    /// One canvas row's pixels premultiplied in pairs (`sp_resample_expand_rgba`).
    private var expandedPairs: [Int16]
    /// The current picture at the output size: RGBA, straight alpha.
    private(set) var output: [UInt8]
    /// The picture before `output` (empty until the first update), and where it differs from `output`.
    private var spare: [UInt8] = []
    private var spareBehind = GIFRect.empty
    private let meter: PixelMemoryMeter
    private let countedBytes: Int

    /// Which output pixels read which canvas pixels.
    let reach: ResampleReach

    init(from source: PixelSize, to target: PixelSize, meter: PixelMemoryMeter) {
        precondition(target.width >= 1 && target.height >= 1 && source.width >= 1 && source.height >= 1)
        self.source = source
        self.target = target
        reach = ResampleReach(from: source, to: target)
        copies = reach.copies
        horizontal = reach.horizontal
        vertical = reach.vertical
        ringRows = vertical.maxTaps
        rgbaHorizontal = copies ? nil : horizontal.fixedPointRGBA()
        ring = copies ? [] : [Float](repeating: 0, count: ringRows * target.width * 4)
        expandedPairs = copies ? [] : [Int16](repeating: 0, count: source.width * 8)
        output = [UInt8](repeating: 0, count: target.area * 4)
        self.meter = meter
        countedBytes =
            ring.count * MemoryLayout<Float>.stride + expandedPairs.count * MemoryLayout<Int16>.stride + output.count
        meter.allocate(countedBytes)
    }

    deinit { meter.release(countedBytes + spare.count) }

    /// The output pixels that read any canvas pixel in `rect` (empty when none do).
    func outputArea(reading rect: GIFRect) -> GIFRect { reach.outputArea(reading: rect) }

    /// Brings `output` up to date with `canvas` (`source.area * 4` bytes) when only the canvas pixels in
    /// `changed` differ from the canvas of the last update. Returns the output rectangle recomputed: no pixel
    /// outside it changed.
    @discardableResult
    func update(canvas: UnsafeBufferPointer<UInt8>, changed: GIFRect) -> GIFRect {
        precondition(canvas.count >= source.area * 4, "canvas does not match the source size")
        let area = outputArea(reading: changed)
        guard !area.isEmpty else { return area }
        var next: [UInt8] = []
        swap(&next, &spare)
        if next.isEmpty {
            next = output.withUnsafeBufferPointer { Array($0) }
            meter.allocate(next.count)
        } else {
            // Bring the spare picture up to `output`: only the last update's area differs.
            let width = target.width, behind = spareBehind
            output.withUnsafeBufferPointer { current in
                next.withUnsafeMutableBufferPointer { spare in
                    for y in behind.top..<behind.bottom {
                        let offset = (y * width + behind.left) * 4
                        (spare.baseAddress! + offset).update(
                            from: current.baseAddress! + offset, count: behind.width * 4)
                    }
                }
            }
        }
        if copies {
            let width = target.width
            next.withUnsafeMutableBufferPointer { picture in
                for y in area.top..<area.bottom {
                    let offset = (y * width + area.left) * 4
                    (picture.baseAddress! + offset).update(from: canvas.baseAddress! + offset, count: area.width * 4)
                }
            }
        } else if let rgbaHorizontal {
            resample(canvas.baseAddress!, area: area, weights: rgbaHorizontal, into: &next)
        }
        swap(&next, &output)
        spare = next
        spareBehind = area
        return area
    }

    /// Whether the update that returned `area` left every pixel of `output` as it was: true when `area` is empty
    /// or `output` equals the picture before it inside `area` (outside it nothing changed).
    func updateKeptPicture(_ area: GIFRect) -> Bool {
        guard !area.isEmpty else { return true }
        guard spare.count == output.count else { return false }
        let width = target.width
        return output.withUnsafeBytes { current in
            spare.withUnsafeBytes { before in
                (area.top..<area.bottom).allSatisfy { y in
                    let offset = (y * width + area.left) * 4
                    return memcmp(current.baseAddress! + offset, before.baseAddress! + offset, area.width * 4) == 0
                }
            }
        }
    }

    /// Recomputes the outputs in `area` from the canvas: the canvas rows and columns they read go through
    /// the horizontal filter into the ring (only the area's output columns), and each output row is made as
    /// soon as the ring holds its window, as in `LanczosResampler`.
    private func resample(
        _ canvas: UnsafePointer<UInt8>, area: GIFRect, weights: FixedRGBAWeights, into picture: inout [UInt8]
    ) {
        let columns = area.left..<area.right, rows = area.top..<area.bottom
        let inputColumns = horizontal.inputs(readBy: columns)
        let inputRows = vertical.inputs(readBy: rows)
        let rowLength = columns.count * 4
        let ringRows = self.ringRows, vertical = self.vertical
        let sourceWidth = source.width, targetWidth = target.width
        ring.withUnsafeMutableBufferPointer { ringBuffer in
            expandedPairs.withUnsafeMutableBufferPointer { pairsBuffer in
                picture.withUnsafeMutableBufferPointer { outBuffer in
                    let ring = ringBuffer.baseAddress!, pairs = pairsBuffer.baseAddress!, out = outBuffer.baseAddress!
                    var nextRow = rows.lowerBound
                    for y in inputRows {
                        sp_resample_expand_rgba(
                            canvas + (y * sourceWidth + inputColumns.lowerBound) * 4, Int32(inputColumns.count),
                            pairs)
                        weights.horizontal(
                            UnsafePointer(pairs), origin: inputColumns.lowerBound, outputs: columns,
                            into: ring + (y % ringRows) * rowLength)
                        while nextRow < rows.upperBound && vertical.end(nextRow) <= y + 1 {
                            ResampleKernels.rgbaOutputRow(
                                nextRow, ring: ring, ringRows: ringRows, rowLength: rowLength, vertical: vertical,
                                into: out + (nextRow * targetWidth + columns.lowerBound) * 4)
                            nextRow += 1
                        }
                    }
                    assert(nextRow == rows.upperBound, "every output row of the area is made")
                }
            }
        }
    }
}

/// Which output pixels of a Lanczos-3 resize (`FilterWeights` on each axis; a copy at the same size) read
/// which input pixels: what `GIFPictureResampler` recomputes, also known without its buffers.
struct ResampleReach {
    let source: PixelSize
    /// Same size: outputs are copies of the inputs.
    let copies: Bool
    let horizontal: FilterWeights
    let vertical: FilterWeights

    init(from source: PixelSize, to target: PixelSize) {
        self.source = source
        copies = source == target
        horizontal = FilterWeights(inputSize: copies ? 1 : source.width, outputSize: copies ? 1 : target.width)
        vertical = FilterWeights(inputSize: copies ? 1 : source.height, outputSize: copies ? 1 : target.height)
    }

    /// The output pixels that read any input pixel in `rect` (empty when none do).
    func outputArea(reading rect: GIFRect) -> GIFRect {
        let visible = rect.clipped(to: source)
        guard !visible.isEmpty else { return .empty }
        if copies { return visible }
        let columns = horizontal.outputs(reading: visible.left..<visible.right)
        let rows = vertical.outputs(reading: visible.top..<visible.bottom)
        guard !columns.isEmpty, !rows.isEmpty else { return .empty }
        return GIFRect(left: columns.lowerBound, top: rows.lowerBound, width: columns.count, height: rows.count)
    }
}
