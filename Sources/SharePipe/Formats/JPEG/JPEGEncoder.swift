import CSharePipe

/// The quantisation tables a JPEG encode scales by its quality (as libjpeg scales its own).
enum JPEGQuantTables: Sendable {
    /// ITU-T T.81 Annex K: libjpeg's defaults, what SharePipe wrote before.
    case annexK
    /// Klein, Silverstein and Carney (1992), for luminance and chrominance (MozJPEG's table 5): about the same
    /// SSIMULACRA2 as Annex K at the same quality number, in fewer bytes on photos. What SharePipe wrote before
    /// jpegli's tables (`JPEGQuality` still reads its files' quality back).
    case kleinSilversteinCarney
    /// jpegli's three tables (Y, Cb, Cr) at its distance 3.0 as one shape, scaled at the libjpeg quality that
    /// gives about the SSIMULACRA2 Klein–Silverstein–Carney gives at the same quality number, in fewer bytes.
    case jpegliDistance3

    var shimValue: sp_jpeg_quant_tables {
        switch self {
        case .annexK: SP_JPEG_TABLES_ANNEX_K
        case .kleinSilversteinCarney: SP_JPEG_TABLES_KLEIN_SILVERSTEIN_CARNEY
        case .jpegliDistance3: SP_JPEG_TABLES_JPEGLI_DISTANCE_3
        }
    }

    /// The luminance (`chroma` false) or Cb table an encode at `quality` writes, in natural order.
    func table(chroma: Bool, quality: Int) -> [Int] {
        table(component: chroma ? 1 : 0, quality: quality)
    }

    /// The table of `component` (0 Y, 1 Cb, 2 Cr) an encode at `quality` writes, in natural order.
    func table(component: Int, quality: Int) -> [Int] {
        var values = [UInt32](repeating: 0, count: 64)
        values.withUnsafeMutableBufferPointer { buffer in
            sp_jpeg_quant_table(
                shimValue, Int32(clamping: component), Int32(clamping: quality), buffer.baseAddress)
        }
        return values.map(Int.init)
    }
}

/// Writes JPEGs with libjpeg-turbo: 4:2:0 chroma, jpegli's quantisation tables (`JPEGQuantTables.jpegliDistance3`),
/// optimized Huffman tables, optional progressive, the kept metadata as marker segments (Exif first when present),
/// into memory.
struct JPEGEncoder: ImageEncoder {
    var format: ImageFormat { .jpeg }
    /// Chroma subsampling 4:2:0 (the default, as every camera and service uses) or 4:4:4.
    var subsample420 = true
    /// The quantisation tables (jpegli's unless a caller needs another set).
    var tables = JPEGQuantTables.jpegliDistance3
    /// Optimized Huffman tables (two passes over the coefficients, kept whole in the compact store). Off: the
    /// standard tables, one pass and no store, a larger file of the same pixels: an encode made only to be
    /// scored, its chosen quality then recoded (`recode`) to the file written.
    var optimizeCoding = true

    func encode(_ bitmap: Bitmap, settings: EncodeSettings, metadata: [MetadataBlock]) throws -> [UInt8] {
        let opaque = bitmap.layout.hasAlpha ? AlphaFlattening.overWhite(bitmap) : bitmap
        return try write(settings: settings, metadata: metadata) { jpegSettings, markers, output, length, message in
            opaque.pixels.withUnsafeBufferPointer { pixels in
                sp_jpeg_encode(
                    pixels.baseAddress, Int32(opaque.width), Int32(opaque.height), Int32(opaque.layout.channels),
                    jpegSettings, markers.baseAddress, Int32(markers.count), &output, &length, &message)
            }
        }
    }

    /// A colour bitmap at 4:2:0 becomes the YCbCr planes libjpeg would make of it (1.5 bytes a pixel instead of
    /// 3), converted once for every quality tried; they encode to the same bytes as the bitmap. The bitmap's
    /// storage is used up while converting (its pages go back to the system). Gray and 4:4:4 stay bitmaps.
    func staged(_ bitmap: consuming Bitmap) throws -> StagedBitmap {
        guard subsample420, bitmap.layout == .rgb || bitmap.layout == .rgba else {
            return StagedBitmap(bitmap, encoder: self)
        }
        let size = bitmap.size
        var rgb = bitmap.layout.hasAlpha ? AlphaFlattening.overWhite(bitmap) : bitmap
        _ = consume bitmap  // `rgb` is now the only reference to the pixels (or a new copy)
        let planes = try JPEGPlanes(usingUp: &rgb)
        return StagedBitmap(size: size, byteCount: planes.byteCount, isBitmap: false) { settings, metadata in
            try write(settings: settings, metadata: metadata) { jpegSettings, markers, output, length, message in
                sp_jpeg_encode_planes(
                    planes.handle, jpegSettings, markers.baseAddress, Int32(markers.count),
                    &output, &length, &message)
            }
        }
    }

