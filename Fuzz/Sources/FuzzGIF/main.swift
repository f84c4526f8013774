import FuzzSupport

/// libFuzzer's entry: one input through the public pipeline as a GIF upload.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzGIF(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    FuzzHarness.run(data, count, format: .gif)
}

FuzzHarness.main(fuzzGIF)
