/// Channel layout of 8-bit pixels. Alpha, where present, is straight (not premultiplied) in bitmaps.
enum PixelLayout: Int, Sendable, Codable {
    case gray = 1
    case grayAlpha = 2
    case rgb = 3
    case rgba = 4

    var channels: Int { rawValue }
    var hasAlpha: Bool { self == .grayAlpha || self == .rgba }
    /// The layout without its alpha channel.
    var opaque: PixelLayout { self == .grayAlpha ? .gray : self == .rgba ? .rgb : self }
}

/// A whole 8-bit image in memory. In the pipeline only the small output is ever held whole.
struct Bitmap: Sendable, Equatable {
    var size: PixelSize
    var layout: PixelLayout
    /// Rows top to bottom, tightly packed: width × channels bytes each.
    var pixels: [UInt8]

    init(size: PixelSize, layout: PixelLayout, pixels: [UInt8]) {
        precondition(pixels.count == size.width * size.height * layout.channels, "pixel buffer does not match size")
        self.size = size
        self.layout = layout
        self.pixels = pixels
    }

    /// A bitmap filled with zeroes.
    init(size: PixelSize, layout: PixelLayout) {
        self.init(
            size: size, layout: layout, pixels: [UInt8](repeating: 0, count: size.width * size.height * layout.channels)
        )
    }

    var width: Int { size.width }
    var height: Int { size.height }
    var byteCount: Int { pixels.count }

    /// The channel values of one pixel.
    func pixel(x: Int, y: Int) -> ArraySlice<UInt8> {
        let start = (y * size.width + x) * layout.channels
        return pixels[start..<start + layout.channels]
    }

    /// Whether any pixel is less than fully opaque.
    var hasTransparency: Bool {
        guard layout.hasAlpha else { return false }
        let channels = layout.channels
        return pixels.withUnsafeBufferPointer { buffer in
            var index = channels - 1
            while index < buffer.count {
                if buffer[index] != 255 { return true }
                index += channels
            }
            return false
        }
    }

    /// The same picture with the alpha channel dropped (used when it carries no information).
    func droppingAlpha() -> Bitmap {
        guard layout.hasAlpha else { return self }
        let channels = layout.channels, kept = channels - 1
        var out = [UInt8](repeating: 0, count: size.area * kept)
        pixels.withUnsafeBufferPointer { source in
            out.withUnsafeMutableBufferPointer { target in
                for i in 0..<size.area {
                    for c in 0..<kept { target[i * kept + c] = source[i * channels + c] }
                }
            }
        }
        return Bitmap(size: size, layout: layout.opaque, pixels: out)
    }

    /// Whether every pixel has R == G == B (so the image can be written as gray).
    var isGrayscale: Bool {
        guard layout == .rgb || layout == .rgba else { return layout == .gray || layout == .grayAlpha }
        let channels = layout.channels
        return pixels.withUnsafeBufferPointer { buffer in
            var index = 0
            while index < buffer.count {
                if buffer[index] != buffer[index + 1] || buffer[index] != buffer[index + 2] { return false }
                index += channels
            }
            return true
        }
    }
}
