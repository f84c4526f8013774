// What the property tests of SharePipe and of its server share. Test support only, no part of SharePipe's API:
// a library product because the server's tests live in another package (Server/), and no package can depend
// on another's test target.

/// A SplitMix64 generator: the same values on every run.
public struct SeededGenerator: RandomNumberGenerator {
    public var state: UInt64

    public init(state: UInt64) { self.state = state }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number of random magnitude (2^0 … 2^62) and sign.
    public mutating func anyMagnitude() -> Int {
        let bits = Int.random(in: 0...62, using: &self)
        let value = Int.random(in: 0...(1 << bits), using: &self)
        return Bool.random(using: &self) ? value : -value
    }
}

/// The numbers every option is given first: the edges of `Int` and of the options' rules.
public let extremeIntegers = [
    Int.min, Int.min + 1, -1, 0, 1, 2, 63, 64, 100, 101, 1023, 1024, 1 << 40, (1 << 40) + 1,
    Int.max / 4 + 1, Int.max - 1, Int.max,
]
