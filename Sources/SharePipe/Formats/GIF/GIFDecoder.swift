/// What a cheap walk over a whole GIF finds: the container, and per-stream facts about its frames. Image
/// data is skipped block by block (DGifGetCode / DGifGetCodeNext), never LZW-decoded, and the limits are
/// checked as the walk goes, before any pixel memory exists.
struct GIFSummary {
    var container: GIFContainer
    var frameCount: Int
    var anyTransparentIndex: Bool
    var anyInterlaced: Bool
    /// Whether frame 0 covers the whole screen (otherwise its surroundings show transparent).
    var firstFrameCoversScreen: Bool
    var warnings: [String]

    /// Walks `source`. Throws `tooLarge` when the screen, a frame, the frame count or the total frame area
    /// is over `limits`, and `corrupt` for damaged data or a GIF without any image.
    ///
    /// Frames partly or wholly outside the logical screen are not errors: they are clipped when drawn (a frame
    /// wholly outside is kept, empty, so the frame count and timing survive). A frame's own size still counts
    /// against the dimension and pixel limits, since its data is decoded in full.
    static func read(_ source: ImageSource, limits: ImageLimits) throws -> GIFSummary {
        try GIFReader.with(source) { reader in
            let screen = reader.screenSize
            try limits.check(width: screen.width, height: screen.height, file: reader.file)
            let stream = GIFStream(reader)
            var summary = GIFSummary(
                container: stream.container, frameCount: 0, anyTransparentIndex: false,
                anyInterlaced: false, firstFrameCoversScreen: false, warnings: [])
            var totalPixels = 0
            while let frame = try stream.nextFrame() {
                let index = stream.frameCount - 1
                if stream.frameCount > limits.maxFrames {
                    throw SharePipeError.tooLarge(
                        file: reader.file,
                        exceeded: ExceededLimit(
                            .frameCount, found: stream.frameCount, limit: limits.maxFrames, size: screen))
                }
                if !frame.rect.isEmpty {
                    try limits.check(width: frame.rect.width, height: frame.rect.height, file: reader.file)
                }
                // Every frame costs a full canvas to composite and resample, and its own area to decode.
                totalPixels += max(screen.area, frame.rect.area)
                if totalPixels > limits.maxTotalFramePixels {
                    throw SharePipeError.tooLarge(
                        file: reader.file,
                        exceeded: ExceededLimit(
                            .totalFramePixels, found: totalPixels, limit: limits.maxTotalFramePixels, size: screen))
                }
                if frame.transparentIndex != nil { summary.anyTransparentIndex = true }
                if frame.interlaced { summary.anyInterlaced = true }
                if index == 0 { summary.firstFrameCoversScreen = frame.rect.clipped(to: screen).area == screen.area }
                let visible = frame.rect.clipped(to: screen)
                if visible != frame.rect {
                    summary.warnings.append(
                        visible.isEmpty
                            ? "frame \(index) (\(frame.rect)) lies outside the \(screen) screen; kept as an empty frame"
                            : "frame \(index) (\(frame.rect)) reaches outside the \(screen) screen; clipped")
                }
                try stream.skipRows()
            }
            if stream.frameCount == 0 {
                throw SharePipeError.corrupt(
                    file: reader.file, phase: .header,
                    reason: stream.missingTrailer
                        ? "data ends before the first image (file is truncated)" : "the GIF contains no image")
            }
            summary.container = stream.container
            summary.frameCount = stream.frameCount
            summary.warnings += stream.warnings
            return summary
        }
    }

    /// The header facts in the pipeline's format-neutral form.
    func imageInfo(byteCount: Int) -> ImageInfo {
        let bits = container.globalPalette.map { max(1, Int.bitWidth - ($0.count - 1).leadingZeroBitCount) } ?? 8
        return ImageInfo(
            format: .gif, size: container.screenSize, colorModel: .palette, bitDepth: bits,
            progressive: anyInterlaced, orientation: .up, storedOrientationValue: nil,
            frameCount: frameCount, hasAlpha: anyTransparentIndex || !firstFrameCoversScreen,
            metadata: container.metadata, byteCount: byteCount)
    }
}

