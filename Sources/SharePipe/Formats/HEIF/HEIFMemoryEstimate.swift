extension MemoryEstimate {
    /// HEIF/AVIF (`HEIFDecoding.render`): libheif decodes the whole primary image to YCbCr planes (metered,
    /// twice while decoding: the codec's picture and libheif's planes), rows are converted to Float and
    /// resampled, then encoded as JPEG (or PNG with alpha). The planes are priced at 4:4:4 (the probe does
    /// not know the chroma format; 4:2:0 needs half the chroma). libheif and libde265/dav1d working memory
    /// beyond the planes, measured on a 12 MP HEIC (libheif 1.15): about 2 bytes per pixel. A grid of HEVC
    /// tiles the tile route decodes (`info.heifGrid`) holds one row of tiles instead of the planes, and is
    /// priced as that route alone: an upper bound, because the route never hands the file to libheif once it
    /// started. `HEIFGrid.plan` settles before anything is decoded what would need libheif (tile NAL types,
    /// the tiles' colour from their hvcC SPS's VUI or nclx, matrix ≥ 11), and a tile libde265 fails on is an
    /// error (libheif would decode it with the same libde265), not a fallback. A single HEVC image on that
    /// route (a grid of one tile) holds libde265's decoder and picture (`HEIFTileDecoding.imageDecoderBytes`)
    /// instead of a row of tiles.
    static func heif(_ info: ImageInfo, plan: PreparePlan, options: PrepareOptions.Checked, keptMetadata: Int) -> Parts
    {
        let size = info.size
        let monochrome = info.colorModel == .gray || info.colorModel == .grayAlpha
        let channels = (monochrome ? 1 : 3) + (info.hasAlpha ? 1 : 0)
        let out = PixelSize(
            width: min(plan.renderTarget.width, size.width), height: min(plan.renderTarget.height, size.height))
        let planes = HEIFDecoding.decodeMemory(
            size: size, bitDepth: info.bitDepth, hasAlpha: info.hasAlpha,
            monochrome: monochrome, chroma444: true)
        var metered =
            planes + LanczosResampler.memoryEstimate(from: size, to: out, channels: channels)
            + size.width * channels * MemoryLayout<Float>.stride
        var decoder = size.area * 2 + (4 << 20)
        if let grid = info.heifGrid {
            // The tile route: one row of tiles and the libde265 decoders, the resampler as coded and the Float row
            // while decoding; then, with irot/imir, the small result and its transformed copy (all metered).
            // libheif only reads the boxes.
            let coded = grid.orientation.swapsAxes ? out.transposed : out
            metered = max(
                HEIFTileDecoding.decodeMemory(grid)
                    + LanczosResampler.memoryEstimate(from: grid.size, to: coded, channels: channels)
                    + grid.size.width * channels * MemoryLayout<Float>.stride,
                grid.orientation == .up ? 0 : 2 * out.area * channels)
            decoder = 1 << 20
        }
        let capped = plan.byteLimit != nil
        var encoder = jpegEncoderBytes(out, channels: channels >= 3 ? 3 : 1, capped: capped)
        var output = jpegOutputBytes(out, channels: channels >= 3 ? 3 : 1, keptMetadata: keptMetadata, capped: capped)
        var unmetered = 0
        if plan.outputFormat == .png {
            // As a PNG input's encode: the stored-image copies, deflate state, candidate files.
            let raw = out.area * 4 + out.height
            encoder = max(encoder, zlibBytes + 2 * (out.width * 4 + 1) * 2)
            output = max(output, 5 * (raw + raw / 1000 + 1024 + keptMetadata))
            unmetered = out.area * channels * 2 + out.area * 2
        }
        return Parts(
            decodedSize: size, renderedSize: out, channels: channels, metered: metered, unmetered: unmetered,
            decoder: decoder, encoder: encoder, output: output)
    }
}
