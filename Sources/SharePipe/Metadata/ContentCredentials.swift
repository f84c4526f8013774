/// C2PA content credentials: where the C2PA specification (2.1, "Embedding manifests") places a manifest store
/// in each format SharePipe reads, and the tags the readers give such blocks (`MetadataBlock.other`), so that
/// `MetadataBlock.kind` reports them as `.contentCredentials`.
///
/// - JPEG: APP11 segments holding a JUMBF box (JPEG XT, ISO 19566-5) whose description box carries the C2PA
///   UUID; a store larger than one segment continues in further APP11 segments with the same box instance
///   number. Tag "APP11 c2pa" (the marker number stays readable for the writer).
/// - PNG: the `caBX` chunk.
/// - WebP: the `C2PA` chunk. Tag "WebP C2PA".
/// - GIF: the application extension "C2PA_GIF". Tag "GIF:FF:C2PA_GIF…".
/// - HEIF/AVIF: the top-level `uuid` box with the C2PA UUID (BMFF embedding), or an item of type `c2pa` or
///   content type `application/c2pa`. Tag "heif:c2pa".
///
/// A manifest binds itself to the file's bytes (its hard binding is a hash over everything but the manifest),
/// so it is only true where the image data is copied unchanged: re-encoded outputs never carry it (see
/// `MetadataOutcome.writableAfterReencoding`).
enum ContentCredentials {
    static let jpegTag = "APP11 c2pa"
    static let pngTag = "caBX"
    static let webpTag = "WebP C2PA"
    static let gifTagPrefix = "GIF:FF:C2PA_GIF"
    static let heifTag = "heif:c2pa"

    /// The JUMBF description-box type UUID of a C2PA manifest store ('c2pa' 0011-0010-8000-00AA00389B71).
    static let jumbfStoreUUID: [UInt8] = [
        0x63, 0x32, 0x70, 0x61, 0x00, 0x11, 0x00, 0x10,
        0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71,
    ]
    /// The `uuid` box extended type that holds a C2PA manifest store in BMFF files (HEIF, AVIF).
    static let bmffUUID: [UInt8] = [
        0xD8, 0xFE, 0xC3, 0xD6, 0x1B, 0x0E, 0x48, 0x3C,
        0x92, 0x97, 0x58, 0x28, 0x87, 0x7E, 0xC4, 0x81,
    ]

    /// Whether a block with `tag` (`MetadataBlock.other`) is content credentials.
    static func recognises(_ tag: String) -> Bool {
        tag == jpegTag || tag == pngTag || tag == webpTag || tag == heifTag || tag.hasPrefix(gifTagPrefix)
    }

    /// The JUMBF box instance number of a JPEG APP11 payload (`"JP"`, instance, sequence, then a `jumb` box);
    /// nil when the payload is no JUMBF segment.
    static func jumbfInstance(_ payload: [UInt8]) -> Int? {
        guard payload.count >= 16, payload[0] == 0x4A, payload[1] == 0x50,
            payload[12..<16].elementsEqual("jumb".utf8)
        else { return nil }
        return Int(payload[2]) << 8 | Int(payload[3])
    }

    /// Whether a JPEG APP11 payload is the first segment of a C2PA manifest store: its JUMBF superbox starts
    /// with a description box (`jumd`) of the C2PA type.
    static func startsJPEGManifest(_ payload: [UInt8]) -> Bool {
        jumbfInstance(payload) != nil && payload.count >= 40 && payload[20..<24].elementsEqual("jumd".utf8)
            && payload[24..<40].elementsEqual(jumbfStoreUUID)
    }

    /// Whether a HEIF item (its type and content type, as libheif reports them) holds a C2PA manifest store.
    static func isHEIFItem(type: String, contentType: String) -> Bool {
        type == "c2pa" || contentType == "application/c2pa"
    }

    /// The items of a HEIF/AVIF file's `meta` box that hold a C2PA manifest store (`isHEIFItem`), for readers
    /// that do not list items (libavif): a `.other(tag: heifTag)` block each, holding no bytes (the output is
    /// always re-encoded, so only their kind is reported). Reads the `meta` box (at most `maxBytes`) and its
    /// `iinf` entries; an entry that cannot be read ends the walk.
    static func heifItems(_ file: HEIFFileBytes, maxBytes: Int) throws -> [MetadataBlock] {
        guard let meta = try file.metaBody(maxBytes: maxBytes) else { return [] }
        var blocks: [MetadataBlock] = []
        var cursor = HEIFGrid.Cursor(meta)
        do {
            while cursor.left >= 8 {
                var (type, body) = try cursor.box()
                guard type == "iinf" else { continue }
                try body.forEachItemInfo { itemType, entry in
                    var contentType = ""
                    if itemType == "mime" {
                        _ = entry.cString()  // item_name
                        contentType = entry.cString()
                    }
                    if isHEIFItem(type: itemType, contentType: contentType) {
                        blocks.append(.other(tag: heifTag, data: []))
                    }
                }
            }
        } catch {
            // A box that runs past its parent: the walk ends there (libavif decides whether the file is whole).
        }
        return blocks
    }

    /// The C2PA `uuid` boxes at the top level of a HEIF/AVIF file, each as a `.other(tag: heifTag)` block
    /// holding the box's payload. Reads only box headers (positional reads; the image data is skipped) and
    /// at most `maxBoxes` of them; a payload over `maxBytes` in all is refused as metadata over the limit.
    static func heifBoxes(_ file: HEIFFileBytes, maxBytes: Int, maxBoxes: Int = 1024) throws -> [MetadataBlock] {
        var blocks: [MetadataBlock] = []
        var position = 0, boxes = 0, total = 0
        while position <= file.size - 8, boxes < maxBoxes {
            boxes += 1
            let header = try file.read(at: position, count: 8)
            var size = header[0..<4].reduce(0) { $0 << 8 | Int($1) }
            var headerSize = 8
            if size == 1 {
                guard position <= file.size - 16 else { break }
                size = try file.read(at: position + 8, count: 8).reduce(0) { ($0 << 8) | Int($1) }
                headerSize = 16
            } else if size == 0 {
                size = file.size - position
            }
            guard size >= headerSize, size <= file.size - position else { break }
            if header[4..<8].elementsEqual("uuid".utf8), size >= headerSize + 16,
                try file.read(at: position + headerSize, count: 16) == bmffUUID
            {
                total += size
                if total > maxBytes {
                    throw SharePipeError.tooLarge(
                        file: file.name,
                        exceeded: ExceededLimit(
                            .metadataBytes, found: total, limit: maxBytes, detail: "C2PA uuid boxes"))
                }
                blocks.append(
                    .other(
                        tag: heifTag,
                        data: try file.read(
                            at: position + headerSize + 16,
                            count: size - headerSize - 16)))
            }
            position += size
        }
        return blocks
    }
}
