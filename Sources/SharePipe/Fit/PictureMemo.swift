/// The auto searches (`QualitySetting.auto`) already made for one source, shared by its services
/// (`Pipeline.prepare(_:forEach:)`).
///
/// Services with the same caps render the same picture: X, Bluesky and Mastodon all want a photo's short edge
/// at 1080. A search is deterministic: the same pixels searched for the same target over the same range from
/// the same first guess encode the same candidates, score them the same and choose the same quality. So a
/// later service whose render is the same picture takes the earlier service's answer (the quality, its score,
/// the scored candidate and the attempts that chose it, recorded again against its own byte limit) instead of
/// searching again, and where it also writes the same metadata, the same recoded file. The picture is known by
/// its size, layout and a keyed hash of its pixels (`Hasher`: seeded per process, so a file cannot be made to
/// collide with another render); its byte limit is not part of the search, only of what follows it.
///
/// Held: each answer's scored candidate and recoded file (about the size of the output), for as long as the
/// source's services are prepared.
final class AutoSearchMemo: @unchecked Sendable {
    /// What decides a search's outcome besides constants.
    struct Key: Hashable {
        var size: PixelSize
        var channels: Int
        var pixelDigest: Int
        var target: Double
        var range: ClosedRange<Int>
        var subsample420: Bool
        var tables: JPEGQuantTables
        /// The first guess's inputs: the quality a larger size chose (nil at the first size searched) and the
        /// source's own quality.
        var lastQuality: Int?
        var sourceQuality: Int?

        init(
            _ picture: Bitmap, target: Double, range: ClosedRange<Int>, encoder: JPEGEncoder, lastQuality: Int?,
            sourceQuality: Int?
        ) {
            size = picture.size
            channels = picture.layout.channels
            var hasher = Hasher()
            picture.pixels.withUnsafeBytes { hasher.combine(bytes: $0) }
            pixelDigest = hasher.finalize()
            self.target = target
            self.range = range
            subsample420 = encoder.subsample420
            tables = encoder.tables
            self.lastQuality = lastQuality
            self.sourceQuality = sourceQuality
        }
    }

    /// A search's outcome.
    struct Answer {
        var meeting: QualitySearch.Meeting
        /// The chosen quality's candidate (baseline, standard Huffman tables, no metadata).
        var scored: [UInt8]
        /// The fewest bytes of any whole candidate (`StillSizes.smallestAtSize`).
        var smallest: Int
        /// The probes and candidates the search recorded, in order.
        var attempts: [FitAttempt]
        /// The file recoded from `scored` (`JPEGEncoder.recode`), with what it was recoded with.
        var recoded: Recoded?
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

    /// The answer of a search made under `key`, if one was.
    func answer(for key: Key) -> Answer? {
        guard let answer = answers.withLock({ $0[key] }) else { return nil }
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
}
