/// A video a still image carries in its own file: the clip of a motion photo (Google Pixel, Samsung, Xiaomi),
/// with sound and MP4 tags that can hold the place it was filmed. Its owner may not know it is there: viewers
/// show only the still.
///
/// In a JPEG it follows the image's end (EOI), announced by Google's Motion Photo XMP (`Container:Directory`),
/// the older `GCamera:MicroVideo` XMP, Samsung's `SEFT` trailer (a `MotionPhoto_Data` entry), or by nothing at
/// all. In a HEIC it is a top-level box after the image (Samsung's `mpvd`), or an MP4 appended after the boxes.
///
/// It is metadata to SharePipe (`MetadataKind.embeddedVideo`): removed under `--strip all` and `gps`; under
/// `none` kept only by the metadata-only copy of a JPEG, the one route that copies the file's bytes (every
/// other route writes a new file, and says the video was left out).
public struct EmbeddedVideo: Sendable, Equatable, Codable {
    /// What announced the video in the file.
    public enum Container: String, Sendable, Codable, Equatable {
        /// Google's Motion Photo format 1.0: an XMP `Container:Directory` item with semantic `MotionPhoto`.
        case motionPhoto
        /// Google Camera's older MicroVideo XMP (`GCamera:MicroVideo`, `GCamera:MicroVideoOffset`).
        case microVideo
        /// Samsung's trailer: an `SEFT` directory at the end of the file with a `MotionPhoto_Data` entry.
        case samsungTrailer
        /// A top-level `mpvd` box holding the MP4 (Samsung's HEIC; Motion Photo 1.0 in HEIC and AVIF).
        case heifVideoBox
        /// An MP4 after the image that nothing announces (Xiaomi and others).
        case unannounced

        /// The name in text reports.
        public var displayName: String {
            switch self {
            case .motionPhoto: return "motion photo"
            case .microVideo: return "micro video"
            case .samsungTrailer: return "Samsung motion photo"
            case .heifVideoBox: return "motion photo box"
            case .unannounced: return "unannounced MP4"
            }
        }
    }

    /// What announced it.
    public var container: Container
    /// The video's length in bytes (the MP4's boxes; for an unreadable video, the bytes after the image).
    public var byteCount: Int
    /// Whether the MP4 has a sound track (a `hdlr` of type `soun`).
    public var hasAudio: Bool
    /// Whether the MP4 carries location tags (`©xyz`, `loci`, a QuickTime `keys` location such as
    /// `com.apple.quicktime.location.ISO6709`).
    public var hasLocation: Bool
    /// Whether the MP4's boxes could be read. When false the file announces a video that SharePipe cannot
    /// parse: `hasAudio` and `hasLocation` are then unknown (it may carry both), and it is never kept.
    public var readable: Bool
    /// Where the video starts in the input.
    var offset: Int = 0
    /// Where the bytes start that a copy keeping the video writes after the image (to the end of the file):
    /// the video's start, or for Samsung's trailer the first entry of its directory, so every position the
    /// file's announcements measure from its end stays right.
    var keptFrom: Int = 0

    private enum CodingKeys: String, CodingKey {
        case container, byteCount, hasAudio, hasLocation, readable
    }

    /// "motion photo, 2.4 MB, with audio, with location tags".
    public var summary: String {
        let size =
            byteCount >= 1_000_000
            ? "\(byteCount / 100_000 / 10).\(byteCount / 100_000 % 10) MB" : "\(byteCount) bytes"
        guard readable else { return "\(container.displayName), \(size), unreadable: may carry sound and a location" }
        return "\(container.displayName), \(size), "
            + (hasAudio ? "with audio" : "no audio") + ", "
            + (hasLocation ? "with location tags" : "no location tags")
    }
}

extension ImageInfo {
    /// The video the input carries, if any (`EmbeddedVideo`).
    public var embeddedVideo: EmbeddedVideo? {
        for case .embeddedVideo(let video) in metadata { return video }
        return nil
    }
}

/// Finds a motion photo's video in a JPEG or HEIF and reads what its MP4 holds. Every size is checked against
/// the file and its parent box, and the walks are bounded (boxes, depth, candidates), so a hostile file costs
/// at most a read of itself.
enum EmbeddedVideoDetector {
    /// The most top-level boxes of an MP4 (or of a HEIF's top level) walked.
    static let maxTopLevelBoxes = 1024
    /// The most boxes visited inside an MP4's `moov`.
    static let maxMovieBoxes = 20_000
    /// The deepest nesting inside `moov` followed.
    static let maxDepth = 12
    /// The largest `moov` read to look for sound and location (a phone's clip has tens of KB).
    static let maxMovieBoxBytes = 32 << 20
    /// The most unannounced `ftyp` candidates tried after a JPEG's end.
    static let maxCandidates = 64

