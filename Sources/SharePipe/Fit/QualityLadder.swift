import Glibc

/// `FittingLadder.quality`: at each size the highest fitting quality, then a smaller size.
///
/// JPEG, when the byte limit bites (the ceiling's encode, as requested, does not fit): the search goes on
/// with progressive scans (smaller than baseline at the same quality, so a step or so higher under the same
/// limit) on the size rendered again, sharp where the plan says (`PreparePlan.sharpRenderWhenCapped`,
/// `ImageDecoder.renderSharp`: a JPEG source decoded at twice the size or more); then, for a colour image,
/// that render is searched at 4:4:4 chroma below the 4:2:0 answer's quality, and of the two fits the one
/// that scores higher against the render (SSIMULACRA2, 4:4:4 by a margin) is written: 4:4:4 keeps saturated
/// colour edges that 4:2:0 blurs whatever its quality, 4:2:0 spends the bytes on detail where colour is plain.
/// Without a limit that bites, the ceiling's encode is written as it always was (from the render's 4:2:0
/// planes, or for an upright colour JPEG from its rows streamed into the encoder: the same bytes). Both searches encode the second render itself (3 bytes a pixel: the bitmap the first size's
/// planes were made from, counted again in the meter once the planes are gone), so the meter's peak is the
/// larger of the two renders' (`MemoryEstimate.jpeg` prices the sharp one).
struct QualityLadder: LadderRunner {
    var sizes: StillSizes
    let encoder: any ImageEncoder
    var range: ClosedRange<Int>
    let progressive: Bool
    let metadata: MetadataOutcome
    /// The adjustment the ladder's range carries (`SourceQuality.capNote`: "quality capped at q72, as fine as the
    /// source's q75 tables"), if any.
    let rangeNote: String?
    /// Whether a size the limit bites is rendered sharp (`PreparePlan.sharpRenderWhenCapped`).
    let sharpRender: Bool
    /// The SSIMULACRA2 score `QualitySetting.auto` aims at, or nil for the fixed ceiling.
    var target: Double? = nil

    var warnings: [String] { sizes.warnings }
    var placeholderThumbnail: PlaceholderThumbnail? { sizes.placeholderThumbnail }
    var focalPoint: FocalPoint? { sizes.focalPoint }

    /// The attempt note and adjustment of a 4:4:4 fit.
    static let fullChromaNote = "4:4:4 chroma"
    /// How much higher (SSIMULACRA2 points, against the render) the 4:4:4 fit must score to be written: half a
    /// point, so that a near tie stays 4:2:0 (what cameras and services write, and cheaper to decode).
    static let fullChromaGain = 0.5
    /// The attempt note and adjustment of progressive scans the options did not ask for.
    static let progressiveNote = "progressive"

    mutating func attempt(_ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint) throws -> FittingDriver.Fit? {
        if let jpeg = encoder as? JPEGEncoder, jpeg.subsample420 {
            if let target { return try attemptAuto(jpeg, target: target, &log, checkpoint: checkpoint) }
            return try attemptJPEG(jpeg, &log, checkpoint: checkpoint)
        }
        if let target, let webp = encoder as? WebPEncoder, !webp.lossless {
            return try attemptWebPAuto(webp, target: target, &log, checkpoint: checkpoint)
        }
        let staged = try sizes.renderStaged(for: encoder)
        defer { sizes.release(staged) }
        let search = try log.searchQuality(
            staged, format: encoder.format, range: range, progressive: progressive,
            metadata: metadata.kept, note: nil, checkpoint: checkpoint)
        sizes.smallestAtSize = search.smallestBytes
        guard let best = search.best else { return nil }
        return fit(best.encoded, size: staged.size, quality: best.quality, notes: [])
    }

    func fit(_ bytes: [UInt8], size: PixelSize, quality: Int, notes: [String]) -> FittingDriver.Fit {
        FittingDriver.Fit(
            bytes: bytes, format: encoder.format, size: size, quality: quality, metadata: metadata,
            adjustments: (rangeNote.map { [$0] } ?? []) + notes + sizes.adjustments)
    }

