/// Which limit an input went past, the value found and the limit's number: the payload of
/// `SharePipeError.tooLarge`, so a caller can tell a bomb from a budget without reading text.
public struct ExceededLimit: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The limits SharePipe enforces before (or instead of) allocating.
    public enum Kind: String, Sendable, Equatable, Codable, CaseIterable {
        /// `ImageLimits.maxInputBytes`: the file's size in bytes.
        case inputBytes
        /// `ImageLimits.maxDimension`: the larger of width and height, in pixels.
        case dimension
        /// `ImageLimits.maxPixels`: width × height.
        case pixelArea
        /// `ImageLimits.maxFrames`: frames in an animation.
        case frameCount
        /// `ImageLimits.maxTotalFramePixels`: the sum of frame areas over an animation.
        case totalFramePixels
        /// `ImageLimits.maxDecoderMemory`: memory a decoder needs for its own arrays, in bytes.
        case decoderMemory
        /// `ImageLimits.maxStreamedMemory`: the priced memory of a job over the default pixel limit, in bytes.
        case streamedMemory
        /// `ImageLimits.maxWorkPerInputByte`: pixels of decoding work (`WorkEstimate`) per byte of input.
        case workPerInputByte
        /// `ImageLimits.maxMetadataBytes`: metadata read from a JPEG header, in bytes.
        case metadataBytes
        /// Number of JPEG metadata segments (a fixed reader limit).
        case metadataSegments
        /// Number of progressive JPEG scans (a fixed reader limit).
        case progressiveScans
        /// Number of PNG metadata chunks (a fixed reader limit).
        case metadataChunks
        /// Size of one PNG chunk, in bytes (a fixed reader limit).
        case chunkBytes
        /// `ServiceConfiguration.memoryBudget` (or a `MemoryBudget`'s capacity) under `.refuse`, in bytes.
        case memoryBudget
        /// The system refused an allocation; `limit` is unknown.
        case availableMemory
    }

    /// Which limit.
    public let kind: Kind
    /// The value found (or, while counting, the first value past the limit); nil when the library did not say.
    public let found: Int?
    /// The limit's number; nil for `availableMemory`.
    public let limit: Int?
    /// The image's size when its header had been read; nil when the limit struck before.
    public let size: PixelSize?
    /// What a library said, or which chunk; nil when the numbers say it all.
    public let detail: String?

    public init(_ kind: Kind, found: Int?, limit: Int?, size: PixelSize? = nil, detail: String? = nil) {
        self.kind = kind
        self.found = found
        self.limit = limit
        self.size = size
        self.detail = detail
    }

    /// "image too large: 65000×65000 exceeds the pixel limit of 120000000 px", or without a size
    /// "too large: exceeds the input limit of 100000 bytes (file has 250000)".
    public var description: String {
        var text = size.map { "image too large: \($0.width)×\($0.height) exceeds " } ?? "too large: exceeds "
        text += limitPhrase
        var notes: [String] = []
        // A size already shows the dimension and the area.
        if let found, size == nil || (kind != .dimension && kind != .pixelArea) { notes.append(foundPhrase(found)) }
        if let detail { notes.append(detail) }
        if !notes.isEmpty { text += " (\(notes.joined(separator: "; ")))" }
        return text
    }

    private var limitPhrase: String {
        let number = limit.map(String.init) ?? "?"
        switch kind {
        case .inputBytes: return "the input limit of \(number) bytes"
        case .dimension: return "the dimension limit of \(number) px"
        case .pixelArea: return "the pixel limit of \(number) px"
        case .frameCount: return "the frame limit of \(number) frames"
        case .totalFramePixels: return "the animation limit of \(number) frame pixels"
        case .decoderMemory: return "the decoder memory limit of \(number) bytes"
        case .streamedMemory: return "the memory limit of \(number) bytes for images over the default pixel limit"
        case .workPerInputByte: return "the work limit of \(number) pixels per input byte"
        case .metadataBytes: return "the metadata limit of \(number) bytes (APPn/COM segments)"
        case .metadataSegments: return "the limit of \(number) metadata segments"
        case .progressiveScans: return "the limit of \(number) progressive scans"
        case .metadataChunks: return "the limit of \(number) metadata chunks"
        case .chunkBytes: return "the chunk limit of \(number) bytes"
        case .memoryBudget: return "the memory budget of \(number) bytes"
        case .availableMemory: return "available memory"
        }
    }

    private func foundPhrase(_ found: Int) -> String {
        switch kind {
        case .inputBytes: return "file has \(found)"
        case .dimension, .pixelArea: return "found \(found)"
        case .frameCount: return "at least \(found) frames"
        case .totalFramePixels: return "at least \(found) frame pixels"
        case .decoderMemory, .memoryBudget, .streamedMemory: return "needs \(found)"
        case .metadataBytes, .chunkBytes: return "has \(found)"
        case .workPerInputByte: return "needs \(found) pixels per byte"
        case .metadataSegments, .progressiveScans, .metadataChunks: return "at least \(found)"
        case .availableMemory: return "needs \(found)"
        }
    }
}
