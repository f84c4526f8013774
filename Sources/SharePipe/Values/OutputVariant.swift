/// A named extra output a service profile declares beside its main output: a smaller copy a posting service
/// would otherwise make itself (Mastodon's `small` preview), prepared from the same decode as the main output.
///
/// A variant is asked for by name (`PrepareOptions.variants`: `--variant small`, `variant=small`); the main
/// output alone is the default. It inherits every rule of the main output (the size caps, the byte limit,
/// the accepted formats, the metadata mode) and narrows them by its own: its caps are met as well as the
/// profile's, and `format`, `quality` and `progressive` replace the profile's where given. It is resampled in
/// memory from the main output's render (`RenderCache`), never decoded again from the source when a render at
/// or above its size exists.
///
/// A profile file declares them under `variants`:
/// `{"name": "mastodon", "variants": [{"name": "small", "maxPixels": 230400, "quality": 90}]}` (the list
/// replaces the profile's own).
public struct OutputVariant: Sendable, Equatable, Codable {
    /// The name it is asked for by and that its file takes (`IMG_1.small.jpg`): 1 to 32 of `a`–`z`, `0`–`9`,
    /// `_` and `-`, starting with a letter or a digit.
    public var name: String
    /// Largest width × height (aspect kept, never enlarged), besides the profile's caps.
    public var maxPixels: Int?
    /// Largest long edge, besides the profile's caps.
    public var maxLongEdge: Int?
    /// The format written; nil: as the main output's rule (the input's format where the profile accepts it).
    public var format: ImageFormat?
    /// The highest JPEG (or WebP) quality of its byte search; nil: the profile's.
    public var quality: Int?
    /// Whether a JPEG is written progressive; nil: as the main output.
    public var progressive: Bool?

    public init(
        name: String, maxPixels: Int? = nil, maxLongEdge: Int? = nil, format: ImageFormat? = nil,
        quality: Int? = nil, progressive: Bool? = nil
    ) {
        self.name = name
        self.maxPixels = maxPixels
        self.maxLongEdge = maxLongEdge
        self.format = format
        self.quality = quality
        self.progressive = progressive
    }

    /// Whether `name` can name a variant (and be part of a file name): see `name`.
    public static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...32).contains(bytes.count) else { return false }
        func allowed(_ byte: UInt8, first: Bool) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || (!first && (byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")))
        }
        return bytes.enumerated().allSatisfy { allowed($1, first: $0 == 0) }
    }

    /// Why this declaration cannot work, or nil.
    var problem: String? {
        if !Self.isValidName(name) {
            return "a variant's name is 1 to 32 of a-z, 0-9, _ and - (starting with a letter or digit), got "
                + OptionSpec.quoted(name)
        }
        if let maxPixels, maxPixels < 1 { return "variant \(name): maxPixels must be positive, got \(maxPixels)" }
        if let maxLongEdge, maxLongEdge < 1 {
            return "variant \(name): maxLongEdge must be positive, got \(maxLongEdge)"
        }
        if let quality, !(1...100).contains(quality) {
            return "variant \(name): quality must be 1...100, got \(quality)"
        }
        if let format, FormatRegistry.descriptor(for: format).writtenAs != nil {
            return "variant \(name): SharePipe does not write \(format.displayName)"
        }
        return nil
    }
}

/// One variant of a prepared image (`PreparedImage.variants`): its name and the image, with its own report
/// (size, format, quality, attempts, adjustments). Its `placeholder` is nil: the main output's stands for both.
public struct PreparedVariant: Sendable {
    /// The variant's name (`OutputVariant.name`).
    public var name: String
    /// The prepared variant.
    public var image: PreparedImage
}

extension PrepareOptions {
    /// The variants asked for, as declared (`declaredVariants`), in the order asked; an undeclared name is
    /// left out (`validate()` refuses it).
    public var requestedVariants: [OutputVariant] {
        variants.compactMap { name in declaredVariants.first { $0.name == name } }
    }

    /// The options of one variant: these options (the profile's rules) with the variant's caps added and its
    /// format, quality and progressiveness in place of the profile's; no variants of its own.
    func options(for variant: OutputVariant) -> PrepareOptions {
        var options = self
        options.variants = []
        options.declaredVariants = []
        if let pixels = variant.maxPixels { options.maxPixels = min(options.maxPixels ?? pixels, pixels) }
        if let long = variant.maxLongEdge {
            options.maxLongEdge = min(options.maxLongEdge ?? long, long)
            options.maxShortEdge = min(options.maxShortEdge, options.maxLongEdge!)
        }
        if let format = variant.format { options.acceptedFormats = [format] }
        if let quality = variant.quality {
            // The variant's own fixed quality (Mastodon's preview: Q90), also where the profile searches one.
            options.qualitySetting = .fixed(quality)
            options.minQuality = min(options.minQuality, quality)
        }
        if let progressive = variant.progressive { options.progressive = progressive }
        return options
    }

    /// Why the variants asked for cannot work (a name not declared, asked twice, a declaration that cannot
    /// work), or nil.
    var variantProblem: (expected: String, found: String)? {
        for declared in declaredVariants {
            if let problem = declared.problem { return ("a valid variant declaration", problem) }
        }
        let names = declaredVariants.map(\.name)
        if names.count != Set(names).count { return ("each variant declared once", names.joined(separator: ",")) }
        var seen = Set<String>()
        for name in variants {
            guard names.contains(name) else {
                let known =
                    names.isEmpty
                    ? "a variant the service profile declares (it declares none)"
                    : "one of the service profile's variants (" + names.joined(separator: ", ") + ")"
                return (known, OptionSpec.quoted(name))
            }
            guard seen.insert(name).inserted else { return ("each variant once", OptionSpec.quoted(name) + " twice") }
        }
        return nil
    }
}

extension SharePipeError {
    /// This error of a variant's job, its file named with the variant: `IMG_1.jpg (variant small)`.
    func forVariant(_ name: String) -> SharePipeError {
        let suffix = " (variant \(name))"
        switch self {
        case .unsupportedFormat(let file, let missing, let reason):
            return .unsupportedFormat(file: file + suffix, missing: missing, reason: reason)
        case .corrupt(let file, let phase, let reason):
            return .corrupt(file: file + suffix, phase: phase, reason: reason)
        case .tooLarge(let file, let exceeded): return .tooLarge(file: file + suffix, exceeded: exceeded)
        case .cannotMeetLimit(let file, let limit, let bestBytes):
            return .cannotMeetLimit(file: file + suffix, limit: limit, bestBytes: bestBytes)
        case .encodingFailed(let file, let reason): return .encodingFailed(file: file + suffix, reason: reason)
        default: return self
        }
    }
}