    /// `encoded`, a baseline encode of this encoder's, written again from its quantised coefficients (read back
    /// once, not decoded: the same pixels) with optimized Huffman tables and `metadata`, progressive and, with
    /// `alsoBaseline`, baseline where it could be the smaller (nil where a lower bound of its size, counted
    /// without writing it, is over the progressive file's): each the same file as encoding the bitmap at its
    /// quality so, for a fraction of the cost (the coefficients are neither made nor quantised again). The
    /// coefficients are held in libjpeg's arrays meanwhile (128 bytes a block, within the compact store's price:
    /// `MemoryEstimate.jpegEncoderBytes`).
    func recode(_ encoded: [UInt8], alsoBaseline: Bool, metadata: [MetadataBlock]) throws -> (
        progressive: [UInt8], baseline: [UInt8]?
    ) {
        var message = shimMessageBuffer()
        var baselineOutput: UnsafeMutablePointer<UInt8>?
        var progressiveOutput: UnsafeMutablePointer<UInt8>?
        var baselineLength = 0, progressiveLength = 0
        let status: sp_status = withSettings(EncodeSettings(quality: 100, progressive: false), metadata: metadata) {
            jpegSettings, markers in
            encoded.withUnsafeBufferPointer { source in
                withUnsafeMutablePointer(to: &baselineOutput) { baselinePointer in
                    withUnsafeMutablePointer(to: &progressiveOutput) { progressivePointer in
                        sp_jpeg_recode(
                            source.baseAddress, source.count, jpegSettings.write_jfif, markers.baseAddress,
                            Int32(markers.count), alsoBaseline ? baselinePointer : nil, &baselineLength,
                            progressivePointer, &progressiveLength, &message)
                    }
                }
            }
        }
        defer {
            sp_free(baselineOutput)
            sp_free(progressiveOutput)
        }
        try EncoderFailure.check(status, message)
        return (
            Array(UnsafeBufferPointer(start: progressiveOutput, count: progressiveLength)),
            baselineOutput.map { Array(UnsafeBufferPointer(start: $0, count: baselineLength)) }
        )
    }

    /// The settings and markers every encode shares, around one shim call that writes the file.
    private func write(
        settings: EncodeSettings, metadata: [MetadataBlock],
        _ call: (
            sp_jpeg_encode_settings, UnsafeBufferPointer<sp_jpeg_marker>,
            inout UnsafeMutablePointer<UInt8>?, inout Int, inout [CChar]
        ) -> sp_status
    ) throws -> [UInt8] {
        var message = shimMessageBuffer()
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status: sp_status = withSettings(settings, metadata: metadata) { jpegSettings, markers in
            call(jpegSettings, markers, &output, &length, &message)
        }
        try EncoderFailure.check(status, message)
        defer { sp_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: length))
    }

    /// The shim's settings and the kept metadata as marker segments (Exif first; no JFIF APP0 beside Exif),
    /// valid during `body`.
    func withSettings<T>(
        _ settings: EncodeSettings, metadata: [MetadataBlock],
        _ body: (sp_jpeg_encode_settings, UnsafeBufferPointer<sp_jpeg_marker>) -> T
    ) -> T {
        let segments = JPEGMarkers.segments(for: metadata)
        let hasExif = segments.contains {
            $0.code == JPEGMarkers.app1 && $0.payload.starts(with: JPEGMarkers.exifPrefix)
        }
        let jpegSettings = sp_jpeg_encode_settings(
            quality: Int32(settings.quality), progressive: settings.progressive ? 1 : 0,
            subsample_420: subsample420 ? 1 : 0, optimize_coding: optimizeCoding ? 1 : 0, write_jfif: hasExif ? 0 : 1,
            tables: Int32(tables.shimValue.rawValue))
        return withMarkerArray(segments) { markers in body(jpegSettings, markers) }
    }

    private func withMarkerArray<T>(
        _ segments: [(code: Int, payload: [UInt8])],
        _ body: (UnsafeBufferPointer<sp_jpeg_marker>) -> T
    ) -> T {
        // Keep every payload alive and pinned while the C call runs.
        withUnsafeBufferPointers(ofEach: segments.map(\.payload)) { payloads in
            let markers = zip(segments, payloads).map { segment, payload in
                sp_jpeg_marker(marker: Int32(segment.code), data: payload.baseAddress, length: UInt32(payload.count))
            }
            return markers.withUnsafeBufferPointer(body)
        }
    }
}