    /// The attempt note of an encode made only to be scored (baseline, the same pixels as the written one; under
    /// auto with libjpeg's standard Huffman tables, larger than the file written).
    static let scoredNote = "scored"
    /// The source's own JPEG quality as saved (`SourceQuality.saved`, `JPEGQuality.estimate`: Annex K's scale, not
    /// the cap's ceiling), read under auto for the search's first guess.
    var sourceQuality: Int? = nil
    /// The quality the auto search chose at the last size it searched: the next size's first guess.
    var lastAutoQuality: Int? = nil
    /// The auto searches made of the same source by the services before this one (`PictureMemo`), if it is
    /// prepared for several.
    var memo: PictureMemo? = nil

    /// The quality the auto search tries first where no size was searched yet: the median answer for a score of
    /// 80 on photos (libjpeg at 4:2:0: q83), moved by the target along the assumed slope, and a step lower for
    /// each 8 points a JPEG source's own quality is under q75. A source's quantisation says little about the
    /// answer once the picture is downscaled (the same photos saved at q60, q75, q85 and q95 needed qualities
    /// within 2 steps of each other, the q60 ones the lowest), so it only nudges the guess.
    static func autoGuess(target: Double, sourceQuality: Int?) -> Int {
        let base = 83
        // Along the line of the assumed slope: ln(101 − q) moves by (target − 80) / slope.
        let moved = 101 - exp(QualitySearch.logStep(base) - (target - 80) / QualitySearch.assumedLogSlope)
        var guess = Int(moved.rounded())
        if let sourceQuality, sourceQuality < 75 { guess -= (75 - sourceQuality + 4) / 8 }
        return min(max(guess, 30), 98)
    }
    /// The most candidates the auto search scores at one size (each costs an encode, a decode and a score, about a
    /// third of a whole fixed-quality job from a 24 MP JPEG): when they run out, the lowest quality that met the
    /// target is written.
    static let autoMeasures = 4
    /// How close the auto search brings its bracket before it stops: the hit and a miss two steps below it (or a
    /// step down that misses by the measured slope) — the quality written is at most one step over the lowest
    /// meeting the target, for one measure fewer on most photos.
    static let autoBracket = 2
    /// A candidate scoring at most this far over the target is written as it is (about two steps at q83, where
    /// the assumed slope gives 0.7 points a step): one more candidate costs a third of a whole job to save a step
    /// or so. After the probe the search stops at its first whole candidate on most photos.
    static let autoCloseEnough = 1.5

    /// What the auto search may spend, in whole candidates (a probe counts its share of the rows), before it
    /// takes the first candidate meeting the target however far over it: a candidate costs about a fifth of a
    /// fixed-quality job from a 24 MP JPEG and a third from a 12 MP one, and the written file's recode about as
    /// much again, so a search within half a job of the fixed one has room for a probe and one candidate, or for
    /// two probes and one candidate where the first probe was far from the picture's answer. A candidate
    /// missing the target is always followed by another (up to `autoMeasures`).
    static let autoBudget = 1.4

    /// The auto search's probe: every `probeEvery`th band of `probeBand` rows of the render from the third on,
    /// stacked (a quarter of the picture). Bands start on a multiple of 16 rows and span the width, so the probe's
    /// 4:2:0 blocks, and what quantisation does to them, are the whole encode's; encoded and scored at the first
    /// guess, it tells where the whole picture scores for a quarter of a candidate's cost.
    static let probeBand = 64
    static let probeEvery = 4
    /// How much higher a probe scores than the whole picture at the same quality, on photos (the seams between
    /// bands; from -0.5 to +1.0 on 20 photos of 1080 rows or more, 0.3 on average).
    static let probeBias = 0.3
    /// Where the first whole candidate aims after the probe, in steps over the target (the search's own measures
    /// aim half a step over; the probe's score is less certain).
    static let probeAimSteps = 0.75
    /// How far (points) the probe's score, less its bias, may be from the target before a second probe is taken
    /// where the first one points: far from the target the assumed slope is not the picture's (the two probes
    /// give it).
    static let probeFar = 4.0
    /// The attempt note of the probe's encode.
    static let probeNote = "probe: every 4th band of 64 rows"

