/// The codecs behind each format. Adding a format means adding its decoder, encoder and (optionally) a
/// metadata-only rewriter here; the pipeline itself does not change.
enum Codecs {
    static func decoder(for format: ImageFormat) throws -> any ImageDecoder {
        switch format {
        case .jpeg: return JPEGDecoder()
        case .png, .gif: throw SharePipeError.unsupportedFormat(file: "", reason: "\(format.rawValue) is not supported yet")
        }
    }

    static func encoder(for format: ImageFormat) throws -> any ImageEncoder {
        switch format {
        case .jpeg: return JPEGEncoder()
        case .png, .gif: throw SharePipeError.unsupportedFormat(file: "", reason: "\(format.rawValue) output is not supported yet")
        }
    }

    /// Copies image data unchanged while replacing metadata, where the format allows it.
    static func metadataRewriter(for format: ImageFormat) -> ((ImageSource, [MetadataBlock]) throws -> [UInt8])? {
        switch format {
        case .jpeg: return JPEGRewriter.rewrite
        case .png, .gif: return nil
        }
    }
}
