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
}
