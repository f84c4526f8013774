import CSharePipe

/// Reads PNGs: a Swift walk over the chunks for the header and metadata (no inflation), then libpng rows
/// streamed into the resampler, for every colour type and depth.
///
/// Rows reach the resampler as libpng expands them: palette → RGB(A), gray 1/2/4 → 8, tRNS → alpha.
/// 16-bit samples are pushed as Float on the 0...255 scale with their fraction (v / 257), so precision
/// survives resampling and only the output is 8-bit.
///
/// Memory: a non-interlaced image needs one row. An Adam7 image cannot be streamed in order: its last
/// pass holds the odd rows, so every even row must wait for it. The even rows — half the decoded image,
/// ⌈height / 2⌉ × rowBytes (6000×4000 RGBA8: 48 MB; 16-bit: 96 MB) — are kept in one buffer filled by
/// passes 1–6 (libpng's "sparkle" mode writes each pass's pixels in place); pass 7's odd rows are pushed as
/// they arrive, each after the even row above it. The buffer is counted in the `PixelMemoryMeter` and
/// refused, before libpng allocates anything, when it would exceed `ImageLimits.maxDecoderMemory`.
struct PNGDecoder: ImageDecoder {
    var format: ImageFormat { .png }
    static let tailWarning = "the image data goes on after the last row (not read; the image is re-encoded, not copied)"

    func probe(_ source: ImageSource, limits: ImageLimits) throws -> ImageInfo {
        let byteCount = try source.byteCount()
        let scan = try PNGScan.read(source, limits: limits)
        var metadata = scan.metadata
        if let position = scan.iccPosition {
            // libpng drops a profile it finds malformed (with a warning); then the file simply has none.
            let profile = try PNGReader.with(source, limits: limits, readICC: true) { reader in
                _ = try reader.readInfo()
                return reader.iccProfile()
            }
            if let profile { metadata.insert(.icc(profile), at: position) }
        }
        var storedOrientation: Int?
        for case .exif(let tiff) in metadata {
            storedOrientation = (try? ExifEditor(tiff: tiff))?.orientation
            break
        }
        let header = scan.header
        var info = ImageInfo(
            format: .png, size: PixelSize(width: header.width, height: header.height),
            colorModel: header.colorModel, bitDepth: header.bitDepth, progressive: header.interlaced,
            orientation: Orientation(exifValue: storedOrientation),
            storedOrientationValue: storedOrientation, frameCount: scan.animation?.frames.count ?? 1,
            hasAlpha: header.colorType == 4 || header.colorType == 6 || scan.hasTransparencyChunk,
            metadata: metadata, byteCount: byteCount)
        info.pngStructuralChunks = scan.structuralChunks
        info.pngAnimation = scan.animation
        info.probeWarnings = scan.warnings
        return info
    }

    func render(
        _ source: ImageSource, info: ImageInfo, target: PixelSize, limits: ImageLimits,
        meter: PixelMemoryMeter
    ) throws -> RenderedImage {
        // An APNG as a still is its first frame (which need not be the IDAT image).
        var rendered =
            try info.pngAnimation.map {
                try APNGStill.render(source, animation: $0, target: target, limits: limits, meter: meter)
            } ?? renderDefaultImage(source, target: target, limits: limits, meter: meter)
        rendered.warnings = info.probeWarnings + rendered.warnings
        return rendered
    }

