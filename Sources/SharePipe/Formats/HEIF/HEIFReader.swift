import CSharePipe

/// A libheif context on one source, open for the duration of a closure and freed after it. Files are read
/// through stdio as libheif seeks (never loaded whole); bytes in memory are read in place. Only the primary
/// image is ever touched.
final class HEIFReader {
    private let handle: OpaquePointer
    let file: String

    private init(handle: OpaquePointer, file: String) {
        self.handle = handle
        self.file = file
    }

    /// Opens `source` (libheif refuses images wider or taller than `limits.maxDimension` while it parses),
    /// runs `body`, and always frees the context, the decoded planes and the file.
    static func with<T>(_ source: ImageSource, limits: ImageLimits, _ body: (HEIFReader) throws -> T) throws -> T {
        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        let maxDimension = Int32(clamping: limits.maxDimension)
        switch source {
        case .file(let path):
            try check(
                sp_heif_reader_open_file(path, maxDimension, &handle, &message), message, file: path, limits: limits)
            let reader = HEIFReader(handle: handle!, file: path)
            defer { sp_heif_reader_free(handle) }
            return try body(reader)
        case .bytes(let bytes):
            return try bytes.withUnsafeBufferPointer { buffer in
                try check(
                    sp_heif_reader_open_memory(buffer.baseAddress, buffer.count, maxDimension, &handle, &message),
                    message, file: source.displayName, limits: limits)
                let reader = HEIFReader(handle: handle!, file: source.displayName)
                defer { sp_heif_reader_free(handle) }
                return try body(reader)
            }
        }
    }

    /// `checkShim`, but libheif's own size limit becomes `tooLarge`.
    private static func check(_ status: sp_status, _ message: [CChar], file: String, limits: ImageLimits) throws {
        let text = shimText(message)
        if status == SP_ERR_LIBRARY,
            text.contains("Security limit exceeded") || text.contains("exceeds the maximum image size")
        {
            throw SharePipeError.tooLarge(
                file: file,
                exceeded: ExceededLimit(
                    .dimension, found: nil, limit: limits.maxDimension,
                    detail: "libheif: \(text)"))
        }
        try checkShim(status, message, file: file, phase: .header)
    }

    /// The primary image's header facts.
    func info() throws -> sp_heif_info {
        var info = sp_heif_info()
        var message = shimMessageBuffer()
        try checkShim(sp_heif_reader_info(handle, &info, &message), message, file: file, phase: .header)
        return info
    }

    /// The raw ICC profile (`colr` prof or rICC), if the file has one.
    func iccProfile(length: Int) throws -> [UInt8]? {
        guard length > 0 else { return nil }
        var profile = [UInt8](repeating: 0, count: length)
        var message = shimMessageBuffer()
        try checkShim(sp_heif_reader_copy_icc(handle, &profile, length, &message), message, file: file, phase: .header)
        return profile
    }

    /// The primary image's metadata items (Exif, XMP, others) with their bytes as stored, in item order.
    /// Items beyond `maxBytes` in total are refused as `tooLarge`.
    func metadataItems(count: Int, maxBytes: Int) throws -> [(type: String, contentType: String, data: [UInt8])] {
        var items: [(type: String, contentType: String, data: [UInt8])] = []
        var total = 0
        for index in 0..<count {
            var item = sp_heif_metadata()
            var message = shimMessageBuffer()
            try checkShim(
                sp_heif_reader_metadata(handle, Int32(index), &item, &message), message, file: file, phase: .header)
            total += item.length
            if total > maxBytes {
                throw SharePipeError.tooLarge(
                    file: file,
                    exceeded: ExceededLimit(
                        .metadataBytes, found: total, limit: maxBytes,
                        detail: "HEIF metadata items"))
            }
            var data = [UInt8](repeating: 0, count: item.length)
            if item.length > 0 {
                try checkShim(
                    sp_heif_reader_copy_metadata(handle, Int32(index), &data, item.length, &message),
                    message, file: file, phase: .header)
            }
            let type = withUnsafeBytes(of: item.type) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let contentType = withUnsafeBytes(of: item.content_type) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            items.append((type, contentType, data))
        }
        return items
    }

    /// Decodes the primary image to YCbCr planes in `chroma` (transforms applied). The planes stay valid until
    /// `releaseImage()` or the end of `with`.
    func decodePlanes(chroma: Int32, threads: Int) throws -> sp_heif_planes {
        var planes = sp_heif_planes()
        var message = shimMessageBuffer()
        try checkShim(
            sp_heif_reader_decode(handle, chroma, Int32(threads), &planes, &message), message, file: file,
            phase: .decode)
        return planes
    }

    /// Frees the decoded planes now rather than at the end of `with`.
    func releaseImage() { sp_heif_reader_release_image(handle) }
}
