#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What a client shows while the image loads: a BlurHash and a ThumbHash of the output as displayed (for an
/// animation, its first frame), computed from the picture the job already rendered — no decode of its own.
///
/// Both are computed from a copy of the render reduced to fit 100 × 100 (`PlaceholderThumbnail`), as posting
/// services do before hashing (ThumbHash takes nothing larger): at most 40 KB, whatever the output's size.
public struct Placeholder: Sendable, Equatable, Codable {
    /// The BlurHash (base 83), with the components the options asked for (`PrepareOptions.blurHashXComponents`,
    /// `blurHashYComponents`; 4 × 4 by default, as Mastodon stores it).
    public var blurHash: String
    /// The ThumbHash, its bytes in standard Base64 (with padding).
    public var thumbHash: String

    public init(blurHash: String, thumbHash: String) {
        self.blurHash = blurHash
        self.thumbHash = thumbHash
    }

    /// In JSON as Mastodon and the reference packages name them: `blurhash`, `thumbhash`.
    enum CodingKeys: String, CodingKey {
        case blurHash = "blurhash"
        case thumbHash = "thumbhash"
    }
}

/// A BlurHash's number of cosine components across (`x`) and down (`y`), 1...9 each.
struct BlurHashComponents: Sendable, Equatable {
    var x: Int
    var y: Int
}

/// A copy of a displayed picture reduced to fit 100 × 100 by area averaging (alpha-weighted, so transparent
/// pixels lend no colour), as straight RGBA: what both placeholders are computed from.
struct PlaceholderThumbnail: Sendable, Equatable {
    /// The largest edge ThumbHash takes.
    static let maxEdge = 100

    let size: PixelSize
    /// RGBA, straight alpha, rows top to bottom.
    let rgba: [UInt8]

    init(size: PixelSize, rgba: [UInt8]) {
        precondition(rgba.count == size.area * 4, "thumbnail buffer does not match size")
        self.size = size
        self.rgba = rgba
    }

    /// The reduced copy of `bitmap` (any layout, displayed orientation).
    init(_ bitmap: Bitmap) {
        self.init(pixels: bitmap.pixels, size: bitmap.size, layout: bitmap.layout)
    }

    /// The reduced copy of `pixels`, tightly packed rows of `size` in `layout`.
    init(pixels: [UInt8], size source: PixelSize, layout: PixelLayout) {
        var builder = Builder(size: source, layout: layout)
        let rowBytes = source.width * layout.channels
        pixels.withUnsafeBufferPointer { pixels in
            for y in 0..<source.height {
                builder.push(row: UnsafeBufferPointer(rebasing: pixels[y * rowBytes..<(y + 1) * rowBytes]))
            }
        }
        self = builder.finish()
    }

    /// The reduced copy made from rows as they come, top to bottom (a render streamed into an encoder, whose
    /// bitmap never exists whole): the same thumbnail as `init(pixels:size:layout:)` on the same rows.
    struct Builder {
        private let source: PixelSize
        private let layout: PixelLayout
        private let size: PixelSize
        /// 2 where a thumbnail row covers 8 source rows or more: every other row is read.
        private let rowStep: Int
        private let columnStarts: [Int]
        /// Per thumbnail column of the current thumbnail row: r, g, b (each times alpha), alpha, pixel count.
        private var sums: [Int]
        private var out: [UInt8]
        /// The thumbnail row being summed, the next source row, and how far into the row's band it is.
        private var row = 0
        private var sourceRow = 0
        private var rowInBand = 0
        private var bandEnd: Int

