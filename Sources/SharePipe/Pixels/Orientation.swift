/// The eight Exif orientations: how the stored pixels must be transformed to be shown upright.
public enum Orientation: Int, Sendable, Codable, CaseIterable {
    case up = 1  // as stored
    case upMirrored = 2  // mirror horizontally
    case down = 3  // rotate 180°
    case downMirrored = 4  // mirror vertically
    case leftMirrored = 5  // mirror horizontally, then rotate 90° counter-clockwise (transpose)
    case right = 6  // rotate 90° clockwise
    case rightMirrored = 7  // mirror horizontally, then rotate 90° clockwise (transverse)
    case left = 8  // rotate 90° counter-clockwise

    /// The orientation for a stored tag value; 0, absent and out-of-range values mean `up`.
    public init(exifValue: Int?) {
        self = exifValue.flatMap(Orientation.init(rawValue:)) ?? .up
    }

    /// Whether width and height swap.
    public var swapsAxes: Bool { rawValue >= 5 }

    /// Maps a displayed (output) pixel to the stored pixel it shows, for a stored image of `size`.
    @inline(__always)
    func sourcePixel(forDisplayed x: Int, _ y: Int, stored size: PixelSize) -> (Int, Int) {
        let w = size.width, h = size.height
        switch self {
        case .up: return (x, y)
        case .upMirrored: return (w - 1 - x, y)
        case .down: return (w - 1 - x, h - 1 - y)
        case .downMirrored: return (x, h - 1 - y)
        case .leftMirrored: return (y, x)
        case .right: return (y, h - 1 - x)
        case .rightMirrored: return (w - 1 - y, h - 1 - x)
        case .left: return (w - 1 - y, x)
        }
    }
}

extension Bitmap {
    /// The bitmap transformed so that it shows upright; `up` returns it unchanged.
    func applying(_ orientation: Orientation) -> Bitmap {
        if orientation == .up { return self }
        let outSize = orientation.swapsAxes ? size.transposed : size
        let channels = layout.channels
        var out = [UInt8](repeating: 0, count: pixels.count)
        pixels.withUnsafeBufferPointer { source in
            out.withUnsafeMutableBufferPointer { target in
                var o = 0
                for y in 0..<outSize.height {
                    for x in 0..<outSize.width {
                        let (sx, sy) = orientation.sourcePixel(forDisplayed: x, y, stored: size)
                        let s = (sy * size.width + sx) * channels
                        for c in 0..<channels { target[o + c] = source[s + c] }
                        o += channels
                    }
                }
            }
        }
        return Bitmap(size: outSize, layout: layout, pixels: out)
    }
}
