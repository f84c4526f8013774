import FuzzSupport

/// libFuzzer's entry: one animated input (GIF, animated WebP or APNG, by its magic bytes) through the public
/// pipeline with animations written as video, so every run goes through the frame sources, the resampler,
/// OpenH264 and the MP4 writer (`.mp4` output). Stills are rejected: they never reach the video route.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzMP4(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    FuzzHarness.runVideo(data, count)
}

FuzzHarness.main(fuzzMP4)