    /// A JPEG's video: after the primary image's EOI, located by its announcements or, failing them, by the
    /// first MP4 found after the EOI. nil when the file has none.
    static func inJPEG(_ source: ImageSource, metadata: [MetadataBlock]) throws -> EmbeddedVideo? {
        let file = try HEIFFileBytes(source)
        let size = file.size
        guard size >= 16 else { return nil }
        let hints = MotionPhotoXMP.Hints(metadata)
        let tail = try file.read(at: size - 8, count: 8)
        let samsung = tail[4..<8].elementsEqual("SEFT".utf8) ? try SamsungTrailer.read(file) : nil
        // A file that ends with an EOI and announces nothing has no video after its image (an Ultra HDR gain
        // map ends with its own EOI): no need to walk the image data.
        if samsung == nil && !hints.announcesVideo && tail[6] == 0xFF && tail[7] == 0xD9 { return nil }
        guard let imageEnd = try JPEGImageEnd.offset(source), imageEnd < size else { return nil }
        let trailerEnd = max(imageEnd, samsung?.start ?? size)

        var candidates: [(start: Int, end: Int)] = []
        if let data = samsung?.motionPhotoData, data.lowerBound >= imageEnd {
            candidates.append((data.lowerBound, data.upperBound))
        }
        for start in hints.videoStarts(fileSize: size) where start >= imageEnd && start < size {
            candidates.append((start, size))
        }
        for (start, end) in candidates {
            if let facts = try MP4Facts.read(file, from: start, to: end) {
                return video(hints: hints, samsung: samsung, start: start, imageEnd: imageEnd, facts: facts)
            }
        }
        // Unannounced (or announced at a place that holds no MP4): the first `ftyp` box after the EOI that
        // starts a readable MP4.
        var tried = 0
        for start in try ftypBoxStarts(file, in: imageEnd..<trailerEnd) {
            tried += 1
            if tried > maxCandidates { break }
            if let facts = try MP4Facts.read(file, from: start, to: trailerEnd) {
                return video(hints: hints, samsung: samsung, start: start, imageEnd: imageEnd, facts: facts)
            }
        }
        guard hints.announcesVideo || samsung?.motionPhotoData != nil else { return nil }
        // Announced, but no MP4 can be read: the bytes after the image are still a video to report.
        let start = candidates.first?.start ?? imageEnd
        return EmbeddedVideo(
            container: hints.container ?? .samsungTrailer, byteCount: max(0, trailerEnd - start), hasAudio: false,
            hasLocation: false, readable: false, offset: start, keptFrom: start)
    }

    private static func video(
        hints: MotionPhotoXMP.Hints, samsung: SamsungTrailer?, start: Int, imageEnd: Int, facts: MP4Facts
    ) -> EmbeddedVideo {
        let container = hints.container ?? (samsung?.motionPhotoData != nil ? .samsungTrailer : .unannounced)
        return EmbeddedVideo(
            container: container, byteCount: facts.end - start, hasAudio: facts.hasAudio,
            hasLocation: facts.hasLocation, readable: true, offset: start,
            keptFrom: max(imageEnd, min(start, samsung?.start ?? start)))
    }

    /// A HEIF's video: a top-level `mpvd` box (Samsung), or an MP4 (a second `ftyp`) after the image's boxes.
    static func inHEIF(_ source: ImageSource, metadata: [MetadataBlock]) throws -> EmbeddedVideo? {
        let file = try HEIFFileBytes(source)
        let hints = MotionPhotoXMP.Hints(metadata)
        var found: EmbeddedVideo?
        var index = 0
        var next = 0  // where the box being visited starts
        try file.forEachBox(in: 0..<file.size) { type, body, length in
            let start = next
            next = body + length
            defer { index += 1 }
            guard index > 0, index < maxTopLevelBoxes else { return index < maxTopLevelBoxes }
            switch type {
            case "mpvd":
                let facts = try MP4Facts.read(file, from: body, to: body + length)
                found = EmbeddedVideo(
                    container: .heifVideoBox, byteCount: facts.map { $0.end - body } ?? length,
                    hasAudio: facts?.hasAudio ?? false, hasLocation: facts?.hasLocation ?? false,
                    readable: facts != nil, offset: body, keptFrom: start)
            case "ftyp":
                let facts = try MP4Facts.read(file, from: start, to: file.size)
                found = EmbeddedVideo(
                    container: hints.container ?? .unannounced,
                    byteCount: facts.map { $0.end - start } ?? (file.size - start), hasAudio: facts?.hasAudio ?? false,
                    hasLocation: facts?.hasLocation ?? false, readable: facts != nil, offset: start, keptFrom: start)
            default:
                return true
            }
            return false
        }
        return found
    }

