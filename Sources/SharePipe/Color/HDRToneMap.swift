import CSharePipe

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// HDR pixels (PQ, SMPTE ST 2084, or HLG, ARIB STD-B67: CICP transfer 16 or 18) made into the 8-bit SDR
/// picture Chromium shows on an SDR display.
///
/// Chromium (Skia's `skhdr::Agtm`, the reference white tone mapping operator of SMPTE ST 2094-50 draft 2,
/// used for an image without tone-mapping metadata) works in linear light relative to HDR reference white,
/// 203 cd/m² (ITU-R BT.2408): PQ is decoded to cd/m² and divided by 203; HLG is decoded with its inverse
/// OETF and the BT.2100 OOTF of a 1000 cd/m² display (system gamma 1.2), then divided by 203. The content's
/// headroom H = log2(peak / 203) uses the peak of the `clli` box (MaxCLL: the item's, or an AVIF sequence's
/// sample entry's), else 1000 cd/m² (HLG: always 1000; an `mdcv` alone does not count, as in Chromium). In
/// BT.2020 linear light, the largest of R, G and B (x) is mapped by a curve that is a straight line below
/// reference white (y = w·x, w = 1 − ½·min(H / log2(1000/203), 1): reference white lands at half the SDR
/// range for a 1000 cd/m² image) and a quadratic Bézier from (1, w) to (2^H, 1) above it (middle control
/// point 65% of the way to where the line meets y = 1); R, G and B are scaled by
/// y / x, so hue is kept. The result is converted to the output primaries, clipped to 0…1 and encoded with
/// the sRGB curve. Measured against Chromium 156's rendering of generated 128-step grey ramps (PQ 1…10000
/// cd/m², HLG 0…1): within 1 of 255 at every step; colour patches within 4 (`HDRTests`).
///
/// The output is Display P3 (its ICC profile goes with the pixels) unless the source primaries are BT.709,
/// which stay sRGB: a browser on an sRGB display clips P3 as Chromium clips BT.2020 on its way to sRGB, and a
/// P3 display keeps the colours an sRGB output would lose.
struct HDRToneMap: Sendable, Equatable {
    /// The HDR transfer characteristic.
    enum Transfer: String, Sendable {
        case pq = "PQ", hlg = "HLG"

        /// The transfer of an nclx description, nil when it is not HDR.
        init?(_ nclx: sp_heif_nclx) {
            guard nclx.present != 0 else { return nil }
            switch nclx.transfer_characteristics {
            case 16: self = .pq
            case 18: self = .hlg
            default: return nil
            }
        }
    }

    /// The output colour space.
    enum Output: String, Sendable {
        case sRGB = "sRGB", displayP3 = "Display P3"

        /// Chromaticities (red, green, blue, white as x, y pairs).
        var chromaticities: [Float] {
            switch self {
            case .sRGB: [0.640, 0.330, 0.300, 0.600, 0.150, 0.060, 0.3127, 0.3290]
            case .displayP3: [0.680, 0.320, 0.265, 0.690, 0.150, 0.060, 0.3127, 0.3290]
            }
        }

        /// An nclx saying the output's primaries with the sRGB transfer, for `HEIFColorProfile`.
        var nclx: sp_heif_nclx {
            let c = chromaticities
            return sp_heif_nclx(
                present: 1, color_primaries: self == .sRGB ? 1 : 12, transfer_characteristics: 13,
                matrix_coefficients: 0, full_range: 1, red_x: c[0], red_y: c[1], green_x: c[2],
                green_y: c[3], blue_x: c[4], blue_y: c[5], white_x: c[6], white_y: c[7])
        }
    }

    /// HDR reference white (BT.2408), which Chromium's SDR white is: cd/m².
    static let referenceWhite: Float = 203
    /// The content peak Chromium assumes when the file names none (and for HLG): cd/m².
    static let defaultPeak: Float = 1000

    let transfer: Transfer
    let output: Output
    /// The content peak in cd/m² the curve maps to SDR white.
    let peak: Float
    /// Source primaries to BT.2020, and BT.2020 to the output primaries (linear light, row-major 3×3).
    private let toRec2020: [Float], toOutput: [Float]
    /// Luminance weights of the source primaries (HLG's OOTF).
    private let luma: [Float]
    /// The curve: the line's slope (reference white's image) and the Bézier's coefficients.
    private let whiteImage: Float, xMax: Float
    private let xA: Float, xB: Float, yA: Float, yB: Float
    /// The transfer's decoding table and the sRGB encoding table, held here so the pixel loop reads them
    /// without touching the shared statics.
    private let decodeTable: Table, encodeTable: Table