    /// The IDAT image, rows streamed from libpng into the resampler.
    private func renderDefaultImage(
        _ source: ImageSource, target: PixelSize, limits: ImageLimits,
        meter: PixelMemoryMeter
    ) throws -> RenderedImage {
        try PNGReader.with(source, limits: limits) { reader in
            let header = try reader.readInfo()
            let stored = PixelSize(width: Int(header.width), height: Int(header.height))
            try limits.checkHeader(width: stored.width, height: stored.height, file: reader.file)
            let expected = PNGRowFormat(header: header)
            let interlaceBytes =
                header.interlaced != 0
                ? PNGRowFormat.evenRowCount(stored.height) * expected.rowBytes(width: stored.width) : 0
            if interlaceBytes > limits.maxDecoderMemory {
                throw SharePipeError.tooLarge(
                    file: reader.file,
                    exceeded: ExceededLimit(
                        .decoderMemory, found: interlaceBytes, limit: limits.maxDecoderMemory, size: stored,
                        detail: "de-interlacing this Adam7 PNG"))
            }
            let output = try reader.start()
            guard Int(output.channels) == expected.channels, Int(output.bit_depth) == expected.bitDepth,
                output.row_bytes == expected.rowBytes(width: stored.width),
                let layout = PixelLayout(rawValue: expected.channels)
            else {
                throw SharePipeError.internalError(
                    file: reader.file, reason: "libpng produced an unexpected row layout")
            }
            let outputTarget = PixelSize(
                width: min(target.width, stored.width), height: min(target.height, stored.height))
            var feeder = PNGRowFeeder(
                resampler: LanczosResampler(from: stored, to: outputTarget, layout: layout, meter: meter),
                samplesPerRow: stored.width * expected.channels, sixteenBit: expected.bitDepth == 16,
                meter: meter)
            defer { feeder.releaseBuffers() }
            if output.passes > 1 {
                try PNGRowFeeder.deinterlace(
                    reader: reader, height: stored.height, rowBytes: output.row_bytes,
                    passes: Int(output.passes), into: &feeder, meter: meter)
            } else {
                var row = [UInt8](repeating: 0, count: output.row_bytes)
                try meter.holding(row.count) {
                    for _ in 0..<stored.height {
                        try row.withUnsafeMutableBufferPointer { buffer in
                            try reader.readRow(into: buffer.baseAddress!)
                            try feeder.push(UnsafePointer(buffer.baseAddress!))
                        }
                    }
                }
            }
            try reader.finish()
            let bitmap: Bitmap
            do {
                bitmap = try feeder.resampler.finish()
            } catch {
                throw SharePipeError.corrupt(file: reader.file, phase: .decode, reason: "image data ended early")
            }
            let libpng = reader.warnings()
            var rendered = RenderedImage(
                bitmap: bitmap,
                warnings: libpng.count > 0 ? ["\(libpng.count) libpng warning(s), last: \(libpng.last)"] : [])
            if reader.imageDataGoesOn {
                // Bounded work (the rest is never inflated) and a clean copy: such image data is re-encoded, not copied.
                rendered.warnings.append(PNGDecoder.tailWarning)
                rendered.imageDataCopyable = false
            }
            return rendered
        }
    }
}

/// The rows libpng hands out for a header, predicted before `png_read_update_info` so that memory can be
/// checked first (and libpng's answer checked against it after).
struct PNGRowFormat: Equatable {
    var channels: Int
    var bitDepth: Int

    init(header: sp_png_header) {
        let alpha = header.has_trns != 0 ? 1 : 0
        switch header.color_type {
        case 0: channels = 1 + alpha
        case 4: channels = 2
        case 6: channels = 4
        default: channels = 3 + alpha  // RGB, and palette expanded to RGB
        }
        bitDepth = header.bit_depth == 16 ? 16 : 8
    }

    func rowBytes(width: Int) -> Int { width * channels * bitDepth / 8 }

    /// Rows 0, 2, 4, …: the ones Adam7 passes 1–6 fill and pass 7 does not.
    static func evenRowCount(_ height: Int) -> Int { (height + 1) / 2 }
}

/// Pushes decoded rows into the resampler, widening 16-bit big-endian samples to Float (0...255 with
/// fraction) on the way.
struct PNGRowFeeder {
    var resampler: LanczosResampler
    let samplesPerRow: Int
    let sixteenBit: Bool
    private var floats: [Float]
    private let meter: PixelMemoryMeter
    private var countedBytes: Int

