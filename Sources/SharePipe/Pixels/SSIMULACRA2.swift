import CSharePipe

/// SSIMULACRA2, the perceptual metric of libjxl's tools (`sp_ssimulacra2.h`, written from the published
/// algorithm): how close a picture is to its reference, 100 for the same pixels, 90 "visually lossless", 80
/// very high, 70 "high", 50 "medium". Computed as a stream of rows, so scoring costs about 0.9 KiB per pixel of
/// width (`workingBytes`) besides the two pictures (or one picture and a decoder's rows).
enum SSIMULACRA2 {
    /// The score of `distorted` against `reference`, two bitmaps of one size and layout (alpha is ignored:
    /// composite first).
    static func score(_ distorted: Bitmap, against reference: Bitmap) throws -> Double {
        precondition(
            distorted.size == reference.size && distorted.layout == reference.layout, "pictures differ in shape")
        var message = shimMessageBuffer()
        var score = 0.0
        let status = reference.pixels.withUnsafeBufferPointer { first in
            distorted.pixels.withUnsafeBufferPointer { second in
                sp_ssimulacra2_compare(
                    first.baseAddress, second.baseAddress, Int32(reference.width), Int32(reference.height),
                    Int32(reference.layout.channels), reference.width * reference.layout.channels, &score, &message)
            }
        }
        try EncoderFailure.check(status, message)
        return score
    }

    /// A shim function that decodes an encoded file and scores it against the bitmap it was made from
    /// (`sp_jpeg_ssimulacra2`, `sp_webp_ssimulacra2`).
    typealias EncodedScorer = (
        UnsafePointer<UInt8>?, Int, UnsafePointer<UInt8>?, Int32, Int32, Int32, UnsafeMutablePointer<Double>?,
        UnsafeMutablePointer<CChar>?
    ) -> sp_status

    /// The score of the file `encoded` against `bitmap`, decoded and scored by `scorer`.
    static func score(_ encoded: [UInt8], against bitmap: Bitmap, decodingWith scorer: EncodedScorer) throws
        -> Double
    {
        var message = shimMessageBuffer()
        var score = 0.0
        let status = encoded.withUnsafeBufferPointer { file in
            bitmap.pixels.withUnsafeBufferPointer { pixels in
                scorer(
                    file.baseAddress, file.count, pixels.baseAddress, Int32(bitmap.width), Int32(bitmap.height),
                    Int32(bitmap.layout.channels), &score, &message)
            }
        }
        try EncoderFailure.check(status, message)
        return score
    }

    /// The memory a scorer of pictures of `size` holds while it runs.
    static func workingBytes(_ size: PixelSize) -> Int {
        guard size.width <= Int(Int32.max), size.height <= Int(Int32.max) else { return 0 }
        return sp_ssimulacra2_bytes(Int32(size.width), Int32(size.height))
    }
}

extension JPEGEncoder {
    /// The SSIMULACRA2 score of the JPEG `encoded` against `bitmap`, the picture it was made from (alpha
    /// ignored: the encoder composited it, so pass the composited bitmap), decoded 8 rows at a time
    /// (`sp_jpeg_ssimulacra2`). `encoded` should be baseline: a progressive decode holds every coefficient
    /// (score the baseline twin: the same pixels).
    static func ssimulacra2(_ encoded: [UInt8], against bitmap: Bitmap) throws -> Double {
        try SSIMULACRA2.score(encoded, against: bitmap, decodingWith: sp_jpeg_ssimulacra2)
    }
}

extension WebPEncoder {
    /// The SSIMULACRA2 score of the still WebP `encoded` against `bitmap`, the RGB or RGBA picture it was made
    /// from (`sp_webp_ssimulacra2`: libwebp decodes the whole picture, then 8 rows at a time go to the scorer;
    /// with alpha, the lower score over a dark and a light grey).
    static func ssimulacra2(_ encoded: [UInt8], against bitmap: Bitmap) throws -> Double {
        precondition(bitmap.layout == .rgb || bitmap.layout == .rgba, "expand gray first")
        return try SSIMULACRA2.score(encoded, against: bitmap, decodingWith: sp_webp_ssimulacra2)
    }

    /// What scoring a WebP encode of `size` needs beside the render: libwebp's decoded picture, the scorer (two
    /// with alpha) and the band of composited or copied rows.
    static func scoringBytes(_ size: PixelSize, alpha: Bool) -> Int {
        let channels = alpha ? 4 : 3
        return size.area * channels + SSIMULACRA2.workingBytes(size) * (alpha ? 2 : 1) + 16 * size.width * 3
    }
}
