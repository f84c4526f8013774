extension MemoryEstimate {
    /// AVIF (`AVIFDecoder.render`): dav1d decodes the first image to YCbCr planes (metered, with its working
    /// buffers: `AVIFDecoding.decodeMemory`), rows are converted to Float and resampled, then encoded as JPEG
    /// (or PNG with alpha), as libheif's route is priced (`MemoryEstimate.heif` without a grid). The animation
    /// route is priced by `animatedGIF`, with the source's part from `AVIFAnimationSource.meteredBytes`.
    static func avif(_ info: ImageInfo, plan: PreparePlan, options: PrepareOptions.Checked, keptMetadata: Int) -> Parts
    {
        var stillInfo = info
        stillInfo.heifGrid = nil
        return heif(stillInfo, plan: plan, options: options, keptMetadata: keptMetadata)
    }
}