    /// The rows of the probe of a picture `height` rows tall.
    static func probeRows(_ height: Int) -> Int {
        let first = 2 * probeBand
        guard height >= first + probeBand else { return 0 }
        return ((height - first - probeBand) / (probeEvery * probeBand) + 1) * probeBand
    }

    /// The probe of `bitmap`, or nil where it would be under 256 rows or 256 pixels wide (the smallest of
    /// SSIMULACRA2's six scales would be missing, and with it any likeness to the whole picture's score).
    static func probe(of bitmap: Bitmap) -> Bitmap? {
        let rows = probeRows(bitmap.height)
        guard rows >= 256, bitmap.width >= 256 else { return nil }
        let rowBytes = bitmap.width * bitmap.layout.channels
        var pixels: [UInt8] = []
        pixels.reserveCapacity(rows * rowBytes)
        for top in stride(
            from: 2 * probeBand, to: 2 * probeBand + rows / probeBand * probeEvery * probeBand,
            by: probeEvery * probeBand)
        {
            pixels += bitmap.pixels[top * rowBytes..<(top + probeBand) * rowBytes]
        }
        return Bitmap(size: PixelSize(width: bitmap.width, height: rows), layout: bitmap.layout, pixels: pixels)
    }

    /// What the probe holds beside the render of `size` (its pixels; its scorer is no wider than the render's).
    static func probeBytes(_ size: PixelSize) -> Int { size.width * probeRows(size.height) * 3 }

    /// The first whole candidate after a probe scoring `score` at `quality`: where the line of `logSlope` (points
    /// per unit of `QualitySearch.logStep`) through the score, less `probeBias`, reaches the target plus
    /// `probeAimSteps` steps.
    static func guessAfterProbe(
        _ score: Double, at quality: Int, target: Double, logSlope: Double = QualitySearch.assumedLogSlope
    ) -> Int {
        let aim = target + probeAimSteps * QualitySearch.stepGain(at: quality, logSlope: logSlope)
        let step = QualitySearch.logStep(quality) - (aim - (score - probeBias)) / logSlope
        let exact = 101 - exp(step)
        guard exact.isFinite else { return quality }
        return Int(min(max(exact, 1), 100).rounded(.up))
    }

    /// The slope (points per unit of `QualitySearch.logStep`) of two probes, kept within 6 to 30 (photos: 9 to 18).
    static func probeSlope(_ first: (quality: Int, score: Double), _ second: (quality: Int, score: Double)) -> Double {
        let run = QualitySearch.logStep(first.quality) - QualitySearch.logStep(second.quality)
        guard run != 0 else { return QualitySearch.assumedLogSlope }
        return min(max((second.score - first.score) / run, 6), 30)
    }

