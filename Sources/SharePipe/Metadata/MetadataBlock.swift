/// Kinds of metadata, as reported in results ("removed: exif, gps, xmp").
public enum MetadataKind: String, Sendable, Codable, CaseIterable, Comparable, CustomStringConvertible {
    case exif, gps, exifThumbnail, xmp, iptc, icc, comment, text, time
    /// C2PA content credentials: a signed manifest store (author, signer, edit history, often a location and a
    /// thumbnail of the original), in JPEG APP11 JUMBF, PNG `caBX`, WebP `C2PA`, GIF `C2PA_GIF`, HEIF/AVIF
    /// (the C2PA `uuid` box or a `c2pa` item).
    case contentCredentials
    /// A motion photo's video after the image (`EmbeddedVideo`): sound, and MP4 tags that can hold a location.
    case embeddedVideo
    /// A segment, chunk, box, item or extension SharePipe cannot parse (kept only under `--strip none`).
    case other

    /// The kind's name as JSON reports write it ("gps", "contentCredentials").
    public var description: String { rawValue }

    /// The kind's name in text reports ("gps", "content credentials").
    public var displayName: String {
        switch self {
        case .contentCredentials: return "content credentials"
        case .embeddedVideo: return "embedded video"
        default: return rawValue
        }
    }

    public static func < (lhs: MetadataKind, rhs: MetadataKind) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// One piece of metadata as read from a file, in a format-neutral form each encoder can write back.
public enum MetadataBlock: Sendable, Equatable {
    /// Exif as a TIFF structure (starting with "II*\0" or "MM\0*"), without JPEG's "Exif\0\0" prefix.
    case exif([UInt8])
    /// An XMP packet (UTF-8 XML), without JPEG's namespace prefix.
    case xmp([UInt8])
    /// Extended XMP (JPEG APP1 continuation), whole payload as stored.
    case extendedXMP([UInt8])
    /// An IPTC / Photoshop APP13 payload as stored.
    case iptc([UInt8])
    /// An ICC colour profile, whole (JPEG chunks joined in order).
    case icc([UInt8])
    /// A comment (JPEG COM, GIF comment extension).
    case comment([UInt8])
    /// A PNG text chunk (tEXt/zTXt/iTXt) kept as its chunk type and raw data.
    case pngText(type: String, data: [UInt8])
    /// Any other block, kept only in `none` mode: a JPEG APPn marker, PNG or WebP chunk, GIF extension or HEIF
    /// item, raw. Content credentials are such blocks too (`ContentCredentials.recognises` tells them by tag).
    case other(tag: String, data: [UInt8])
    /// A motion photo's video (`EmbeddedVideo`): where it lies in the input and what it holds, not its bytes. Only
    /// a metadata-only copy of a JPEG writes it (its bytes copied from the input after the image's end).
    case embeddedVideo(EmbeddedVideo)

    public var kind: MetadataKind {
        switch self {
        case .exif: return .exif
        case .xmp, .extendedXMP: return .xmp
        case .iptc: return .iptc
        case .icc: return .icc
        case .comment: return .comment
        case .pngText: return .text
        case .embeddedVideo: return .embeddedVideo
        case .other(let tag, _):
            if tag == "tIME" { return .time }
            return ContentCredentials.recognises(tag) ? .contentCredentials : .other
        }
    }
}

/// What was removed, what was kept.
public struct MetadataOutcome: Sendable, Equatable {
    /// Blocks to write into the output, in order.
    public var kept: [MetadataBlock]
    /// Kinds present in the input and absent from the output.
    public var removed: Set<MetadataKind>
}