/// A 4:2:0 JPEG encode fed a render's rows as the resampler makes them (`sp_jpeg_row_encoder`: one 16-row band
/// of YCbCr planes at a time), so that neither the RGB bitmap nor its planes exist whole: the same bytes as
/// `JPEGEncoder.staged` and its encode on that render. It can also reduce the rows for the placeholder
/// (`PlaceholderThumbnail.Builder`). Its band is counted in the meter from `begin` until `finish`.
final class JPEGRowEncode: RenderRowSink {
    let encoder: JPEGEncoder
    let settings: EncodeSettings
    let metadata: [MetadataBlock]
    private let meter: PixelMemoryMeter
    private var handle: OpaquePointer?
    private var countedBytes = 0
    private var thumbnailBuilder: PlaceholderThumbnail.Builder?
    private let wantsThumbnail: Bool
    /// The render's size, from `begin`.
    private(set) var size = PixelSize(width: 0, height: 0)

    /// `thumbnail`: also reduce the rows for the placeholder (`thumbnail()`).
    init(
        encoder: JPEGEncoder, settings: EncodeSettings, metadata: [MetadataBlock], meter: PixelMemoryMeter,
        thumbnail: Bool
    ) {
        precondition(encoder.subsample420, "rows stream into a 4:2:0 encode only")
        (self.encoder, self.settings, self.metadata, self.meter, wantsThumbnail) =
            (encoder, settings, metadata, meter, thumbnail)
    }

    deinit {
        sp_jpeg_row_encoder_free(handle)
        meter.release(countedBytes)
    }

    func begin(size: PixelSize, layout: PixelLayout) throws {
        precondition(layout == .rgb && handle == nil, "rows stream into one RGB encode")
        self.size = size
        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        let status = encoder.withSettings(settings, metadata: metadata) { jpegSettings, markers in
            sp_jpeg_row_encoder_new(
                Int32(size.width), Int32(size.height), jpegSettings, markers.baseAddress, Int32(markers.count),
                &handle, &message)
        }
        try EncoderFailure.check(status, message)
        self.handle = handle
        countedBytes = sp_jpeg_row_encoder_band_bytes(Int32(size.width))
        meter.allocate(countedBytes)
        if wantsThumbnail { thumbnailBuilder = PlaceholderThumbnail.Builder(size: size, layout: layout) }
    }

    func push(row: UnsafeBufferPointer<UInt8>) throws {
        var message = shimMessageBuffer()
        try EncoderFailure.check(
            sp_jpeg_row_encoder_push_rgb_rows(handle, row.baseAddress, row.count, 1, &message), message)
        thumbnailBuilder?.push(row: row)
    }

    /// The file, once every row went in.
    func finish() throws -> [UInt8] {
        var message = shimMessageBuffer()
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = sp_jpeg_row_encoder_finish(handle, &output, &length, &message)
        sp_jpeg_row_encoder_free(handle)
        handle = nil
        meter.release(countedBytes)
        countedBytes = 0
        try EncoderFailure.check(status, message)
        defer { sp_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: length))
    }

    /// The placeholder's reduced copy of the rows (with `thumbnail`, after every row).
    func thumbnail() -> PlaceholderThumbnail? { thumbnailBuilder?.finish() }
}

/// An RGB bitmap as libjpeg's 4:2:0 YCbCr planes (`sp_jpeg_planes_from_rgb`), freed with the last reference.
final class JPEGPlanes: @unchecked Sendable {
    let handle: OpaquePointer
    let byteCount: Int

    /// The planes of `bitmap`, whose pixels are used up: their pages are given back to the system as rows are
    /// converted (a shared array is copied first by the mutable access, so no other holder sees it change).
    init(usingUp bitmap: inout Bitmap) throws {
        precondition(bitmap.layout == .rgb, "planes are made from RGB")
        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        let (width, height) = (Int32(bitmap.width), Int32(bitmap.height))
        let status = bitmap.pixels.withUnsafeMutableBufferPointer { pixels in
            sp_jpeg_planes_from_rgb(pixels.baseAddress, width, height, 1, &handle, &message)
        }
        bitmap = Bitmap(size: PixelSize(width: 1, height: 1), layout: .rgb)  // what is left is zeroes
        try EncoderFailure.check(status, message)
        self.handle = handle!
        byteCount = sp_jpeg_planes_bytes(handle)
    }

    deinit { sp_jpeg_planes_free(handle) }

    /// What the planes of a bitmap of `size` hold: luma and both chroma planes padded to whole 8×8 blocks
    /// (the shim's formula, `sp_jpeg_planes_bytes_for_size`; 0 outside JPEG's size).
    static func byteCount(_ size: PixelSize) -> Int {
        guard size.width <= Int(Int32.max), size.height <= Int(Int32.max) else { return 0 }
        return sp_jpeg_planes_bytes_for_size(Int32(size.width), Int32(size.height))
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