    /// The tone map for an image with colour description `nclx` and no ICC profile; nil when the transfer is
    /// not PQ or HLG. `peak`: the content's MaxCLL in cd/m², if the file gives one.
    init?(nclx: sp_heif_nclx, peak filePeak: Float?) {
        guard let transfer = Transfer(nclx) else { return nil }
        self.transfer = transfer
        let source = Self.sourceChromaticities(nclx)
        output = nclx.color_primaries == 1 ? .sRGB : .displayP3
        let rec2020: [Float] = [0.708, 0.292, 0.170, 0.797, 0.131, 0.046, 0.3127, 0.3290]
        let sourceToXYZ = Self.rgbToXYZ(source), rec2020ToXYZ = Self.rgbToXYZ(rec2020)
        toRec2020 = Self.multiply(Self.inverse(rec2020ToXYZ), sourceToXYZ)
        toOutput = Self.multiply(Self.inverse(Self.rgbToXYZ(output.chromaticities)), rec2020ToXYZ)
        luma = Array(sourceToXYZ[3..<6])
        if transfer == .pq, let filePeak, filePeak > 0 { peak = filePeak } else { peak = Self.defaultPeak }
        // Headroom and curve (SMPTE ST 2094-50 draft 2, formulas D.1–D.5, as Skia's RWTMO computes them).
        let headroom = max(log2(peak / Self.referenceWhite), 0)
        let share = min(headroom / log2(Self.defaultPeak / Self.referenceWhite), 1)
        whiteImage = 1 - 0.5 * share
        xMax = exp2(headroom)
        let kappa: Float = 0.65
        let xMid = (1 - kappa) + kappa / whiteImage, yMid = (1 - kappa) * whiteImage + kappa
        xA = 1 - 2 * xMid + xMax; xB = 2 * xMid - 2
        yA = whiteImage - 2 * yMid + 1; yB = 2 * yMid - 2 * whiteImage
        decodeTable = transfer == .pq ? Self.pqTable : Self.hlgTable
        encodeTable = Self.sRGBEncodeTable
    }

    /// What the report says.
    var description: String {
        "HDR (\(transfer.rawValue)) tone-mapped to SDR as Chromium shows it on an SDR display (reference white "
            + "\(Int(Self.referenceWhite)) cd/m², peak \(Int(peak.rounded())) cd/m²), written as 8-bit \(output.rawValue) with its ICC profile"
    }

    /// The curve: the image of the largest linear component `x` (1 = reference white), 0…1 within the SDR
    /// range.
    func curve(_ x: Float) -> Float {
        if x <= 1 || xMax <= 1 { return whiteImage * x }
        if x >= xMax { return x / xMax }
        // Solve x = 1 + t·(xB + t·xA) for t in 0…1, then y = w + t·(yB + t·yA).
        let t: Float
        if abs(xA) < 1e-6 {
            t = (x - 1) / xB
        } else {
            let root = (-xB + (xB * xB + 4 * xA * (x - 1)).squareRoot()) / (2 * xA)
            t = (0...1).contains(root) ? root : (-xB - (xB * xB + 4 * xA * (x - 1)).squareRoot()) / (2 * xA)
        }
        let clamped = min(max(t, 0), 1)
        return whiteImage + clamped * (yB + clamped * yA)
    }

    /// Tone-maps a converted row in place: `width` pixels of `channels` Floats on the 0…255 scale (R′G′B′ or
    /// gray, alpha last when present; alpha is left alone).
    func apply(_ row: UnsafeMutablePointer<Float>, width: Int, channels: Int) {
        let colours = channels >= 3 ? 3 : 1
        let m = toRec2020, o = toOutput
        for x in 0..<width {
            let p = row + x * channels
            let r, g, b: Float
            if colours == 3 {
                (r, g, b) = linear(p[0], p[1], p[2])
            } else {
                (r, g, b) = linear(p[0], p[0], p[0])
            }
            var r2 = m[0] * r + m[1] * g + m[2] * b
            var g2 = m[3] * r + m[4] * g + m[5] * b
            var b2 = m[6] * r + m[7] * g + m[8] * b
            let largest = max(r2, g2, b2)
            if largest > 0 {
                let gain = curve(largest) / largest
                r2 *= gain; g2 *= gain; b2 *= gain
            }
            if colours == 3 {
                p[0] = encode(o[0] * r2 + o[1] * g2 + o[2] * b2)
                p[1] = encode(o[3] * r2 + o[4] * g2 + o[5] * b2)
                p[2] = encode(o[6] * r2 + o[7] * g2 + o[8] * b2)
            } else {
                // Gray in, gray out: the three components are equal; the output's white is the same D65.
                p[0] = encode((o[0] + o[1] + o[2]) * r2)
            }
        }
    }

    /// Linear light relative to reference white, from R′G′B′ on the 0…255 scale.
    @inline(__always) private func linear(_ r: Float, _ g: Float, _ b: Float) -> (Float, Float, Float) {
        switch transfer {
        case .pq:
            return (decodeTable.at(r), decodeTable.at(g), decodeTable.at(b))
        case .hlg:
            let re = decodeTable.at(r), ge = decodeTable.at(g), be = decodeTable.at(b)
            let y = luma[0] * re + luma[1] * ge + luma[2] * be
            guard y > 0 else { return (0, 0, 0) }
            // BT.2100 OOTF for a 1000 cd/m² display: Fd = 1000 · Ys^(γ − 1) · E, γ = 1.2.
            let scale = Self.defaultPeak * pow(y, 0.2) / Self.referenceWhite
            return (re * scale, ge * scale, be * scale)
        }
    }

