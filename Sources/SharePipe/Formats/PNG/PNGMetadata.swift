/// The IHDR fields.
struct PNGHeader: Sendable, Equatable {
    var width: Int
    var height: Int
    /// Bits per sample (palette: per index): 1, 2, 4, 8 or 16.
    var bitDepth: Int
    /// 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA.
    var colorType: Int
    var interlaced: Bool

    /// Parses and validates an IHDR payload.
    init(ihdr data: [UInt8], file: String) throws {
        guard data.count == 13 else {
            throw SharePipeError.corrupt(
                file: file, phase: .header,
                reason: "IHDR has \(data.count) bytes, not 13")
        }
        func u32(_ at: Int) -> Int {
            Int(data[at]) << 24 | Int(data[at + 1]) << 16 | Int(data[at + 2]) << 8 | Int(data[at + 3])
        }
        width = u32(0)
        height = u32(4)
        bitDepth = Int(data[8])
        colorType = Int(data[9])
        interlaced = data[12] == 1
        let allowedDepths: [Int: [Int]] = [
            0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16],
        ]
        guard let depths = allowedDepths[colorType] else {
            throw SharePipeError.corrupt(file: file, phase: .header, reason: "IHDR: invalid colour type \(colorType)")
        }
        guard depths.contains(bitDepth) else {
            throw SharePipeError.corrupt(
                file: file, phase: .header,
                reason: "IHDR: bit depth \(bitDepth) is invalid for colour type \(colorType)")
        }
        guard data[10] == 0, data[11] == 0, data[12] <= 1 else {
            throw SharePipeError.corrupt(
                file: file, phase: .header,
                reason: "IHDR: unknown compression, filter or interlace method")
        }
    }

    var colorModel: ColorModel {
        switch colorType {
        case 0: return .gray
        case 3: return .palette
        case 4: return .grayAlpha
        case 6: return .rgba
        default: return .rgb
        }
    }
}

/// What a walk over a PNG's chunks found, without inflating any image data: the header, the chunks that
/// travel with the pixels, and the metadata blocks.
struct PNGScan {
    var header: PNGHeader
    var hasTransparencyChunk: Bool
    /// Colour and physical chunks (see `PNGChunkRole.structural`), in file order.
    var structuralChunks: [PNGChunk]
    /// Metadata blocks in file order, without the ICC profile (only libpng can inflate it).
    var metadata: [MetadataBlock]
    /// Where in `metadata` the profile of an iCCP chunk belongs, if the file has one.
    var iccPosition: Int?
    /// The APNG animation, when the file has a valid one (see `APNGScanner`).
    var animation: APNGAnimation? = nil
    /// What the walk noticed and worked around (an APNG animation set aside, and why).
    var warnings: [String] = []

    /// Reads every chunk up to IEND. The header's size is checked against `limits` as soon as IHDR is
    /// read, before anything else. Critical chunks with a bad CRC make the file corrupt; ancillary ones are
    /// ignored, as libpng does.
    ///
    /// PNG allows text and tIME after the image data, so the walk reads to the end of the file: skipping
    /// IDAT costs I/O but no inflation and no memory.
    static func read(_ source: ImageSource, limits: ImageLimits) throws -> PNGScan {
        let walker = try PNGChunkWalker(source)
        let file = walker.name
        let first = try walker.nextChunk()
        guard first.type == .IHDR else {
            throw SharePipeError.corrupt(
                file: file, phase: .header,
                reason: "first chunk is \(first.type), not IHDR")
        }
        let ihdr = try walker.payload(of: first)
        guard ihdr.crcMatches else {
            throw SharePipeError.corrupt(file: file, phase: .header, reason: "IHDR: CRC error")
        }
        let header = try PNGHeader(ihdr: ihdr.data, file: file)
        // Rows streamed: an image over the default pixel limit is left to the pipeline's cost check.
        try limits.checkHeader(width: header.width, height: header.height, file: file)

        var scan = PNGScan(
            header: header, hasTransparencyChunk: false, structuralChunks: [], metadata: [], iccPosition: nil)
        var sawPalette = false, sawImageData = false, metadataChunks = 0
        var animation = APNGScanner(canvas: PixelSize(width: header.width, height: header.height))
        while true {
            let chunk = try walker.nextChunk()
            if chunk.type == .IEND { break }
            if APNGScanner.wants(chunk.type) {
                try animation.observe(chunk, walker: walker, afterImageData: sawImageData)
                continue
            }
            if chunk.type == .IDAT {
                animation.observeImageData()
                if header.colorType == 3 && !sawPalette {
                    throw SharePipeError.corrupt(
                        file: file, phase: .header,
                        reason: "palette image has no PLTE before its image data")
                }
                sawImageData = true
                continue  // skipped by the next nextChunk(); libpng checks its CRC when decoding
            }
            let role = PNGChunkRole(chunk.type)
            if role == .dropped { continue }
            if chunk.type.isCritical && role != .image {
                throw SharePipeError.corrupt(file: file, phase: .header, reason: "unknown critical chunk \(chunk.type)")
            }
            let (data, crcMatches) = try walker.payload(of: chunk)
            if !crcMatches {
                if chunk.type.isCritical {
                    throw SharePipeError.corrupt(
                        file: file, phase: chunk.type.damagePhase,
                        reason: "\(chunk.type): CRC error")
                }
                continue
            }
            switch role {
            case .image:
                if chunk.type == .IHDR {
                    throw SharePipeError.corrupt(file: file, phase: .header, reason: "second IHDR chunk")
                }
                if chunk.type == .PLTE { sawPalette = true }
                if chunk.type == .tRNS { scan.hasTransparencyChunk = true }
            case .structural:
                scan.structuralChunks.append(PNGChunk(type: chunk.type, data: data))
            case .sampleDescription, .dropped:
                continue
            case .iccProfile:
                if scan.iccPosition == nil { scan.iccPosition = scan.metadata.count }
            case .metadata:
                metadataChunks += 1
                if metadataChunks > PNGLimits.maxMetadataChunks {
                    throw SharePipeError.tooLarge(
                        file: file,
                        exceeded: ExceededLimit(
                            .metadataChunks, found: metadataChunks, limit: PNGLimits.maxMetadataChunks,
                            size: PixelSize(width: header.width, height: header.height)))
                }
                scan.metadata.append(PNGMetadataChunks.block(for: PNGChunk(type: chunk.type, data: data)))
            }
        }
        guard sawImageData else {
            throw SharePipeError.corrupt(file: file, phase: .header, reason: "no image data (IDAT chunk)")
        }
        (scan.animation, scan.warnings) = try animation.finish(limits: limits, file: file)
        return scan
    }
}

