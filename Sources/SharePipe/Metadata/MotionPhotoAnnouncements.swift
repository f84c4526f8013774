// The readers of what a motion photo's still says about its video: Samsung's trailer, the JPEG's image end,
// the Motion Photo XMP. `EmbeddedVideoDetector` (EmbeddedVideo.swift) uses them.

/// Samsung's trailer at the end of a file: entries (`Image_UTC_Data`, `MotionPhoto_Data`, …) followed by an
/// `SEFH` directory, its length (little-endian) and `SEFT`. Each directory record gives an entry's distance back
/// from the directory's start and its length; an entry is 2 bytes of zero, its type, its name's length, the
/// name, then its data.
struct SamsungTrailer {
    /// Where the first entry starts.
    var start: Int
    /// The data of the `MotionPhoto_Data` entry (in a JPEG, the MP4), if any.
    var motionPhotoData: Range<Int>?

    static func read(_ file: HEIFFileBytes) throws -> SamsungTrailer? {
        let size = file.size
        guard size >= 8 else { return nil }
        let footer = try file.read(at: size - 8, count: 8)
        let directoryLength = footer[0..<4].reversed().reduce(0) { $0 << 8 | Int($1) }
        guard directoryLength >= 12, directoryLength <= size - 8 else { return nil }
        let directoryStart = size - 8 - directoryLength
        let directory = try file.read(at: directoryStart, count: directoryLength)
        guard directory.starts(with: Array("SEFH".utf8)) else { return nil }
        func le32(_ at: Int) -> Int { directory[at..<at + 4].reversed().reduce(0) { $0 << 8 | Int($1) } }
        let count = le32(8)
        guard count >= 0, count <= (directoryLength - 12) / 12 else { return nil }
        var trailer = SamsungTrailer(start: directoryStart, motionPhotoData: nil)
        for record in 0..<count {
            let at = 12 + record * 12
            let distance = le32(at + 4), length = le32(at + 8)
            guard distance > 0, distance <= directoryStart, length >= 8, length <= distance else { continue }
            let entryStart = directoryStart - distance
            trailer.start = min(trailer.start, entryStart)
            let header = try file.read(at: entryStart, count: 8)
            let nameLength = header[4..<8].reversed().reduce(0) { $0 << 8 | Int($1) }
            guard nameLength <= length - 8 else { continue }
            let name = try file.read(at: entryStart + 8, count: nameLength)
            if name.elementsEqual("MotionPhoto_Data".utf8) {
                trailer.motionPhotoData = (entryStart + 8 + nameLength)..<(entryStart + length)
            }
        }
        return trailer
    }
}

/// The XMP of a motion photo: Google's Camera properties (`GCamera:MotionPhoto`, `GCamera:MicroVideoOffset`, …)
/// and the `Container:Directory` whose items locate the video from the end of the file. Read to find the
/// video; edited so an output's XMP never points at a video it does not carry.
enum MotionPhotoXMP {
    /// One `Container:Directory` item (`rdf:li`), in file order: the primary image first.
    struct Item: Equatable {
        var semantic: String
        var mime: String
        var length: Int
        var padding: Int
        /// The `rdf:li` element in the packet.
        var span: Range<Int>

        var isVideo: Bool { semantic == "MotionPhoto" || mime.hasPrefix("video/") }
    }

    /// The Camera properties that say a video follows the image.
    static let videoProperties = [
        "MotionPhoto", "MotionPhotoVersion", "MotionPhotoPresentationTimestampUs", "MicroVideo", "MicroVideoVersion",
        "MicroVideoOffset", "MicroVideoPresentationTimestampUs",
    ]

    /// What a JPEG's XMP announces about a video after the image.
    struct Hints {
        var items: [Item] = []
        var microVideoOffset: Int?
        /// The announcement found, nil when the XMP announces no video.
        var container: EmbeddedVideo.Container?
        var announcesVideo: Bool { container != nil }

        init(_ metadata: [MetadataBlock]) {
            for case .xmp(let packet) in metadata {
                let found = MotionPhotoXMP.items(packet)
                if found.contains(where: \.isVideo) {
                    items = found
                    container = .motionPhoto
                }
                if let offset = MotionPhotoXMP.value("MicroVideoOffset", in: packet[...]).flatMap({ Int($0) }),
                    offset > 0
                {
                    microVideoOffset = offset
                    if container == nil { container = .microVideo }
                } else if container == nil, MotionPhotoXMP.value("MicroVideo", in: packet[...]) == "1" {
                    container = .microVideo
                }
                if container == nil, MotionPhotoXMP.value("MotionPhoto", in: packet[...]) == "1" {
                    container = .motionPhoto
                }
            }
        }

