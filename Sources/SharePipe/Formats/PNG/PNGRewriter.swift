/// Strips or replaces a PNG's metadata without touching its image data: no decode, no generational
/// change, and a palette image keeps its palette and bit depth. Used when the image needs no resize and no
/// rotation.
///
/// IHDR, PLTE, tRNS, IDAT and IEND, the colour and physical chunks (gAMA, cHRM, sRGB, cICP, mDCV, cLLI,
/// pHYs) and the sample descriptions (sBIT, bKGD, hIST) are copied unchanged; iCCP is copied when the ICC
/// profile is among the kept blocks. Every metadata chunk of the source is dropped and the kept blocks are
/// written, with fresh CRCs, right before the first IDAT. APNG animation chunks, iDOT and dSIG are dropped
/// (see `PNGChunkRole.dropped`), as is anything after IEND.
enum PNGRewriter {
    static func rewrite(_ source: ImageSource, keeping blocks: [MetadataBlock]) throws -> [UInt8] {
        let walker = try PNGChunkWalker(source)
        var out = PNGChunkWalker.signature
        if case .bytes(let bytes) = source { out.reserveCapacity(bytes.count) }
        let keepsProfile = blocks.contains { if case .icc = $0 { return true } else { return false } }
        let metadataChunks = PNGMetadataChunks.chunks(for: blocks, imageDataChanged: false)
        var metadataWritten = false
        while true {
            let chunk = try walker.nextChunk()
            switch PNGChunkRole(chunk.type) {
            case .image where chunk.type == .IDAT:
                if !metadataWritten {
                    for metadata in metadataChunks { out += metadata.serialized }
                    metadataWritten = true
                }
                try walker.copyChunk(chunk, into: &out)
            case .image where chunk.type == .IEND:
                guard metadataWritten else {
                    throw SharePipeError.corrupt(
                        file: walker.name, phase: .header,
                        reason: "no image data (IDAT chunk)")
                }
                try walker.copyChunk(chunk, into: &out)
                return out
            case .image, .structural, .sampleDescription:
                try copyVerified(chunk, from: walker, into: &out)
            case .iccProfile where keepsProfile:
                try copyVerified(chunk, from: walker, into: &out)
            case .iccProfile, .metadata, .dropped:
                continue  // skipped by the next nextChunk()
            }
        }
    }

    /// Copies a chunk after checking its CRC: a damaged critical chunk makes the file corrupt, a damaged
    /// ancillary one is left out (decoders would ignore it anyway).
    private static func copyVerified(
        _ chunk: PNGChunkWalker.Header, from walker: PNGChunkWalker, into out: inout [UInt8]
    ) throws {
        let (data, crcMatches) = try walker.payload(of: chunk)
        if !crcMatches {
            if chunk.type.isCritical {
                throw SharePipeError.corrupt(
                    file: walker.name, phase: chunk.type.damagePhase,
                    reason: "\(chunk.type): CRC error")
            }
            return
        }
        out += PNGChunk(type: chunk.type, data: data).serialized
    }
}
