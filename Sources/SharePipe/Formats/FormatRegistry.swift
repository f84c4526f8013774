/// The one mapping from a format to its parts. Nothing else in the library names a concrete decoder,
/// encoder, metadata policy or rewriter for a format.
enum FormatRegistry {
    /// The descriptor for `format`.
    static func descriptor(for format: ImageFormat) -> FormatDescriptor {
        switch format {
        case .jpeg: return jpeg
        case .png: return png
        case .gif: return gif
        }
    }

    static let jpeg = FormatDescriptor(
        format: .jpeg,
        decoder: JPEGDecoder(),
        encoder: { _ in JPEGEncoder() },
        metadataPolicy: StandardMetadataPolicy(),
        writableMetadata: { kept, present in kept.writtenAsJPEG(present: present) },
        metadataRewriter: JPEGRewriter.rewrite,
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
        sourceQuality: nil,
        fitting: .lossless(efforts: [PNGEncoder.defaultEffort, PNGEncoder.strongestEffort],
                           strongest: PNGEncoder.strongestEffort),
        // APNG: frames composited by `APNGFrameSource` (a PNG's frame count is its animation's).
        animation: .frames { try APNGFrameSource.open($0, info: $1, limits: $2) },
        memory: MemoryEstimate.png)

    static let gif = FormatDescriptor(
        format: .gif,
        decoder: GIFDecoder(),
        encoder: { _ in GIFEncoder() },
        metadataPolicy: GIFMetadataPolicy(),
        writableMetadata: { kept, present in kept.restricted(present: present) { GIFApplication.extensionFor($0) != nil } },
        metadataRewriter: nil,
        sourceQuality: nil,
        fitting: .qualitySearch,
        animation: .nativeGIF,
        memory: MemoryEstimate.stillGIF)
}
