/// Pure decisions about sizes: the output size for a cap, the shrink-on-load factor, the next smaller
/// size when bytes do not fit. Plain functions of their inputs, tested by tables.
public enum ScalePlan {
    /// The output size (in the stored orientation) for an image of `size` under the caps. Never larger
    /// than the input; aspect kept within a pixel; each edge at least 1.
    public static func targetSize(for size: PixelSize, maxShortEdge: Int, maxLongEdge: Int? = nil,
                                  maxPixels: Int? = nil) -> PixelSize {
        var factor = 1.0
        if size.shortEdge > maxShortEdge { factor = min(factor, Double(maxShortEdge) / Double(size.shortEdge)) }
        if let maxLongEdge, size.longEdge > maxLongEdge {
            factor = min(factor, Double(maxLongEdge) / Double(size.longEdge))
        }
        if let maxPixels, size.area > maxPixels {
            factor = min(factor, (Double(maxPixels) / Double(size.area)).squareRoot())
        }
        var target = scaled(size, by: factor, capShortEdge: maxShortEdge)
        if let maxLongEdge {
            if target.width >= target.height { target.width = min(target.width, maxLongEdge) }
            else { target.height = min(target.height, maxLongEdge) }
        }
        if let maxPixels {
            while target.area > maxPixels && target.longEdge > 1 {
                if target.width >= target.height { target.width -= 1 } else { target.height -= 1 }
            }
        }
        return target
    }

    /// `size` scaled by `factor` (≤ 1), rounding so the short edge lands exactly on the cap when the cap
    /// is what decided the factor.
    static func scaled(_ size: PixelSize, by factor: Double, capShortEdge: Int? = nil) -> PixelSize {
        if factor >= 1 { return size }
        var width = max(1, Int((Double(size.width) * factor).rounded()))
        var height = max(1, Int((Double(size.height) * factor).rounded()))
        if let cap = capShortEdge {
            if size.width <= size.height { width = min(width, cap) } else { height = min(height, cap) }
        }
        return PixelSize(width: width, height: height)
    }

    /// libjpeg-turbo's DCT scaling: the smallest M in 1...8 for which the image decoded at M/8 still has
    /// both edges at least the target's, so the resampler only ever reduces.
    public static func jpegScaleNumerator(stored: PixelSize, target: PixelSize) -> Int {
        for numerator in 1...8 {
            let width = (stored.width * numerator + 7) / 8     // libjpeg rounds up
            let height = (stored.height * numerator + 7) / 8
            if width >= target.width && height >= target.height { return numerator }
        }
        return 8
    }

    /// The next, smaller size to try when the smallest quality still gives `bytes` over `limit`: area
    /// scales about linearly with bytes, so edges by sqrt(limit / bytes), with a margin, and always at
    /// least 10% smaller than before.
    public static func shrink(_ size: PixelSize, bytes: Int, limit: Int) -> PixelSize {
        let ratio = (Double(limit) / Double(max(bytes, 1))).squareRoot() * 0.95
        let factor = min(0.9, max(0.25, ratio))
        return scaled(size, by: factor)
    }
}
