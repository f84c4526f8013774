/// Writes a still as a single-frame GIF: the bitmap's exact colours when it has few enough, otherwise a
/// median-cut palette, mapped nearest-colour; alpha below 128 becomes the transparent index. No loop
/// extension (a single frame does not animate); kept metadata as extensions after the screen descriptor.
///
/// GIF has no quality: the still fitter's quality search is read as a colour budget
/// (`colorBudget(forQuality:)`), so lowering "quality" means fewer colours, a GIF's own size lever.
struct GIFEncoder: ImageEncoder {
    var format: ImageFormat { .gif }

    /// 256 colours at quality 80 and above, proportionally fewer below (at least 2).
    static func colorBudget(forQuality quality: Int) -> Int {
        min(256, max(2, 256 * quality / 80))
    }

    func encode(_ bitmap: Bitmap, settings: EncodeSettings, metadata: [MetadataBlock]) throws -> [UInt8] {
        let rgba = Self.rgba(bitmap)
        let transparent = bitmap.layout.hasAlpha && stride(from: 3, to: rgba.count, by: 4).contains { rgba[$0] < 128 }
        let budget = Self.colorBudget(forQuality: settings.quality)
        var palette = rgba.withUnsafeBufferPointer {
            GIFQuantizer.palette(rgba: $0, maxColors: transparent ? budget - 1 : budget)
        }
        var transparentIndex: Int?
        if transparent {
            transparentIndex = palette.count
            palette = GIFPalette(rgb: palette.rgb + [0, 0, 0])
        }
        let nearest = GIFNearestColor(palette: palette, excluding: transparentIndex)
        var indices = [UInt8](repeating: 0, count: bitmap.size.area)
        rgba.withUnsafeBufferPointer { pixels in
            for p in 0..<bitmap.size.area {
                if pixels[p * 4 + 3] < 128, let transparentIndex {
                    indices[p] = UInt8(transparentIndex)
                } else {
                    indices[p] = UInt8(nearest.index(pixels[p * 4], pixels[p * 4 + 1], pixels[p * 4 + 2]))
                }
            }
        }
        let writer = try GIFWriter()
        try writer.begin(
            GIFContainer(
                screenSize: bitmap.size, globalPalette: palette, backgroundIndex: 0,
                colorResolution: 8, aspectByte: 0, loopCount: nil, metadata: metadata))
        let frame = GIFFrame(
            rect: GIFRect(left: 0, top: 0, width: bitmap.width, height: bitmap.height),
            localPalette: nil, interlaced: false,
            control: transparentIndex.map { GIFGraphicsControl(transparentIndex: $0) })
        try writer.putFrame(frame, indices: &indices)
        return try writer.finish()
    }

    /// The bitmap as RGBA (gray expanded, alpha 255 where there is none).
    static func rgba(_ bitmap: Bitmap) -> [UInt8] {
        if bitmap.layout == .rgba { return bitmap.pixels }
        let channels = bitmap.layout.channels
        var out = [UInt8](repeating: 255, count: bitmap.size.area * 4)
        bitmap.pixels.withUnsafeBufferPointer { source in
            for p in 0..<bitmap.size.area {
                let s = p * channels
                switch bitmap.layout {
                case .gray:
                    out[p * 4] = source[s]; out[p * 4 + 1] = source[s]; out[p * 4 + 2] = source[s]
                case .grayAlpha:
                    out[p * 4] = source[s]; out[p * 4 + 1] = source[s]; out[p * 4 + 2] = source[s]
                    out[p * 4 + 3] = source[s + 1]
                default:
                    out[p * 4] = source[s]; out[p * 4 + 1] = source[s + 1]; out[p * 4 + 2] = source[s + 2]
                }
            }
        }
        return out
    }
}
