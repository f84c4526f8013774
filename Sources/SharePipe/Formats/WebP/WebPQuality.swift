/// Estimates the quality setting a lossy WebP was encoded with, from its VP8 frame header alone, so that a
/// WebP written from it never spends more quality than the source had (`FormatDescriptor.sourceQuality`,
/// as JPEG's `JPEGQuality` does from its tables).
///
/// A VP8 key frame's first partition opens with a boolean-coded header (RFC 6386 §9.2–9.6): colour space,
/// segmentation (up to four segment quantizers, absolute or relative to the base), loop filter, partition
/// count, then the base quantizer index (0…127). The segments' quantizers are mapped back through libwebp's
/// encoder curve (quant_enc.c: the quality's "compression" c is (2/3 × q below q = 0.75, else 2q − 1) raised to
/// ⅓, and index = 127 × (1 − c)), undoing its per-segment modulation (`baseCompression`). An encoder other
/// than libwebp's has its own curve, so the value is an estimate; it is rounded up, because a cap below the
/// source's own quality would lose detail the source has. Lossless (VP8L) and animated files: nil.
enum WebPQuality {
    /// The estimated quality (1…100), or nil for a lossless, animated or unreadable file.
    static func estimate(_ source: ImageSource) throws -> Int? {
        let walker = try WebPChunkWalker(source)
        while let chunk = try walker.next() {
            switch chunk.fourCC {
            case "VP8 ":
                return estimate(vp8: try walker.read(min(chunk.size, 256)))
            case "VP8L", "ANMF", "ANIM":
                return nil
            default:
                continue
            }
        }
        return nil
    }

    /// The estimate from the start of a VP8 chunk's payload (its first bytes up to the end of the quantizers).
    static func estimate(vp8 payload: [UInt8]) -> Int? {
        guard let indices = segmentQuantizerIndices(payload) else { return nil }
        return quality(forCompression: baseCompression(indices))
    }

    /// The base "compression" c (libwebp's `c_base`, 0…1) the segments' indices were made from. libwebp's
    /// noise shaping gives each segment c_base^(1 − amp × αᵢ); in its output most segments sit above the base
    /// index and the finest one at it or below (cwebp -q 30…95 on a 12 MP photo: the finest index is the base
    /// exactly; on a 200×150 one, up to 4 below). So the finest segment is taken: the estimate is the source's
    /// quality or a little above, the safe side for a cap. Each index was truncated, so 1 − index / 127 is
    /// the top of its range.
    static func baseCompression(_ indices: [Int]) -> Double {
        1 - Double(indices.min()!) / 127
    }

    /// libwebp's encoder curve inverted: the quality (1…100, rounded up) whose compression is `c`.
    static func quality(forCompression c: Double) -> Int {
        let compression = max(0, min(1, c))
        let linear = compression * compression * compression
        let q = linear < 0.5 ? linear * 1.5 : (linear + 1) / 2
        return max(1, min(100, Int((q * 100 - 0.5).rounded(.up))))
    }

    /// The quantizer index (0…127) of each segment (one when the frame has no segments), from the key
    /// frame's header.
    static func segmentQuantizerIndices(_ payload: [UInt8]) -> [Int]? {
        // Frame tag (3 bytes: key frame bit 0 clear, version, show frame, first partition size), start code, size.
        guard payload.count > 10, payload[0] & 1 == 0, payload[3] == 0x9D, payload[4] == 0x01, payload[5] == 0x2A else {
            return nil
        }
        var bits = BooleanDecoder(payload[10...])
        _ = bits.literal(2)  // colour space, clamping type
        var segmentQuantizers: [Int]?
        var absolute = false
        if bits.flag() {  // segmentation enabled
            let updateMap = bits.flag()
            if bits.flag() {  // segment feature data
                absolute = bits.flag()
                segmentQuantizers = (0..<4).map { _ in bits.flag() ? bits.signed(7) : 0 }
                for _ in 0..<4 where bits.flag() { _ = bits.signed(6) }  // loop filter levels
            }
            if updateMap { for _ in 0..<3 where bits.flag() { _ = bits.literal(8) } }
        }
        _ = bits.literal(1 + 6 + 3)  // filter type, level, sharpness
        if bits.flag(), bits.flag() {  // loop filter deltas, updated
            for _ in 0..<8 where bits.flag() { _ = bits.signed(6) }
        }
        _ = bits.literal(2)  // partitions
        let base = bits.literal(7)
        guard !bits.exhausted else { return nil }
        guard let segments = segmentQuantizers else { return [base] }
        return segments.map { max(0, min(127, absolute ? $0 : base + $0)) }
    }
}

/// VP8's boolean entropy decoder (RFC 6386 §7), enough for the frame header's literals at probability ½.
struct BooleanDecoder {
    private let bytes: ArraySlice<UInt8>
    private var next: Int
    private var value: UInt32
    private var range: UInt32 = 255
    private var bitCount = 0
    /// Set once the decoder read past the data it was given (the values read since are meaningless).
    private(set) var exhausted = false

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        next = bytes.startIndex
        value = 0
        for _ in 0..<2 { value = value << 8 | UInt32(nextByte()) }
    }

    private mutating func nextByte() -> UInt8 {
        guard next < bytes.endIndex else { exhausted = true; return 0 }
        defer { next += 1 }
        return bytes[next]
    }

    mutating func bool(probability: UInt32 = 128) -> Bool {
        let split = 1 + (((range - 1) * probability) >> 8)
        let bigSplit = split << 8
        let bit: Bool
        if value >= bigSplit {
            bit = true
            range -= split
            value -= bigSplit
        } else {
            bit = false
            range = split
        }
        while range < 128 {
            value <<= 1
            range <<= 1
            bitCount += 1
            if bitCount == 8 {
                bitCount = 0
                value |= UInt32(nextByte())
            }
        }
        return bit
    }

    mutating func flag() -> Bool { bool() }

    /// An unsigned `count`-bit literal, most significant bit first.
    mutating func literal(_ count: Int) -> Int {
        var result = 0
        for _ in 0..<count { result = result << 1 | (bool() ? 1 : 0) }
        return result
    }

    /// A `count`-bit magnitude followed by a sign bit.
    mutating func signed(_ count: Int) -> Int {
        let magnitude = literal(count)
        return bool() ? -magnitude : magnitude
    }
}
