/// A family of inputs an operator can refuse whole (`ImageLimits.disabledFormats`, `--disable heif,avif`): a
/// format and every way into the decoding libraries it brings, as Mastodon turned HEIF and AVIF off by removing a
/// loader. A refused input is `unsupportedFormat` (`missing: .disabled`) from its magic bytes and SharePipe's own
/// reading of its boxes or chunks, before any decoder library sees a byte.
public enum FormatFamily: String, Sendable, Codable, CaseIterable, Comparable {
    /// JPEG (libjpeg), and a HEIF whose items are JPEG-coded (a libheif plugin would hand them to libjpeg).
    case jpeg
    /// Every PNG, animated ones too (libpng, zlib).
    case png
    /// PNGs with an `acTL` chunk before the image data (animated PNG: frames composited by SharePipe, each frame
    /// through libpng); still PNGs stay accepted.
    case apng
    /// GIF (giflib), still and animated.
    case gif
    /// WebP, still and animated (libwebp, its demuxer).
    case webp
    /// HEIF/HEIC, grids included (libheif, and libde265 for HEVC: through libheif and SharePipe's own tile route).
    case heif
    /// AVIF stills, grids and image sequences (libavif, dav1d), and a HEIF whose items or tracks are AV1-coded
    /// (libheif would hand them to its AV1 decoder).
    case avif

    /// What the family brings in, for help texts and messages.
    public var summary: String {
        switch self {
        case .jpeg: return "JPEG (libjpeg)"
        case .png: return "PNG, animated PNG included (libpng)"
        case .apng: return "animated PNG (acTL)"
        case .gif: return "GIF (giflib)"
        case .webp: return "WebP, animated WebP included (libwebp)"
        case .heif: return "HEIF/HEIC (libheif, libde265)"
        case .avif: return "AVIF and AV1-coded HEIF (libavif, dav1d; libheif's AV1 decoder)"
        }
    }

    public static func < (lhs: FormatFamily, rhs: FormatFamily) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// The families in `text` as the switch takes them: names separated by commas (`heif,avif`; spaces around
    /// a name allowed), `none` or nothing for none; nil when a name is not a family.
    public static func parse(_ text: String) -> Set<FormatFamily>? {
        func trimmed(_ text: Substring) -> String {
            String(text.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()).lowercased()
        }
        let whole = trimmed(Substring(text))
        if whole.isEmpty || whole == "none" { return [] }
        var families: Set<FormatFamily> = []
        for name in whole.split(separator: ",", omittingEmptySubsequences: false) {
            guard let family = FormatFamily(rawValue: trimmed(name)) else { return nil }
            families.insert(family)
        }
        return families
    }

    /// The families as the switch is written: `heif,avif`, in `allCases` order; `none` for none.
    public static func text(_ families: Set<FormatFamily>) -> String {
        families.isEmpty ? "none" : families.sorted().map(\.rawValue).joined(separator: ",")
    }
}

/// The checks made on a file's own structure after its format is sniffed and before any decoder library is
/// reached (`Pipeline.probe`): the operator's disabled families (`FormatFamily`), and, for HEIF and AVIF, the
/// `ipma` rule browsers enforce (a transform must be essential).
enum FormatFamilyGate {
    /// Throws `unsupportedFormat` (`missing: .disabled`) when the file needs a family in `disabled`, and `corrupt`
    /// when a HEIF/AVIF marks a transform non-essential. Reads only the PNG chunk headers up to the image data, or
    /// the HEIF/AVIF top-level boxes and `meta` (at most `limits.maxMetadataBytes`).
    static func check(_ source: ImageSource, format: ImageFormat, limits: ImageLimits) throws {
        let disabled = limits.disabledFormats
        let file = source.displayName
        func refuse(_ family: FormatFamily, _ what: String) -> SharePipeError {
            .unsupportedFormat(
                file: file, missing: .disabled,
                reason: "\(what) input is turned off here (--disable \(family.rawValue))")
        }
        switch format {
        case .jpeg where disabled.contains(.jpeg): throw refuse(.jpeg, "JPEG")
        case .gif where disabled.contains(.gif): throw refuse(.gif, "GIF")
        case .webp where disabled.contains(.webp): throw refuse(.webp, "WebP")
        case .png where disabled.contains(.png): throw refuse(.png, "PNG")
        case .png where disabled.contains(.apng):
            if try isAnimatedPNG(HEIFFileBytes(source)) { throw refuse(.apng, "Animated PNG (acTL)") }
        case .avif where disabled.contains(.avif): throw refuse(.avif, "AVIF")
        case .heif where disabled.contains(.heif): throw refuse(.heif, "HEIF/HEIC")
        case .heif, .avif:
            try checkBoxes(HEIFFileBytes(source), format: format, limits: limits, refuse: refuse)
        default:
            break
        }
    }