    /// One size under `QualitySetting.auto` (JPEG at 4:2:0): the render (composited over white, as the encoder
    /// sees it) is held while `QualitySearch.lowestMeeting` encodes baseline candidates and scores each decode
    /// against it (`JPEGEncoder.ssimulacra2`: 8 decoded rows and the streaming scorer at a time, counted in the
    /// meter). At the first size searched, a render of 960 rows or more is probed first (`probe(of:)`: a
    /// quarter of its rows encoded and scored at the first guess), and the first whole candidate is placed by
    /// the probe's score. The lowest quality meeting the target is written (progressive when asked or when
    /// smaller: the same pixels); where even the ceiling falls short, the ceiling. Where that encode is over the
    /// byte limit, the size goes to the fixed-quality ladder (`attemptJPEG`) with its ceiling just below, and the
    /// fit it finds is scored.
    private mutating func attemptAuto(
        _ jpeg: JPEGEncoder, target: Double, _ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint
    ) throws -> FittingDriver.Fit? {
        let (meeting, scored, size, key) = try searchAuto(jpeg, target: target, &log, checkpoint: checkpoint)
        // The render is given back by now: the recode's coefficient arrays (3 bytes a pixel at 4:2:0, as the
        // render) take its place instead of joining it.
        let (chosen, madeProgressive) = try recodeAuto(
            jpeg, scored, meeting: meeting, size: size, searched: key, &log, checkpoint: checkpoint)
        let notes =
            Self.shortOfTargetNotes(meeting, target: target)
            + (madeProgressive ? [Self.progressiveNote] : [])
        if chosen.count <= log.limit {
            var result = fit(chosen, size: size, quality: meeting.quality, notes: notes)
            result.score = meeting.score
            return result
        }
        // The limit bites (the render is given back by now): the best that fits, below the target's quality.
        guard meeting.quality > range.lowerBound else { return nil }
        var capped = self
        capped.target = nil
        capped.range = range.lowerBound...meeting.quality - 1
        defer { sizes = capped.sizes }
        return try capped.attemptJPEG(jpeg, &log, checkpoint: checkpoint, afterCeiling: true, scoreFits: true)
    }

    /// The auto search at the current size: the quality chosen, the candidate scored there, the size and, where
    /// the source is prepared for several services, the search's key in their `PictureMemo` (an earlier
    /// service's search of the same picture is taken instead of searching again).
    /// Candidates are encoded with standard Huffman tables (cheaper, larger, the same pixels): only the written
    /// file is optimized, recoded from the chosen candidate's coefficients (`recodeAuto`).
    private mutating func searchAuto(
        _ jpeg: JPEGEncoder, target: Double, _ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint
    ) throws -> (QualitySearch.Meeting, scored: [UInt8], PixelSize, PictureMemo.Key?) {
        let rendered = try sizes.render()
        defer { sizes.release(rendered) }
        // The decoder's and the resampler's code is not needed again: its pages go (where the process asked).
        ProcessAllocator.searchStarts()
        let bitmap = rendered.layout.hasAlpha ? AlphaFlattening.overWhite(rendered) : rendered
        let key = memo.map { _ in
            PictureMemo.Key(
                bitmap, target: target, range: range,
                encoding: .jpeg(subsample420: jpeg.subsample420, tables: jpeg.tables), lastQuality: lastAutoQuality,
                sourceQuality: sourceQuality)
        }
        if let key, let known = memo?.answer(for: key) {
            take(known, &log)
            return (known.meeting, known.scored, bitmap.size, key)
        }
        let recordedBefore = log.attempts.count
        let meter = sizes.renderer.meter
        let scorerBytes = Self.scoringBytes(bitmap.size)
        meter.allocate(scorerBytes)
        defer { meter.release(scorerBytes) }
        // Probes and candidates are encoded only to be scored: standard Huffman tables (one pass, no coefficient
        // store) and no metadata; the chosen quality's file is its candidate recoded (`JPEGEncoder.recode`).
        var scoring = jpeg
        scoring.optimizeCoding = false
        var candidates = AutoCandidates(target: target, ceiling: range.upperBound)
        var guess = lastAutoQuality ?? Self.autoGuess(target: target, sourceQuality: sourceQuality)
        var spent = 0.0
        // The first size searched, where large enough: the probe places the first whole candidate.
        if lastAutoQuality == nil, range.contains(guess), let probe = Self.probe(of: bitmap) {
            meter.allocate(probe.byteCount)
            defer { meter.release(probe.byteCount) }
            func probed(_ quality: Int) throws -> Double {
                try checkpoint()
                let encoded = try scoring.encode(
                    probe, settings: EncodeSettings(quality: quality, progressive: false), metadata: [])
                let score = try JPEGEncoder.ssimulacra2(encoded, against: probe)
                spent += Double(probe.height) / Double(bitmap.height)
                log.record(
                    size: probe.size, format: .jpeg, quality: quality, note: Self.probeNote, bytes: encoded.count,
                    score: score, probe: true)
                return score
            }
            let first = (quality: guess, score: try probed(guess))
            guess = Self.guessAfterProbe(first.score, at: first.quality, target: target)
            let second = min(max(guess, range.lowerBound), range.upperBound)
            if abs(first.score - Self.probeBias - target) > Self.probeFar, second != first.quality {
                let again = (quality: second, score: try probed(second))
                guess = Self.guessAfterProbe(
                    again.score, at: again.quality, target: target, logSlope: Self.probeSlope(first, again))
            }
        }
        let meeting = try QualitySearch.lowestMeeting(
            target, range: range, guess: guess, maxMeasures: Self.autoMeasures, closeEnough: Self.autoCloseEnough,
            bracket: Self.autoBracket, budget: Self.autoBudget, spent: spent
        ) { quality in
            try checkpoint()
            let encoded = try scoring.encode(
                bitmap, settings: EncodeSettings(quality: quality, progressive: false), metadata: [])
            let score = try JPEGEncoder.ssimulacra2(encoded, against: bitmap)
            log.record(
                size: bitmap.size, format: .jpeg, quality: quality, note: Self.scoredNote, bytes: encoded.count,
                score: score)
            candidates.add(encoded, quality: quality, score: score)
            return score
        }
        lastAutoQuality = meeting.quality
        sizes.smallestAtSize = candidates.smallest
        let scored = candidates.encode(meeting.quality)
        if let key {
            memo?.keep(
                PictureMemo.Answer(
                    meeting: meeting, scored: scored, smallest: candidates.smallest,
                    attempts: Array(log.attempts[recordedBefore...])),
                for: key)
        }
        return (meeting, scored, bitmap.size, key)
    }

