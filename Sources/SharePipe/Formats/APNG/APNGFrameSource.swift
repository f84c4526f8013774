import CSharePipe

/// Reads an APNG frame by frame into composited canvases, with the libpng we have (no APNG patch).
///
/// One pass over the file: for each frame the chunk walker gathers its compressed data (the IDAT chunks
/// for a default image that is frame 0, else the frame's fdAT chunks without their sequence numbers) and
/// wraps it as a PNG of its own (the file's IHDR with the frame's size, the shared PLTE and tRNS, the data
/// as IDAT, CRCs computed afresh), which libpng decodes row by row. Rows are converted to RGBA8 and
/// composited onto the canvas with the frame's blend operation; the previous frame's dispose operation is
/// applied first, as the APNG spec and browsers do.
///
/// Memory: the RGBA8 canvas, the frame's rectangle saved for a "restore previous" dispose, one decoded
/// row (an interlaced frame: the whole frame, as libpng's passes need it), all counted in the meter; and
/// the frame's compressed data, which is never more than the file.
struct APNGFrameSource: AnimationFrameSource {
    let canvasSize: PixelSize
    var frameCount: Int { animation.frames.count }
    var loopCount: Int? { animation.loopCount }

    private let animation: APNGAnimation
    private let walker: PNGChunkWalker
    private let ihdr: [UInt8]
    /// PLTE and tRNS, which every frame's stream repeats; collected as the walk passes them.
    private var paletteChunks: [PNGChunk] = []
    /// A chunk header read while looking for a frame's end, to be handled first by the next frame.
    private var lookahead: PNGChunkWalker.Header?
    private var framesStarted = 0
    private var nextIndex = 0
    private let limits: ImageLimits
    private let meter: PixelMemoryMeter
    private var canvas: [UInt8]
    private var saved: [UInt8] = []
    private var countedBytes = 0

    /// Opens `source`, whose probe found `animation`, and checks the canvas against the limits before
    /// allocating it.
    init(_ source: ImageSource, animation: APNGAnimation, limits: ImageLimits, meter: PixelMemoryMeter) throws {
        walker = try PNGChunkWalker(source)
        let first = try walker.nextChunk()
        guard first.type == .IHDR else {
            throw SharePipeError.corrupt(
                file: walker.name, phase: .header,
                reason: "first chunk is \(first.type), not IHDR")
        }
        let (data, crcMatches) = try walker.payload(of: first)
        guard crcMatches else {
            throw SharePipeError.corrupt(file: walker.name, phase: .header, reason: "IHDR: CRC error")
        }
        let header = try PNGHeader(ihdr: data, file: walker.name)
        try limits.check(width: header.width, height: header.height, file: walker.name)
        ihdr = data
        canvasSize = PixelSize(width: header.width, height: header.height)
        self.animation = animation
        self.limits = limits
        self.meter = meter
        canvas = [UInt8](repeating: 0, count: canvasSize.area * 4)
        countedBytes = canvas.count
        meter.allocate(countedBytes)
    }

    /// The PNG descriptor's animation entry: the frames of a PNG whose probe found a valid animation,
    /// counted in the job's meter; `meteredBytes` is what it holds at most, which `MemoryEstimate` prices.
    static func open(_ source: ImageSource, info: ImageInfo, limits: ImageLimits, meter: PixelMemoryMeter) throws
        -> any AnimationFrameSource
    {
        guard let animation = info.pngAnimation else {
            throw SharePipeError.internalError(file: source.displayName, reason: "not an animated PNG")
        }
        return try APNGFrameSource(source, animation: animation, limits: limits, meter: meter)
    }

    /// The most pixel memory a source on `info` counts: the canvas, the rectangle a "previous" dispose
    /// saves (up to a canvas), a frame's decoded rows (a whole frame when interlaced) and one RGBA row.
    static func meteredBytes(_ info: ImageInfo) -> Int {
        let canvas = info.size.area * 4
        let rowBytes = info.size.width * 4 * (info.bitDepth == 16 ? 2 : 1)
        return 2 * canvas + (info.progressive ? info.size.height * rowBytes : rowBytes) + info.size.width * 4
    }

    /// Uncounts the canvas; call when done with the source (it also happens after the last frame).
    mutating func close() {
        meter.release(countedBytes)
        countedBytes = 0
        canvas = []
        saved = []
    }

    mutating func nextFrame() throws -> AnimationFrame? {
        guard nextIndex < animation.frames.count, countedBytes > 0 else {
            close()
            return nil
        }
        let index = nextIndex
        let control = animation.frames[index]
        if index > 0 { dispose(after: animation.frames[index - 1], first: index == 1) }
        if control.dispose == .previous && index > 0 { save(control) }
        let stream = try frameStream(index)
        try draw(stream, control: control)
        nextIndex += 1
        // Only the previous frame's disposed rectangle and this frame's rectangle can have changed.
        var changed: GIFRect?
        if index > 0 {
            let previous = animation.frames[index - 1]
            changed = Self.rect(control)
            if previous.dispose != .none { changed = changed!.union(Self.rect(previous)) }
        }
        return AnimationFrame(
            canvas: Bitmap(size: canvasSize, layout: .rgba, pixels: canvas),
            durationMilliseconds: control.durationMilliseconds, changed: changed)
    }