    /// Where `ftyp` box headers start in `range` (the 4-byte size before the type), in order, read a MiB at
    /// a time.
    static func ftypBoxStarts(_ file: HEIFFileBytes, in range: Range<Int>) throws -> [Int] {
        let pattern = Array("ftyp".utf8)
        var starts: [Int] = []
        var position = range.lowerBound + 4
        let chunk = 1 << 20
        while position + 4 <= range.upperBound, starts.count <= maxCandidates {
            let count = min(chunk + 3, range.upperBound - position)
            let bytes = try file.read(at: position, count: count)
            var index = 0
            while index + 4 <= bytes.count {
                if bytes[index] == pattern[0], bytes[index + 1] == pattern[1], bytes[index + 2] == pattern[2],
                    bytes[index + 3] == pattern[3]
                {
                    starts.append(position + index - 4)
                }
                index += 1
            }
            position += max(1, count - 3)
        }
        return starts
    }
}

/// What an MP4 (ISO BMFF / QuickTime) holds that matters for privacy: a sound track, location tags.
struct MP4Facts: Equatable {
    /// The end of the MP4's last top-level box.
    var end: Int
    var hasAudio = false
    var hasLocation = false

    /// Reads the MP4 starting at `start` (its first box must be `ftyp`, and a `moov` must follow), not past
    /// `limit`; nil when no such MP4 starts there.
    static func read(_ file: HEIFFileBytes, from start: Int, to limit: Int) throws -> MP4Facts? {
        let limit = min(limit, file.size)
        var position = start
        var movie: Range<Int>?
        var boxes = 0
        while position <= limit - 8, boxes < EmbeddedVideoDetector.maxTopLevelBoxes {
            let header = try file.read(at: position, count: min(16, limit - position))
            guard header[4..<8].allSatisfy({ (0x20...0x7E).contains($0) }) else { break }
            let type = String(decoding: header[4..<8], as: UTF8.self)
            if boxes == 0 && type != "ftyp" { return nil }
            var size = header[0..<4].reduce(0) { $0 << 8 | Int($1) }
            var headerSize = 8
            if size == 1 {
                guard header.count == 16 else { break }
                let large = header[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                guard large <= UInt64(Int.max) else { break }
                size = Int(large)
                headerSize = 16
            } else if size == 0 {
                size = limit - position
            }
            guard size >= headerSize, size <= limit - position else { break }
            if type == "moov" && movie == nil { movie = (position + headerSize)..<(position + size) }
            position += size
            boxes += 1
        }
        guard let movie else { return nil }
        var facts = MP4Facts(end: position)
        guard movie.count <= EmbeddedVideoDetector.maxMovieBoxBytes else {
            // Too large to read: say what it may hold rather than that it holds nothing.
            facts.hasAudio = true
            facts.hasLocation = true
            return facts
        }
        var walk = MovieWalk()
        var cursor = HEIFGrid.Cursor(try file.read(at: movie.lowerBound, count: movie.count))
        walk.visit(&cursor, parent: "moov", depth: 0)
        facts.hasAudio = walk.hasAudio
        facts.hasLocation = walk.hasLocation
        return facts
    }

    /// The walk through `moov`: containers followed down to the handler and the user data.
    private struct MovieWalk {
        var hasAudio = false
        var hasLocation = false
        var boxes = 0
        /// Four-character codes of boxes that hold a location: QuickTime's `©xyz` (Apple, Android's
        /// MediaMuxer, Samsung), 3GPP's `loci`, and the `gps ` boxes some cameras write.
        static let locationBoxes: Set<UInt32> = [0xA978_797A, fourCC("loci"), fourCC("gps "), fourCC("GPS ")]
        static let containers: Set<UInt32> = [fourCC("trak"), fourCC("mdia"), fourCC("udta"), fourCC("ilst")]

        static func fourCC(_ text: StaticString) -> UInt32 {
            text.withUTF8Buffer { $0.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        }

        mutating func visit(_ cursor: inout HEIFGrid.Cursor, parent: String, depth: Int) {
            guard depth < EmbeddedVideoDetector.maxDepth else { return }
            while cursor.left >= 8, boxes < EmbeddedVideoDetector.maxMovieBoxes {
                guard let (code, body) = try? cursor.rawBox() else { return }
                boxes += 1
                var inner = body
                let name = String(decoding: withUnsafeBytes(of: code.bigEndian) { Array($0) }, as: UTF8.self)
                if Self.locationBoxes.contains(code) {
                    hasLocation = true
                } else if Self.containers.contains(code) {
                    visit(&inner, parent: name, depth: depth + 1)
                } else if name == "meta" {
                    // ISO `meta` is a full box (version, flags); QuickTime's is not: its first child follows.
                    if inner.left >= 8, inner.bytes[inner.position + 4..<inner.position + 8].elementsEqual("hdlr".utf8)
                    {
                        visit(&inner, parent: name, depth: depth + 1)
                    } else if (try? inner.skip(4)) != nil {
                        visit(&inner, parent: name, depth: depth + 1)
                    }
                } else if name == "hdlr" && parent == "mdia" {
                    if (try? inner.skip(8)) != nil, (try? inner.fourCC()) == "soun" { hasAudio = true }
                } else if name == "keys" {
                    readKeys(&inner)
                }
            }
        }

        /// QuickTime metadata keys (`mdta` names): a key naming a location (`com.apple.quicktime.location.ISO6709`,
        /// ffmpeg's `location`, `location-eng`).
        mutating func readKeys(_ cursor: inout HEIFGrid.Cursor) {
            guard (try? cursor.skip(4)) != nil, let count = try? cursor.u32() else { return }
            for _ in 0..<min(count, EmbeddedVideoDetector.maxMovieBoxes) {
                guard let size = try? cursor.u32(), size >= 8, (try? cursor.skip(4)) != nil,
                    size - 8 <= cursor.left
                else { return }
                let name = String(decoding: cursor.bytes[cursor.position..<cursor.position + size - 8], as: UTF8.self)
                    .lowercased()
                cursor.position += size - 8
                if name.contains("location") || name.contains("iso6709") || name.contains("gps") { hasLocation = true }
            }
        }
    }
}

extension HEIFGrid.Cursor {
    /// The next box with its type as a number (MP4 user data types such as `©xyz` are not UTF-8); this cursor
    /// moves past it.
    mutating func rawBox() throws -> (code: UInt32, body: HEIFGrid.Cursor) {
        let size32 = try u32()
        let code = UInt32(try u32())
        let bodySize: Int
        switch size32 {
        case 0: bodySize = left
        case 1:
            let large = try uint(8)
            guard large >= 16 else { throw HEIFGrid.Malformed() }
            bodySize = large - 16
        default:
            guard size32 >= 8 else { throw HEIFGrid.Malformed() }
            bodySize = size32 - 8
        }
        guard bodySize <= left else { throw HEIFGrid.Malformed() }
        let body = HEIFGrid.Cursor(bytes, from: position, to: position + bodySize)
        position += bodySize
        return (code, body)
    }
}

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

/// Walks a JPEG's markers as libjpeg does (and `JPEGRewriter`), through the entropy-coded data, to the end of
/// the primary image.
enum JPEGImageEnd {
    /// The offset just past the primary image's EOI marker; nil when the walk reaches the end of the data first.
    static func offset(_ source: ImageSource) throws -> Int? {
        let reader = try ByteReader(source)
        guard try reader.next() == 0xFF, try reader.next() == 0xD8 else { return nil }
        var pending: UInt8?
        while true {
            var code: UInt8
            if let found = pending {
                code = found
                pending = nil
            } else {
                repeat {
                    guard try reader.skip(past: 0xFF), var next = try reader.next() else { return nil }
                    while next == 0xFF {
                        guard let more = try reader.next() else { return nil }
                        next = more
                    }
                    code = next
                } while code == 0x00
            }
            if code == 0xD9 { return reader.offset }
            if (0xD0...0xD7).contains(code) || code == 0x01 { continue }
            guard let high = try reader.next(), let low = try reader.next() else { return nil }
            let length = Int(high) << 8 | Int(low)
            if length < 2 {
                if JPEGMarkers.isMetadataMarker(code) { continue }
                return nil
            }
            guard (try? reader.skip(length - 2)) != nil else { return nil }
            guard code == 0xDA else { continue }
            // Entropy-coded data: up to the next marker that is not a stuffed zero or a restart.
            while true {
                guard try reader.skip(past: 0xFF), var next = try reader.next() else { return nil }
                while next == 0xFF {
                    guard let more = try reader.next() else { return nil }
                    next = more
                }
                if next == 0x00 || (0xD0...0xD7).contains(next) { continue }
                pending = next
                break
            }
        }
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
