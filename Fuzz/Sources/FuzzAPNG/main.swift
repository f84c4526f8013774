import FuzzSupport

/// libFuzzer's entry: one input through the public pipeline as an animated PNG upload. Only PNGs with an
/// `acTL` chunk are kept, so the time goes to the animation chunks, the per-frame streams and compositing.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzAPNG(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let data, FuzzHarness.containsChunkType("acTL", data, count) else { return -1 }
    return FuzzHarness.run(data, count, format: .png)
}

FuzzHarness.main(fuzzAPNG)