        init(size source: PixelSize, layout: PixelLayout) {
            let longest = max(source.width, source.height, 1)
            let scale = min(1.0, Double(PlaceholderThumbnail.maxEdge) / Double(longest))
            let width = max(1, min(PlaceholderThumbnail.maxEdge, Int((Double(source.width) * scale).rounded())))
            let height = max(1, min(PlaceholderThumbnail.maxEdge, Int((Double(source.height) * scale).rounded())))
            self.source = source
            self.layout = layout
            size = PixelSize(width: width, height: height)
            // Each thumbnail pixel averages the source pixels of its share of the rows and columns; colours are
            // weighted by alpha (premultiplied), then divided back out. Integer sums per thumbnail column: r, g,
            // b (each times alpha), alpha, pixel count; one pass over the rows, in order, each column's run of
            // pixels summed in registers. Where a thumbnail row covers 8 source rows or more (a render of 800
            // rows and up), every other row is read: still an average of 4 rows or more, at half the cost (the
            // whole placeholder then costs about 1.5 % of a 24 MP JPEG job's instructions).
            rowStep = source.height >= height * 8 ? 2 : 1
            columnStarts = (0...width).map { $0 * source.width / width }
            sums = [Int](repeating: 0, count: width * 5)
            out = [UInt8](repeating: 0, count: width * height * 4)
            bandEnd = max(1, min(source.height, source.height / height))
        }

        /// Adds the next source row (`size.width` pixels in `layout`); rows past the last are ignored.
        mutating func push(row pixels: UnsafeBufferPointer<UInt8>) {
            guard row < size.height, sourceRow < source.height else { return }
            if rowInBand % rowStep == 0 { accumulate(pixels) }
            sourceRow += 1
            rowInBand += 1
            if sourceRow >= bandEnd { finishRow() }
        }

        /// The thumbnail, once every source row went in.
        func finish() -> PlaceholderThumbnail {
            precondition(sourceRow == source.height, "placeholder thumbnail missing rows")
            return PlaceholderThumbnail(size: size, rgba: out)
        }

        private mutating func accumulate(_ pixels: UnsafeBufferPointer<UInt8>) {
            let width = size.width, channels = layout.channels, layout = self.layout
            columnStarts.withUnsafeBufferPointer { columnStarts in
                sums.withUnsafeMutableBufferPointer { sums in
                    for tx in 0..<width {
                        let first = columnStarts[tx], end = max(first + 1, columnStarts[tx + 1])
                        var r = 0, g = 0, b = 0, a = 0
                        var p = first * channels
                        switch layout {
                        case .rgb:
                            for _ in first..<end {
                                r &+= Int(pixels[p])
                                g &+= Int(pixels[p + 1])
                                b &+= Int(pixels[p + 2])
                                p += 3
                            }
                            (r, g, b, a) = (r &* 255, g &* 255, b &* 255, (end - first) * 255)
                        case .rgba:
                            for _ in first..<end {
                                let alpha = Int(pixels[p + 3])
                                r &+= Int(pixels[p]) &* alpha
                                g &+= Int(pixels[p + 1]) &* alpha
                                b &+= Int(pixels[p + 2]) &* alpha
                                a &+= alpha
                                p += 4
                            }
                        case .gray, .grayAlpha:
                            for _ in first..<end {
                                let alpha = channels == 2 ? Int(pixels[p + 1]) : 255
                                r &+= Int(pixels[p]) &* alpha
                                a &+= alpha
                                p += channels
                            }
                            (g, b) = (r, r)
                        }
                        let s = tx * 5
                        sums[s] &+= r
                        sums[s + 1] &+= g
                        sums[s + 2] &+= b
                        sums[s + 3] &+= a
                        sums[s + 4] &+= end - first
                    }
                }
            }
        }

        /// Writes the current thumbnail row from its sums and starts the next band.
        private mutating func finishRow() {
            let width = size.width, ty = row
            for tx in 0..<width {
                let o = (ty * width + tx) * 4, s = tx * 5, alpha = sums[s + 3]
                if alpha > 0 {
                    for c in 0..<3 { out[o + c] = UInt8(min(255, (sums[s + c] + alpha / 2) / alpha)) }
                }
                let count = max(1, sums[s + 4])
                out[o + 3] = UInt8(min(255, (alpha + count / 2) / count))
            }
            for index in 0..<sums.count { sums[index] = 0 }
            row += 1
            rowInBand = 0
            bandEnd = max(sourceRow + 1, min(source.height, (row + 1) * source.height / size.height))
        }
    }

