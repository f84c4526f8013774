/// One encode the byte-limit search tried.
public struct FitAttempt: Sendable, Equatable, Codable {
    /// Output size encoded (displayed orientation).
    public var size: PixelSize
    /// Output format of this attempt.
    public var format: ImageFormat
    /// JPEG quality, or nil for lossless encodes.
    public var quality: Int?
    /// What else was varied ("zlib 9", "64 colours", "every 2nd frame").
    public var note: String?
    /// Bytes the encode produced.
    public var bytes: Int
    /// Whether it was under the limit.
    public var fits: Bool
    /// SSIMULACRA2 of this encode against the picture before encoding, where the search measured it
    /// (`QualitySetting.auto`).
    public var score: Double? = nil
}

/// How the output was made.
public enum PreparationMethod: String, Sendable, Codable {
    /// Decoded, resized and/or rotated, and encoded again.
    case reencoded
    /// Image data copied unchanged; only metadata was removed or rewritten (no generational loss).
    case metadataRewrite
    /// Image data turned without decoding (a JPEG's DCT blocks rotated or flipped to apply its
    /// orientation), then its metadata rewritten: no generational loss.
    case losslessTurn
}

/// A prepared image: the bytes to upload and a report of what was done.
public struct PreparedImage: Sendable {
    /// The encoded output.
    public var bytes: [UInt8]
    public var format: ImageFormat
    /// Output size as displayed.
    public var size: PixelSize
    public var inputFormat: ImageFormat
    /// Input size as stored (before orientation).
    public var inputSize: PixelSize
    public var inputByteCount: Int
    /// The orientation that was applied to the pixels.
    public var appliedOrientation: Orientation
    public var method: PreparationMethod
    /// JPEG quality of the output, if lossy.
    public var quality: Int?
    /// Every encode tried, in order.
    public var attempts: [FitAttempt]
    /// Metadata kinds removed.
    public var removedMetadata: Set<MetadataKind>
    /// Metadata kinds kept.
    public var keptMetadata: Set<MetadataKind>
    /// The video the input carried (a motion photo's), nil when it had none. Whether the output keeps it is
    /// in `keptMetadata` / `removedMetadata` (`.embeddedVideo`).
    public var embeddedVideo: EmbeddedVideo? = nil
    /// Number of frames written. For a video, the frames it shows: its samples and the frames identical to the
    /// one before them that were merged into their samples (no frame a viewer sees is missing from the count).
    public var frameCount: Int
    /// The most pixel memory the pipeline held at once (its own accounting: rows, windows, bitmaps).
    public var peakPixelBytes: Int
    /// Recoverable problems the decoders reported.
    public var warnings: [String]
    /// Other adjustments made to meet limits ("frames decimated 2:1", "PNG → JPEG").
    public var adjustments: [String]
    /// Number of frames in the input (more than `frameCount` when only the first frame was kept, or frames
    /// were dropped to meet a limit).
    public var inputFrameCount: Int = 1
    /// What a client shows while the image loads: BlurHash and ThumbHash of the output as displayed (an
    /// animation's first frame), from the job's own render. nil only where no picture was rendered.
    public var placeholder: Placeholder? = nil
    /// The output's SSIMULACRA2 score against the picture before encoding (100 the same pixels, 90 visually
    /// lossless, 70 high), where the quality search measured it (`QualitySetting.auto`); nil otherwise.
    public var score: Double? = nil
    /// Inside the library only: the pixels the placeholder was hashed from (at most 100 × 100 RGBA), for the
    /// tests to hand the same pixels to the reference encoders.
    var placeholderPixels: PlaceholderThumbnail? = nil
    /// The named variants prepared beside this output (`PrepareOptions.variants`), in the order asked; empty
    /// when none was asked for.
    public var variants: [PreparedVariant] = []
    /// Inside the library only: how many times this output's job decoded the source (`PixelMemoryMeter.decodeCount`):
    /// a variant served from the main output's render decoded it 0 times.
    var sourceDecodes = 0
    /// Where the subject is in the output as displayed (an animation's first frame), in Mastodon's focal-point
    /// convention: `x` −1 (left edge) … 1 (right edge), `y` −1 (bottom edge) … 1 (top edge), (0, 0) the centre
    /// and the answer for a picture where nothing stands out. An attention estimate (detail, skin tones,
    /// saturated colour; `AttentionMap`) from the placeholder's thumbnail of the job's own render. nil only where
    /// no picture was rendered.
    public var focus: FocalPoint? = nil
    /// Inside the library only: the output, when it is in an unlinked temporary file rather than in `bytes`
    /// (then empty). `Pipeline.prepare` reads it into `bytes` unless its caller writes the file where it
    /// belongs itself (`Batch`, `FileIO.writeAtomically(_:to:)`), so every public result has its bytes.
    var outputFile: EncodedFile? = nil

    /// The output's length in bytes.
    public var byteCount: Int { outputFile?.byteCount ?? bytes.count }
}

extension PreparedImage {
    /// Reads the output into `bytes` when it is in a temporary file, and lets the file go. `file` names the
    /// input in the error.
    mutating func loadOutputFile(naming file: String) throws(SharePipeError) {
        guard let outputFile else { return }
        do {
            bytes = try outputFile.readAll()
        } catch {
            throw .unreadable(file: file, reason: "reading the output back from its temporary file: \(error.reason)")
        }
        self.outputFile = nil
    }

    /// Lets the output go (bytes and file), and its variants', keeping the report.
    mutating func dropOutput() {
        bytes = []
        outputFile = nil
        for index in variants.indices { variants[index].image.dropOutput() }
    }
}
