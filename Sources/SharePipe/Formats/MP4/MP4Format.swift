/// MP4 is written, never read: an animation becomes an H.264 MP4 on the video route (`VideoRoute`), and an MP4
/// input is not recognised (its signature is no image's). The descriptor's decoder and still encoder exist only
/// because a descriptor names one; nothing asks them (`FormatRegistry.writtenOnly`).
struct MP4NoDecoder: ImageDecoder {
    var format: ImageFormat { .mp4 }

    func probe(_ source: ImageSource, limits: ImageLimits) throws -> ImageInfo {
        throw SharePipeError.unsupportedFormat(
            file: source.displayName, missing: .format, reason: "MP4 is an output format only")
    }

    func render(
        _ source: ImageSource, info: ImageInfo, target: PixelSize, limits: ImageLimits, meter: PixelMemoryMeter
    ) throws -> RenderedImage {
        throw SharePipeError.unsupportedFormat(
            file: source.displayName, missing: .format, reason: "MP4 is an output format only")
    }
}

extension FormatRegistry {
    /// H.264 in MP4, for animations on the video route. No metadata is written: whatever the strip mode keeps of
    /// the input's moves to the removed list (`writableMetadata`), so the report says what the file holds.
    static let mp4 = FormatDescriptor(
        format: .mp4, signatureName: "MP4", fileExtension: "mp4", mediaType: "video/mp4",
        matches: { _ in false },
        decoder: MP4NoDecoder(),
        // Never asked for: a still is never written as MP4.
        encoder: { _ in JPEGEncoder() },
        metadataPolicy: StandardMetadataPolicy(keeps: MetadataKeepTable(gps: [.colourProfile])),
        writableMetadata: { kept, present in kept.restricted(present: present) { _ in false } },
        metadataRewriter: nil,
        losslessTurn: nil,
        sourceQuality: nil,
        fitting: .qualitySearch,
        animation: nil,
        memory: MemoryEstimate.stillGIF)
}