    /// Both placeholders, BlurHash with `xComponents` × `yComponents` (each 1...9).
    func placeholder(xComponents: Int, yComponents: Int) -> Placeholder {
        Placeholder(
            blurHash: BlurHash.encode(self, xComponents: xComponents, yComponents: yComponents),
            thumbHash: Base64.encode(ThumbHash.encode(self)))
    }
}

/// BlurHash (Wolt's published algorithm): the image's lowest cosine components in linear light, the average
/// colour in sRGB, quantised into base-83 text.
enum BlurHash {
    static let digits = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~")

    /// The hash of `thumbnail`'s colours. BlurHash has no alpha (the reference encoder reads RGB only) and the
    /// colour under a transparent pixel is whatever its encoder left there, so a picture with transparency is
    /// first composited atop its average visible colour, as ThumbHash does (`compositedOverAverage`).
    static func encode(_ thumbnail: PlaceholderThumbnail, xComponents: Int, yComponents: Int) -> String {
        precondition((1...9).contains(xComponents) && (1...9).contains(yComponents), "1...9 components")
        let width = thumbnail.size.width, height = thumbnail.size.height
        let table = (0..<256).map { sRGBToLinear(Double($0)) }
        let colours = compositedOverAverage(thumbnail)
        let linear = colours.map { colours in colours.map { sRGBToLinear($0) } }
        // Separable: the cosines of each axis once.
        let cosX = (0..<xComponents).map { i in (0..<width).map { x in cos(Double.pi * Double(i * x) / Double(width)) }
        }
        let cosY = (0..<yComponents).map { j in
            (0..<height).map { y in cos(Double.pi * Double(j * y) / Double(height)) }
        }
        // Separable: per row and x component, the row's sum weighted by cos(πix/w); then per y component.
        var rowSums = [Double](repeating: 0, count: height * xComponents * 3)
        for y in 0..<height {
            for x in 0..<width {
                let p = y * width + x
                let (r, g, b) =
                    linear.map { ($0[p * 3], $0[p * 3 + 1], $0[p * 3 + 2]) }
                    ?? (
                        table[Int(thumbnail.rgba[p * 4])], table[Int(thumbnail.rgba[p * 4 + 1])],
                        table[Int(thumbnail.rgba[p * 4 + 2])]
                    )
                for i in 0..<xComponents {
                    let basis = cosX[i][x], o = (y * xComponents + i) * 3
                    rowSums[o] += basis * r
                    rowSums[o + 1] += basis * g
                    rowSums[o + 2] += basis * b
                }
            }
        }
        var factors = [(Double, Double, Double)]()
        factors.reserveCapacity(xComponents * yComponents)
        for j in 0..<yComponents {
            for i in 0..<xComponents {
                var r = 0.0, g = 0.0, b = 0.0
                for y in 0..<height {
                    let fy = cosY[j][y], o = (y * xComponents + i) * 3
                    r += fy * rowSums[o]
                    g += fy * rowSums[o + 1]
                    b += fy * rowSums[o + 2]
                }
                let scale = (i == 0 && j == 0 ? 1.0 : 2.0) / Double(width * height)
                factors.append((r * scale, g * scale, b * scale))
            }
        }
        var hash = base83((xComponents - 1) + (yComponents - 1) * 9, length: 1)
        let ac = factors.dropFirst()
        let maximum: Double
        if ac.isEmpty {
            maximum = 1
            hash += base83(0, length: 1)
        } else {
            let actual = ac.map { max(abs($0.0), abs($0.1), abs($0.2)) }.max()!
            let quantised = max(0, min(82, Int((actual * 166 - 0.5).rounded(.down))))
            maximum = Double(quantised + 1) / 166
            hash += base83(quantised, length: 1)
        }
        let dc = factors[0]
        hash += base83((linearToSRGB(dc.0) << 16) + (linearToSRGB(dc.1) << 8) + linearToSRGB(dc.2), length: 4)
        for factor in ac {
            func quantise(_ value: Double) -> Int {
                max(0, min(18, Int((signedSquareRoot(value / maximum) * 9 + 9.5).rounded(.down))))
            }
            hash += base83(quantise(factor.0) * 19 * 19 + quantise(factor.1) * 19 + quantise(factor.2), length: 2)
        }
        return hash
    }