    /// A HEIF/AVIF's `meta` read by `HEIFItemTable` (and a HEIF's tracks): a non-essential transform is
    /// `corrupt`; a HEIF whose items or tracks are AV1 (or JPEG) coded is refused when that family is disabled,
    /// since libheif would decode them with that family's decoder.
    private static func checkBoxes(
        _ file: HEIFFileBytes, format: ImageFormat, limits: ImageLimits,
        refuse: (FormatFamily, String) -> SharePipeError
    ) throws {
        let meta = try file.metaBody(maxBytes: limits.maxMetadataBytes)
        let table = meta.flatMap { try? HEIFItemTable.parse(meta: $0) }
        if let (item, property) = table?.nonEssentialTransform() {
            throw SharePipeError.corrupt(
                file: file.name, phase: .header,
                reason: "item \(item)'s `\(property)` transform is not marked essential in `ipma` "
                    + "(\(format == .avif ? "AVIF" : "HEIF") requires it; browsers refuse such a file)")
        }
        // What libheif may reach from a HEIF: the items' codings, and (newer libheif) a sequence's sample entries.
        let reachable: [(family: FormatFamily, types: Set<String>, name: String)] = [
            (.avif, ["av01"], "AV1"), (.jpeg, ["jpeg"], "JPEG"),
        ]
        guard format == .heif, reachable.contains(where: { limits.disabledFormats.contains($0.family) }) else { return }
        guard let table else {
            let family = reachable.first { limits.disabledFormats.contains($0.family) }!.family
            throw SharePipeError.unsupportedFormat(
                file: file.name, missing: .disabled,
                reason: "its `meta` box cannot be read (missing, damaged or over the metadata limit), so whether "
                    + "libheif would need a disabled decoder is unknown (--disable \(family.rawValue))")
        }
        let coded = table.codedImageTypes.union(try file.sampleEntryTypes())
        for (family, types, name) in reachable where limits.disabledFormats.contains(family) {
            guard coded.isDisjoint(with: types) else {
                throw SharePipeError.unsupportedFormat(
                    file: file.name, missing: .disabled,
                    reason: "a HEIF with \(name)-coded images (libheif would decode them with the \(name) decoder), "
                        + "and \(name) input is turned off here (--disable \(family.rawValue))")
            }
        }
    }

    /// Whether a PNG has an `acTL` chunk before its first `IDAT` (an animated PNG). Reads chunk headers only.
    static func isAnimatedPNG(_ file: HEIFFileBytes) throws -> Bool {
        var position = 8
        while position <= file.size - 8 {
            let header = try file.read(at: position, count: 8)
            let length = header[0..<4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: header[4..<8], as: UTF8.self)
            if type == "acTL" { return true }
            if type == "IDAT" || type == "IEND" { return false }
            // length + type + data + CRC; a chunk past the end ends the walk (libpng decides).
            guard length <= file.size - position - 12 else { return false }
            position += 12 + length
        }
        return false
    }
}
