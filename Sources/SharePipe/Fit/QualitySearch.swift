import Glibc

/// The highest quality in a range whose encode fits a byte limit.
///
/// Encoded size is not strictly monotonic in quality (progressive JPEG especially), so the search only
/// ever returns a quality whose own encode was measured under the limit. It tries the ceiling first (most
/// images fit at once), then the floor, then bisects between a measured fit and a measured miss: the
/// answer is within one step of the best possible where size is monotonic, in about log2(range) encodes.
enum QualitySearch {
    struct Outcome<Encoded> {
        /// The best fitting quality and its encode, if any quality fits.
        var best: (quality: Int, encoded: Encoded, bytes: Int)?
        /// The smallest encode seen (for cannotMeetLimit reports).
        var smallestBytes: Int
        var attempts: [(quality: Int, bytes: Int)]
    }

    static func highestFitting<Encoded>(
        range: ClosedRange<Int>, limit: Int,
        encode: (Int) throws -> (Encoded, Int)
    ) rethrows -> Outcome<Encoded> {
        var attempts: [(Int, Int)] = []
        var smallest = Int.max
        func measure(_ quality: Int) throws -> (Encoded, Int) {
            let (encoded, bytes) = try encode(quality)
            attempts.append((quality, bytes))
            smallest = min(smallest, bytes)
            return (encoded, bytes)
        }
        let top = try measure(range.upperBound)
        if top.1 <= limit {
            return Outcome(best: (range.upperBound, top.0, top.1), smallestBytes: smallest, attempts: attempts)
        }
        if range.lowerBound == range.upperBound {
            return Outcome(best: nil, smallestBytes: smallest, attempts: attempts)
        }
        let bottom = try measure(range.lowerBound)
        guard bottom.1 <= limit else {
            return Outcome(best: nil, smallestBytes: smallest, attempts: attempts)
        }
        var fit = (quality: range.lowerBound, encoded: bottom.0, bytes: bottom.1)
        var miss = range.upperBound
        while miss - fit.quality > 1 {
            let middle = (fit.quality + miss) / 2
            let (encoded, bytes) = try measure(middle)
            if bytes <= limit { fit = (middle, encoded, bytes) } else { miss = middle }
        }
        return Outcome(best: fit, smallestBytes: smallest, attempts: attempts)
    }

    /// Where `lowestMeeting` ended: the quality chosen and its score.
    struct Meeting: Equatable {
        var quality: Int
        var score: Double
        /// Whether `score` reaches the target (false: the range's ceiling, the best it has, falls short).
        var meets: Bool
    }

    /// How SSIMULACRA2 rises with libjpeg's quality: about linearly in ln(101 − quality) (the quantisation step
    /// libjpeg scales by 200 − 2 × quality), `assumedLogSlope` points per unit of it until two measures give their
    /// own: about 0.7 points a step at q82, 1.2 at q90 (photos at 4:2:0 around a score of 80).
    static let assumedLogSlope = 13.0

    /// `ln(101 − quality)`, the axis along which the score is about linear (falling as quality rises).
    static func logStep(_ quality: Int) -> Double { log(Double(101 - quality)) }

    /// The score one quality step buys at `quality` under a slope of `logSlope` points per unit of `logStep`.
    static func stepGain(at quality: Int, logSlope: Double) -> Double {
        logSlope * (logStep(quality - 1) - logStep(quality))
    }

    /// The lowest quality in `range` whose `score` reaches `target`, or the ceiling when none does, in few
    /// measures: from `guess`, each next quality is where the line (score against `logStep`) through the
    /// measure nearest the target, with the slope of the two nearest measures (or `assumedLogSlope`), reaches the
    /// target plus half a step (so it tends to land just over it), kept strictly inside the bracket of a
    /// measured miss and a measured hit, so the search always closes. It stops once the hit and the miss are
    /// within `bracket` steps (the hit is written: at most `bracket − 1` steps above the lowest), once the hit is
    /// within `closeEnough` of the target, with `bracket` over 1 once a step down from the hit would miss by the
    /// line, or after `maxMeasures`. With a `budget` (in measures; `spent` of it gone before the first), it also
    /// stops at the first hit measured once the measures spent reach the budget: a miss still goes on to a hit.
    static func lowestMeeting(
        _ target: Double, range: ClosedRange<Int>, guess: Int, maxMeasures: Int = 6, closeEnough: Double = 0.4,
        bracket: Int = 1, budget: Double = .infinity, spent: Double = 0, score: (Int) throws -> Double
    ) rethrows -> Meeting {
        var measured: [Int: Double] = [:]
        func measure(_ quality: Int) throws -> Double {
            if let known = measured[quality] { return known }
            let value = try score(quality)
            measured[quality] = value
            return value
        }
        var hit: (quality: Int, score: Double)?
        var miss: (quality: Int, score: Double)?
        var quality = min(max(guess, range.lowerBound), range.upperBound)
        while measured.count < maxMeasures {
            let value = try measure(quality)
            if value >= target {
                if hit == nil || quality < hit!.quality { hit = (quality, value) }
            } else if miss == nil || quality > miss!.quality {
                miss = (quality, value)
            }
            if let hit, hit.quality == range.lowerBound || hit.score - target < closeEnough { break }
            if hit != nil, spent + Double(measured.count) >= budget { break }
            if let miss, miss.quality == range.upperBound { break }
            if let hit, let miss, hit.quality - miss.quality <= bracket { break }
            // The slope (points per unit of logStep, positive) of the two measures nearest the target, or the
            // assumed one.
            let nearest = measured.sorted { abs($0.value - target) < abs($1.value - target) }.prefix(2)
            var logSlope = assumedLogSlope
            if nearest.count == 2 {
                let (a, b) = (nearest[nearest.startIndex], nearest[nearest.startIndex + 1])
                let measuredSlope = (a.value - b.value) / (logStep(b.key) - logStep(a.key))
                if measuredSlope > 0.5 { logSlope = measuredSlope }
            }
            // Where a step over the lowest is allowed (`bracket` > 1): a hit whose next step down would miss by
            // the line is taken as it stands.
            if bracket > 1, let hit, hit.score - stepGain(at: hit.quality, logSlope: logSlope) < target { break }
            // Where the line through the measure nearest the target reaches half a step over it: the middle of
            // the scores from which a step down would miss.
            let from = nearest[nearest.startIndex]
            let aim = target + 0.5 * stepGain(at: from.key, logSlope: logSlope)
            let step = logStep(from.key) - (aim - from.value) / logSlope
            let exact = 101 - exp(step)
            var next = Int(exact.rounded(.up))
            let low = (miss?.quality ?? range.lowerBound - 1) + 1
            let high = (hit?.quality ?? range.upperBound + 1) - 1
            guard low <= high else { break }
            next = min(max(next, low), high)
            quality = next
        }
        if let hit { return Meeting(quality: hit.quality, score: hit.score, meets: true) }
        let ceiling = range.upperBound
        return Meeting(quality: ceiling, score: try measure(ceiling), meets: false)
    }
}
