import FuzzSupport

/// libFuzzer's entry: one input through the public pipeline as a WebP upload (stills and animations).
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzWebP(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    FuzzHarness.run(data, count, format: .webp)
}

FuzzHarness.main(fuzzWebP)