    /// For a thumbnail with any pixel less than opaque: its colours (sRGB, 0...255, three per pixel) composited
    /// atop the alpha-weighted average colour; nil for an opaque one (its bytes are used as they are).
    static func compositedOverAverage(_ thumbnail: PlaceholderThumbnail) -> [Double]? {
        let rgba = thumbnail.rgba, count = thumbnail.size.area
        guard (0..<count).contains(where: { rgba[$0 * 4 + 3] != 255 }) else { return nil }
        var average = [0.0, 0.0, 0.0], weight = 0.0
        for i in 0..<count {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            for c in 0..<3 { average[c] += alpha * Double(rgba[i * 4 + c]) }
            weight += alpha
        }
        if weight > 0 { average = average.map { $0 / weight } }
        var colours = [Double](repeating: 0, count: count * 3)
        for i in 0..<count {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            for c in 0..<3 { colours[i * 3 + c] = average[c] * (1 - alpha) + alpha * Double(rgba[i * 4 + c]) }
        }
        return colours
    }

    static func base83(_ value: Int, length: Int) -> String {
        var text = ""
        var divisor = 1
        for _ in 1..<max(1, length) { divisor *= 83 }
        for _ in 0..<length {
            text.append(digits[(value / divisor) % 83])
            divisor = max(1, divisor / 83)
        }
        return text
    }

    static func sRGBToLinear(_ value: Double) -> Double {
        let v = value / 255
        return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4)
    }

    static func linearToSRGB(_ value: Double) -> Int {
        let v = max(0, min(1, value))
        return v <= 0.0031308 ? Int(v * 12.92 * 255 + 0.5) : Int((1.055 * pow(v, 1 / 2.4) - 0.055) * 255 + 0.5)
    }

    static func signedSquareRoot(_ value: Double) -> Double { value < 0 ? -(-value).squareRoot() : value.squareRoot() }
}

/// ThumbHash (Evan Wallace's published algorithm): luminance, two chroma channels and alpha as low-frequency
/// cosine terms, the aspect ratio in the header, in 20–25 bytes.
enum ThumbHash {
    /// JavaScript's `Math.round`, which the reference encoder uses: halves round up.
    private static func round(_ value: Double) -> Int { Int((value + 0.5).rounded(.down)) }

