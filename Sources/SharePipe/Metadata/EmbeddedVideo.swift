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
