/// Pure decisions about sizes: the output size for a cap, the shrink-on-load factor, the next smaller
/// size when bytes do not fit. Plain functions of their inputs, tested by tables.
enum ScalePlan {
    /// The output size for an image of `size` under short- and long-edge and area caps.
    static func targetSize(
        for size: PixelSize, maxShortEdge: Int, maxLongEdge: Int? = nil,
        maxPixels: Int? = nil
    ) -> PixelSize {
        targetSize(for: size, caps: SizeCaps(shortEdge: maxShortEdge, longEdge: maxLongEdge, pixels: maxPixels))
    }

    /// The output size for an image of `size` (as displayed) under `caps`: the largest uniform reduction
    /// that meets every cap. Never larger than the input; aspect kept within a pixel; each edge at least 1.
    static func targetSize(for size: PixelSize, caps: SizeCaps) -> PixelSize {
        var factor = 1.0
        func cap(_ limit: Int?, _ value: Int) {
            if let limit, value > limit { factor = min(factor, Double(limit) / Double(value)) }
        }
        cap(caps.shortEdge, size.shortEdge)
        cap(caps.longEdge, size.longEdge)
        cap(caps.width, size.width)
        cap(caps.height, size.height)
        cap(caps.edgeSum, size.width + size.height)
        if let pixels = caps.pixels, size.area > pixels {
            factor = min(factor, (Double(pixels) / Double(size.area)).squareRoot())
        }
        var target = scaled(size, by: factor, capShortEdge: caps.shortEdge)
        // Rounding may land a pixel over a cap: take it off the edge concerned.
        if let longEdge = caps.longEdge {
            if target.width >= target.height {
                target.width = min(target.width, longEdge)
            } else {
                target.height = min(target.height, longEdge)
            }
        }
        if let width = caps.width { target.width = min(target.width, width) }
        if let height = caps.height { target.height = min(target.height, height) }
        while !caps.admits(target) && target.longEdge > 1 {
            if target.width >= target.height { target.width -= 1 } else { target.height -= 1 }
        }
        return target
    }

    /// `size` scaled by `factor` (≤ 1), rounding so the short edge lands exactly on the cap when the cap
    /// is what decided the factor. Total over every `Double`: a factor that is not below 1 (NaN too)
    /// keeps the size, one at or below 0 gives the smallest (each edge at least 1), so no factor can trap
    /// the conversion to `Int`.
    static func scaled(_ size: PixelSize, by factor: Double, capShortEdge: Int? = nil) -> PixelSize {
        guard factor < 1 else { return size }
        let factor = max(0, factor)
        var width = max(1, Int((Double(size.width) * factor).rounded()))
        var height = max(1, Int((Double(size.height) * factor).rounded()))
        if let cap = capShortEdge {
            if size.width <= size.height { width = min(width, cap) } else { height = min(height, cap) }
        }
        return PixelSize(width: width, height: height)
    }

    /// libjpeg-turbo's DCT scaling: the smallest M in 1...8 for which the image decoded at M/8 still has
    /// both edges at least the target's, so the resampler only ever reduces.
    static func jpegScaleNumerator(stored: PixelSize, target: PixelSize) -> Int {
        // The picture's true extent, W·M/8 (`jpegDecodedExtent`), not libjpeg's rounded-up size: a decode whose
        // last column is only part picture would leave the resampler enlarging by up to one pixel.
        for numerator in 1...8
        where stored.width * numerator >= target.width * 8 && stored.height * numerator >= target.height * 8 {
            return numerator
        }
        return 8
    }

    /// How much of a JPEG decoded at `numerator`/8 its picture covers, in decoded pixels: W·M/8 by H·M/8.
    /// libjpeg rounds the decoded size up (`jpegScaleNumerator`), so when W·M/8 is not whole the last column
    /// covers only its fraction of 8/M source pixels, the rest being the encoder's edge padding; the resampler
    /// maps this extent onto the output, not the rounded-up size, or the picture would be stretched by up to
    /// an output pixel.
    static func jpegDecodedExtent(stored: PixelSize, numerator: Int) -> (width: Double, height: Double) {
        (Double(stored.width * numerator) / 8, Double(stored.height * numerator) / 8)
    }

    /// The DCT scale for a render under a byte limit that bites (`ImageDecoder.renderSharp`): the smallest M
    /// whose decode leaves the resampler at least a factor of two on both edges, as vipsthumbnail leaves its
    /// reduce step. A DCT-scaled decode close to the target is soft and aliased next to a Lanczos reduction
    /// from twice it: on scripts/fixtures/make-cap-photos.py's photos at 1620×1080, 3600×2400 decoded at 4/8 and reduced
    /// scored butteraugli 1.13 (landscape) and 1.95 (sign) against vips's Lanczos-3 from the whole image, at
    /// 8/8 0.29 and 0.36. At most 8 (a source under twice the target is decoded whole).
    static func sharpJPEGScaleNumerator(stored: PixelSize, target: PixelSize) -> Int {
        jpegScaleNumerator(stored: stored, target: PixelSize(width: 2 * target.width, height: 2 * target.height))
    }

    /// The next, smaller size to try when the smallest quality still gives `bytes` over `limit`: area
    /// scales about linearly with bytes, so edges by sqrt(limit / bytes), with a margin, and always at
    /// least 10% smaller than before.
    static func shrink(_ size: PixelSize, bytes: Int, limit: Int) -> PixelSize {
        let ratio = (Double(limit) / Double(max(bytes, 1))).squareRoot() * 0.95
        let factor = min(0.9, max(0.25, ratio))
        return scaled(size, by: factor)
    }
}

/// Size caps, each optional but the short edge: the output meets all of them.
public struct SizeCaps: Sendable, Equatable, Codable {
    public var shortEdge: Int
    public var longEdge: Int?
    public var width: Int?
    public var height: Int?
    /// Width × height.
    public var pixels: Int?
    /// Width + height (Telegram).
    public var edgeSum: Int?

    public init(
        shortEdge: Int, longEdge: Int? = nil, width: Int? = nil, height: Int? = nil,
        pixels: Int? = nil, edgeSum: Int? = nil
    ) {
        self.shortEdge = shortEdge
        self.longEdge = longEdge
        self.width = width
        self.height = height
        self.pixels = pixels
        self.edgeSum = edgeSum
    }

    /// Whether `size` meets every cap.
    public func admits(_ size: PixelSize) -> Bool {
        size.shortEdge <= shortEdge && longEdge.map { size.longEdge <= $0 } ?? true
            && width.map { size.width <= $0 } ?? true && height.map { size.height <= $0 } ?? true
            && pixels.map { size.area <= $0 } ?? true && edgeSum.map { size.width + size.height <= $0 } ?? true
    }
}
