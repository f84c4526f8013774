/// The formats SharePipe reads and writes.
public enum ImageFormat: String, Sendable, Codable, CaseIterable {
    case jpeg
    case png
    case gif
    case heif
    case avif
    case webp

    /// The usual file extension.
    public var fileExtension: String {
        switch self {
        case .jpeg: return "jpg"
        case .png: return "png"
        case .gif: return "gif"
        case .heif: return "heic"
        case .avif: return "avif"
        case .webp: return "webp"
        }
    }

    /// The media type (MIME type) of the format, e.g. for an HTTP `Content-Type`.
    public var mediaType: String {
        switch self {
        case .jpeg: return "image/jpeg"
        case .png: return "image/png"
        case .gif: return "image/gif"
        case .heif: return "image/heic"
        case .avif: return "image/avif"
        case .webp: return "image/webp"
        }
    }

    /// Detects the format from the first bytes (never from the file name).
    public static func sniff(_ prefix: [UInt8]) -> ImageFormat? {
        if prefix.count >= 3, prefix[0] == 0xFF, prefix[1] == 0xD8, prefix[2] == 0xFF { return .jpeg }
        if prefix.count >= 8, prefix[0..<8].elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if prefix.count >= 6, prefix[0..<3].elementsEqual([0x47, 0x49, 0x46]),
           prefix[3..<6].elementsEqual([0x38, 0x39, 0x61]) || prefix[3..<6].elementsEqual([0x38, 0x37, 0x61]) {
            return .gif
        }
        if prefix.count >= 12, prefix[0..<4].elementsEqual("RIFF".utf8), prefix[8..<12].elementsEqual("WEBP".utf8) { return .webp }
        return heifFamily(prefix)
    }

    /// HEIF (HEIC) or AVIF by the `ftyp` box: the major brand, and for the structural brands mif1/msf1 the
    /// compatible brands within `prefix` (an AVIF may name mif1 first).
    private static func heifFamily(_ prefix: [UInt8]) -> ImageFormat? {
        guard prefix.count >= 12, prefix[4..<8].elementsEqual(Array("ftyp".utf8)) else { return nil }
        let brand = { (at: Int) in String(decoding: prefix[at..<at + 4], as: UTF8.self) }
        let major = brand(8)
        if ["avif", "avis"].contains(major) { return .avif }
        if ["heic", "heix", "heim", "heis", "hevc", "hevx"].contains(major) { return .heif }
        guard ["mif1", "msf1"].contains(major) else { return nil }
        let boxSize = Int(prefix[0]) << 24 | Int(prefix[1]) << 16 | Int(prefix[2]) << 8 | Int(prefix[3])
        let compatible = stride(from: 16, to: min(boxSize, prefix.count) - 3, by: 4).map(brand)
        return compatible.contains("avif") || compatible.contains("avis") ? .avif : .heif
    }

    /// Detects the format of a source by its magic bytes.
    static func detect(_ source: ImageSource) throws -> ImageFormat {
        let prefix = try source.prefix(64)
        if prefix.isEmpty {
            throw SharePipeError.unsupportedFormat(file: source.displayName, missing: .format, reason: "file is empty")
        }
        guard let format = sniff(prefix) else {
            throw SharePipeError.unsupportedFormat(file: source.displayName, missing: .format,
                                                   reason: "not a JPEG, PNG, GIF, WebP, HEIC or AVIF (unrecognised signature)")
        }
        return format
    }
}
