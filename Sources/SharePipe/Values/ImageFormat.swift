/// The formats SharePipe reads and writes.
public enum ImageFormat: String, Sendable, Codable, CaseIterable {
    case jpeg
    case png
    case gif
    case heif
    case avif
    case webp
    /// H.264 video in MP4: written only, for animations where a service shows animation only as video.
    case mp4

    // A format's extension, media type and signature are in its descriptor (`FormatRegistry`), with
    // everything else about it: a new format is a case here and an entry there.

    /// The usual file extension.
    public var fileExtension: String { FormatRegistry.descriptor(for: self).fileExtension }

    /// The media type (MIME type) of the format, e.g. for an HTTP `Content-Type`.
    public var mediaType: String { FormatRegistry.descriptor(for: self).mediaType }

    /// Detects the format from the first bytes (never from the file name).
    public static func sniff(_ prefix: [UInt8]) -> ImageFormat? {
        FormatRegistry.all.first { $0.matches(prefix) }?.format
    }

    /// Detects the format of a source by its magic bytes.
    static func detect(_ source: ImageSource) throws -> ImageFormat {
        let prefix = try source.prefix(64)
        if prefix.isEmpty {
            throw SharePipeError.unsupportedFormat(file: source.displayName, missing: .format, reason: "file is empty")
        }
        guard let format = sniff(prefix) else {
            throw SharePipeError.unsupportedFormat(
                file: source.displayName, missing: .format,
                reason: "not a \(signatureNames) (unrecognised signature)")
        }
        return format
    }

    /// "JPEG, PNG, …, HEIC or AVIF": every format the registry sniffs.
    private static let signatureNames: String = {
        let names = FormatRegistry.all.map(\.signatureName)
        return names.dropLast().joined(separator: ", ") + (names.count > 1 ? " or " : "") + (names.last ?? "")
    }()
}
