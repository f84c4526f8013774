import SharePipe

/// The options a client may set in the query of `POST /v1/prepare`, over the service profile's: the one
/// place that maps query names to `PrepareOptions` (the CLI's flags set the same options). Limits (pixels,
/// frames, input bytes) are the operator's, not the client's, so none is here.
///
/// | query | option | CLI flag |
/// |---|---|---|
/// | `strip` (all, gps, none) | `strip` | `--strip` |
/// | `max_bytes` | `maxBytes` | `--max-bytes` |
/// | `max_short_edge` | `maxShortEdge` | `--max-short-edge` |
/// | `quality` | `quality` | `--quality` |
/// | `min_quality` | `minQuality` | `--min-quality` |
/// | `progressive` (true, false) | `progressive` | `--progressive` |
public struct QueryOptions: Sendable, Equatable {
    var strip: StripMode?
    var maxBytes: Int?
    var maxShortEdge: Int?
    var quality: Int?
    var minQuality: Int?
    var progressive: Bool?

    /// Query parameter names for `PrepareOptions`' option names, as `InvalidOption.option` spells them.
    static let queryNames = ["strip": "strip", "maxBytes": "max_bytes", "maxShortEdge": "max_short_edge",
                             "quality": "quality", "minQuality": "min_quality", "progressive": "progressive"]

    /// Every query parameter `/v1/prepare` takes: `service` and the options.
    public static let parameters = ["service"] + ["strip", "max_bytes", "max_short_edge", "quality", "min_quality", "progressive"]

    /// A query parameter that cannot be read: the message names it.
    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    /// Reads the options from the query's (name, value) pairs; other names than `parameters` are refused.
    init(query: [(name: String, value: String)]) throws(Invalid) {
        var seen = Set<String>()
        for (name, value) in query {
            guard Self.parameters.contains(name) else {
                throw Invalid(description: "unknown query parameter \(name) (known: \(Self.parameters.joined(separator: ", ")))")
            }
            if name == "service" { continue }
            guard seen.insert(name).inserted else { throw Invalid(description: "query parameter \(name) is given twice") }
            switch name {
            case "strip":
                guard let mode = StripMode(rawValue: value) else {
                    throw Invalid(description: "query parameter strip must be all, gps or none, got \"\(value)\"")
                }
                strip = mode
            case "progressive":
                switch value {
                case "true": progressive = true
                case "false": progressive = false
                default: throw Invalid(description: "query parameter progressive must be true or false, got \"\(value)\"")
                }
            default:
                guard let number = Int(value) else {
                    throw Invalid(description: "query parameter \(name) must be an integer, got \"\(value)\"")
                }
                switch name {
                case "max_bytes": maxBytes = number
                case "max_short_edge": maxShortEdge = number
                case "quality": quality = number
                default: minQuality = number
                }
            }
        }
    }

    init() {}

    /// Whether any option is set.
    var isEmpty: Bool { self == QueryOptions() }

    /// Sets the given options over a profile's, as the CLI sets its flags over the profile's.
    func apply(to options: inout PrepareOptions) {
        if let strip { options.strip = strip }
        if let quality { options.quality = quality }
        if let minQuality { options.minQuality = minQuality }
        if let maxShortEdge { options.maxShortEdge = maxShortEdge }
        if let maxBytes { options.maxBytes = maxBytes }
        if let progressive { options.progressive = progressive }
    }

    /// An invalid option's message with every option named by its query parameter ("expected at least
    /// 1024 bytes for max_bytes, got 10"); options no parameter sets (a profile's) keep the library's name.
    static func message(for invalid: InvalidOption) -> String {
        var text = invalid.message { queryNames[$0] ?? "`\($0)`" }
        if invalid.option == "minQuality" {
            text += " (min_quality defaults to the service's floor: lower it together with quality)"
        }
        return "invalid options: " + text
    }
}