    private static func rect(_ control: APNGFrameControl) -> GIFRect {
        GIFRect(left: control.x, top: control.y, width: control.width, height: control.height)
    }

    // MARK: - Dispose and blend

    /// Leaves the canvas as the previous frame's dispose operation says (a "previous" on the first frame
    /// means "background", as the spec requires).
    private mutating func dispose(after control: APNGFrameControl, first: Bool) {
        let width = canvasSize.width
        switch control.dispose {
        case .none:
            return
        case .previous where !first:
            for row in 0..<control.height {
                let start = ((control.y + row) * width + control.x) * 4
                canvas.replaceSubrange(
                    start..<start + control.width * 4,
                    with: saved[row * control.width * 4..<(row + 1) * control.width * 4])
            }
        case .background, .previous:
            for row in 0..<control.height {
                let start = ((control.y + row) * width + control.x) * 4
                canvas.withUnsafeMutableBufferPointer { pixels in
                    for i in start..<start + control.width * 4 { pixels[i] = 0 }
                }
            }
        }
    }

    /// Keeps the rectangle a "restore previous" frame will cover.
    private mutating func save(_ control: APNGFrameControl) {
        let bytes = control.width * control.height * 4
        if saved.count != bytes {
            meter.release(saved.count)
            countedBytes -= saved.count
            saved = [UInt8](repeating: 0, count: bytes)
            meter.allocate(bytes)
            countedBytes += bytes
        }
        let width = canvasSize.width
        for row in 0..<control.height {
            let start = ((control.y + row) * width + control.x) * 4
            saved.replaceSubrange(
                row * control.width * 4..<(row + 1) * control.width * 4,
                with: canvas[start..<start + control.width * 4])
        }
    }

    /// Composites one RGBA8 row of the frame onto canvas row `y` from column `x`.
    static func blend(
        _ source: UnsafeBufferPointer<UInt8>, into canvas: UnsafeMutableBufferPointer<UInt8>,
        at start: Int, pixels: Int, op: APNGFrameControl.Blend
    ) {
        if op == .source {
            for i in 0..<pixels * 4 { canvas[start + i] = source[i] }
            return
        }
        for p in 0..<pixels {
            let s = p * 4, d = start + p * 4
            let sa = Int(source[s + 3])
            if sa == 255 {
                for c in 0..<4 { canvas[d + c] = source[s + c] }
            } else if sa > 0 {
                // Porter-Duff over in straight alpha: out = src·αs + dst·αd·(1 − αs), divided by αout.
                let da = Int(canvas[d + 3])
                let dw = da * (255 - sa)  // destination weight × 255
                let outA255 = sa * 255 + dw  // αout × 255²
                for c in 0..<3 {
                    let value = (Int(source[s + c]) * sa * 255 + Int(canvas[d + c]) * dw + outA255 / 2) / outA255
                    canvas[d + c] = UInt8(value)
                }
                canvas[d + 3] = UInt8((outA255 + 127) / 255)
            }
        }
    }

    // MARK: - Decoding one frame

    /// Decodes the frame's stream with libpng and composites its rows into the canvas.
    private mutating func draw(_ stream: [UInt8], control: APNGFrameControl) throws {
        let file = walker.name
        let frameLimits = limits
        let canvasWidth = canvasSize.width
        let meter = self.meter
        try PNGReader.with(.bytes(stream), limits: frameLimits) { reader in
            let header = try reader.readInfo()
            let format = PNGRowFormat(header: header)
            let output = try reader.start()
            guard Int(output.channels) == format.channels, Int(output.bit_depth) == format.bitDepth,
                output.row_bytes == format.rowBytes(width: control.width)
            else {
                throw SharePipeError.internalError(file: file, reason: "libpng produced an unexpected row layout")
            }
            let rowBytes = output.row_bytes
            // An interlaced frame's passes fill the whole frame before any row is complete.
            let bufferedRows = output.passes > 1 ? control.height : 1
            var rows = [UInt8](repeating: 0, count: rowBytes * bufferedRows)
            var rgba = [UInt8](repeating: 0, count: control.width * 4)
            try meter.holding(rows.count + rgba.count) {
                try rows.withUnsafeMutableBufferPointer { rowBuffer in
                    for _ in 0..<Int(output.passes) - 1 {
                        for y in 0..<control.height { try reader.readRow(into: rowBuffer.baseAddress! + y * rowBytes) }
                    }
                    for y in 0..<control.height {
                        let row = rowBuffer.baseAddress! + (bufferedRows == 1 ? 0 : y * rowBytes)
                        try reader.readRow(into: row)
                        rgba.withUnsafeMutableBufferPointer { out in
                            APNGFrameSource.expand(
                                UnsafePointer(row), channels: format.channels,
                                sixteenBit: format.bitDepth == 16, pixels: control.width, into: out)
                        }
                        let start = ((control.y + y) * canvasWidth + control.x) * 4
                        rgba.withUnsafeBufferPointer { source in
                            canvas.withUnsafeMutableBufferPointer { target in
                                APNGFrameSource.blend(
                                    source, into: target, at: start, pixels: control.width, op: control.blend)
                            }
                        }
                    }
                }
            }
            try reader.finish()
        }
    }

