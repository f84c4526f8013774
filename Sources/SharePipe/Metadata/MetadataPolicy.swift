/// The metadata role: decides, from what the probe found, which blocks go into the output.
protocol MetadataPolicy: Sendable {
    func outcome(for info: ImageInfo, mode: StripMode) -> MetadataOutcome
}

/// What SharePipe understands a metadata block to be: the rows of a format's keep table.
enum MetadataClass: Sendable, Hashable, CaseIterable {
    /// The ICC profile: the pixels' colours (dropped only from a CMYK image, whose output is RGB).
    case colourProfile
    /// Exif, which SharePipe parses: under `gps` written without its GPS IFD, thumbnail and embedded XMP/IPTC
    /// (an Exif whose GPS or thumbnail cannot be removed for certain is dropped whole).
    case exif
    /// XMP (and JPEG's extended XMP), IPTC and Photoshop resources: free-form, can carry a location.
    case xmp, iptc
    /// JPEG COM, GIF comment extensions: text.
    case comment
    /// PNG tEXt/zTXt/iTXt, except those that hold XMP or ImageMagick's raw profiles (`PNGTextKeyword`).
    case text
    /// PNG tIME: the time of the last change.
    case time
    /// C2PA manifest stores (`ContentCredentials`).
    case contentCredentials
    /// A motion photo's video (`EmbeddedVideo`): no table names it, so only `none` keeps it, and only the
    /// metadata-only copy writes it.
    case embeddedVideo
    /// Everything SharePipe cannot parse: an unknown JPEG APPn, PNG or WebP chunk, HEIF item, GIF extension,
    /// a PNG text chunk holding a raw profile, an Exif item without a TIFF header.
    case unparsed
}

extension MetadataBlock {
    /// The row of the keep table this block falls under.
    var metadataClass: MetadataClass {
        switch self {
        case .icc: return .colourProfile
        case .exif: return .exif
        case .xmp, .extendedXMP: return .xmp
        case .iptc: return .iptc
        case .comment: return .comment
        case .embeddedVideo: return .embeddedVideo
        case .pngText(_, let data):
            if PNGTextKeyword.isXMP(data) { return .xmp }
            return PNGTextKeyword.carriesProfile(data) ? .unparsed : .text
        case .other(let tag, _):
            if ContentCredentials.recognises(tag) { return .contentCredentials }
            return tag == "tIME" ? .time : .unparsed
        }
    }
}

/// One format's keep table: which classes of metadata each strip mode keeps. It is an allow-list: under
/// `all` and `gps` a class the table does not name is removed, whatever it is, and reported by kind; `none`
/// keeps every class. The table is the input format's and holds on every route (metadata rewrite, lossless
/// turn, re-encode, format change, animation); an output can only hold less (`FormatDescriptor.writableMetadata`),
/// never more. Content credentials kept under `none` survive only the metadata-only copy (see
/// `MetadataOutcome.writableAfterReencoding`).
struct MetadataKeepTable: Sendable, Equatable {
    /// What `all` keeps: the colour profile.
    var all: Set<MetadataClass> = [.colourProfile]
    /// What `gps` keeps besides the colour profile: what the format carries that SharePipe parses and can clean.
    var gps: Set<MetadataClass>

    /// The classes `mode` keeps.
    func keeps(_ mode: StripMode) -> Set<MetadataClass> {
        switch mode {
        case .all: return all
        case .gps: return gps
        case .none: return Set(MetadataClass.allCases)
        }
    }
}

