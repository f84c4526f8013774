import CSharePipe

/// Writes JPEGs with libjpeg-turbo: 4:2:0 chroma, optimized Huffman tables, optional progressive, the
/// kept metadata as marker segments (Exif first when present), into memory.
struct JPEGEncoder: ImageEncoder {
    var format: ImageFormat { .jpeg }
    /// Chroma subsampling 4:2:0 (the default, as every camera and service uses) or 4:4:4.
    var subsample420 = true

    func encode(_ bitmap: Bitmap, settings: EncodeSettings, metadata: [MetadataBlock]) throws -> [UInt8] {
        let opaque = bitmap.layout.hasAlpha ? AlphaFlattening.overWhite(bitmap) : bitmap
        let segments = JPEGMarkers.segments(for: metadata)
        let hasExif = segments.contains { $0.code == JPEGMarkers.app1 && $0.payload.starts(with: JPEGMarkers.exifPrefix) }
        let jpegSettings = sp_jpeg_encode_settings(
            quality: Int32(settings.quality), progressive: settings.progressive ? 1 : 0,
            subsample_420: subsample420 ? 1 : 0, optimize_coding: 1, write_jfif: hasExif ? 0 : 1)
        var message = shimMessageBuffer()
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status: sp_status = withMarkerArray(segments) { markers in
            opaque.pixels.withUnsafeBufferPointer { pixels in
                sp_jpeg_encode(pixels.baseAddress, Int32(opaque.width), Int32(opaque.height), Int32(opaque.layout.channels),
                               jpegSettings, markers.baseAddress, Int32(markers.count), &output, &length, &message)
            }
        }
        try EncoderFailure.check(status, message)
        defer { sp_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: length))
    }

    private func withMarkerArray<T>(_ segments: [(code: Int, payload: [UInt8])],
                                    _ body: (UnsafeBufferPointer<sp_jpeg_marker>) -> T) -> T {
        // Keep every payload alive and pinned while the C call runs.
        withUnsafeBufferPointers(ofEach: segments.map(\.payload)) { payloads in
            let markers = zip(segments, payloads).map { segment, payload in
                sp_jpeg_marker(marker: Int32(segment.code), data: payload.baseAddress, length: UInt32(payload.count))
            }
            return markers.withUnsafeBufferPointer(body)
        }
    }
}

/// Composites a bitmap with alpha over white, for formats without transparency.
enum AlphaFlattening {
    static func overWhite(_ bitmap: Bitmap) -> Bitmap {
        guard bitmap.layout.hasAlpha else { return bitmap }
        let channels = bitmap.layout.channels, colors = channels - 1
        var out = [UInt8](repeating: 0, count: bitmap.size.area * colors)
        bitmap.pixels.withUnsafeBufferPointer { source in
            out.withUnsafeMutableBufferPointer { target in
                for p in 0..<bitmap.size.area {
                    let alpha = Int(source[p * channels + colors])
                    for c in 0..<colors {
                        let value = Int(source[p * channels + c])
                        target[p * colors + c] = UInt8((value * alpha + 255 * (255 - alpha) + 127) / 255)
                    }
                }
            }
        }
        return Bitmap(size: bitmap.size, layout: bitmap.layout.opaque, pixels: out)
    }
}
