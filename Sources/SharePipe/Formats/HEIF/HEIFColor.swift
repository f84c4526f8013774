import CSharePipe

/// How a HEIF/AVIF image's YCbCr samples become R′G′B′: the matrix and range from its nclx description
/// (ITU-T H.273), as libheif itself converts.
///
/// Without an nclx (no `colr` box and nothing from the bitstream) the samples are read as BT.601, full
/// range — what libheif 1.15 assumes, so the result matches `heif-convert`. Chroma is taken from the
/// nearest sample (4:2:0 and 4:2:2 are replicated, as libheif does); the resampler that follows averages
/// over far more than one chroma sample whenever the image is reduced.
struct YCbCrMatrix: Equatable {
    enum Kind: Equatable {
        /// Y′CbCr with luma weights Kr and Kb.
        case luma(kr: Float, kb: Float)
        /// Matrix 0: the planes are G, B, R.
        case gbr
        /// Matrix 8: Y, Cg, Co.
        case yCgCo
    }

    var kind: Kind
    var fullRange: Bool

    /// The matrix for an nclx; nil for one SharePipe cannot convert (ICtCp, SMPTE ST 2085, constant
    /// luminance from chromaticities).
    init?(nclx: sp_heif_nclx) {
        fullRange = nclx.present == 0 || nclx.full_range != 0
        switch nclx.present == 0 ? 6 : Int(nclx.matrix_coefficients) {
        case 0: kind = .gbr
        case 1: kind = .luma(kr: 0.2126, kb: 0.0722)
        case 4: kind = .luma(kr: 0.30, kb: 0.11)
        case 5, 6, 2: kind = .luma(kr: 0.299, kb: 0.114)
        case 7: kind = .luma(kr: 0.212, kb: 0.087)
        case 8: kind = .yCgCo
        case 9, 10: kind = .luma(kr: 0.2627, kb: 0.0593)
        case 12:
            guard let weights = Self.lumaWeights(nclx) else { return nil }
            kind = .luma(kr: weights.kr, kb: weights.kb)
        default: return nil
        }
    }

    /// Kr and Kb derived from the primaries and white point (matrix 12, "chromaticity derived"): the Y row
    /// of the RGB → XYZ matrix.
    static func lumaWeights(_ nclx: sp_heif_nclx) -> (kr: Float, kb: Float)? {
        let xs = [Double(nclx.red_x), Double(nclx.green_x), Double(nclx.blue_x)]
        let ys = [Double(nclx.red_y), Double(nclx.green_y), Double(nclx.blue_y)]
        let wx = Double(nclx.white_x), wy = Double(nclx.white_y)
        guard ys.allSatisfy({ $0 > 0 }), wy > 0 else { return nil }
        // Columns: xyz of each primary with Y = 1; solve for the scales that sum to the white point.
        let m = (0..<3).map { [xs[$0] / ys[$0], 1, (1 - xs[$0] - ys[$0]) / ys[$0]] }
        let white = [wx / wy, 1, (1 - wx - wy) / wy]
        func det(_ a: [[Double]]) -> Double {
            a[0][0] * (a[1][1] * a[2][2] - a[2][1] * a[1][2]) - a[1][0] * (a[0][1] * a[2][2] - a[2][1] * a[0][2])
                + a[2][0] * (a[0][1] * a[1][2] - a[1][1] * a[0][2])
        }
        let d = det(m)
        guard abs(d) > 1e-12 else { return nil }
        var scales = [Double](repeating: 0, count: 3)
        for i in 0..<3 {
            var replaced = m
            replaced[i] = white
            scales[i] = det(replaced) / d
        }
        let kr = scales[0], kb = scales[2]
        guard kr > 0, kb > 0, kr + kb < 1 else { return nil }
        return (Float(kr), Float(kb))
    }
}

