/// The codecs behind each format. Adding a format means adding its decoder, encoder and (optionally) a
/// metadata-only rewriter here; the pipeline itself does not change.
enum Codecs {
    static func decoder(for format: ImageFormat) throws -> any ImageDecoder {
        switch format {
        case .jpeg: return JPEGDecoder()
        case .png: return PNGDecoder()
        case .gif: return GIFDecoder()
        }
    }

    static func encoder(for format: ImageFormat) throws -> any ImageEncoder {
        switch format {
        case .jpeg: return JPEGEncoder()
        case .png: return PNGEncoder()
        case .gif: return GIFEncoder()
        }
    }

    /// Copies image data unchanged while replacing metadata, where the format allows it.
    static func metadataRewriter(for format: ImageFormat) -> ((ImageSource, [MetadataBlock]) throws -> [UInt8])? {
        switch format {
        case .jpeg: return JPEGRewriter.rewrite
        case .png: return PNGRewriter.rewrite
        case .gif: return nil
        }
    }
}
