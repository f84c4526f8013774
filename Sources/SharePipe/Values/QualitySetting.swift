/// How the lossy quality of an output is chosen (`PrepareOptions.qualitySetting`, the `quality` option).
public enum QualitySetting: Sendable, Equatable, CustomStringConvertible {
    /// This JPEG quality, 1...100: the one written unless the byte limit forces a lower one.
    case fixed(Int)
    /// For each size tried, the lowest quality whose decoded output scores at least `target` in SSIMULACRA2
    /// against the picture before encoding (70 is "high", 80 very high, 90 "visually lossless"); the byte
    /// limit stays a hard cap, and where it bites the output is the best that fits. JPEG and lossy WebP outputs
    /// are searched (a WebP with alpha is scored over a dark and a light page, the lower score counting); PNG,
    /// GIF and lossless WebP have no quality to search.
    case auto(target: Double)

    /// The score `auto` aims at when none is given.
    public static let defaultTarget = 80.0
    /// The scores `auto:SCORE` accepts.
    public static let targets: ClosedRange<Double> = 30...99

    /// `85`, `auto` (the default target) or `auto:SCORE` (`auto:82.5`); nil for anything else.
    public init?(text: String) {
        if let number = Int(text) {
            self = .fixed(number)
        } else if text == "auto" {
            self = .auto(target: Self.defaultTarget)
        } else if text.hasPrefix("auto:"), let target = Double(text.dropFirst(5)), target.isFinite {
            self = .auto(target: target)
        } else {
            return nil
        }
    }

    /// `85` or `auto:80`.
    public var description: String {
        switch self {
        case .fixed(let quality): return "\(quality)"
        case .auto(let target):
            return target == target.rounded() ? "auto:\(Int(target))" : "auto:\(target)"
        }
    }
}

extension PrepareOptions {
    /// `quality` and `qualityTarget` as one value: `.fixed(quality)` when there is no target.
    public var qualitySetting: QualitySetting {
        get { qualityTarget.map { .auto(target: $0) } ?? .fixed(quality) }
        set {
            switch newValue {
            case .fixed(let number):
                quality = number
                qualityTarget = nil
            case .auto(let target): qualityTarget = target
            }
        }
    }
}

extension PrepareOptions {
    /// The highest quality the search may write: `quality`, or 100 under `auto` (the target, the source's own
    /// quality and the byte limit bring it lower).
    var qualityCeiling: Int { qualityTarget == nil ? quality : 100 }
}

extension ServiceProfile {
    /// `maxQuality` and `qualityTarget` as one value (the profile file's `maxQuality`: a number or "auto").
    public var qualitySetting: QualitySetting {
        get { qualityTarget.map { .auto(target: $0) } ?? .fixed(maxQuality) }
        set {
            switch newValue {
            case .fixed(let number):
                maxQuality = number
                qualityTarget = nil
            case .auto(let target): qualityTarget = target
            }
        }
    }
}
