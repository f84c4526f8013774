/// The one mapping from a format to its parts. Nothing else in the library names a concrete decoder,
/// encoder, metadata policy or rewriter for a format.
enum FormatRegistry {
    /// The descriptor for `format`.
    static func descriptor(for format: ImageFormat) -> FormatDescriptor {
        switch format {
        case .jpeg: return jpeg
        case .png: return png
        case .gif: return gif
        case .heif: return heif
        case .avif: return avif
        }
    }

    static let jpeg = FormatDescriptor(
        format: .jpeg,
        decoder: JPEGDecoder(),
        encoder: { _ in JPEGEncoder() },
        metadataPolicy: StandardMetadataPolicy(),
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
        metadataPolicy: StandardMetadataPolicy(),
        writableMetadata: { kept, present in kept.writtenAsReencodedPNG(present: present) },
        metadataRewriter: PNGRewriter.rewrite,
        losslessTurn: nil,
        sourceQuality: nil,
        fitting: .lossless(efforts: [PNGEncoder.defaultEffort, PNGEncoder.strongestEffort],
                           strongest: PNGEncoder.strongestEffort),
        animation: nil,
        memory: MemoryEstimate.png)

    static let heif = HEIFFormat.descriptor(.heif)
    static let avif = HEIFFormat.descriptor(.avif)

    static let gif = FormatDescriptor(
        format: .gif,
        decoder: GIFDecoder(),
        encoder: { _ in GIFEncoder() },
        metadataPolicy: GIFMetadataPolicy(),
        writableMetadata: { kept, present in kept.restricted(present: present) { GIFApplication.extensionFor($0) != nil } },
        metadataRewriter: GIFRewriter.rewrite,
        losslessTurn: nil,
        sourceQuality: nil,
        fitting: .qualitySearch,
        animation: .nativeGIF,
        memory: MemoryEstimate.stillGIF)
}
