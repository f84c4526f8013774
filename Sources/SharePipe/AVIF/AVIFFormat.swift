/// AVIF as a format: read through libavif (`AVIFDecoder`), never written. An output is a JPEG, or a PNG where
/// the image has alpha (then the service's accepted formats decide, as for any PNG); an image sequence
/// takes the animation route through `AVIFAnimationSource`, as an animated WebP does.
enum AVIFFormat {
    static let descriptor = FormatDescriptor(
        format: .avif,
        decoder: AVIFDecoder(),
        // Never asked for: `writtenAs` sends every still to JPEG or PNG, and animations go to GIF. The JPEG
        // encoder stands here only because a descriptor must name one.
        encoder: { _ in JPEGEncoder() },
        // all: the ICC profile (the file's, or one for its nclx) · gps: it and Exif (cleaned) · none: everything
        // the JPEG or PNG output can hold (always re-encoded: content credentials never survive). As HEIF's.
        metadataPolicy: StandardMetadataPolicy(keeps: MetadataKeepTable(gps: [.colourProfile, .exif])),
        writableMetadata: { kept, present in kept.writtenAsJPEG(present: present) },
        metadataRewriter: nil,
        losslessTurn: nil,
        sourceQuality: nil,
        fitting: .qualitySearch,
        animation: .frames(open: { source, info, limits, meter in
            try AVIFAnimationSource(source, info: info, limits: limits, meter: meter)
        }, meteredBytes: { AVIFAnimationSource.meteredBytes($0) }),
        memory: MemoryEstimate.avif,
        writtenAs: { HEIFFormat.outputFormat(for: $0) })
}

extension MemoryEstimate {
    /// AVIF (`AVIFDecoder.render`): dav1d decodes the first image to YCbCr planes (metered, with its working
    /// buffers: `AVIFDecoding.decodeMemory`), rows are converted to Float and resampled, then encoded as JPEG
    /// (or PNG with alpha), as libheif's route is priced (`MemoryEstimate.heif` without a grid). The animation
    /// route is priced by `animatedGIF`, with the source's part from `AVIFAnimationSource.meteredBytes`.
    static func avif(_ info: ImageInfo, plan: PreparePlan, options: PrepareOptions.Checked, keptMetadata: Int) -> Parts {
        var stillInfo = info
        stillInfo.heifGrid = nil
        return heif(stillInfo, plan: plan, options: options, keptMetadata: keptMetadata)
    }
}
