import CSharePipe

/// Encodes WebP through libwebp, lossy (VP8, `settings.quality`) or lossless (VP8L), and writes the kept
/// metadata through WebPMux: ICC (ICCP), Exif (EXIF, a TIFF structure) and XMP. Unknown chunks of a WebP
/// source are not written into a re-encoded file (only the metadata-only rewrite copies them). Without
/// metadata the file is a simple one (no VP8X).
///
/// Lossy or lossless: a lossy source stays lossy and is searched over the quality range like a JPEG. A
/// lossless source (screenshots, stickers, line art) is encoded lossless first (`settings.lossless`, on the
/// `LosslessFirstLadder`) — a lossy encode would blur its edges and often come out larger — and falls back
/// to lossy only where lossless does not fit the byte limit; VP8 keeps alpha exactly (a lossless ALPH
/// chunk), so transparency survives either way.
struct WebPEncoder: ImageEncoder {
    var format: ImageFormat { .webp }
    /// VP8L instead of VP8.
    var lossless = false
    /// libwebp's speed/size trade-off, 0 (fast) ... 6 (slowest, smallest); 4 is cwebp's default.
    var method = 4

    func encode(_ bitmap: Bitmap, settings: EncodeSettings, metadata: [MetadataBlock]) throws -> [UInt8] {
        var source = bitmap
        if bitmap.layout == .gray || bitmap.layout == .grayAlpha { source = bitmap.expandedToRGB() }
        let chunks = Self.chunks(for: metadata, unknown: false)
        // Lossless "quality" is libwebp's compression effort. cwebp's default (75, method 4) is used for every
        // effort below the strongest; the strongest (9) spends 100. Measured on a 1440×1080 photo: 75 took
        // 4.3 s, 100 took 8.8 s for 0.1 % fewer bytes (and 100 with method 6, cwebp -z 9, took 138 s).
        let lossless = self.lossless || settings.lossless
        let quality = lossless ? (settings.effort >= 9 ? 100 : 75) : settings.quality
        let webpSettings = sp_webp_encode_settings(
            lossless: lossless ? 1 : 0, quality: Int32(quality), method: Int32(method))
        var message = shimMessageBuffer()
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = source.pixels.withUnsafeBufferPointer { pixels in
            Self.withChunkArray(chunks) { array in
                sp_webp_encode(
                    pixels.baseAddress, Int32(source.width), Int32(source.height), Int32(source.layout.channels),
                    webpSettings, array.baseAddress, Int32(array.count), &out, &length, &message)
            }
        }
        defer { sp_free(out) }
        try EncoderFailure.check(status, message)
        guard let out else { throw EncoderFailure(reason: "libwebp produced no data", outOfMemory: false) }
        return Array(UnsafeBufferPointer(start: out, count: length))
    }

    /// The chunks a WebP carries for `metadata`: ICCP, EXIF, "XMP " and, with `unknown`, the unknown chunks
    /// of a WebP source (`.other` blocks tagged "WebP XXXX").
    static func chunks(for metadata: [MetadataBlock], unknown: Bool) -> [(fourCC: String, data: [UInt8])] {
        var chunks: [(fourCC: String, data: [UInt8])] = []
        var seen = Set<String>()
        func add(_ fourCC: String, _ data: [UInt8]) {
            guard !data.isEmpty, seen.insert(fourCC).inserted else { return }  // one chunk of each kind
            chunks.append((fourCC, data))
        }
        for block in metadata {
            switch block {
            case .icc(let profile): add("ICCP", profile)
            case .exif(let tiff): add("EXIF", tiff)
            case .xmp(let packet): add("XMP ", packet)
            case .other(let tag, let data) where unknown && tag.hasPrefix("WebP ") && tag.utf8.count == 9:
                let fourCC = String(tag.dropFirst(5))
                if !WebPScan.imageChunks.contains(fourCC) { add(fourCC, data) }
            default:
                continue  // other formats' blocks (JPEG APPn, PNG text, IPTC) have no WebP chunk
            }
        }
        return chunks
    }

    private static func withChunkArray<T>(
        _ chunks: [(fourCC: String, data: [UInt8])],
        _ body: (UnsafeBufferPointer<sp_webp_chunk>) -> T
    ) -> T {
        // Each payload pointer must stay valid during the call.
        withUnsafeBufferPointers(ofEach: chunks.map(\.data)) { payloads in
            let built = zip(chunks, payloads).map { chunk, data in
                let code = Array(chunk.fourCC.utf8).map { CChar(bitPattern: $0) }
                return sp_webp_chunk(
                    fourcc: (code[0], code[1], code[2], code[3]), data: data.baseAddress, length: data.count)
            }
            return built.withUnsafeBufferPointer(body)
        }
    }
}

extension MetadataOutcome {
    /// The outcome once the image is re-encoded as a WebP: only ICC, Exif and XMP have chunks there (one
    /// each); IPTC, comments, PNG text, extended XMP and other formats' or unknown chunks move to removed.
    func writtenAsWebP(present: Set<MetadataKind>) -> MetadataOutcome {
        let chunks = WebPEncoder.chunks(for: kept, unknown: false)
        var written = Set<String>()
        return restricted(present: present) { block in
            let fourCC: String
            switch block {
            case .icc: fourCC = "ICCP"
            case .exif: fourCC = "EXIF"
            case .xmp: fourCC = "XMP "
            default: return false
            }
            // The first block of each kind is the one written.
            return chunks.contains { $0.fourCC == fourCC } && written.insert(fourCC).inserted
        }
    }
}

extension Bitmap {
    /// Gray or gray+alpha widened to RGB or RGBA (WebP has no gray mode).
    func expandedToRGB() -> Bitmap {
        guard layout == .gray || layout == .grayAlpha else { return self }
        let alpha = layout == .grayAlpha
        var out = [UInt8](repeating: 0, count: size.area * (alpha ? 4 : 3))
        pixels.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                for i in 0..<size.area {
                    let value = input[alpha ? 2 * i : i]
                    let o = i * (alpha ? 4 : 3)
                    output[o] = value; output[o + 1] = value; output[o + 2] = value
                    if alpha { output[o + 3] = input[2 * i + 1] }
                }
            }
        }
        return Bitmap(size: size, layout: alpha ? .rgba : .rgb, pixels: out)
    }
}