    /// An earlier service's search of the same picture (`PictureMemo`) as if made here: its attempts recorded
    /// against this ladder's byte limit, its quality the next size's first guess.
    mutating func take(_ known: PictureMemo.Answer, _ log: inout AttemptLog) {
        for attempt in known.attempts {
            log.record(
                size: attempt.size, format: attempt.format, quality: attempt.quality, note: attempt.note,
                bytes: attempt.bytes, score: attempt.score, probe: attempt.note == Self.probeNote)
        }
        lastAutoQuality = known.meeting.quality
        sizes.smallestAtSize = known.smallest
    }

    /// The file an auto search writes: the chosen candidate `scored` recoded with optimized Huffman tables
    /// (`JPEGEncoder.recode`), progressive and, unless the options ask for progressive, baseline where it could
    /// be the smaller (the same pixels; progressive is smaller on most photos: the smaller is written), and
    /// whether it is progressive without the options asking.
    private mutating func recodeAuto(
        _ jpeg: JPEGEncoder, _ scored: [UInt8], meeting: QualitySearch.Meeting, size: PixelSize,
        searched key: PictureMemo.Key?, _ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint
    ) throws -> (chosen: [UInt8], madeProgressive: Bool) {
        try checkpoint()
        let recoded: (progressive: [UInt8], baseline: [UInt8]?)
        if let key, let known = memo?.recoded(for: key, metadata: metadata.kept, alsoBaseline: !progressive) {
            recoded = (known.progressive, known.baseline)
        } else {
            recoded = try jpeg.recode(scored, alsoBaseline: !progressive, metadata: metadata.kept)
            if let key {
                memo?.keep(
                    PictureMemo.Recoded(
                        metadata: metadata.kept, alsoBaseline: !progressive, progressive: recoded.progressive,
                        baseline: recoded.baseline),
                    for: key)
            }
        }
        var chosen = recoded.progressive
        var madeProgressive = !progressive
        if let baseline = recoded.baseline {
            log.record(
                size: size, format: .jpeg, quality: meeting.quality, note: nil, bytes: baseline.count,
                score: meeting.score)
            if baseline.count <= chosen.count {
                chosen = baseline
                madeProgressive = false
            }
        }
        log.record(
            size: size, format: .jpeg, quality: meeting.quality, note: progressive ? nil : Self.progressiveNote,
            bytes: recoded.progressive.count, score: meeting.score)
        sizes.smallestAtSize = min(sizes.smallestAtSize, chosen.count)
        return (chosen, madeProgressive)
    }