        /// Where the announcements put the video, measured back from the end of a file of `fileSize` bytes:
        /// the directory's items from the video on (with and without their padding), `MicroVideoOffset`.
        func videoStarts(fileSize: Int) -> [Int] {
            var starts: [Int] = []
            if let first = items.firstIndex(where: \.isVideo) {
                let lengths = items[first...].reduce(0) { $0 + $1.length }
                let paddings = items[(first + 1)...].reduce(0) { $0 + $1.padding }
                starts.append(fileSize - lengths)
                if paddings > 0 { starts.append(fileSize - lengths - paddings) }
            }
            if let microVideoOffset { starts.append(fileSize - microVideoOffset) }
            return starts
        }
    }

    /// Whether `packet` says anything about a video after the image.
    static func mentionsVideo(_ packet: [UInt8]) -> Bool {
        packet.firstRange(of: Array("MotionPhoto".utf8)) != nil
            || packet.firstRange(of: Array("MicroVideo".utf8)) != nil
    }

    /// `kept` consistent with the video it holds, for an input that had one (`hadVideo`): when the video
    /// is not kept, its XMP announcements go (the Camera properties, the directory's video item); when it is,
    /// the directory loses the items the copy leaves out (a gain map between the image and the video).
    static func consistent(_ kept: [MetadataBlock], hadVideo: Bool) -> [MetadataBlock] {
        guard hadVideo else { return kept }
        let keepsVideo = kept.contains { $0.kind == .embeddedVideo }
        return kept.map { block in
            guard case .xmp(let packet) = block, mentionsVideo(packet) else { return block }
            return .xmp(keepsVideo ? withoutItemsBeforeVideo(packet) : withoutVideoClaims(packet))
        }
    }

    /// The packet without anything saying a video follows the image: the Camera properties, the directory's
    /// video item (the whole directory when only the primary image would be left in it).
    static func withoutVideoClaims(_ packet: [UInt8]) -> [UInt8] {
        let found = items(packet)
        var spans = found.filter(\.isVideo).map(\.span)
        if !spans.isEmpty, found.count - spans.count <= 1 { spans += propertySpans("Directory", in: packet) }
        for name in videoProperties { spans += propertySpans(name, in: packet) }
        return removing(spans, from: packet)
    }

    /// The packet whose directory lists only the primary image and the items from the video on.
    static func withoutItemsBeforeVideo(_ packet: [UInt8]) -> [UInt8] {
        let found = items(packet)
        guard let first = found.firstIndex(where: \.isVideo), first > 1 else { return packet }
        return removing(found[1..<first].map(\.span), from: packet)
    }

    /// The directory's items: each `rdf:li` that has an `Item:Semantic` or `Item:Mime` (any prefix).
    static func items(_ packet: [UInt8]) -> [Item] {
        listItemSpans(packet).compactMap { span in
            let text = packet[span]
            let semantic = value("Semantic", in: text), mime = value("Mime", in: text)
            guard semantic != nil || mime != nil else { return nil }
            func number(_ name: String) -> Int { min(max(Int(value(name, in: text) ?? "") ?? 0, 0), 1 << 40) }
            return Item(
                semantic: semantic ?? "", mime: mime ?? "", length: number("Length"), padding: number("Padding"),
                span: span)
        }
    }

    /// The `rdf:li` elements of `packet`, each from `<rdf:li` to its `</rdf:li>` (or its own `/>`).
    static func listItemSpans(_ packet: [UInt8]) -> [Range<Int>] {
        let open = Array("<rdf:li".utf8), close = Array("</rdf:li>".utf8)
        var spans: [Range<Int>] = []
        var from = 0
        while let start = packet[from...].firstRange(of: open) {
            from = start.upperBound
            guard start.upperBound < packet.count,
                [0x20, 0x09, 0x0A, 0x0D, 0x3E, 0x2F].contains(packet[start.upperBound])
            else { continue }
            guard let tagEnd = packet[start.upperBound...].firstIndex(of: 0x3E) else { break }
            if packet[tagEnd - 1] == 0x2F {
                spans.append(start.lowerBound..<(tagEnd + 1))
                from = tagEnd + 1
                continue
            }
            guard let end = packet[tagEnd...].firstRange(of: close) else { break }
            spans.append(start.lowerBound..<end.upperBound)
            from = end.upperBound
        }
        return spans
    }

