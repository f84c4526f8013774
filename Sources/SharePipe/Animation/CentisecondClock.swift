/// Converts frame durations in milliseconds to GIF delays in centiseconds on the running total: each
/// delay is the rounded end time minus the rounded start time, so the delays always add up to the
/// rounded total duration.
struct CentisecondClock {
    private var elapsedMilliseconds = 0

    /// The delay, in centiseconds, of a frame shown for `milliseconds` after the frames before it.
    mutating func advance(milliseconds: Int) -> Int {
        let start = (elapsedMilliseconds + 5) / 10
        elapsedMilliseconds += max(0, milliseconds)
        return (elapsedMilliseconds + 5) / 10 - start
    }
}