/// Reads GIFs with giflib, record by record. `probe` walks the whole file without decoding image data (to
/// count frames and find the loop extension and metadata wherever they are); `render` decodes the first
/// frame only (the still path: a single-frame GIF, or a preview of an animation) onto the transparent
/// screen and streams its rows into the resampler.
struct GIFDecoder: ImageDecoder {
    var format: ImageFormat { .gif }

    func probe(_ source: ImageSource, limits: ImageLimits) throws -> ImageInfo {
        let byteCount = try source.byteCount()
        return try GIFSummary.read(source, limits: limits).imageInfo(byteCount: byteCount)
    }

    func render(
        _ source: ImageSource, info: ImageInfo, target: PixelSize, limits: ImageLimits,
        meter: PixelMemoryMeter
    ) throws -> RenderedImage {
        try GIFReader.with(source) { reader in
            let screen = reader.screenSize
            try limits.check(width: screen.width, height: screen.height, file: reader.file)
            let stream = GIFStream(reader)
            guard let frame = try stream.nextFrame() else {
                throw SharePipeError.corrupt(file: reader.file, phase: .header, reason: "the GIF contains no image")
            }
            if !frame.rect.isEmpty {
                try limits.check(width: frame.rect.width, height: frame.rect.height, file: reader.file)
            }
            let layout: PixelLayout = info.hasAlpha ? .rgba : .rgb
            let outputTarget = PixelSize(
                width: min(target.width, screen.width), height: min(target.height, screen.height))
            var resampler = LanczosResampler(from: screen, to: outputTarget, layout: layout, meter: meter)
            let channels = layout.channels
            var row = [UInt8](repeating: 0, count: screen.width * channels)
            meter.allocate(row.count)
            defer { meter.release(row.count) }

            if frame.rect == GIFRect(left: 0, top: 0, width: screen.width, height: screen.height) && !frame.interlaced {
                // A full-screen, non-interlaced frame: rows go straight to the resampler, no canvas.
                let lookup = Self.rowLookup(
                    palette: frame.palette(global: stream.container.globalPalette),
                    transparent: frame.transparentIndex, channels: channels)
                try stream.readRows { _, indices in
                    row.withUnsafeMutableBufferPointer { out in
                        for x in 0..<screen.width {
                            let entry = Int(indices[x]) * channels
                            for c in 0..<channels { out[x * channels + c] = lookup[entry + c] }
                        }
                    }
                    try row.withUnsafeBufferPointer { try resampler.push(row: $0) }
                }
            } else {
                let canvas = GIFCanvas(size: screen, meter: meter)
                try canvas.draw(frame, globalPalette: stream.container.globalPalette, from: stream)
                try canvas.pixels.withUnsafeBufferPointer { pixels in
                    for y in 0..<screen.height {
                        let start = y * screen.width * 4
                        row.withUnsafeMutableBufferPointer { out in
                            for x in 0..<screen.width {
                                for c in 0..<channels { out[x * channels + c] = pixels[start + x * 4 + c] }
                            }
                        }
                        try row.withUnsafeBufferPointer { try resampler.push(row: $0) }
                    }
                }
            }
            let bitmap: Bitmap
            do {
                bitmap = try resampler.finish()
            } catch {
                throw SharePipeError.corrupt(file: reader.file, phase: .decode, reason: "image data ended early")
            }
            // Walk the rest (image data skipped, not decoded) so what the stream tolerated after the first
            // frame (junk, a missing trailer, frames without colour tables) is reported with the still too.
            while try stream.nextFrame() != nil {}
            return RenderedImage(bitmap: bitmap, warnings: stream.warnings)
        }
    }

    /// 256 entries of `channels` bytes: the palette colour (alpha 255), or transparent black for the
    /// transparent index and indices past the table's end.
    static func rowLookup(palette: GIFPalette, transparent: Int?, channels: Int) -> [UInt8] {
        var lookup = [UInt8](repeating: 0, count: 256 * channels)
        for entry in 0..<palette.count where entry != transparent {
            let (r, g, b) = palette.color(entry)
            lookup[entry * channels] = r
            lookup[entry * channels + 1] = g
            lookup[entry * channels + 2] = b
            if channels == 4 { lookup[entry * channels + 3] = 255 }
        }
        return lookup
    }
}
