/// What a HEIF/AVIF file's `meta` box says about HDR beyond the nclx: the content light level (`clli`) or
/// mastering display (`mdcv`) properties, and a gain map (an ISO 21496-1 `tmap` derived item, or an
/// auxiliary image whose `auxC` type names an HDR gain map, as Apple's and Samsung's HEICs carry).
///
/// Neither libheif 1.15 nor libavif 0.11.1 reads them: their decoders show the primary image, which in a
/// gain-map file is the SDR base. So the gain map is never applied, and the job says it was removed.
/// `clli` and `mdcv` count only where `ipma` associates them with the primary item (`pitm`): a gain map's or
/// a thumbnail's own light levels say nothing about the image shown.
struct HEIFHDRBoxes: Equatable {
    /// MaxCLL (`clli`), else the mastering display's peak (`mdcv`), in cd/m²; nil when neither is present.
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
        /// `clli` MaxCLL and `mdcv` peak (0.0001 cd/m²) by their 1-based `ipco` index.
        var lightLevels: [Int: Int] = [:], masteringPeaks: [Int: Int] = [:]
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
                            case "mdcv":
                                try content.skip(16)  // display primaries and white point
                                masteringPeaks[index] = try content.u32()  // 0.0001 cd/m²
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
        let masteringPeak = primaryProperties.lazy.compactMap { masteringPeaks[$0] }.first
        if let maxCLL, maxCLL > 0 {
            result.peakLuminance = Float(maxCLL)
        } else if let masteringPeak, masteringPeak > 0 {
            result.peakLuminance = Float(masteringPeak) / 10000
        }
        return result
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