    /// One decoded row (gray, gray+alpha, RGB or RGBA; 8 or 16 bits big-endian) as RGBA8.
    static func expand(
        _ row: UnsafePointer<UInt8>, channels: Int, sixteenBit: Bool, pixels: Int,
        into out: UnsafeMutableBufferPointer<UInt8>
    ) {
        @inline(__always) func sample(_ index: Int) -> UInt8 {
            guard sixteenBit else { return row[index] }
            let value = Int(row[2 * index]) << 8 | Int(row[2 * index + 1])
            return UInt8((value * 255 + 32767) / 65535)
        }
        for p in 0..<pixels {
            let base = p * channels
            switch channels {
            case 1, 2:
                let gray = sample(base)
                out[p * 4] = gray; out[p * 4 + 1] = gray; out[p * 4 + 2] = gray
                out[p * 4 + 3] = channels == 2 ? sample(base + 1) : 255
            default:
                out[p * 4] = sample(base); out[p * 4 + 1] = sample(base + 1); out[p * 4 + 2] = sample(base + 2)
                out[p * 4 + 3] = channels == 4 ? sample(base + 3) : 255
            }
        }
    }

    /// The frame's data as a PNG of its own: signature, IHDR with the frame's size, PLTE/tRNS, IDAT, IEND.
    private mutating func frameStream(_ index: Int) throws -> [UInt8] {
        let file = walker.name
        let control = animation.frames[index]
        let usesDefaultImage = index == 0 && animation.defaultImageIsFirstFrame
        var data: [PNGChunk] = []
        // Walk to the frame's start: its fcTL (the default image's IDAT for frame 0 when it is part of the
        // animation), then gather its data chunks up to the next fcTL or IEND.
        var inFrame = false
        while true {
            let chunk: PNGChunkWalker.Header
            if let pending = lookahead { chunk = pending; lookahead = nil } else { chunk = try walker.nextChunk() }
            switch chunk.type {
            case .PLTE, .tRNS:
                let (payload, crcMatches) = try walker.payload(of: chunk)
                guard crcMatches else {
                    throw SharePipeError.corrupt(
                        file: file, phase: .header,
                        reason: "\(chunk.type): CRC error")
                }
                paletteChunks.append(PNGChunk(type: chunk.type, data: payload))
            case .fcTL:
                if inFrame { lookahead = chunk; return stream(for: control, data: data) }
                // Frame i starts at the (i + 1)-th fcTL, whether or not the default image is frame 0.
                framesStarted += 1
                if !usesDefaultImage && framesStarted == index + 1 { inFrame = true }
            case .IDAT:
                guard usesDefaultImage else { continue }
                let (payload, crcMatches) = try walker.payload(of: chunk)
                guard crcMatches else {
                    throw SharePipeError.corrupt(file: file, phase: .decode, reason: "IDAT: CRC error")
                }
                data.append(PNGChunk(type: .IDAT, data: payload))
                inFrame = true
            case .fdAT:
                guard inFrame && !usesDefaultImage else { continue }
                let (payload, crcMatches) = try walker.payload(of: chunk)
                guard crcMatches, payload.count >= 4 else {
                    throw SharePipeError.corrupt(
                        file: file, phase: .decode, reason: "frame \(index): damaged fdAT chunk")
                }
                // A zero-length fdAT (sequence number only) adds nothing.
                if payload.count > 4 { data.append(PNGChunk(type: .IDAT, data: Array(payload.dropFirst(4)))) }
            case .IEND:
                guard inFrame else {
                    throw SharePipeError.unreadable(
                        file: file,
                        reason: "frame \(index) is missing (the file changed since it was read?)")
                }
                lookahead = chunk
                return stream(for: control, data: data)
            default:
                if usesDefaultImage && inFrame { lookahead = chunk; return stream(for: control, data: data) }
            }
        }
    }

    private func stream(for control: APNGFrameControl, data: [PNGChunk]) -> [UInt8] {
        var header = ihdr
        for (offset, value) in [(0, control.width), (4, control.height)] {
            header[offset] = UInt8(value >> 24); header[offset + 1] = UInt8((value >> 16) & 0xFF)
            header[offset + 2] = UInt8((value >> 8) & 0xFF); header[offset + 3] = UInt8(value & 0xFF)
        }
        var out = PNGChunkWalker.signature + PNGChunk(type: .IHDR, data: header).serialized
        for chunk in paletteChunks { out += chunk.serialized }
        for chunk in data { out += chunk.serialized }
        return out + PNGChunk(type: .IEND, data: []).serialized
    }
}
