/// What a HEIF/AVIF file says about HDR beyond the nclx: the content light level (`clli`: the primary item's
/// property, or an AVIF image sequence's colour track's, in its `av01` sample entry), and a gain map (an
/// ISO 21496-1 `tmap` derived item, or an auxiliary image whose `auxC` type names an HDR gain map, as Apple's
/// and Samsung's HEICs carry).
///
/// Neither libheif 1.15 nor libavif 0.11.1 reads them: their decoders show the primary image, which in a
/// gain-map file is the SDR base. So the gain map is never applied, and the job says it was removed.
/// `clli` counts only where `ipma` associates it with the primary item (`pitm`): a gain map's or a
/// thumbnail's own light levels say nothing about the image shown. The mastering display (`mdcv`) does not
/// count: Chromium 156 shows a PQ AVIF with only an `mdcv` (peak 400 or 4000 cd/m², on the item or in a
/// sequence's sample entry) exactly as one without, at the default peak (measured with browser_frames.py).
struct HEIFHDRBoxes: Equatable {
    /// MaxCLL (`clli`) in cd/m²; nil when there is none (or it is 0).
    var peakLuminance: Float?
    /// How the gain map is stored, for the report; nil when there is none.
    var gainMap: String?

    /// The report's line for a removed gain map.
    var gainMapNote: String? {
        gainMap.map {
            "gain map removed (\($0)): the SDR base image is prepared, as browsers show it on an SDR display"
        }
    }

    /// Reads the `meta` box of `file` (at most `maxBytes` of it). A box that runs past its parent ends the
    /// walk: the decoders decide whether the file is whole.
    static func read(_ file: HEIFFileBytes, maxBytes: Int) throws -> HEIFHDRBoxes {
        var result = HEIFHDRBoxes()
        guard let meta = try file.metaBody(maxBytes: maxBytes) else { return result }
        var cursor = HEIFGrid.Cursor(meta)
        /// `clli` MaxCLL by its 1-based `ipco` index.
        var lightLevels: [Int: Int] = [:]
        var primary: Int?
        var associations: [Int: [Int]] = [:]
        do {
            while cursor.left >= 8 {
                var (type, body) = try cursor.box()
                switch type {
                case "pitm":
                    let (version, _) = try body.fullBoxHeader()
                    primary = version == 0 ? try body.u16() : try body.u32()
                case "iinf":
                    try body.forEachItemInfo { itemType, _ in
                        if itemType == "tmap", result.gainMap == nil {
                            result.gainMap = "ISO 21496-1 tone-map item (tmap)"
                        }
                    }
                case "iprp":
                    while body.left >= 8 {
                        var (propertiesType, properties) = try body.box()
                        if propertiesType == "ipma" {
                            try readAssociations(&properties, into: &associations)
                            continue
                        }
                        guard propertiesType == "ipco" else { continue }
                        var index = 0
                        while properties.left >= 8 {
                            var (property, content) = try properties.box()
                            index += 1
                            switch property {
                            case "auxC":
                                _ = try content.fullBoxHeader()
                                let urn = content.cString()
                                if urn.hasSuffix(":hdrgainmap") || urn.contains("21496") {
                                    result.gainMap = "auxiliary gain map image \(urn)"
                                }
                            case "clli":
                                lightLevels[index] = try content.u16()
                            default:
                                break
                            }
                        }
                    }
                default:
                    break
                }
            }
        } catch {
            // The walk ends at the broken box; what was found stands.
        }
        let primaryProperties = primary.flatMap { associations[$0] } ?? []
        let maxCLL = primaryProperties.lazy.compactMap { lightLevels[$0] }.first
        result.peakLuminance = maxCLL.flatMap { $0 > 0 ? Float($0) : nil }
        return result
    }

