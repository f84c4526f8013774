/// Kinds of metadata, as reported in results ("removed: exif, gps, xmp").
public enum MetadataKind: String, Sendable, Codable, CaseIterable, Comparable, CustomStringConvertible {
    case exif, gps, exifThumbnail, xmp, iptc, icc, comment, text, time, other

    /// The kind's name as reports write it ("gps").
    public var description: String { rawValue }

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
    /// Any other block, kept only in `none` mode: a JPEG APPn marker or PNG chunk, raw.
    case other(tag: String, data: [UInt8])

    public var kind: MetadataKind {
        switch self {
        case .exif: return .exif
        case .xmp, .extendedXMP: return .xmp
        case .iptc: return .iptc
        case .icc: return .icc
        case .comment: return .comment
        case .pngText: return .text
        case .other: return .other
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