    /// A linear component (clipped to 0…1) encoded with the sRGB curve, on the 0…255 scale.
    @inline(__always) private func encode(_ value: Float) -> Float {
        255 * encodeTable.at(min(max(value, 0), 1) * 255)
    }

    /// A function of 0…255 sampled at 4097 points and read with linear interpolation.
    private struct Table: Sendable, Equatable {
        let values: [Float]

        init(_ function: (Double) -> Double) {
            values = (0...4096).map { Float(function(Double($0) / 4096)) }
        }

        @inline(__always) func at(_ value: Float) -> Float {
            let position = min(max(value, 0), 255) * (4096 / 255)
            let index = min(Int(position), 4095)
            let fraction = position - Float(index)
            return values.withUnsafeBufferPointer { v in v[index] + fraction * (v[index + 1] - v[index]) }
        }
    }

    /// PQ signal → cd/m² / 203 (SMPTE ST 2084 EOTF).
    private static let pqTable = Table { signal in
        let m1 = 2610.0 / 16384, m2 = 2523.0 / 4096 * 128
        let c1 = 3424.0 / 4096, c2 = 2413.0 / 4096 * 32, c3 = 2392.0 / 4096 * 32
        let power = pow(signal, 1 / m2)
        let linear = pow(max(power - c1, 0) / (c2 - c3 * power), 1 / m1)
        return linear * 10000 / Double(referenceWhite)
    }

    /// HLG signal → scene light 0…1 (the inverse of the BT.2100 HLG OETF).
    private static let hlgTable = Table { signal in
        let a = 0.17883277, b = 1 - 4 * a, c = 0.5 - a * log(4 * a)
        return signal <= 0.5 ? signal * signal / 3 : (exp((signal - c) / a) + b) / 12
    }

    /// Linear 0…1 → sRGB-encoded 0…1 (IEC 61966-2-1).
    private static let sRGBEncodeTable = Table { linear in
        linear <= 0.0031308 ? 12.92 * linear : 1.055 * pow(linear, 1 / 2.4) - 0.055
    }

    /// The source's chromaticities: those the shim derived from the nclx, or BT.2020's when it gave none.
    private static func sourceChromaticities(_ nclx: sp_heif_nclx) -> [Float] {
        let given = [
            nclx.red_x, nclx.red_y, nclx.green_x, nclx.green_y, nclx.blue_x, nclx.blue_y, nclx.white_x, nclx.white_y,
        ]
        let usable = given[1] > 0 && given[3] > 0 && given[5] > 0 && given[7] > 0
        return usable ? given : [0.708, 0.292, 0.170, 0.797, 0.131, 0.046, 0.3127, 0.3290]
    }

    /// RGB → XYZ (row-major) for chromaticities (r, g, b, white as x, y pairs), white at Y = 1.
    static func rgbToXYZ(_ c: [Float]) -> [Float] {
        let columns = (0..<3).map { i -> [Float] in
            let x = c[2 * i], y = c[2 * i + 1]
            return [x / y, 1, (1 - x - y) / y]
        }
        let white: [Float] = [c[6] / c[7], 1, (1 - c[6] - c[7]) / c[7]]
        let primaries: [Float] = [
            columns[0][0], columns[1][0], columns[2][0],
            columns[0][1], columns[1][1], columns[2][1],
            columns[0][2], columns[1][2], columns[2][2],
        ]
        let inv = inverse(primaries)
        let scale = (0..<3).map { row in
            inv[3 * row] * white[0] + inv[3 * row + 1] * white[1] + inv[3 * row + 2] * white[2]
        }
        return (0..<9).map { primaries[$0] * scale[$0 % 3] }
    }

    static func multiply(_ a: [Float], _ b: [Float]) -> [Float] {
        (0..<9).map { i in
            let row = i / 3, column = i % 3
            return a[3 * row] * b[column] + a[3 * row + 1] * b[3 + column] + a[3 * row + 2] * b[6 + column]
        }
    }

    static func inverse(_ m: [Float]) -> [Float] {
        let a = m.map(Double.init)
        let det =
            a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) + a[2] * (a[3] * a[7] - a[4] * a[6])
        let cofactors = [
            a[4] * a[8] - a[5] * a[7], a[2] * a[7] - a[1] * a[8], a[1] * a[5] - a[2] * a[4],
            a[5] * a[6] - a[3] * a[8], a[0] * a[8] - a[2] * a[6], a[2] * a[3] - a[0] * a[5],
            a[3] * a[7] - a[4] * a[6], a[1] * a[6] - a[0] * a[7], a[0] * a[4] - a[1] * a[3],
        ]
        return cofactors.map { Float($0 / det) }
    }
}