/// Converts rows of decoded HEIF planes (8-bit, or 9–16-bit samples in 16-bit words) into straight-alpha
/// RGB(A) or gray(+alpha) rows of Float on the 0...255 scale, keeping the fraction of high-bit-depth
/// samples so that a 10-bit image is rounded to 8 bits only once, after resampling.
struct HEIFRowConverter {
    let planes: sp_heif_planes
    let matrix: YCbCrMatrix
    /// Colour is premultiplied by alpha in the file (`prem` reference): divided out here.
    let premultiplied: Bool
    let layout: PixelLayout
    /// PQ or HLG: each converted row is tone-mapped to SDR after the matrix (and alpha) conversion.
    var toneMap: HDRToneMap? = nil

    private let yScale: Float, yOffset: Float, cScale: Float, cOffset: Float
    private let alphaScale: Float
    private let xShift: Int, yShift: Int
    /// 8-bit YCbCr with luma weights: every sample value's term of the conversion, computed once with the
    /// per-pixel formula's own Float operations (so each output equals the formula's): luma, then R's Cr, G's
    /// Cb, G's Cr and B's Cb terms, 256 each. A row is then lookups and adds (a 12 MP 4:2:0 image: 915 M → 525 M
    /// instructions, callgrind). nil for other depths and matrices.
    private let eightBitTerms: [Float]?

    init(planes: sp_heif_planes, matrix: YCbCrMatrix, premultiplied: Bool) {
        self.planes = planes
        self.matrix = matrix
        self.premultiplied = premultiplied
        let monochrome = planes.cb == nil
        let alpha = planes.alpha != nil
        layout = monochrome ? (alpha ? .grayAlpha : .gray) : (alpha ? .rgba : .rgb)
        let bits = Int(planes.bits), chromaBits = monochrome ? bits : Int(planes.chroma_bits)
        // Samples to 0...255: full range spans 0 ... 2^bits − 1; limited range 16…235 (luma) and 16…240
        // (chroma) scaled by 2^(bits − 8).
        if matrix.fullRange {
            yScale = 255 / Float((1 << bits) - 1); yOffset = 0
            cScale = 255 / Float((1 << chromaBits) - 1)
        } else {
            yScale = 255 / (219 * Float(1 << (bits - 8))); yOffset = 16 * Float(1 << (bits - 8))
            cScale = 255 / (224 * Float(1 << (chromaBits - 8)))
        }
        cOffset = Float(1 << (chromaBits - 1))
        alphaScale = alpha ? 255 / Float((1 << Int(planes.alpha_bits)) - 1) : 1
        xShift = !monochrome && planes.chroma_width < planes.width ? 1 : 0
        yShift = !monochrome && planes.chroma_height < planes.height ? 1 : 0
        if !monochrome, bits == 8, chromaBits == 8, case .luma(let kr, let kb) = matrix.kind {
            let yScale = yScale, yOffset = yOffset, cScale = cScale, cOffset = cOffset
            let kg = 1 - kr - kb
            let rCr = 2 * (1 - kr), bCb = 2 * (1 - kb)
            let gCb = -2 * kb * (1 - kb) / kg, gCr = -2 * kr * (1 - kr) / kg
            let values = (0..<256).map { Float($0) }
            let luma = values.map { ($0 - yOffset) * yScale }
            let chroma = values.map { ($0 - cOffset) * cScale }
            eightBitTerms =
                luma + chroma.map { rCr * $0 } + chroma.map { gCb * $0 } + chroma.map { gCr * $0 }
                + chroma.map { bCb * $0 }
        } else {
            eightBitTerms = nil
        }
    }

    /// Whether the planes are laid out as this converter can read them.
    static func validate(_ planes: sp_heif_planes) -> String? {
        let bits = Int(planes.bits)
        guard (8...16).contains(bits) else { return "unsupported luma bit depth \(bits)" }
        if planes.cb != nil {
            guard (8...16).contains(Int(planes.chroma_bits)) else {
                return "unsupported chroma bit depth \(planes.chroma_bits)"
            }
            let w = Int(planes.width), h = Int(planes.height), cw = Int(planes.chroma_width),
                ch = Int(planes.chroma_height)
            guard cw == w || cw == (w + 1) / 2, ch == h || ch == (h + 1) / 2 else {
                return "chroma planes \(cw)×\(ch) do not match the image \(w)×\(h)"
            }
        }
        if planes.alpha != nil, !(1...16).contains(Int(planes.alpha_bits)) { return "unsupported alpha bit depth" }
        return nil
    }

