import FuzzSupport

/// libFuzzer's entry: one input through the public pipeline as a JPEG upload.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzJPEG(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    FuzzHarness.run(data, count, format: .jpeg)
}

FuzzHarness.main(fuzzJPEG)
