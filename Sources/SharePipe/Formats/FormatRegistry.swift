/// The one mapping from a format to its parts. Nothing else in the library names a concrete decoder,
/// encoder, metadata policy or rewriter for a format.
///
/// Each format's keep table (`MetadataKeepTable`) is written here, in its descriptor: `all` keeps the colour
/// profile, `none` keeps everything, and `gps` keeps what the table names. Whatever it does not name (an
/// unknown APPn, chunk, box, item or extension; content credentials) is removed under `all` and `gps`.
///
/// `all` is the list everything else derives from: sniffing asks its formats in order (`ImageFormat.sniff`),
/// `ImageFormat`'s file extension, media type and the "not a …" message read it, and the tests' per-format
/// loops and the fuzz targets are checked against it (`FormatRegistryTests`).
enum FormatRegistry {
    /// Every format, in the order sniffing tries them (each `matches` is exclusive of the others').
    static let all: [FormatDescriptor] = [jpeg, png, gif, webp, heif, avif]

    /// Formats SharePipe writes but never reads (MP4, for animations as video): not sniffed, no input is one.
    static let writtenOnly: [FormatDescriptor] = [mp4]

    private static let byFormat: [ImageFormat: FormatDescriptor] = Dictionary(
        uniqueKeysWithValues: (all + writtenOnly).map { ($0.format, $0) })

    /// The descriptor for `format`.
    static func descriptor(for format: ImageFormat) -> FormatDescriptor {
        guard let descriptor = byFormat[format] else {
            fatalError("no descriptor for \(format) in FormatRegistry.all")  // FormatRegistryTests checks every case
        }
        return descriptor
    }

    static let jpeg = FormatDescriptor(
        format: .jpeg, signatureName: "JPEG", fileExtension: "jpg", mediaType: "image/jpeg",
        matches: { $0.starts(with: [0xFF, 0xD8, 0xFF]) },
        decoder: JPEGDecoder(),
        encoder: { _ in JPEGEncoder() },
        // all: ICC · gps: ICC, Exif (no GPS, thumbnail, embedded XMP/IPTC), COM · none: everything
        metadataPolicy: StandardMetadataPolicy(keeps: MetadataKeepTable(gps: [.colourProfile, .exif, .comment])),
        writableMetadata: { kept, present in kept.writtenAsJPEG(present: present) },
        metadataRewriter: JPEGRewriter.rewrite,
        losslessTurn: JPEGTurner.turn,
        // Saved on libjpeg's Annex K scale; the ceiling by comparing the tables with SharePipe's (`JPEGQuality`).
        sourceQuality: { try? JPEGQuality.sourceQuality($0) },
        fitting: .qualitySearch,
        animation: nil,
        memory: MemoryEstimate.jpeg)

