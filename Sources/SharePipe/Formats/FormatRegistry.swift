/// The one mapping from a format to its parts. Nothing else in the library names a concrete decoder,
/// encoder, metadata policy or rewriter for a format.
///
/// Each format's keep table (`MetadataKeepTable`) is written here, in its descriptor: `all` keeps the colour
/// profile, `none` keeps everything, and `gps` keeps what the table names. Whatever it does not name (an
/// unknown APPn, chunk, box, item or extension; content credentials) is removed under `all` and `gps`.
enum FormatRegistry {
    /// The descriptor for `format`.
    static func descriptor(for format: ImageFormat) -> FormatDescriptor {
        switch format {
        case .jpeg: return jpeg
        case .png: return png
        case .gif: return gif
        case .heif: return heif
        case .avif: return avif
        case .webp: return webp
        }
    }

    static let jpeg = FormatDescriptor(
        format: .jpeg,
        decoder: JPEGDecoder(),
        encoder: { _ in JPEGEncoder() },
        // all: ICC · gps: ICC, Exif (no GPS, thumbnail, embedded XMP/IPTC), COM · none: everything
        metadataPolicy: StandardMetadataPolicy(keeps: MetadataKeepTable(gps: [.colourProfile, .exif, .comment])),
        writableMetadata: { kept, present in kept.writtenAsJPEG(present: present) },
        metadataRewriter: JPEGRewriter.rewrite,
        losslessTurn: JPEGTurner.turn,
        sourceQuality: { try? JPEGQuality.estimate($0) },
        fitting: .qualitySearch,
        animation: nil,
        memory: MemoryEstimate.jpeg)

    static let png = FormatDescriptor(
        format: .png,
        decoder: PNGDecoder(),
        // The PNG encoder carries a PNG source's colour and physical chunks.
        encoder: { PNGEncoder(preserving: $0) },
        // all: iCCP · gps: iCCP, eXIf (cleaned), tEXt/zTXt/iTXt without XMP or raw profiles, tIME · none: everything
        metadataPolicy: StandardMetadataPolicy(keeps: MetadataKeepTable(gps: [.colourProfile, .exif, .text, .time])),
        writableMetadata: { kept, present in kept.writtenAsReencodedPNG(present: present) },
        metadataRewriter: PNGRewriter.rewrite,
        losslessTurn: nil,
        sourceQuality: nil,
        fitting: .lossless(efforts: [PNGEncoder.defaultEffort, PNGEncoder.strongestEffort],
                           strongest: PNGEncoder.strongestEffort),
        // APNG: frames composited by `APNGFrameSource` (a PNG's frame count is its animation's).
        animation: .frames(open: { try APNGFrameSource.open($0, info: $1, limits: $2, meter: $3) },
                           meteredBytes: { APNGFrameSource.meteredBytes($0) }),
        memory: MemoryEstimate.png)

    static let heif = HEIFFormat.descriptor(.heif)
    /// AVIF through libavif (as Chromium reads it), image sequences through `AVIFAnimationSource`.
    static let avif = AVIFFormat.descriptor

    static let gif = FormatDescriptor(
        format: .gif,
        decoder: GIFDecoder(),
        encoder: { _ in GIFEncoder() },
        // all: the ICC application extension · gps: it and comments · none: everything (the NETSCAPE2.0 loop
        // extension is no metadata: always kept)
        metadataPolicy: StandardMetadataPolicy(keeps: MetadataKeepTable(gps: [.colourProfile, .comment])),
        writableMetadata: { kept, present in kept.restricted(present: present) { GIFApplication.extensionFor($0) != nil } },
        metadataRewriter: GIFRewriter.rewrite,
        losslessTurn: nil,
        sourceQuality: nil,
        fitting: .qualitySearch,
        animation: .nativeGIF,
        memory: MemoryEstimate.stillGIF)

    /// WebP, still and animated. A WebP output is lossy (VP8, alpha kept exactly in a lossless ALPH plane) and
    /// searched over the quality range like a JPEG, capped at a lossy source's own quality (`WebPQuality`); a
    /// still that needs no change is copied byte for byte by the rewriter instead, lossless or not. A lossless
    /// source (screenshots, stickers, line art) written as WebP is encoded lossless first and goes lossy only
    /// over the byte limit (`LosslessFirstLadder`; lossless encoding of a resampled 1440×1080 photo measured
    /// 1.9 MB in 4.3 s, a graphic far less). An animation goes to the animation route through `WebPAnimationSource`.
    static let webp = FormatDescriptor(
        format: .webp,
        decoder: WebPDecoder(),
        encoder: { _ in WebPEncoder() },
        // all: ICCP · gps: ICCP, EXIF (cleaned) · none: everything
        metadataPolicy: StandardMetadataPolicy(keeps: MetadataKeepTable(gps: [.colourProfile, .exif])),
        writableMetadata: { kept, present in kept.writtenAsWebP(present: present) },
        metadataRewriter: WebPRewriter.rewrite,
        losslessTurn: nil,
        sourceQuality: { try? WebPQuality.estimate($0) },
        fitting: .qualitySearch,
        animation: .frames(open: { source, info, limits, meter in
            guard let header = info.webp else { throw SharePipeError.internalError(file: source.displayName,
                                                                                   reason: "no WebP header") }
            return try WebPAnimationSource(source, header: header, limits: limits, meter: meter)
        }, meteredBytes: { WebPAnimationSource.meteredBytes(canvas: $0.size) }),
        memory: MemoryEstimate.webp,
        // A lossless still (screenshot, sticker, line art) stays lossless where that fits the byte limit.
        sameFormatFitting: { $0.webp?.lossless == true && !($0.webp?.isAnimated ?? false) ? .losslessFirst : nil })
}