    init(resampler: LanczosResampler, samplesPerRow: Int, sixteenBit: Bool, meter: PixelMemoryMeter) {
        self.resampler = resampler
        self.samplesPerRow = samplesPerRow
        self.sixteenBit = sixteenBit
        self.floats = [Float](repeating: 0, count: sixteenBit ? samplesPerRow : 0)
        self.meter = meter
        self.countedBytes = floats.count * MemoryLayout<Float>.stride
        meter.allocate(countedBytes)
    }

    mutating func releaseBuffers() {
        meter.release(countedBytes)
        countedBytes = 0
    }

    /// Pushes one full-width decoded row.
    mutating func push(_ row: UnsafePointer<UInt8>) throws {
        guard sixteenBit else {
            try resampler.push(row: UnsafeBufferPointer(start: row, count: samplesPerRow))
            return
        }
        let count = samplesPerRow
        floats.withUnsafeMutableBufferPointer { out in
            for i in 0..<count {
                let value = UInt16(row[2 * i]) << 8 | UInt16(row[2 * i + 1])
                out[i] = Float(value) * (1 / 257)
            }
        }
        try floats.withUnsafeBufferPointer { try resampler.push(row: $0) }
    }

    /// Reads an Adam7 image with libpng's interlace handling and pushes its rows in order. Passes 1–6 touch
    /// only even rows, which collect in one buffer of ⌈height / 2⌉ rows; pass 7 delivers the odd rows, and
    /// each is pushed right after the (by then complete) even row above it.
    static func deinterlace(
        reader: PNGReader, height: Int, rowBytes: Int, passes: Int,
        into feeder: inout PNGRowFeeder, meter: PixelMemoryMeter
    ) throws {
        var evenRows = [UInt8](repeating: 0, count: PNGRowFormat.evenRowCount(height) * rowBytes)
        var oddRow = [UInt8](repeating: 0, count: rowBytes)
        try meter.holding(evenRows.count + oddRow.count) {
            try evenRows.withUnsafeMutableBufferPointer { even in
                try oddRow.withUnsafeMutableBufferPointer { odd in
                    let evenBase = even.baseAddress!, oddBase = odd.baseAddress!
                    for pass in 0..<passes {
                        let isLastPass = pass == passes - 1
                        for y in 0..<height {
                            // Passes 1–6 push nothing into the resampler (which checks as it goes): check here.
                            if !isLastPass, y % PixelMemoryMeter.rowsPerCheck == 0 { try meter.checkCancellation() }
                            let evenRow = evenBase + (y / 2) * rowBytes
                            if y % 2 == 1 {
                                try reader.readRow(into: oddBase)
                                if isLastPass {
                                    try feeder.push(UnsafePointer(evenBase + (y - 1) / 2 * rowBytes))
                                    try feeder.push(UnsafePointer(oddBase))
                                }
                            } else if isLastPass {
                                try reader.readRow(into: nil)  // pass 7 has no even rows
                                if y == height - 1 { try feeder.push(UnsafePointer(evenRow)) }
                            } else {
                                try reader.readRow(into: evenRow)
                            }
                        }
                    }
                }
            }
        }
    }
}

extension ImageInfo {
    /// PNG: the colour and physical chunks (sRGB, gAMA, cHRM, cICP, mDCV, cLLI, pHYs) as stored. They are
    /// structure, not metadata: kept in every strip mode and written again by the PNG encoder.
    var pngStructuralChunks: [PNGChunk] {
        get { (formatDetail as? PNGDetail)?.structuralChunks ?? [] }
        set {
            var detail = formatDetail as? PNGDetail ?? PNGDetail(); detail.structuralChunks = newValue;
            formatDetail = detail
        }
    }

    /// APNG: the animation (frames, plays), when the PNG has a valid one; `frameCount` is its frame count.
    var pngAnimation: APNGAnimation? {
        get { (formatDetail as? PNGDetail)?.animation }
        set {
            var detail = formatDetail as? PNGDetail ?? PNGDetail(); detail.animation = newValue; formatDetail = detail
        }
    }
}

/// A PNG's `ImageInfo.formatDetail`.
struct PNGDetail: Sendable {
    var structuralChunks: [PNGChunk] = []
    var animation: APNGAnimation?
}
