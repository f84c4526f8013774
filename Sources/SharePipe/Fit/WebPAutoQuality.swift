import Glibc

extension QualityLadder {
    /// The quality the WebP auto search tries first where no size was searched yet: the median answer for a score
    /// of 80 on photos (libwebp, method 4), moved by the target along the assumed slope.
    static func webpAutoGuess(target: Double) -> Int {
        let base = 88
        let moved = 101 - exp(QualitySearch.logStep(base) - (target - 80) / QualitySearch.assumedLogSlope)
        return min(max(Int(moved.rounded()), 30), 98)
    }

    /// One size under `QualitySetting.auto` for a lossy WebP: the render (gray widened to RGB, as the encoder
    /// takes it; alpha kept, WebP stores it exactly) is held while `QualitySearch.lowestMeeting` encodes
    /// candidates and scores each decode against it (`WebPEncoder.ssimulacra2`, metered with libwebp's decoded
    /// picture). The lowest quality meeting the target is written (a candidate within `autoCloseEnough` of the
    /// target is taken as it stands, as the JPEG search takes it); where even the ceiling falls short, the
    /// ceiling. Where that encode is over the byte limit, the highest quality below it that fits is searched on
    /// the same render and scored: the best score that fits. An earlier service's search of the same picture
    /// whose files carry the same metadata is taken instead of searching again (`PictureMemo`).
    mutating func attemptWebPAuto(
        _ webp: WebPEncoder, target: Double, _ log: inout AttemptLog, checkpoint: Pipeline.Checkpoint
    ) throws -> FittingDriver.Fit? {
        let rendered = try sizes.render()
        defer { sizes.release(rendered) }
        let bitmap = rendered.expandedToRGB()
        let meter = sizes.renderer.meter
        let scorerBytes = WebPEncoder.scoringBytes(bitmap.size, alpha: bitmap.layout == .rgba)
        meter.allocate(scorerBytes)
        defer { meter.release(scorerBytes) }
        var candidates = AutoCandidates(target: target, ceiling: range.upperBound)
        var smallest = Int.max
        defer { sizes.smallestAtSize = min(smallest, candidates.smallest) }
        let key = memo.map { _ in
            PictureMemo.Key(
                bitmap, target: target, range: range, encoding: .webp, lastQuality: lastAutoQuality,
                sourceQuality: nil)
        }
        let meeting: QualitySearch.Meeting
        let chosen: [UInt8]
        if let key, let known = memo?.answer(for: key, written: metadata.kept) {
            take(known, &log)
            smallest = known.smallest
            (meeting, chosen) = (known.meeting, known.scored)
        } else {
            let recordedBefore = log.attempts.count
            let guess = lastAutoQuality ?? Self.webpAutoGuess(target: target)
            meeting = try QualitySearch.lowestMeeting(
                target, range: range, guess: guess, maxMeasures: Self.autoMeasures, closeEnough: Self.autoCloseEnough,
                bracket: Self.autoBracket
            ) { quality in
                try checkpoint()
                let encoded = try webp.encode(
                    bitmap, settings: EncodeSettings(quality: quality, progressive: false), metadata: metadata.kept)
                let score = try WebPEncoder.ssimulacra2(encoded, against: bitmap)
                log.record(
                    size: bitmap.size, format: .webp, quality: quality, note: nil, bytes: encoded.count, score: score)
                candidates.add(encoded, quality: quality, score: score)
                return score
            }
            lastAutoQuality = meeting.quality
            chosen = candidates.encode(meeting.quality)
            if let key {
                memo?.keep(
                    PictureMemo.Answer(
                        meeting: meeting, scored: chosen, smallest: candidates.smallest,
                        attempts: Array(log.attempts[recordedBefore...]), written: metadata.kept),
                    for: key)
            }
        }
        if chosen.count <= log.limit {
            var result = fit(
                chosen, size: bitmap.size, quality: meeting.quality,
                notes: Self.shortOfTargetNotes(meeting, target: target))
            result.score = meeting.score
            return result
        }
        // The limit bites: the highest quality below the target's that fits, scored.
        guard meeting.quality > range.lowerBound else { return nil }
        let search = try log.searchQuality(
            bitmap, encoder: webp, range: range.lowerBound...meeting.quality - 1, progressive: false,
            metadata: metadata.kept, note: nil, checkpoint: checkpoint)
        smallest = min(smallest, search.smallestBytes)
        guard let best = search.best else { return nil }
        try checkpoint()
        var result = fit(best.encoded, size: bitmap.size, quality: best.quality, notes: [])
        result.score = try WebPEncoder.ssimulacra2(best.encoded, against: bitmap)
        return result
    }
}
