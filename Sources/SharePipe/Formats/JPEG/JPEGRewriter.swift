/// Strips or replaces a JPEG's metadata without touching its image data: no decode, no generational
/// loss, and the output is never larger than the input plus the kept metadata. Used when the image needs
/// no resize and no rotation.
///
/// Segments before and between scans are sorted into structure (kept: DQT, DHT, SOFn, DRI, SOS, the JFIF
/// APP0 header without its thumbnail, the 12 bytes of Adobe APP14 that libjpeg reads) and metadata (dropped
/// unless kept: APP1–APP13, APP15, COM, JFIF and JFXX thumbnails); the kept metadata blocks are written once,
/// after SOI or the JFIF APP0. Everything after EOI (multi-picture trailers,
/// vendor data) is dropped, except a motion photo's video when the kept blocks hold it (`--strip none`): the
/// input's bytes from the video's start (`EmbeddedVideo.keptFrom`) to its end follow the EOI unchanged, so the
/// announcements that locate it from the end of the file still do.
///
/// The markers are found as libjpeg finds them (`JPEGMarkerWalk`). The
/// output is decoded once at 1/8 scale before it is returned, so a file the rewriter reads differently from
/// libjpeg ends in an error, never in an output nothing can read.
enum JPEGRewriter {
    static func rewrite(_ source: ImageSource, keeping blocks: [MetadataBlock]) throws -> [UInt8] {
        let out = try copy(source, keeping: blocks)
        // The copy's image data is the source's, which passed the job's limits and a 1/8-scale decode under them
        // before this rewrite was chosen: the check must not hold it to the default limits (a user's raised
        // `maxPixels` would otherwise fail here), so no limit of its own applies.
        let alreadyChecked = ImageLimits(
            maxDimension: .max, maxPixels: .max, maxFrames: .max, maxTotalFramePixels: .max,
            maxInputBytes: .max, maxDecoderMemory: .max, maxMetadataBytes: .max)
        do {
            let check = ImageSource.bytes(out)
            let info = try JPEGDecoder().probe(check, limits: alreadyChecked)
            _ = try JPEGDecoder().render(
                check, info: info, target: ScalePlan.scaled(info.size, by: 0.125),
                limits: alreadyChecked, meter: PixelMemoryMeter())
        } catch let error as SharePipeError {
            throw error.aboutCopy("the metadata-only copy does not decode", of: source.displayName)
        }
        return out
    }

    private static func copy(_ source: ImageSource, keeping blocks: [MetadataBlock]) throws -> [UInt8] {
        let reader = try ByteReader(source)
        var out: [UInt8] = []
        if case .bytes(let bytes) = source { out.reserveCapacity(bytes.count) }
        guard var walk = try JPEGMarkerWalk(reader) else {
            throw SharePipeError.corrupt(
                file: reader.name, phase: .header, reason: "missing JPEG start-of-image marker")
        }
        out += [0xFF, 0xD8]
        var metadataWritten = false
        func writeMetadata() {
            guard !metadataWritten else { return }
            metadataWritten = true
            for (code, payload) in JPEGMarkers.segments(for: blocks) {
                out += [0xFF, UInt8(code), UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)]
                out += payload
            }
        }
        func segment(_ code: UInt8, _ payload: [UInt8]) -> [UInt8] {
            [0xFF, code, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
        }
        // Bytes between segments are garbage that libjpeg skips with a warning ("extraneous bytes before
        // marker"); the throwaway decode has already accepted them, so the walk skips them too (and they stay
        // out of the output) rather than refuse a file the decoder reads.
        while true {
            guard let code = try walk.nextMarker() else { throw reader.truncation() }
            if code == JPEGMarkerWalk.endOfImage {
                writeMetadata()
                out += [0xFF, 0xD9]
                for case .embeddedVideo(let video) in blocks where video.readable && video.keptFrom >= reader.offset {
                    try reader.skip(video.keptFrom - reader.offset)
                    while let byte = try reader.next() { out.append(byte) }
                }
                return out
            }
            if JPEGMarkerWalk.isStandalone(code) {
                out += [0xFF, code]
                continue
            }
            guard let length = try walk.segmentLength() else { throw reader.truncation() }
            if length < 2 && JPEGMarkers.isMetadataMarker(code) {
                continue  // a bogus length word: libjpeg's save_marker takes the two bytes and saves nothing
            }
            guard length >= 2 else {
                throw SharePipeError.corrupt(
                    file: reader.name, phase: .header,
                    reason: "marker segment length \(length) at byte \(reader.offset - 2)")
            }
            let payload = try reader.bytes(length - 2)
            let isJFIF = code == 0xE0 && payload.starts(with: Array("JFIF\0".utf8))
            let isAdobe = code == 0xEE && payload.starts(with: Array("Adobe".utf8))
            let isMetadata = (0xE0...0xEF).contains(code) && !isJFIF && !isAdobe || code == 0xFE
            if isJFIF {
                // The header stays; its thumbnail only when the kept blocks hold it (strip none).
                let keepsThumbnail = blocks.contains {
                    if case .other(JPEGMarkers.jfifThumbnailTag, _) = $0 { true } else { false }
                }
                let header =
                    keepsThumbnail || JPEGMarkers.jfifThumbnailBytes(payload) == 0
                    ? payload : Array(payload[..<(JPEGMarkers.jfifHeaderLength - 2)]) + [0, 0]
                out += segment(code, header)
                writeMetadata()
                continue
            }
            writeMetadata()
            if isMetadata { continue }
            if isAdobe && payload.count > JPEGMarkers.adobeLength {
                out += segment(code, Array(payload[..<JPEGMarkers.adobeLength]))  // bytes past what libjpeg reads go
                continue
            }
            out += segment(code, payload)
            if code == JPEGMarkerWalk.startOfScan, try !walk.copyEntropyCodedData(into: &out) {
                throw reader.truncation()
            }
        }
    }
}
