import FuzzSupport

/// libFuzzer's entry: one input through the public pipeline as an AVIF upload (libavif: stills, alpha,
/// layered images and `avis` image sequences, which take the animation route frame by frame).
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzAVIF(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    FuzzHarness.run(data, count, format: .avif)
}

FuzzHarness.main(fuzzAVIF)
