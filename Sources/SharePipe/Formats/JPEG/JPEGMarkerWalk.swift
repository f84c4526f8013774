/// A JPEG's markers in file order, found as libjpeg's decoder finds them (`next_marker` in jdmarker.c): bytes up
/// to an 0xFF are garbage, fill bytes (0xFF 0xFF …) are swallowed, a stuffed 0xFF 0x00 outside entropy-coded data
/// is garbage too, and a scan's entropy-coded data runs up to the next marker that is neither a stuffed zero nor
/// a restart.
///
/// The one walk over a JPEG's structure that reads past its header: the metadata rewrite (`JPEGRewriter`, which
/// copies what it keeps) and the motion-photo search (`JPEGImageEnd`, which needs only where the primary image
/// ends) both go through it, so they cannot disagree with each other, or with the decoder, about where a segment,
/// a scan or the image ends. The end of the data is answered with nil, never read past.
struct JPEGMarkerWalk {
    static let endOfImage: UInt8 = 0xD9
    static let startOfScan: UInt8 = 0xDA

    /// Markers without a segment: RSTn and TEM.
    static func isStandalone(_ code: UInt8) -> Bool { (0xD0...0xD7).contains(code) || code == 0x01 }

    let reader: ByteReader
    /// The marker that ended a scan's entropy-coded data: the next `nextMarker()` returns it.
    private var pending: UInt8?

    /// A walk starting just past the SOI marker; nil when the data does not start with one.
    init?(_ reader: ByteReader) throws {
        guard try reader.next() == 0xFF, try reader.next() == 0xD8 else { return nil }
        self.reader = reader
    }

    /// The next marker's code; nil when the data ends first.
    mutating func nextMarker() throws -> UInt8? {
        if let found = pending {
            pending = nil
            return found
        }
        var code: UInt8
        repeat {
            guard try reader.skip(past: 0xFF), let next = try byteAfterFill() else { return nil }
            code = next
        } while code == 0x00  // a stuffed zero outside entropy-coded data: garbage, as for libjpeg
        return code
    }

    /// A segment's length word, which counts itself; nil when the data ends first. Read right after a marker
    /// that is neither standalone nor the EOI.
    func segmentLength() throws -> Int? {
        guard let high = try reader.next(), let low = try reader.next() else { return nil }
        return Int(high) << 8 | Int(low)
    }

    /// Passes the entropy-coded data that follows an SOS segment, up to the next marker that is neither a stuffed
    /// zero nor a restart; false when the data ends first.
    mutating func skipEntropyCodedData() throws -> Bool {
        while true {
            guard try reader.skip(past: 0xFF), let next = try byteAfterFill() else { return false }
            if next == 0x00 || (0xD0...0xD7).contains(next) { continue }
            pending = next
            return true
        }
    }

    /// As `skipEntropyCodedData()`, appending the data to `out`: its bytes, stuffed zeros and restart markers
    /// (fill bytes before them dropped); false when the data ends first.
    mutating func copyEntropyCodedData(into out: inout [UInt8]) throws -> Bool {
        while let byte = try reader.next() {
            if byte != 0xFF {
                out.append(byte)
                continue
            }
            guard let next = try byteAfterFill() else { return false }
            if next == 0x00 || (0xD0...0xD7).contains(next) {
                out += [0xFF, next]
                continue
            }
            pending = next
            return true
        }
        return false
    }

    /// The first byte after an 0xFF that is not another 0xFF (a fill byte); nil when the data ends first.
    private func byteAfterFill() throws -> UInt8? {
        var next = try reader.next()
        while next == 0xFF { next = try reader.next() }
        return next
    }
}

/// Where a JPEG's primary image ends: what follows (a motion photo's video, an MPF secondary image, vendor
/// trailers) is not part of the picture the decoder shows.
enum JPEGImageEnd {
    /// The offset just past the primary image's EOI marker; nil when the walk reaches the end of the data first.
    static func offset(_ source: ImageSource) throws -> Int? {
        let reader = try ByteReader(source)
        guard var walk = try JPEGMarkerWalk(reader) else { return nil }
        while let code = try walk.nextMarker() {
            if code == JPEGMarkerWalk.endOfImage { return reader.offset }
            if JPEGMarkerWalk.isStandalone(code) { continue }
            guard let length = try walk.segmentLength() else { return nil }
            if length < 2 {
                if JPEGMarkers.isMetadataMarker(code) { continue }
                return nil
            }
            guard (try? reader.skip(length - 2)) != nil else { return nil }
            if code == JPEGMarkerWalk.startOfScan, try !walk.skipEntropyCodedData() { return nil }
        }
        return nil
    }
}