    /// Writes row `y` (width × layout.channels Floats) into `out`.
    func convertRow(_ y: Int, into out: UnsafeMutablePointer<Float>) {
        let width = Int(planes.width)
        let channels = layout.channels
        let lumaRow = planes.y! + y * Int(planes.y_stride)
        let wide = planes.bits > 8
        defer { toneMap?.apply(out, width: width, channels: channels) }
        @inline(__always) func sample(_ row: UnsafePointer<UInt8>, _ x: Int, _ wide: Bool) -> Float {
            wide ? Float(UnsafeRawPointer(row).load(fromByteOffset: 2 * x, as: UInt16.self)) : Float(row[x])
        }
        if let cbPlane = planes.cb, let crPlane = planes.cr {
            let cy = y >> yShift
            let cbRow = cbPlane + cy * Int(planes.cb_stride), crRow = crPlane + cy * Int(planes.cr_stride)
            let chromaWide = planes.chroma_bits > 8
            let yScale = self.yScale, yOffset = self.yOffset, cScale = self.cScale, cOffset = self.cOffset
            switch matrix.kind {
            case .luma where eightBitTerms != nil:
                eightBitTerms!.withUnsafeBufferPointer { terms in
                    let luma = terms.baseAddress!, rCr = luma + 256, gCb = luma + 512, gCr = luma + 768
                    let bCb = luma + 1024
                    for x in 0..<width {
                        let l = luma[Int(lumaRow[x])]
                        let cb = Int(cbRow[x >> xShift]), cr = Int(crRow[x >> xShift])
                        let o = out + x * channels
                        o[0] = min(max(l + rCr[cr], 0), 255)
                        o[1] = min(max(l + gCb[cb] + gCr[cr], 0), 255)
                        o[2] = min(max(l + bCb[cb], 0), 255)
                    }
                }
            case .luma(let kr, let kb):
                let kg = 1 - kr - kb
                let rCr = 2 * (1 - kr), bCb = 2 * (1 - kb)
                let gCb = -2 * kb * (1 - kb) / kg, gCr = -2 * kr * (1 - kr) / kg
                for x in 0..<width {
                    let luma = (sample(lumaRow, x, wide) - yOffset) * yScale
                    let cb = (sample(cbRow, x >> xShift, chromaWide) - cOffset) * cScale
                    let cr = (sample(crRow, x >> xShift, chromaWide) - cOffset) * cScale
                    let o = out + x * channels
                    o[0] = min(max(luma + rCr * cr, 0), 255)
                    o[1] = min(max(luma + gCb * cb + gCr * cr, 0), 255)
                    o[2] = min(max(luma + bCb * cb, 0), 255)
                }
            case .gbr:
                for x in 0..<width {
                    let o = out + x * channels
                    o[0] = min(max((sample(crRow, x >> xShift, chromaWide) - yOffset) * yScale, 0), 255)
                    o[1] = min(max((sample(lumaRow, x, wide) - yOffset) * yScale, 0), 255)
                    o[2] = min(max((sample(cbRow, x >> xShift, chromaWide) - yOffset) * yScale, 0), 255)
                }
            case .yCgCo:
                for x in 0..<width {
                    let luma = (sample(lumaRow, x, wide) - yOffset) * yScale
                    let cg = (sample(cbRow, x >> xShift, chromaWide) - cOffset) * cScale
                    let co = (sample(crRow, x >> xShift, chromaWide) - cOffset) * cScale
                    let t = luma - cg
                    let o = out + x * channels
                    o[0] = min(max(t + co, 0), 255)
                    o[1] = min(max(luma + cg, 0), 255)
                    o[2] = min(max(t - co, 0), 255)
                }
            }
        } else {
            for x in 0..<width {
                out[x * channels] = min(max((sample(lumaRow, x, wide) - yOffset) * yScale, 0), 255)
            }
        }
        guard let alphaPlane = planes.alpha else { return }
        let alphaRow = alphaPlane + y * Int(planes.alpha_stride)
        let alphaWide = planes.alpha_bits > 8
        let colours = channels - 1
        for x in 0..<width {
            let alpha = sample(alphaRow, x, alphaWide) * alphaScale
            let o = out + x * channels
            o[colours] = alpha
            if premultiplied {
                if alpha > 0 {
                    for c in 0..<colours { o[c] = min(o[c] * 255 / alpha, 255) }
                } else {
                    for c in 0..<colours { o[c] = 0 }
                }
            }
        }
    }
}

