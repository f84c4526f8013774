/// Where the subject of a picture is: the point a client keeps in view when it crops the picture to a
/// preview, in Mastodon's focal-point convention (its `focus` parameter on a media upload, `meta.focus` on an
/// attachment): `x` from −1 (the left edge) to 1 (the right edge), `y` from −1 (the bottom edge) to 1 (the top
/// edge); (0, 0) is the centre. Two decimals, as Mastodon stores it.
public struct FocalPoint: Sendable, Equatable, Codable, CustomStringConvertible {
    /// −1 (left) … 1 (right).
    public var x: Double
    /// −1 (bottom) … 1 (top).
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }

    /// The centre: what a picture with nothing standing out gets.
    public static let centre = FocalPoint(x: 0, y: 0)

    /// `x,y` with two decimals, as Mastodon's upload takes it (`0.25,-0.5`).
    public var description: String { Self.text(x) + "," + Self.text(y) }

    /// The point at `fractionX`, `fractionY` of the picture's width and height, measured from its top left
    /// corner (0...1 each), in Mastodon's convention, rounded to two decimals.
    init(fractionX: Double, fractionY: Double) {
        // `+ 0` turns −0 into 0, so a point on an axis never prints as -0.
        func rounded(_ value: Double) -> Double { (max(-1, min(1, value)) * 100).rounded() / 100 + 0 }
        self.init(x: rounded(2 * fractionX - 1), y: rounded(1 - 2 * fractionY))
    }

    /// The point as fractions of the width and height from the top left corner (0...1 each).
    var fractions: (x: Double, y: Double) { ((x + 1) / 2, (1 - y) / 2) }

    private static func text(_ value: Double) -> String {
        let hundredths = Int((value * 100).rounded())
        let sign = hundredths < 0 ? "-" : ""
        let magnitude = abs(hundredths)
        let fraction = magnitude % 100
        return "\(sign)\(magnitude / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}

/// An attention estimate of where the subject of a picture is, from the placeholder's thumbnail (at most
/// 100 × 100, `PlaceholderThumbnail`): the job's own render, reduced, so it costs no decode.
///
/// The idea is libvips' `interesting=attention` (itself after smartcrop.js): what draws the eye is detail
/// (edges in the luminance), skin tones and saturated colour. Each pixel gets a weight from the three — the
/// magnitude of a Laplacian of the luminance, a score for how close its chromaticity is to a skin tone (bright
/// enough pixels only), and its chroma — scaled by its alpha, so transparent pixels draw nothing. The weights are
/// blurred by a kernel a tenth of the picture's size wide, so a region of detail outweighs a lone edge. The focal
/// point is then the centre of mass of the brightest part of the blurred map: the region around its maximum that
/// stays above half-way between the map's mean and its maximum (a plateau's centre, not its first pixel). A map
/// whose maximum is not clearly above its mean — a plain picture, or detail spread evenly — gives the centre.
///
/// libvips works at 32 × 32; the thumbnail's 100 px give the focal point to about 0.02 in Mastodon's units,
/// Mastodon's own precision being 0.01.
enum AttentionMap {
    /// The map's maximum must reach this multiple of its mean for anything to count as standing out.
    static let contrastFloor = 1.35
    /// Weights below this (out of a few hundred) are noise: a map whose maximum is under it gives the centre.
    static let weightFloor = 4.0

    /// The focal point of `thumbnail`.
    static func focalPoint(of thumbnail: PlaceholderThumbnail) -> FocalPoint {
        let map = blurredWeights(thumbnail)
        guard let peak = peak(of: map, width: thumbnail.size.width, height: thumbnail.size.height) else {
            return .centre
        }
        return FocalPoint(
            fractionX: peak.x / Double(thumbnail.size.width), fractionY: peak.y / Double(thumbnail.size.height))
    }

    /// Each pixel's weight: Laplacian magnitude of the luminance, skin score and chroma, times alpha; then
    /// blurred.
    static func blurredWeights(_ thumbnail: PlaceholderThumbnail) -> [Double] {
        let width = thumbnail.size.width, height = thumbnail.size.height, count = width * height
        let rgba = thumbnail.rgba
        var luminance = [Double](repeating: 0, count: count)
        var weights = [Double](repeating: 0, count: count)
        for i in 0..<count {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            let r = Double(rgba[i * 4]), g = Double(rgba[i * 4 + 1]), b = Double(rgba[i * 4 + 2])
            // Transparent pixels count as black with no colour: premultiplied, as libvips does before it looks.
            luminance[i] = alpha * (0.2126 * r + 0.7152 * g + 0.0722 * b)
            let chroma = max(r, g, b) - min(r, g, b)
            weights[i] = alpha * (chroma * 0.5 + skinScore(r: r, g: g, b: b))
        }
        // Laplacian (4 neighbours, edges repeated), its magnitude weighted as libvips weighs its edge band.
        for y in 0..<height {
            for x in 0..<width {
                let i = y * width + x
                let left = luminance[y * width + max(0, x - 1)], right = luminance[y * width + min(width - 1, x + 1)]
                let up = luminance[max(0, y - 1) * width + x], down = luminance[min(height - 1, y + 1) * width + x]
                weights[i] += 2 * abs(4 * luminance[i] - left - right - up - down)
            }
        }
        let radius = max(1, Int((Double(max(width, height)) / 20).rounded()))
        // Three box blurs of the same radius approximate a Gaussian.
        for _ in 0..<3 { boxBlur(&weights, width: width, height: height, radius: radius) }
        return weights
    }

    /// 0...100: how near the colour's chromaticity is to skin's (r ≈ 0.44, g ≈ 0.31 of r + g + b), for pixels
    /// bright enough to show it.
    static func skinScore(r: Double, g: Double, b: Double) -> Double {
        let sum = r + g + b
        guard sum > 90 else { return 0 }
        let dr = r / sum - 0.44, dg = g / sum - 0.31
        let distance = (dr * dr + dg * dg).squareRoot()
        return max(0, 100 * (1 - distance / 0.07))
    }

    /// Averages each pixel with its neighbours up to `radius` away, along rows then columns (edges repeated).
    static func boxBlur(_ values: inout [Double], width: Int, height: Int, radius: Int) {
        var line = [Double](repeating: 0, count: max(width, height))
        func blur(count: Int, index: (Int) -> Int) {
            for i in 0..<count { line[i] = values[index(i)] }
            var sum = 0.0
            for k in -radius...radius { sum += line[min(count - 1, max(0, k))] }
            let span = Double(2 * radius + 1)
            for i in 0..<count {
                values[index(i)] = sum / span
                sum += line[min(count - 1, i + radius + 1)] - line[max(0, i - radius)]
            }
        }
        for y in 0..<height { blur(count: width) { y * width + $0 } }
        for x in 0..<width { blur(count: height) { $0 * width + x } }
    }

    /// The centre of mass (pixel centres, in pixels from the top left) of the connected region around the map's
    /// maximum that is above half-way from the mean to the maximum; nil when nothing stands out.
    static func peak(of map: [Double], width: Int, height: Int) -> (x: Double, y: Double)? {
        guard !map.isEmpty else { return nil }
        var best = 0
        for i in map.indices where map[i] > map[best] { best = i }
        let maximum = map[best]
        let mean = map.reduce(0, +) / Double(map.count)
        guard maximum >= weightFloor, maximum >= contrastFloor * mean else { return nil }
        let threshold = (mean + maximum) / 2
        var seen = [Bool](repeating: false, count: map.count)
        var stack = [best]
        seen[best] = true
        var sumX = 0.0, sumY = 0.0, total = 0.0
        while let i = stack.popLast() {
            let x = i % width, y = i / width, weight = map[i] - threshold
            sumX += weight * (Double(x) + 0.5)
            sumY += weight * (Double(y) + 0.5)
            total += weight
            for (nx, ny) in [(x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)]
            where nx >= 0 && ny >= 0 && nx < width && ny < height {
                let n = ny * width + nx
                if !seen[n] && map[n] > threshold {
                    seen[n] = true
                    stack.append(n)
                }
            }
        }
        guard total > 0 else { return (Double(best % width) + 0.5, Double(best / width) + 0.5) }
        return (sumX / total, sumY / total)
    }
}
