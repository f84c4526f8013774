import FuzzSupport

/// libFuzzer's entry: one input through the public pipeline as a HEIF/HEIC upload (libheif, and the grid
/// route's libde265 tiles). AVIF has a target of its own (FuzzAVIF).
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzHEIF(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    FuzzHarness.run(data, count, format: .heif)
}

FuzzHarness.main(fuzzHEIF)
