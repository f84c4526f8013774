import CSharePipe

/// One H.264 stream through OpenH264 (`sp_h264.h`): straight-alpha RGBA pictures in, MP4 samples out.
///
/// Each picture is composited over `background` where its alpha is below 255 (MP4 has no transparency),
/// converted to 8-bit 4:2:0 BT.709 limited-range YCbCr (the VUI says so) and encoded at one fixed quantiser
/// (`quantizer`, rate control off: the fitting ladder picks it), Main profile with CABAC, OpenH264's screen-content
/// mode (animations are mostly drawn pictures). The stream's first
/// picture is an IDR picture; so is every `keyInterval`-th after it, and every picture OpenH264's scene-change
/// detection makes one. Runs on the calling thread only (no encoder threads).
///
/// A picture can be shown for longer by coding it again (`encodeRepeat`): a P picture that repeats the one before.
///
/// Memory: two 4:2:0 pictures (1.5 bytes per pixel each: the one being encoded, the last one coded, which a
/// repeat codes again), OpenH264's reference and reconstruction pictures (about three more), the screen-content
/// search tables, and the last sample; counted in the job's meter as `meteredBytes(for:)`.
final class H264Encoder {
    /// The library could not be loaded (libopenh264.so.7 missing): the message says so.
    struct Unavailable: Error {
        var reason: String
    }

    /// One encoded picture.
    struct Sample {
        var bytes: UnsafeBufferPointer<UInt8>
        var isKey: Bool
        /// Pixels whose alpha was below 255 (composited over the background).
        var transparentPixels: Int
    }

    let size: PixelSize
    let quantizer: Int
    private let handle: OpaquePointer
    private let meter: PixelMemoryMeter
    private let countedBytes: Int

    /// Bytes the encoder holds for pictures of `size`: its input picture and the last picture coded, about three
    /// reference and reconstruction pictures, and a sample buffer, at 1.5 bytes per pixel each, and the
    /// screen-content mode's search tables, about 12 bytes per pixel (peak RSS against camera mode: 11.9 at
    /// 1000×1000, 10.4 at 1920×1080).
    static func meteredBytes(for size: PixelSize) -> Int { size.area * 3 / 2 * 6 + size.area * 12 }

    /// Opens an encoder for pictures of `size` (even, 16...4096 on both axes) at `quantizer` (0...51).
    init(size: PixelSize, quantizer: Int, frameRate: Double, keyInterval: Int, meter: PixelMemoryMeter) throws {
        self.size = size
        self.quantizer = quantizer
        var settings = sp_h264_settings(
            width: Int32(size.width), height: Int32(size.height), quantizer: Int32(quantizer),
            frame_rate: Float(frameRate), key_interval: Int32(keyInterval), main_profile: 1)
        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        let status = sp_h264_open(&settings, &handle, &message)
        if status == SP_ERR_UNAVAILABLE { throw Unavailable(reason: shimText(message)) }
        try EncoderFailure.check(status, message)
        guard let handle else { throw EncoderFailure(reason: "OpenH264 made no encoder", outOfMemory: false) }
        self.handle = handle
        self.meter = meter
        countedBytes = Self.meteredBytes(for: size)
        meter.allocate(countedBytes)
    }

    deinit {
        sp_h264_close(handle)
        meter.release(countedBytes)
    }

    /// Encodes `rgba` (straight alpha, `size`, rows top to bottom) shown from `timestampMilliseconds`, composited
    /// over `background` (0xRRGGBB). The sample's bytes are valid until the next call; empty when OpenH264 skipped
    /// the picture.
    func encode(_ rgba: [UInt8], timestampMilliseconds: Int, background: UInt32, forceKey: Bool = false) throws
        -> Sample
    {
        precondition(rgba.count == size.area * 4, "H264Encoder: a picture of the wrong size")
        var message = shimMessageBuffer()
        var sample: UnsafePointer<UInt8>?
        var length = 0
        var isKey: Int32 = 0
        var transparent = 0
        let status = rgba.withUnsafeBufferPointer { pixels in
            sp_h264_encode_rgba(
                handle, pixels.baseAddress, size.width * 4, background, Int64(timestampMilliseconds),
                forceKey ? 1 : 0, &sample, &length, &isKey, &transparent, &message)
        }
        try EncoderFailure.check(status, message)
        return Sample(
            bytes: UnsafeBufferPointer(start: sample, count: sample == nil ? 0 : length), isKey: isKey != 0,
            transparentPixels: transparent)
    }

    /// Codes the last picture coded (not skipped) again, shown from `timestampMilliseconds`: OpenH264 writes a P
    /// picture of skipped macroblocks (tens of bytes), an IDR picture with `forceKey`. Never empty: a repeat the
    /// encoder skipped is coded again as an IDR picture.
    func encodeRepeat(timestampMilliseconds: Int, forceKey: Bool = false) throws -> Sample {
        func repeatOnce(key: Bool) throws -> Sample {
            var message = shimMessageBuffer()
            var sample: UnsafePointer<UInt8>?
            var length = 0
            var isKey: Int32 = 0
            let status = sp_h264_encode_repeat(
                handle, Int64(timestampMilliseconds), key ? 1 : 0, &sample, &length, &isKey, &message)
            try EncoderFailure.check(status, message)
            return Sample(
                bytes: UnsafeBufferPointer(start: sample, count: sample == nil ? 0 : length), isKey: isKey != 0,
                transparentPixels: 0)
        }
        let sample = try repeatOnce(key: forceKey)
        guard sample.bytes.isEmpty, !forceKey else { return sample }
        let key = try repeatOnce(key: true)
        guard !key.bytes.isEmpty else {
            throw EncoderFailure(reason: "OpenH264 skipped a repeated picture twice", outOfMemory: false)
        }
        return key
    }

    /// The sequence and picture parameter sets, known once a picture was encoded.
    func parameterSets() throws -> (sps: [UInt8], pps: [UInt8]) {
        var message = shimMessageBuffer()
        var sps: UnsafePointer<UInt8>?
        var pps: UnsafePointer<UInt8>?
        var spsLength = 0
        var ppsLength = 0
        let status = sp_h264_parameter_sets(handle, &sps, &spsLength, &pps, &ppsLength, &message)
        guard status == SP_OK, let sps, let pps else {
            throw EncoderFailure(reason: "H.264: " + shimText(message), outOfMemory: false)
        }
        return (
            Array(UnsafeBufferPointer(start: sps, count: spsLength)),
            Array(UnsafeBufferPointer(start: pps, count: ppsLength))
        )
    }
}