/// The colour profile a HEIF's pixels carry into the output.
enum HEIFColorProfile {
    /// The ICC profile for the image: the file's own (`colr` prof/rICC) when present; otherwise, for an nclx
    /// that is not plain sRGB, an equivalent ICC profile built by Little CMS from its primaries, white point
    /// and transfer curve (the pixels are carried unchanged, as with an embedded profile). nil means sRGB.
    /// PQ and HLG (which no ICC curve describes) are tone-mapped to SDR by `HDRToneMap`: the profile is that of
    /// its output (Display P3, or sRGB for BT.709 primaries). Throws `unsupportedFormat` for other transfers
    /// no ICC curve can describe (logarithmic).
    static func iccProfile(embedded: [UInt8]?, nclx: sp_heif_nclx, file: String) throws -> [UInt8]? {
        if let embedded { return embedded }
        guard nclx.present != 0, !isSRGB(nclx) else { return nil }
        if let toneMap = HDRToneMap(nclx: nclx, peak: nil) {
            return try profile(
                for: toneMap.output.nclx, description: "SharePipe \(toneMap.output.rawValue)", file: file)
        }
        return try profile(
            for: nclx, description: "SharePipe nclx \(nclx.color_primaries)/\(nclx.transfer_characteristics)",
            file: file)
    }

    /// An ICC profile built by Little CMS for an nclx's primaries, white point and transfer curve.
    private static func profile(for nclx: sp_heif_nclx, description: String, file: String) throws -> [UInt8] {
        var copy = nclx
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        var message = shimMessageBuffer()
        let status = sp_heif_icc_from_nclx(&copy, description, &out, &length, &message)
        if status == SP_ERR_ARGUMENT {
            throw SharePipeError.unsupportedFormat(
                file: file, missing: .feature,
                reason: "HEIF colour (nclx primaries \(nclx.color_primaries), "
                    + "transfer \(nclx.transfer_characteristics)): \(shimText(message))")
        }
        try checkShim(status, message, file: file, phase: .header)
        defer { sp_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: length))
    }

    /// BT.709 (= sRGB) or unspecified primaries with the sRGB or an unspecified transfer: no profile needed.
    static func isSRGB(_ nclx: sp_heif_nclx) -> Bool {
        [1, 2].contains(Int(nclx.color_primaries)) && [2, 13].contains(Int(nclx.transfer_characteristics))
    }
}

extension HEIFRowConverter {
    /// Every row of the `size` image converted in turn into one Float row and pushed into a Lanczos resampler
    /// to `target` (never larger than `size`): the whole-image decoders' (libheif's and libavif's) path from
    /// YCbCr planes to the output bitmap, with the row buffer metered.
    func resampled(size: PixelSize, to target: PixelSize, meter: PixelMemoryMeter) throws -> Bitmap {
        let outputTarget = PixelSize(width: min(target.width, size.width), height: min(target.height, size.height))
        var resampler = LanczosResampler(from: size, to: outputTarget, layout: layout, meter: meter)
        var row = [Float](repeating: 0, count: size.width * layout.channels)
        try meter.holding(row.count * MemoryLayout<Float>.stride) {
            try row.withUnsafeMutableBufferPointer { buffer in
                for y in 0..<size.height {
                    convertRow(y, into: buffer.baseAddress!)
                    try resampler.push(row: UnsafeBufferPointer(buffer))
                }
            }
        }
        return try resampler.finish()
    }
}