    /// The candidates an auto search scored at one size, as far as the answer needs them: the encode of the
    /// lowest quality that met the target so far, the ceiling's when it missed (the answer when nothing meets
    /// it), and the fewest bytes seen (`StillSizes.smallestAtSize`).
    struct AutoCandidates {
        let target: Double
        let ceiling: Int
        private var encodes: [Int: [UInt8]] = [:]
        private(set) var smallest = Int.max

        init(target: Double, ceiling: Int) {
            self.target = target
            self.ceiling = ceiling
        }

        /// Takes the candidate at `quality` that scored `score`.
        mutating func add(_ encoded: [UInt8], quality: Int, score: Double) {
            smallest = min(smallest, encoded.count)
            if score >= target {
                encodes = [quality: encoded]
            } else if quality == ceiling {
                encodes[quality] = encoded
            }
        }

        /// The encode of the quality the search chose (one it was given).
        func encode(_ quality: Int) -> [UInt8] { encodes[quality]! }
    }

    /// What scoring an encode of `size` needs beside the render: the streaming scorer and the 8 rows its decoder
    /// writes (metered by the auto search; priced in `MemoryEstimate.jpegEncoderBytes` for the chroma choice).
    static func scoringBytes(_ size: PixelSize) -> Int { SSIMULACRA2.workingBytes(size) + 8 * size.width * 3 }

    /// The adjustment of an auto search whose ceiling fell short of the target (none when it met it).
    static func shortOfTargetNotes(_ meeting: QualitySearch.Meeting, target: Double) -> [String] {
        meeting.meets ? [] : ["quality at its ceiling short of SSIMULACRA2 \(scoreText(target))"]
    }

    /// A score as reports write it: 80, 82.5.
    static func scoreText(_ score: Double) -> String {
        score == score.rounded() ? "\(Int(score))" : "\((score * 10).rounded() / 10)"
    }