/// The one policy every format shares, working on format-neutral `MetadataBlock`s through the format's keep
/// table (`MetadataKeepTable`):
///
/// - `all`: keep only the ICC profile.
/// - `gps`: keep what the table names (Exif without its GPS IFD and thumbnail, orientation 1; comments; PNG
///   text and tIME) and the ICC profile; drop XMP and IPTC, which can carry location, also where they hide
///   inside the Exif as TIFF tags, content credentials, and anything SharePipe cannot parse. An Exif whose GPS
///   or thumbnail cannot be removed for certain (unreadable pointers, loops, more IFDs than a camera writes) is
///   dropped whole; a GPS pointer that points past the end of the Exif loses only the pointer.
/// - `none`: keep everything; orientation reset to 1 in Exif and XMP.
///
/// In every mode the orientation has been applied to the pixels, so it is written as 1 or not at all.
/// A CMYK image's ICC profile is dropped because the output is RGB.
struct StandardMetadataPolicy: MetadataPolicy {
    let table: MetadataKeepTable

    init(keeps table: MetadataKeepTable) { self.table = table }

    func outcome(for info: ImageInfo, mode: StripMode) -> MetadataOutcome {
        let present = info.metadataKinds
        let keeps = table.keeps(mode)
        var kept: [MetadataBlock] = []
        for block in info.metadata where keeps.contains(block.metadataClass) {
            switch (block, mode) {
            case (.icc(let profile), _):
                if info.colorModel == .cmyk || info.colorModel == .ycck, ICCProfile.colorSpace(profile) == "CMYK" {
                    continue
                }
                kept.append(block)
            case (.exif(let tiff), .gps), (.exif(let tiff), .all):
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
            case (.exif(let tiff), .none):
                if var exif = try? ExifEditor(tiff: tiff) {
                    exif.resetOrientation()
                    kept.append(.exif(exif.bytes))
                } else {
                    kept.append(block)
                }
            case (.xmp(let packet), .none):
                kept.append(.xmp(XMPOrientation.reset(packet)))
            case (.embeddedVideo(let video), _) where !video.readable:
                continue  // announced but unreadable: never copied
            default:
                kept.append(block)
            }
        }
        kept = MotionPhotoXMP.consistent(kept, hadVideo: info.embeddedVideo != nil)
        let keptKinds = MetadataOutcome.kinds(of: kept)
        return MetadataOutcome(kept: kept, removed: present.subtracting(keptKinds))
    }
}

extension MetadataOutcome {
    /// Whether a kept block may go into an output whose image data changed (re-encoded, or turned losslessly).
    /// Content credentials may not: a C2PA manifest's hard binding is a hash over the file's bytes, which no
    /// longer match, so validators would show the image as tampered. They are removed and the job says so
    /// (`PreparePlan.copyOnlyNotes`); only the metadata-only copy keeps them under `none`. Nor may an embedded
    /// video: its bytes follow the source's image, and only that copy writes them.
    static func writableAfterReencoding(_ block: MetadataBlock) -> Bool {
        block.kind != .contentCredentials && block.kind != .embeddedVideo
    }

    /// This outcome for an output whose image data changed: content credentials and an embedded video move from
    /// kept to removed (and the XMP no longer announces the video).
    var withImageDataChanged: MetadataOutcome {
        let written = kept.filter(MetadataOutcome.writableAfterReencoding)
        guard written.count != kept.count else { return self }
        let lost = Set(kept.map(\.kind)).subtracting(written.map(\.kind))
        return MetadataOutcome(
            kept: MotionPhotoXMP.consistent(written, hadVideo: lost.contains(.embeddedVideo)),
            removed: removed.union(lost))
    }

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
        isXMP(data) || keyword(data).hasPrefix("raw profile type")
    }

    static func isXMP(_ data: [UInt8]) -> Bool { keyword(data) == "xml:com.adobe.xmp" }

    private static func keyword(_ data: [UInt8]) -> String {
        String(decoding: data.prefix { $0 != 0 }.prefix(80), as: UTF8.self).lowercased()
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
            while cursor < bytes.count,
                bytes[cursor] == 0x3D || bytes[cursor] == 0x22 || bytes[cursor] == 0x27
                    || bytes[cursor] == 0x3E || bytes[cursor] == 0x20
            {
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
