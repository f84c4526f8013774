import FuzzSupport

/// libFuzzer's entry: one input through the public pipeline as a PNG upload.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzPNG(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    FuzzHarness.run(data, count, format: .png)
}

FuzzHarness.main(fuzzPNG)
