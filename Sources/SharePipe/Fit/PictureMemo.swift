/// What the services of one source have in common (`Pipeline.prepare(_:forEach:)`; `SharePipeline` for the
/// services of one upload): the auto searches (`QualitySetting.auto`) and lossless encodes already made of the
/// pictures it rendered.
///
/// Services with the same caps render the same picture: X, Bluesky and Mastodon all want a photo's short edge
/// at 1080. A search is deterministic: the same pixels searched for the same target over the same range from
/// the same first guess encode the same candidates, score them the same and choose the same quality. So a
/// later service whose render is the same picture takes the earlier service's answer (the quality, its score,
/// the scored candidate and the attempts that chose it, recorded again against its own byte limit) instead of
/// searching again, and where it also writes the same metadata, the same recoded file (a lossy WebP's
/// candidates are the files written, so its answer is taken only with the same metadata). A lossless encode
/// (PNG, a PNG's deflate being most of its job) of the same picture with the same settings and metadata is
/// the same file: a later service takes it too. A picture is known by its size, layout and a keyed hash of its
/// pixels (`Hasher`: seeded per process, so a file cannot be made to collide with another render); a byte
/// limit is not part of a search or an encode, only of what follows them.
///
/// Held: each answer's scored candidate and recoded file (about the size of the output), and the latest
/// lossless encodes up to `keptEncodeBytes`, for as long as the source's services are prepared.
final class PictureMemo: @unchecked Sendable {
    /// A rendered picture: its size, layout and a keyed hash of its pixels.
    struct Picture: Hashable {
        var size: PixelSize
        var channels: Int
        var pixelDigest: Int

        init(_ bitmap: Bitmap) {
            size = bitmap.size
            channels = bitmap.layout.channels
            var hasher = Hasher()
            bitmap.pixels.withUnsafeBytes { hasher.combine(bytes: $0) }
            pixelDigest = hasher.finalize()
        }
    }

    /// What decides a search's outcome besides constants.
    struct Key: Hashable {
        var picture: Picture
        var target: Double
        var range: ClosedRange<Int>
        var encoding: Encoding
        /// The first guess's inputs: the quality a larger size chose (nil at the first size searched) and the
        /// source's own quality.
        var lastQuality: Int?
        var sourceQuality: Int?

        init(
            _ picture: Bitmap, target: Double, range: ClosedRange<Int>, encoding: Encoding, lastQuality: Int?,
            sourceQuality: Int?
        ) {
            self.picture = Picture(picture)
            self.target = target
            self.range = range
            self.encoding = encoding
            self.lastQuality = lastQuality
            self.sourceQuality = sourceQuality
        }
    }

    /// How the candidates are encoded.
    enum Encoding: Hashable {
        /// Baseline JPEG without metadata (`JPEGEncoder`'s chroma and tables).
        case jpeg(subsample420: Bool, tables: JPEGQuantTables)
        /// Lossy WebP, its candidates the files written (with their metadata: `Answer.written`).
        case webp
    }

    /// A search's outcome.
    struct Answer {
        var meeting: QualitySearch.Meeting
        /// The chosen quality's candidate (JPEG: baseline, standard Huffman tables, no metadata; WebP: the file).
        var scored: [UInt8]
        /// The fewest bytes of any whole candidate (`StillSizes.smallestAtSize`).
        var smallest: Int
        /// The probes and candidates the search recorded, in order.
        var attempts: [FitAttempt]
        /// The file recoded from `scored` (`JPEGEncoder.recode`), with what it was recoded with.
        var recoded: Recoded? = nil
        /// The metadata the candidates were written with (WebP), which a later search must share to take them.
        var written: [MetadataBlock]? = nil
    }

    struct Recoded {
        var metadata: [MetadataBlock]
        var alsoBaseline: Bool
        var progressive: [UInt8]
        var baseline: [UInt8]?
    }

    private let answers = Locked([Key: Answer]())
    private let given = Locked(0)

    /// How many searches were answered from the memo instead of searched.
    var answersGiven: Int { given.withLock { $0 } }

    /// The answer of a search made under `key` whose candidates were `written` with that metadata, if one was.
    func answer(for key: Key, written: [MetadataBlock]? = nil) -> Answer? {
        guard let answer = answers.withLock({ $0[key] }), answer.written == written else { return nil }
        given.withLock { $0 += 1 }
        return answer
    }

    /// Keeps the answer of the search made under `key`.
    func keep(_ answer: Answer, for key: Key) { answers.withLock { $0[key] = answer } }

    /// The file recoded under `key` with `metadata`, baseline too where `alsoBaseline`, if it was.
    func recoded(for key: Key, metadata: [MetadataBlock], alsoBaseline: Bool) -> Recoded? {
        answers.withLock { answers in
            guard let recoded = answers[key]?.recoded, recoded.metadata == metadata,
                recoded.alsoBaseline == alsoBaseline
            else { return nil }
            return recoded
        }
    }

    /// Keeps the file recoded under `key` (the latest one only).
    func keep(_ recoded: Recoded, for key: Key) { answers.withLock { $0[key]?.recoded = recoded } }

    /// A lossless encode: the picture, the format and the settings.
    struct EncodeKey: Hashable {
        var picture: Picture
        var format: ImageFormat
        var settings: EncodeSettings
    }

    private struct Encodes {
        var files: [EncodeKey: (metadata: [MetadataBlock], bytes: [UInt8])] = [:]
        /// Oldest first.
        var order: [EncodeKey] = []
        var byteCount = 0
    }
    private let encodes = Locked(Encodes())
    private let encodesGiven = Locked(0)

    /// The most bytes of lossless encodes kept (the oldest go first): two 1080-row RGBA PNGs. An encode that is
    /// also an output shares its storage with it.
    static let keptEncodeBytes = 16 << 20

    /// How many encodes were taken from the memo instead of made.
    var encodesTaken: Int { encodesGiven.withLock { $0 } }

    /// The file `key` with `metadata` describes: an earlier service's, or made by `encode` and kept.
    func encoded(_ key: EncodeKey, metadata: [MetadataBlock], encode: () throws -> [UInt8]) rethrows -> [UInt8] {
        if let known = encodes.withLock({ $0.files[key] }), known.metadata == metadata {
            encodesGiven.withLock { $0 += 1 }
            return known.bytes
        }
        let bytes = try encode()
        guard bytes.count <= Self.keptEncodeBytes else { return bytes }
        encodes.withLock { kept in
            if let old = kept.files.updateValue((metadata, bytes), forKey: key) {
                kept.byteCount -= old.bytes.count
                kept.order.removeAll { $0 == key }
            }
            kept.order.append(key)
            kept.byteCount += bytes.count
            while kept.byteCount > Self.keptEncodeBytes, let oldest = kept.order.first {
                kept.order.removeFirst()
                kept.byteCount -= kept.files.removeValue(forKey: oldest)?.bytes.count ?? 0
            }
        }
        return bytes
    }
}