/// PNG chunks ↔ format-neutral metadata blocks.
///
/// eXIf ↔ `.exif` (TIFF bytes), tEXt/zTXt/iTXt ↔ `.pngText` (raw chunk data, so compressed text is never
/// inflated), tIME and other ancillary chunks ↔ `.other(tag: type)`. iCCP ↔ `.icc` is handled by the
/// decoder (libpng inflates) and encoder (libpng deflates) or copied verbatim by the rewriter.
enum PNGMetadataChunks {
    static let exifPrefix: [UInt8] = Array("Exif\0\0".utf8)
    static let xmpKeyword = "XML:com.adobe.xmp"

    /// The block a metadata chunk becomes.
    static func block(for chunk: PNGChunk) -> MetadataBlock {
        switch chunk.type {
        case .eXIf:
            // Some writers keep JPEG's "Exif\0\0" prefix in eXIf; the TIFF header follows it.
            return .exif(
                chunk.data.starts(with: exifPrefix) ? Array(chunk.data.dropFirst(exifPrefix.count)) : chunk.data)
        case .tEXt, .zTXt, .iTXt:
            return .pngText(type: chunk.type.name, data: chunk.data)
        default:
            return .other(tag: chunk.type.name, data: chunk.data)
        }
    }

    /// The chunks that write `blocks` into a PNG, in order, except the ICC profile (see the type's note).
    /// `imageDataChanged`: the pixels were re-encoded, so unsafe-to-copy chunks of unknown meaning (tIME
    /// among them) are left out, as the PNG spec (14.2) requires. IPTC and extended XMP have no PNG chunk.
    static func chunks(for blocks: [MetadataBlock], imageDataChanged: Bool) -> [PNGChunk] {
        var chunks: [PNGChunk] = []
        for block in blocks {
            switch block {
            case .exif(let tiff):
                chunks.append(PNGChunk(type: .eXIf, data: tiff))
            case .xmp(let packet):
                // iTXt: keyword, NUL, compression flag 0, method 0, empty language and translated keyword.
                chunks.append(PNGChunk(type: .iTXt, data: Array(xmpKeyword.utf8) + [0, 0, 0, 0, 0] + packet))
            case .comment(let text):
                chunks.append(PNGChunk(type: .tEXt, data: Array("Comment".utf8) + [0] + text.filter { $0 != 0 }))
            case .pngText(let type, let data):
                if let chunkType = PNGChunkType(name: type), [.tEXt, .zTXt, .iTXt].contains(chunkType) {
                    chunks.append(PNGChunk(type: chunkType, data: data))
                }
            case .other(let tag, let data):
                guard let type = PNGChunkType(name: tag), !type.isCritical, PNGChunkRole(type) == .metadata else {
                    continue
                }
                if imageDataChanged && !type.isSafeToCopy { continue }
                chunks.append(PNGChunk(type: type, data: data))
            case .icc, .iptc, .extendedXMP, .embeddedVideo:
                continue
            }
        }
        return chunks
    }
}

extension MetadataOutcome {
    /// The outcome once the pixels are re-encoded as PNG: blocks the encoder must leave out (unsafe-to-copy
    /// chunks such as tIME; IPTC and extended XMP, which have no PNG chunk) move from kept to removed, so
    /// the report says what the file holds.
    func writtenAsReencodedPNG(present: Set<MetadataKind>) -> MetadataOutcome {
        restricted(present: present) { block in
            if case .icc = block { return true }
            return !PNGMetadataChunks.chunks(for: [block], imageDataChanged: true).isEmpty
        }
    }

    /// The outcome once the image is written as a JPEG instead of a PNG: blocks a JPEG cannot hold (PNG
    /// text chunks, tIME and other PNG chunks) move from kept to removed.
    func writtenAsJPEG(present: Set<MetadataKind>) -> MetadataOutcome {
        restricted(present: present) { block in
            switch block {
            case .pngText: return false
            case .other(let tag, _): return tag.hasPrefix("APP")
            default: return true
            }
        }
    }

    /// The outcome with only the blocks `writable` accepts kept, as a re-encoded output holds it: content
    /// credentials never (`writableAfterReencoding`); the kinds that leaves out are removed.
    func restricted(present: Set<MetadataKind>, to writable: (MetadataBlock) -> Bool) -> MetadataOutcome {
        let hadVideo = self.kept.contains { $0.kind == .embeddedVideo }
        let kept = MotionPhotoXMP.consistent(
            self.kept.filter { MetadataOutcome.writableAfterReencoding($0) && writable($0) }, hadVideo: hadVideo)
        return MetadataOutcome(kept: kept, removed: present.subtracting(MetadataOutcome.kinds(of: kept)))
    }
}
