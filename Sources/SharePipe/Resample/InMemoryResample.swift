/// Resizes a bitmap already in memory by feeding its rows to the streaming resampler.
enum InMemoryResample {
    static func resize(_ bitmap: Bitmap, to size: PixelSize, meter: PixelMemoryMeter) throws -> Bitmap {
        if bitmap.size == size { return bitmap }
        var resampler = LanczosResampler(from: bitmap.size, to: size, layout: bitmap.layout, meter: meter)
        let rowBytes = bitmap.width * bitmap.layout.channels
        try bitmap.pixels.withUnsafeBufferPointer { all in
            for y in 0..<bitmap.height {
                try resampler.push(row: UnsafeBufferPointer(rebasing: all[y * rowBytes..<(y + 1) * rowBytes]))
            }
        }
        // All rows were pushed, so finish cannot report an incomplete image.
        return (try? resampler.finish()) ?? bitmap
    }
}
