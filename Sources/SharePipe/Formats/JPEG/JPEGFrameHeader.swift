/// The JPEG coding process a file declares in its frame header (SOFn), read by a small marker walk.
///
/// libjpeg-turbo 2.1 decodes 8-bit baseline, extended, progressive and arithmetic-coded JPEGs, and nothing
/// else: 12-bit samples (SOF1/SOF2 with precision 12, from medical and some camera pipelines) and lossless
/// (SOF3, SOF7, SOF11, SOF15) and hierarchical (SOF5–7, SOF13–15) files make it fail with a library
/// message. Those files are not damaged, so after such a failure this walk says why they are
/// `unsupportedFormat` rather than corrupt.
struct JPEGFrameHeader {
    /// The SOF marker's second byte (0xC0 … 0xCF).
    var marker: UInt8
    /// Bits per sample.
    var precision: Int

    /// Why libjpeg-turbo cannot decode this frame, or nil when it can.
    var unsupportedReason: String? {
        let sof = "SOF\(marker - 0xC0)"
        switch marker {
        case 0xC3, 0xC7, 0xCB, 0xCF:
            return "lossless JPEG (\(sof), \(precision)-bit), which libjpeg-turbo 2.1 cannot decode"
        case 0xC5, 0xC6, 0xCD, 0xCE:
            return "hierarchical JPEG (\(sof)), which libjpeg-turbo 2.1 cannot decode"
        default:
            return precision == 8
                ? nil
                : "\(precision)-bit JPEG (\(sof)); libjpeg-turbo 2.1 decodes only 8-bit samples"
        }
    }

    /// The first frame header of `source`, or nil when there is none before the first scan or the data
    /// ends first (the walk reads segment headers only and stops at SOS).
    static func read(_ source: ImageSource) -> JPEGFrameHeader? {
        guard let reader = try? ByteReader(source, bufferSize: 4096), var walk = try? JPEGMarkerWalk(reader) else {
            return nil
        }
        while let marker = try? walk.nextMarker() {
            if marker == 0xD8 || JPEGMarkerWalk.isStandalone(marker) { continue }  // no length
            guard marker != JPEGMarkerWalk.startOfScan, marker != JPEGMarkerWalk.endOfImage,
                let size = try? walk.segmentLength()
            else { return nil }
            guard size >= 2 else { return nil }
            if (0xC0...0xCF).contains(marker) && ![0xC4, 0xC8, 0xCC].contains(marker) {
                guard let precision = try? reader.byte() else { return nil }
                return JPEGFrameHeader(marker: marker, precision: Int(precision))
            }
            guard (try? reader.skip(size - 2)) != nil else { return nil }
        }
        return nil
    }
}
