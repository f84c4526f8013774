/// A service's rules for images, as data: byte limits, size caps, formats.
public struct ServiceProfile: Sendable, Equatable, Codable {
    /// Short name used on the command line ("x", "weibo").
    public var name: String
    /// Human-readable name.
    public var displayName: String
    /// Byte limit for still images.
    public var maxStillBytes: Int
    /// Byte limit for animated GIFs; nil when the service does not accept animation.
    public var maxAnimatedBytes: Int?
    /// Short-edge cap (SharePipe's default rule is 1080 for every service).
    public var maxShortEdge: Int
    /// Optional long-edge cap.
    public var maxLongEdge: Int?
    /// Optional pixel-area cap.
    public var maxPixels: Int?
    /// Where the numbers come from.
    public var source: String

    public init(name: String, displayName: String, maxStillBytes: Int, maxAnimatedBytes: Int?,
                maxShortEdge: Int = 1080, maxLongEdge: Int? = nil, maxPixels: Int? = nil, source: String) {
        self.name = name
        self.displayName = displayName
        self.maxStillBytes = maxStillBytes
        self.maxAnimatedBytes = maxAnimatedBytes
        self.maxShortEdge = maxShortEdge
        self.maxLongEdge = maxLongEdge
        self.maxPixels = maxPixels
        self.source = source
    }

    /// Options for this service, starting from `base` (strip mode, quality, limits).
    public func options(basedOn base: PrepareOptions = PrepareOptions()) -> PrepareOptions {
        var options = base
        options.maxShortEdge = maxShortEdge
        options.maxLongEdge = maxLongEdge
        options.maxPixels = maxPixels
        options.maxBytes = maxStillBytes
        return options
    }
}

extension ServiceProfile {
    /// X/Twitter: 5 MB for stills, 15 MB for animated GIFs (X developer docs, media best practices).
    public static let x = ServiceProfile(name: "x", displayName: "X/Twitter", maxStillBytes: 5_000_000,
                                         maxAnimatedBytes: 15_000_000,
                                         source: "X developer docs: media best practices (5 MB image, 15 MB GIF)")
    /// Weibo: 5 MB (open API statuses/upload_pic "< 5M"), short edge 1080 (the original app's rule).
    public static let weibo = ServiceProfile(name: "weibo", displayName: "Weibo", maxStillBytes: 5_000_000,
                                             maxAnimatedBytes: 5_000_000,
                                             source: "Weibo open API statuses/upload_pic (< 5M)")

    /// Built-in profiles, by name.
    public static let builtIn: [ServiceProfile] = [.x, .weibo]

    /// The built-in profile with this name.
    public static func named(_ name: String) -> ServiceProfile? {
        builtIn.first { $0.name == name.lowercased() }
    }
}
