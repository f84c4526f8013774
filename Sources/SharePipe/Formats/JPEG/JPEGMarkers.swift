/// JPEG marker payloads ↔ format-neutral metadata blocks.
enum JPEGMarkers {
    static let app0 = 0xE0, app1 = 0xE1, app2 = 0xE2, app11 = 0xEB, app13 = 0xED, app14 = 0xEE, com = 0xFE
    static let exifPrefix: [UInt8] = Array("Exif\0\0".utf8)
    static let xmpPrefix: [UInt8] = Array("http://ns.adobe.com/xap/1.0/\0".utf8)
    static let extendedXMPPrefix: [UInt8] = Array("http://ns.adobe.com/xmp/extension/\0".utf8)
    static let iccPrefix: [UInt8] = Array("ICC_PROFILE\0".utf8)
    static let jfifPrefix: [UInt8] = Array("JFIF\0".utf8)
    /// The JFIF APP0 header without a thumbnail: identifier, version, units, densities, thumbnail size.
    static let jfifHeaderLength = 14
    /// The tag of the block that stands for a thumbnail inside the JFIF APP0 header.
    static let jfifThumbnailTag = "JFIF thumbnail"
    /// The part of an Adobe APP14 payload libjpeg reads: identifier, version, flags, colour transform.
    static let adobeLength = 12

    /// Bytes of RGB thumbnail the JFIF APP0 `payload` declares (width × height × 3), 0 when it has none.
    static func jfifThumbnailBytes(_ payload: [UInt8]) -> Int {
        guard payload.count >= jfifHeaderLength else { return 0 }
        return Int(payload[12]) * Int(payload[13]) * 3
    }

    /// Largest payload of one marker segment (the 16-bit length counts itself).
    static let maxPayload = 65533
    /// ICC bytes per APP2 chunk: the payload less the 14-byte "ICC_PROFILE\0" + sequence + count header.
    static let iccChunkSize = maxPayload - 14

    /// Whether `code` is an APPn or COM marker: the segments libjpeg saves or skips without parsing, and whose
    /// bogus length word (below 2) it tolerates as an empty segment (`save_marker`, `skip_variable`).
    static func isMetadataMarker(_ code: UInt8) -> Bool { (0xE0...0xEF).contains(code) || code == 0xFE }

    /// Reads metadata blocks from saved markers. ICC chunks are joined in sequence order. The APP11 segments
    /// of a C2PA manifest store (its first segment and every later one with the same JUMBF box instance) are
    /// tagged as content credentials.
    static func metadata(from markers: [(code: Int, payload: [UInt8])]) -> [MetadataBlock] {
        var blocks: [MetadataBlock] = []
        var iccChunks: [(sequence: Int, bytes: ArraySlice<UInt8>)] = []
        var iccPosition: Int?
        var manifestInstances = Set<Int>()
        for (code, payload) in markers {
            switch code {
            case app11 where ContentCredentials.jumbfInstance(payload) != nil:
                let instance = ContentCredentials.jumbfInstance(payload)!
                if ContentCredentials.startsJPEGManifest(payload) { manifestInstances.insert(instance) }
                blocks.append(
                    .other(
                        tag: manifestInstances.contains(instance) ? ContentCredentials.jpegTag : "APP11",
                        data: payload))
            case app1 where payload.starts(with: exifPrefix):
                blocks.append(.exif(Array(payload.dropFirst(exifPrefix.count))))
            case app1 where payload.starts(with: xmpPrefix):
                blocks.append(.xmp(Array(payload.dropFirst(xmpPrefix.count))))
            case app1 where payload.starts(with: extendedXMPPrefix):
                blocks.append(.extendedXMP(payload))
            case app2 where payload.starts(with: iccPrefix) && payload.count > 14:
                iccChunks.append((Int(payload[12]), payload[14...]))
                if iccPosition == nil { iccPosition = blocks.count }
            case app13:
                blocks.append(.iptc(payload))
            case com:
                blocks.append(.comment(payload))
            case app0 where payload.starts(with: jfifPrefix):
                // The header is structure; an RGB thumbnail in it is a picture of the photo, kept only under
                // `none` (the metadata rewrite writes the header without it otherwise).
                if jfifThumbnailBytes(payload) > 0 { blocks.append(.other(tag: jfifThumbnailTag, data: payload)) }
            case app0 where payload.starts(with: Array("JFXX\0".utf8)):
                blocks.append(.other(tag: "APP0 JFXX", data: payload))  // a JFIF extension thumbnail
            case app14 where payload.starts(with: Array("Adobe".utf8)):
                continue  // colour transform flag, read by libjpeg (its first `adobeLength` bytes are written)
            default:
                blocks.append(.other(tag: "APP\(code - app0)", data: payload))
            }
        }
        if let position = iccPosition {
            let joined = iccChunks.sorted { $0.sequence < $1.sequence }.flatMap { $0.bytes }
            blocks.insert(.icc(joined), at: position)
        }
        return blocks
    }

    /// Marker segments (code, payload) that write `blocks` into a JPEG, in order. Blocks a JPEG cannot
    /// hold (PNG text, oversize Exif) are skipped.
    static func segments(for blocks: [MetadataBlock]) -> [(code: Int, payload: [UInt8])] {
        var segments: [(Int, [UInt8])] = []
        for block in blocks {
            switch block {
            case .exif(let tiff):
                if exifPrefix.count + tiff.count <= maxPayload { segments.append((app1, exifPrefix + tiff)) }
            case .xmp(let packet):
                if xmpPrefix.count + packet.count <= maxPayload { segments.append((app1, xmpPrefix + packet)) }
            case .extendedXMP(let payload):
                if payload.count <= maxPayload { segments.append((app1, payload)) }
            case .iptc(let payload):
                if payload.count <= maxPayload { segments.append((app13, payload)) }
            case .icc(let profile):
                let chunkCount = max(1, (profile.count + iccChunkSize - 1) / iccChunkSize)
                guard chunkCount <= 255 else { continue }
                for index in 0..<chunkCount {
                    let start = index * iccChunkSize
                    let chunk = profile[start..<min(profile.count, start + iccChunkSize)]
                    segments.append((app2, iccPrefix + [UInt8(index + 1), UInt8(chunkCount)] + chunk))
                }
            case .comment(let text):
                if text.count <= maxPayload { segments.append((com, text)) }
            case .other(let tag, let data):
                // "APP11" or "APP11 c2pa": the marker number follows "APP".
                if tag.hasPrefix("APP"), let n = Int(tag.dropFirst(3).prefix { $0.isNumber }), (0...15).contains(n),
                    data.count <= maxPayload
                {
                    segments.append((app0 + n, data))
                }
            case .pngText, .embeddedVideo:
                continue  // the video follows the image's end (`JPEGRewriter`), no marker segment
            }
        }
        return segments
    }
}