    static let png = FormatDescriptor(
        format: .png, signatureName: "PNG", fileExtension: "png", mediaType: "image/png",
        matches: { $0.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) },
        decoder: PNGDecoder(),
        // The PNG encoder carries a PNG source's colour and physical chunks.
        encoder: { PNGEncoder(preserving: $0) },
        // all: iCCP · gps: iCCP, eXIf (cleaned), tEXt/zTXt/iTXt without XMP or raw profiles, tIME · none: everything
        metadataPolicy: StandardMetadataPolicy(keeps: MetadataKeepTable(gps: [.colourProfile, .exif, .text, .time])),
        writableMetadata: { kept, present in kept.writtenAsReencodedPNG(present: present) },
        metadataRewriter: PNGRewriter.rewrite,
        losslessTurn: nil,
        sourceQuality: nil,
        fitting: .lossless(
            efforts: [PNGEncoder.defaultEffort, PNGEncoder.strongestEffort],
            strongest: PNGEncoder.strongestEffort),
        // APNG: frames composited by `APNGFrameSource` (a PNG's frame count is its animation's).
        animation: .frames(
            open: { try APNGFrameSource.open($0, info: $1, limits: $2, meter: $3) },
            meteredBytes: { APNGFrameSource.meteredBytes($0) }),
        memory: MemoryEstimate.png)

    /// HEIF/HEIC through libheif (and the HEVC tile route, `HEIFTileDecoding`), stills only.
    static let heif = heifFamily(
        .heif, signatureName: "HEIC", fileExtension: "heic", mediaType: "image/heic",
        decoder: HEIFDecoder(format: .heif), animation: nil, memory: MemoryEstimate.heif)
    /// AVIF through libavif (as Chromium reads it), image sequences through `AVIFAnimationSource`.
    static let avif = heifFamily(
        .avif, signatureName: "AVIF", fileExtension: "avif", mediaType: "image/avif",
        decoder: AVIFDecoder(),
        animation: .frames(
            open: { source, info, limits, meter in
                try AVIFAnimationSource(source, info: info, limits: limits, meter: meter)
            }, meteredBytes: { AVIFAnimationSource.meteredBytes($0) }),
        memory: MemoryEstimate.avif)

    /// HEIF and AVIF: input only, told apart by the `ftyp` brands (`HEIFBrands.family`). No service takes them,
    /// so an output is a JPEG, or a PNG where the image has alpha (then, if the service refuses PNG, its accepted
    /// formats decide as for any PNG). One keep table and output rule; each has its own decoder (libheif,
    /// libavif), animation support and memory model.
    private static func heifFamily(
        _ format: ImageFormat, signatureName: String, fileExtension: String, mediaType: String,
        decoder: any ImageDecoder, animation: AnimationSupport?,
        memory: @escaping MemoryModel
    ) -> FormatDescriptor {
        FormatDescriptor(
            format: format, signatureName: signatureName, fileExtension: fileExtension, mediaType: mediaType,
            matches: { HEIFBrands.family($0) == format },
            decoder: decoder,
            // Never asked for: `writtenAs` sends every still to JPEG or PNG, and animations go to GIF. The JPEG
            // encoder stands here only because a descriptor must name one.
            encoder: { _ in JPEGEncoder() },
            // all: the ICC profile (the file's, or one for its nclx) · gps: it and Exif (cleaned) · none: everything
            // that the JPEG or PNG output can hold (always re-encoded: content credentials never survive)
            metadataPolicy: StandardMetadataPolicy(keeps: MetadataKeepTable(gps: [.colourProfile, .exif])),
            writableMetadata: { kept, present in kept.writtenAsJPEG(present: present) },
            metadataRewriter: nil,
            losslessTurn: nil,
            sourceQuality: nil,
            fitting: .qualitySearch,
            animation: animation,
            memory: memory,
            writtenAs: { $0.hasAlpha ? .png : .jpeg })
    }

    static let gif = FormatDescriptor(
        format: .gif, signatureName: "GIF", fileExtension: "gif", mediaType: "image/gif",
        matches: { $0.starts(with: Array("GIF89a".utf8)) || $0.starts(with: Array("GIF87a".utf8)) },
        decoder: GIFDecoder(),
        encoder: { _ in GIFEncoder() },
        // all: the ICC application extension · gps: it and comments · none: everything (the NETSCAPE2.0 loop
        // extension is no metadata: always kept)
        metadataPolicy: StandardMetadataPolicy(keeps: MetadataKeepTable(gps: [.colourProfile, .comment])),
        writableMetadata: { kept, present in
            kept.restricted(present: present) { GIFApplication.extensionFor($0) != nil }
        },
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
        format: .webp, signatureName: "WebP", fileExtension: "webp", mediaType: "image/webp",
        matches: { $0.count >= 12 && $0.starts(with: Array("RIFF".utf8)) && $0[8..<12].elementsEqual("WEBP".utf8) },
        decoder: WebPDecoder(),
        encoder: { _ in WebPEncoder() },
        // all: ICCP · gps: ICCP, EXIF (cleaned) · none: everything
        metadataPolicy: StandardMetadataPolicy(keeps: MetadataKeepTable(gps: [.colourProfile, .exif])),
        writableMetadata: { kept, present in kept.writtenAsWebP(present: present) },
        metadataRewriter: WebPRewriter.rewrite,
        losslessTurn: nil,
        // libwebp's quality is the scale SharePipe's WebP quality passes on: the ceiling is the estimate.
        sourceQuality: { (try? WebPQuality.estimate($0)).flatMap { $0 }.map(SourceQuality.init(sameScale:)) },
        fitting: .qualitySearch,
        animation: .frames(
            open: { source, info, limits, meter in
                guard let header = info.webp else {
                    throw SharePipeError.internalError(
                        file: source.displayName,
                        reason: "no WebP header")
                }
                return try WebPAnimationSource(source, header: header, limits: limits, meter: meter)
            }, meteredBytes: { WebPAnimationSource.meteredBytes(canvas: $0.size) }),
        memory: MemoryEstimate.webp,
        // A lossless still (screenshot, sticker, line art) stays lossless where that fits the byte limit.
        sameFormatFitting: { $0.webp?.lossless == true && !($0.webp?.isAnimated ?? false) ? .losslessFirst : nil })
}