    /// `read`, for an AVIF as libavif 0.11.1 and Chromium read it: where the image shown is the file's track
    /// (libavif's automatic choice: major brand `avis`, or neither `avif` nor `avis` and a `moov`), the light
    /// level is the colour track's own, `clli` in its `av01` sample entry; the still item's says nothing about
    /// the track. Chromium 156 shows a PQ sequence whose sample entry says MaxCLL 400 brighter, and 4000 dimmer
    /// above reference white, than one that says nothing (measured with browser_frames.py).
    static func readAVIF(_ file: HEIFFileBytes, maxBytes: Int) throws -> HEIFHDRBoxes {
        var result = try read(file, maxBytes: maxBytes)
        var majorBrand: [UInt8] = []
        var movie: Range<Int>?
        try file.forEachBox(in: 0..<file.size) { type, body, length in
            if type == "ftyp", majorBrand.isEmpty, length >= 4 { majorBrand = try file.read(at: body, count: 4) }
            if type == "moov", movie == nil { movie = body..<body + length }
            return majorBrand.isEmpty || movie == nil
        }
        guard let movie, majorBrand != Array("avif".utf8) else { return result }
        result.peakLuminance = try colourTrackMaxCLL(file, movie: movie)
        return result
    }

    /// The `clli` MaxCLL of the first colour track's `av01` sample entry, as libavif and Chromium pick that
    /// track: a `pict` track with AV1 samples that is no other track's auxiliary (`tref` `auxl`, as alpha is).
    private static func colourTrackMaxCLL(_ file: HEIFFileBytes, movie: Range<Int>) throws -> Float? {
        /// The first box of `type` in `range`, as its body's range.
        func child(_ type: String, in range: Range<Int>) throws -> Range<Int>? {
            var found: Range<Int>?
            try file.forEachBox(in: range) { kind, body, length in
                if kind == type { found = body..<body + length }
                return found == nil
            }
            return found
        }
        var tracks: [Range<Int>] = []
        try file.forEachBox(in: movie) { type, body, length in
            if type == "trak" { tracks.append(body..<body + length) }
            return true
        }
        for track in tracks {
            if try child("tref", in: track).map({ try child("auxl", in: $0) != nil }) == true { continue }
            guard let media = try child("mdia", in: track), let handler = try child("hdlr", in: media),
                handler.count >= 12, try file.read(at: handler.lowerBound + 8, count: 4) == Array("pict".utf8),
                let information = try child("minf", in: media), let table = try child("stbl", in: information),
                let descriptions = try child("stsd", in: table), descriptions.count >= 8
            else { continue }
            // stsd: version and flags, entry count, then the sample entries; the first decides the track.
            var entry: (type: String, body: Range<Int>)?
            try file.forEachBox(in: descriptions.lowerBound + 8..<descriptions.upperBound) { type, body, length in
                entry = (type, body..<body + length)
                return false
            }
            guard let entry, entry.type == "av01" else { continue }
            // A VisualSampleEntry's fields take 78 bytes before its child boxes.
            guard entry.body.count >= 78,
                let light = try child("clli", in: entry.body.lowerBound + 78..<entry.body.upperBound),
                light.count >= 2
            else { return nil }
            let maxCLL = try file.read(at: light.lowerBound, count: 2).reduce(0) { $0 << 8 | Int($1) }
            return maxCLL > 0 ? Float(maxCLL) : nil
        }
        return nil
    }

    /// Adds an `ipma` box's associations (item → 1-based `ipco` indices, in order) to `associations`.
    private static func readAssociations(_ box: inout HEIFGrid.Cursor, into associations: inout [Int: [Int]]) throws {
        let (version, flags) = try box.fullBoxHeader()
        let count = try box.u32()
        for _ in 0..<count {
            let id = version < 1 ? try box.u16() : try box.u32()
            let associationCount = try box.u8()
            for _ in 0..<associationCount {
                let index = flags & 1 != 0 ? try box.u16() & 0x7FFF : try box.u8() & 0x7F
                associations[id, default: []].append(index)
            }
        }
    }
}
