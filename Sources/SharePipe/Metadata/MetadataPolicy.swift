/// The metadata role: decides, from what the probe found, which blocks go into the output.
protocol MetadataPolicy: Sendable {
    func outcome(for info: ImageInfo, mode: StripMode) -> MetadataOutcome
}

/// The one policy every format shares, working on format-neutral `MetadataBlock`s.
///
/// - `all`: keep only the ICC profile.
/// - `gps`: keep Exif without its GPS IFD and thumbnail (orientation 1), the ICC profile, comments and
///   text chunks that carry no XMP or raw Exif/IPTC profile; drop XMP and IPTC, which can carry location,
///   also where they hide inside the Exif as TIFF tags. An Exif whose GPS or thumbnail cannot be removed
///   for certain (unreadable pointers, loops, more IFDs than a camera writes) is dropped whole.
/// - `none`: keep everything; orientation reset to 1 in Exif and XMP.
///
/// In every mode the orientation has been applied to the pixels, so it is written as 1 or not at all.
/// A CMYK image's ICC profile is dropped because the output is RGB.
struct StandardMetadataPolicy: MetadataPolicy {
    func outcome(for info: ImageInfo, mode: StripMode) -> MetadataOutcome {
        let present = info.metadataKinds
        var kept: [MetadataBlock] = []
        for block in info.metadata {
            switch (block, mode) {
            case (.icc(let profile), _):
                if info.colorModel == .cmyk || info.colorModel == .ycck, ICCProfile.colorSpace(profile) == "CMYK" { continue }
                kept.append(block)
            case (_, .all):
                continue
            case (.exif(let tiff), .gps):
                guard var exif = try? ExifEditor(tiff: tiff) else { continue }  // unreadable Exif: drop it, to be safe
                do {
                    try exif.removeGPS()
                    try exif.removeThumbnail()
                    try exif.removeEmbeddedProfiles()
                    exif.resetOrientation()
                    exif.zeroUnreferenced()
                    exif.trimUnreferencedTail()
                    kept.append(.exif(exif.bytes))
                } catch {
                    continue
                }
            case (.xmp, .gps), (.extendedXMP, .gps), (.iptc, .gps):
                continue
            case (.pngText(_, let data), .gps):
                if PNGTextKeyword.carriesProfile(data) { continue }
                kept.append(block)
            case (.exif(let tiff), .none):
                if var exif = try? ExifEditor(tiff: tiff) {
                    exif.resetOrientation()
                    kept.append(.exif(exif.bytes))
                } else {
                    kept.append(block)
                }
            case (.xmp(let packet), .none):
                kept.append(.xmp(XMPOrientation.reset(packet)))
            default:
                kept.append(block)
            }
        }
        let keptKinds = MetadataOutcome.kinds(of: kept)
        return MetadataOutcome(kept: kept, removed: present.subtracting(keptKinds))
    }
}

extension MetadataOutcome {
    /// The kinds `blocks` carry, looking inside Exif for GPS, a thumbnail, and XMP or IPTC stored as tags.
    static func kinds(of blocks: [MetadataBlock]) -> Set<MetadataKind> {
        var kinds = Set<MetadataKind>()
        for block in blocks {
            kinds.insert(block.kind)
            if case .exif(let tiff) = block, let exif = try? ExifEditor(tiff: tiff) {
                if exif.hasGPS { kinds.insert(.gps) }
                if exif.hasThumbnail { kinds.insert(.exifThumbnail) }
                if exif.hasEmbeddedXMP { kinds.insert(.xmp) }
                if exif.hasEmbeddedIPTC { kinds.insert(.iptc) }
            }
        }
        return kinds
    }
}

/// ICC profile header facts.
enum ICCProfile {
    /// The profile's data colour space ("RGB ", "GRAY", "CMYK"), trimmed; nil for a short profile.
    static func colorSpace(_ profile: [UInt8]) -> String? {
        guard profile.count >= 20 else { return nil }
        return String(decoding: profile[16..<20], as: UTF8.self).trimmingCharacters(in: " ")
    }
}

/// PNG text chunks that hold XMP or ImageMagick's raw Exif/IPTC profiles.
enum PNGTextKeyword {
    static func carriesProfile(_ data: [UInt8]) -> Bool {
        let keyword = String(decoding: data.prefix { $0 != 0 }.prefix(80), as: UTF8.self).lowercased()
        return keyword == "xml:com.adobe.xmp" || keyword.hasPrefix("raw profile type")
    }
}

/// Resets `tiff:Orientation` in an XMP packet to 1, in place (same length, so nothing shifts).
enum XMPOrientation {
    static func reset(_ packet: [UInt8]) -> [UInt8] {
        var bytes = packet
        let name = Array("tiff:Orientation".utf8)
        var index = 0
        while index + name.count < bytes.count {
            guard bytes[index..<index + name.count].elementsEqual(name) else { index += 1; continue }
            var cursor = index + name.count
            // attribute form tiff:Orientation="6" or element form <tiff:Orientation>6</...>
            while cursor < bytes.count, bytes[cursor] == 0x3D || bytes[cursor] == 0x22 || bytes[cursor] == 0x27
                || bytes[cursor] == 0x3E || bytes[cursor] == 0x20 {
                cursor += 1
            }
            if cursor < bytes.count, (0x30...0x39).contains(bytes[cursor]) { bytes[cursor] = 0x31 }
            index = cursor
        }
        return bytes
    }
}

extension String {
    func trimmingCharacters(in set: Character) -> String {
        var text = Substring(self)
        while text.first == set { text = text.dropFirst() }
        while text.last == set { text = text.dropLast() }
        return String(text)
    }
}