    static func encode(_ thumbnail: PlaceholderThumbnail) -> [UInt8] {
        let w = thumbnail.size.width, h = thumbnail.size.height
        precondition(w <= 100 && h <= 100, "ThumbHash takes at most 100 × 100")
        let rgba = thumbnail.rgba
        let count = w * h
        var averageR = 0.0, averageG = 0.0, averageB = 0.0, averageA = 0.0
        for i in 0..<count {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            averageR += alpha / 255 * Double(rgba[i * 4])
            averageG += alpha / 255 * Double(rgba[i * 4 + 1])
            averageB += alpha / 255 * Double(rgba[i * 4 + 2])
            averageA += alpha
        }
        if averageA > 0 {
            averageR /= averageA
            averageG /= averageA
            averageB /= averageA
        }
        let hasAlpha = averageA < Double(count)
        let luminanceLimit = hasAlpha ? 5 : 7
        let lx = max(1, round(Double(luminanceLimit * w) / Double(max(w, h))))
        let ly = max(1, round(Double(luminanceLimit * h) / Double(max(w, h))))
        // RGBA to LPQA, composited atop the average colour.
        var l = [Double](repeating: 0, count: count), p = l, q = l, a = l
        for i in 0..<count {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            let r = averageR * (1 - alpha) + alpha / 255 * Double(rgba[i * 4])
            let g = averageG * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 1])
            let b = averageB * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 2])
            l[i] = (r + g + b) / 3
            p[i] = (r + g) / 2 - b
            q[i] = r - g
            a[i] = alpha
        }
        func encodeChannel(_ channel: [Double], _ nx: Int, _ ny: Int) -> (dc: Double, ac: [Double], scale: Double) {
            var dc = 0.0, ac = [Double](), scale = 0.0
            var fx = [Double](repeating: 0, count: w)
            for cy in 0..<ny {
                var cx = 0
                while cx * ny < nx * (ny - cy) {
                    for x in 0..<w { fx[x] = cos(Double.pi / Double(w) * Double(cx) * (Double(x) + 0.5)) }
                    var f = 0.0
                    for y in 0..<h {
                        let fy = cos(Double.pi / Double(h) * Double(cy) * (Double(y) + 0.5))
                        for x in 0..<w { f += channel[x + y * w] * fx[x] * fy }
                    }
                    f /= Double(count)
                    if cx > 0 || cy > 0 {
                        ac.append(f)
                        scale = max(scale, abs(f))
                    } else {
                        dc = f
                    }
                    cx += 1
                }
            }
            if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
            return (dc, ac, scale)
        }
        let lum = encodeChannel(l, max(3, lx), max(3, ly))
        let pChannel = encodeChannel(p, 3, 3)
        let qChannel = encodeChannel(q, 3, 3)
        let alphaChannel = hasAlpha ? encodeChannel(a, 5, 5) : nil
        let isLandscape = w > h
        let header24 =
            round(63 * lum.dc) | (round(31.5 + 31.5 * pChannel.dc) << 6) | (round(31.5 + 31.5 * qChannel.dc) << 12)
            | (round(31 * lum.scale) << 18) | ((hasAlpha ? 1 : 0) << 23)
        let header16 =
            (isLandscape ? ly : lx) | (round(63 * pChannel.scale) << 3) | (round(63 * qChannel.scale) << 9)
            | ((isLandscape ? 1 : 0) << 15)
        var hash: [UInt8] = [
            UInt8(header24 & 255), UInt8((header24 >> 8) & 255), UInt8((header24 >> 16) & 255),
            UInt8(header16 & 255), UInt8((header16 >> 8) & 255),
        ]
        if let alphaChannel { hash.append(UInt8(round(15 * alphaChannel.dc) | (round(15 * alphaChannel.scale) << 4))) }
        let acStart = hash.count
        let terms = [lum.ac, pChannel.ac, qChannel.ac] + (alphaChannel.map { [$0.ac] } ?? [])
        var index = 0
        for ac in terms {
            for f in ac {
                let byte = acStart + (index >> 1)
                if byte >= hash.count { hash.append(0) }
                hash[byte] |= UInt8(round(15 * f) << ((index & 1) << 2))
                index += 1
            }
        }
        return hash
    }
}

/// Standard Base64 with padding (RFC 4648 §4), for the ThumbHash's bytes.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

    static func encode(_ bytes: [UInt8]) -> String {
        var text = ""
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            let b0 = Int(chunk[chunk.startIndex])
            let b1 = chunk.count > 1 ? Int(chunk[chunk.startIndex + 1]) : 0
            let b2 = chunk.count > 2 ? Int(chunk[chunk.startIndex + 2]) : 0
            let value = (b0 << 16) | (b1 << 8) | b2
            text.append(alphabet[(value >> 18) & 63])
            text.append(alphabet[(value >> 12) & 63])
            text.append(chunk.count > 1 ? alphabet[(value >> 6) & 63] : "=")
            text.append(chunk.count > 2 ? alphabet[value & 63] : "=")
            index += 3
        }
        return text
    }
}
