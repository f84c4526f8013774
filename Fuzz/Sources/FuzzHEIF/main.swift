import FuzzSupport
import SharePipe

/// libFuzzer's entry: one input through the public pipeline as a HEIF/HEIC upload (libheif) or an AVIF upload
/// (libavif, stills and image sequences); the input's brand picks which.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzHEIF(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let prefix = data.map { Array(UnsafeBufferPointer(start: $0, count: min(count, 16))) } ?? []
    return FuzzHarness.run(data, count, format: ImageFormat.sniff(prefix) == .avif ? .avif : .heif)
}

FuzzHarness.main(fuzzHEIF)