    /// One size of the JPEG ladder: the ceiling as requested; under a biting limit the 4:2:0 search with
    /// progressive scans, then the 4:4:4 search, the closer fit kept. At the first size the ceiling is encoded
    /// from the render as it always was (its 4:2:0 planes), so an output the limit does not bite is unchanged;
    /// once the limit bites, the size is rendered again (sharp: a JPEG decoded at twice the size or more, not
    /// just over it) and both searches encode that render.
    /// `afterCeiling`: the auto search already measured the ceiling's quality over the limit at this size (the
    /// size is then searched as a later size is); `scoreFits`: the fit returned carries its SSIMULACRA2 score
    /// against this size's render (its baseline twin decoded).
    private mutating func attemptJPEG(
        _ jpeg: JPEGEncoder, _ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint, afterCeiling: Bool = false,
        scoreFits: Bool = false
    ) throws -> FittingDriver.Fit? {
        var smallest = Int.max
        let firstSize = sizes.size == sizes.target && !afterCeiling
        if firstSize {
            // Straight from the resampler's rows into the encoder where the render allows it (the same bytes).
            let ceilingSettings = EncodeSettings(quality: range.upperBound, progressive: progressive)
            let staged: StagedBitmap
            if let streamed = try sizes.renderEncoded(with: jpeg, settings: ceilingSettings, metadata: metadata.kept) {
                staged = StagedBitmap(encoded: streamed.bytes, size: streamed.size, settings: ceilingSettings)
            } else {
                staged = try sizes.stage(sizes.render(), for: jpeg)
            }
            defer { sizes.release(staged) }
            let ceiling = try log.searchQuality(
                staged, format: .jpeg, range: range.upperBound...range.upperBound, progressive: progressive,
                metadata: metadata.kept, note: nil, checkpoint: checkpoint)
            sizes.smallestAtSize = ceiling.smallestBytes
            if let best = ceiling.best {
                return self.fit(best.encoded, size: staged.size, quality: best.quality, notes: [])
            }
            smallest = ceiling.smallestBytes
        }
        // Requested progressive: its ceiling is (or is about to be) measured.
        let top = range.upperBound - (progressive ? 1 : 0)
        if firstSize && top < range.lowerBound { return nil }
        let rendered = try sizes.render(sharp: sharpRender)
        defer { sizes.release(rendered) }
        // The render again (3 bytes a pixel, as the 4:2:0 planes' bitmap was), held through both searches.
        let bitmap = rendered.layout.hasAlpha ? AlphaFlattening.overWhite(rendered) : rendered
        // Under `scoreFits`, a fit with its score: its baseline twin (the same pixels) decoded and scored.
        func fit(_ bytes: [UInt8], size: PixelSize, quality: Int, notes: [String], score: Double? = nil) throws
            -> FittingDriver.Fit
        {
            var result = self.fit(bytes, size: size, quality: quality, notes: notes)
            guard scoreFits else { return result }
            if let score {
                result.score = score
                return result
            }
            try checkpoint()
            let twin = try JPEGEncoder(subsample420: !notes.contains(Self.fullChromaNote)).encode(
                bitmap, settings: EncodeSettings(quality: quality, progressive: false), metadata: [])
            result.score = try JPEGEncoder.ssimulacra2(twin, against: bitmap)
            return result
        }
        func searched(_ encoder: JPEGEncoder, _ range: ClosedRange<Int>, progressive: Bool, note: String?) throws
            -> QualitySearch.Outcome<[UInt8]>
        {
            let search = try log.searchQuality(
                bitmap, encoder: encoder, range: range, progressive: progressive, metadata: metadata.kept,
                note: note, checkpoint: checkpoint)
            smallest = min(smallest, search.smallestBytes)
            sizes.smallestAtSize = smallest
            return search
        }
        if !firstSize {
            // A smaller size: its ceiling as requested may fit (written as a ceiling fit always was).
            let ceiling = try searched(jpeg, range.upperBound...range.upperBound, progressive: progressive, note: nil)
            if let best = ceiling.best {
                return try fit(best.encoded, size: bitmap.size, quality: best.quality, notes: [])
            }
        }
        guard top >= range.lowerBound else { return nil }
        let subsampled = try searched(
            jpeg, range.lowerBound...top, progressive: true, note: progressive ? nil : Self.progressiveNote)
        guard let best = subsampled.best else { return nil }
        let scanNotes = progressive ? [] : [Self.progressiveNote]
        guard bitmap.layout.channels >= 3 else {
            return try fit(best.encoded, size: bitmap.size, quality: best.quality, notes: scanNotes)
        }
        let fullChroma = JPEGEncoder(subsample420: false)
        let search = try searched(
            fullChroma, range.lowerBound...best.quality, progressive: true,
            note: ([Self.fullChromaNote] + scanNotes).joined(separator: ", "))
        guard let full = search.best else {
            return try fit(best.encoded, size: bitmap.size, quality: best.quality, notes: scanNotes)
        }
        // Both scored on their baseline twins (the same pixels; a progressive decode holds every coefficient).
        func score(_ encoder: JPEGEncoder, _ quality: Int) throws -> Double {
            try checkpoint()
            let twin = try encoder.encode(
                bitmap, settings: EncodeSettings(quality: quality, progressive: false), metadata: [])
            return try JPEGEncoder.ssimulacra2(twin, against: bitmap)
        }
        let subsampledScore = try score(jpeg, best.quality)
        let fullScore = try score(fullChroma, full.quality)
        // 4:2:0 unless 4:4:4 scores clearly higher.
        if fullScore >= subsampledScore + Self.fullChromaGain {
            return try fit(
                full.encoded, size: bitmap.size, quality: full.quality, notes: [Self.fullChromaNote] + scanNotes,
                score: fullScore)
        }
        return try fit(best.encoded, size: bitmap.size, quality: best.quality, notes: scanNotes, score: subsampledScore)
    }

    mutating func advance(limit: Int) -> Bool { sizes.shrink(limit: limit) }
}