    /// The value of the property with local name `name` (any prefix), as an attribute (`X:Name="v"`) or an
    /// element (`<X:Name>v</X:Name>`); nil when absent.
    static func value(_ name: String, in text: ArraySlice<UInt8>) -> String? {
        let needle = Array((":" + name).utf8)
        var from = text.startIndex
        while let found = text[from...].firstRange(of: needle) {
            from = found.upperBound
            var index = found.upperBound
            while index < text.endIndex, isSpace(text[index]) { index += 1 }
            guard index < text.endIndex else { return nil }
            if text[index] == 0x3D {  // =
                index += 1
                while index < text.endIndex, isSpace(text[index]) { index += 1 }
                guard index < text.endIndex, text[index] == 0x22 || text[index] == 0x27 else { continue }
                let quote = text[index]
                guard let end = text[(index + 1)...].firstIndex(of: quote) else { return nil }
                return String(decoding: text[(index + 1)..<end], as: UTF8.self)
            }
            if text[index] == 0x3E {  // >
                // An opening tag `<X:Name>` (not a closing `</X:Name>`): the text up to the next tag.
                var prefixStart = found.lowerBound
                while prefixStart > text.startIndex, isNameByte(text[prefixStart - 1]) { prefixStart -= 1 }
                guard prefixStart > text.startIndex, text[prefixStart - 1] == 0x3C else { continue }
                guard let end = text[(index + 1)...].firstIndex(of: 0x3C) else { return nil }
                return String(decoding: text[(index + 1)..<end], as: UTF8.self)
                    .trimmingCharacters(in: " ")
            }
        }
        return nil
    }

    /// Where the property `name` (any prefix) is written in `packet`: an attribute with the white space before
    /// it, or an element from its opening tag through its closing tag.
    static func propertySpans(_ name: String, in packet: [UInt8]) -> [Range<Int>] {
        let needle = Array((":" + name).utf8)
        var spans: [Range<Int>] = []
        var from = 0
        while let found = packet[from...].firstRange(of: needle) {
            from = found.upperBound
            var prefixStart = found.lowerBound
            while prefixStart > 0, isNameByte(packet[prefixStart - 1]) { prefixStart -= 1 }
            guard prefixStart < found.lowerBound, prefixStart > 0 else { continue }
            var index = found.upperBound
            while index < packet.count, isSpace(packet[index]) { index += 1 }
            guard index < packet.count else { break }
            if packet[index] == 0x3D, isSpace(packet[prefixStart - 1]) {  // attribute
                index += 1
                while index < packet.count, isSpace(packet[index]) { index += 1 }
                guard index < packet.count, packet[index] == 0x22 || packet[index] == 0x27,
                    let end = packet[(index + 1)...].firstIndex(of: packet[index])
                else { continue }
                var start = prefixStart
                while start > 0, isSpace(packet[start - 1]) { start -= 1 }
                spans.append(start..<(end + 1))
                from = end + 1
            } else if packet[index] == 0x3E, packet[prefixStart - 1] == 0x3C {  // element <X:Name>
                let closing = Array(
                    ("</" + String(decoding: packet[prefixStart..<found.upperBound], as: UTF8.self)).utf8)
                guard let end = packet[index...].firstRange(of: closing),
                    let tagEnd = packet[end.upperBound...].firstIndex(of: 0x3E)
                else { continue }
                spans.append((prefixStart - 1)..<(tagEnd + 1))
                from = tagEnd + 1
            }
        }
        return spans
    }

    /// `packet` without the bytes of `spans` (overlapping spans are merged).
    static func removing(_ spans: [Range<Int>], from packet: [UInt8]) -> [UInt8] {
        guard !spans.isEmpty else { return packet }
        var out: [UInt8] = []
        out.reserveCapacity(packet.count)
        var position = 0
        for span in spans.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if span.lowerBound > position { out += packet[position..<span.lowerBound] }
            position = max(position, span.upperBound)
        }
        if position < packet.count { out += packet[position...] }
        return out
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F
            || byte == 0x2D || byte == 0x2E
    }
}
