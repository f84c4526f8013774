import CSharePipe

/// AVIF through libavif, read as Chromium reads it (Chromium decodes AVIF with libavif): strict checks off,
/// the source picked by the major brand (an `avis` image sequence's track, else the primary item), the alpha
/// item attached by libavif, a layered image (`a1lx`/`lsel`) decoded at the layer libavif selects.
///
/// Probe: libavif's parse, never pixels; the image size, dimensions and frame count are checked by libavif
/// while it parses and by `ImageLimits` right after, before anything is decoded. `irot`/`imir` are not
/// applied by libavif: they become the probe's `orientation`, which the pipeline applies to the small result
/// (and to every canvas of an animation); `clap` is not applied, as browsers show the whole image.
///
/// Render: the first image decoded by dav1d to its YCbCr planes (libavif hands dav1d's own picture over, no
/// copy), each row converted by `HEIFRowConverter` (matrix and range from the image's CICP, 10/12-bit
/// fractions kept) and pushed into the resampler. An image sequence reaches the animation route through
/// `AVIFAnimationSource`.
struct AVIFDecoder: ImageDecoder {
    var format: ImageFormat { .avif }

    func probe(_ source: ImageSource, limits: ImageLimits) throws -> ImageInfo {
        let byteCount = try source.byteCount()
        // The tiles priced before libavif reads the items, as for HEIF (`HEIFDecoder.probe`).
        let tiles = try HEIFGrid.declaredTileCount(HEIFFileBytes(source), maxBytes: limits.maxMetadataBytes)
        try limits.checkWork(
            WorkEstimate(tileCount: tiles, inputBytes: byteCount), size: nil, file: source.displayName)
        return try AVIFReader.with(source, limits: limits) { reader in
            let header = try reader.info()
            let size = PixelSize(width: Int(header.width), height: Int(header.height))
            try limits.check(width: size.width, height: size.height, file: reader.file)
            let frames = max(Int(header.image_count), 1)
            if frames > 1 { try limits.checkAnimation(frames: frames, canvas: size, file: reader.file) }
            var metadata: [MetadataBlock] = []
            let exifLength = header.exif_length, xmpLength = header.xmp_length
            if exifLength + xmpLength > limits.maxMetadataBytes {
                throw SharePipeError.tooLarge(
                    file: reader.file,
                    exceeded: ExceededLimit(
                        .metadataBytes, found: exifLength + xmpLength, limit: limits.maxMetadataBytes,
                        detail: "AVIF Exif and XMP"))
            }
            if let exif = try reader.payload(.exif, length: exifLength) {
                metadata.append(
                    AVIFDecoding.tiff(exif).map { MetadataBlock.exif($0) } ?? .other(tag: "avif:Exif", data: exif))
            }
            if let xmp = try reader.payload(.xmp, length: xmpLength) { metadata.append(.xmp(xmp)) }
            // C2PA manifest stores, which libavif does not report (a top-level `uuid` box, or a `c2pa` item): found
            // so the job reports the content credentials it removes.
            let file = try HEIFFileBytes(source)
            metadata += try ContentCredentials.heifBoxes(file, maxBytes: limits.maxMetadataBytes)
            metadata += try ContentCredentials.heifItems(file, maxBytes: limits.maxMetadataBytes)
            let embedded = try reader.payload(.icc, length: header.icc_length)
            if let icc = try HEIFColorProfile.iccProfile(embedded: embedded, nclx: header.nclx, file: reader.file) {
                metadata.append(.icc(icc))
            }
            let monochrome = header.chroma == HEIFChroma.monochrome
            let alpha = header.has_alpha != 0
            var info = ImageInfo(
                format: .avif, size: size,
                colorModel: monochrome ? (alpha ? .grayAlpha : .gray) : (alpha ? .rgba : .rgb),
                bitDepth: max(Int(header.depth), 8), progressive: false,
                orientation: AVIFDecoding.orientation(header), storedOrientationValue: nil,
                frameCount: frames, hasAlpha: alpha, metadata: metadata, byteCount: byteCount)
            info.tileCount = tiles
            let hdr = try HEIFHDRBoxes.readAVIF(file, maxBytes: limits.maxMetadataBytes)
            if let toneMap = AVIFDecoding.toneMap(header.nclx, header: header, boxes: hdr) {
                info.probeAdjustments.append(toneMap.description)
            }
            if let note = hdr.gainMapNote { info.probeAdjustments.append(note) }
            // A motion photo's video after the image's boxes (`EmbeddedVideo`; Motion Photo 1.0 allows AVIF).
            if let video = try EmbeddedVideoDetector.inHEIF(source, metadata: metadata) {
                info.metadata.append(.embeddedVideo(video))
            }
            return info
        }
    }

    func render(
        _ source: ImageSource, info: ImageInfo, target: PixelSize, limits: ImageLimits,
        meter: PixelMemoryMeter
    ) throws -> RenderedImage {
        try AVIFReader.with(source, limits: limits) { reader in
            let header = try reader.info()
            let size = PixelSize(width: Int(header.width), height: Int(header.height))
            try limits.check(width: size.width, height: size.height, file: reader.file)
            let estimate = AVIFDecoding.decodeMemory(header)
            if estimate > limits.maxDecoderMemory {
                throw SharePipeError.tooLarge(
                    file: reader.file,
                    exceeded: ExceededLimit(
                        .decoderMemory, found: estimate, limit: limits.maxDecoderMemory, size: size,
                        detail: "decoding this AVIF"))
            }
            // dav1d's picture and its working memory exist from the decode until the reader is freed.
            meter.allocate(estimate)
            defer { meter.release(estimate) }
            guard let image = try reader.nextImage() else {
                throw SharePipeError.corrupt(file: reader.file, phase: .decode, reason: "the AVIF has no image")
            }
            let hdr = try HEIFHDRBoxes.readAVIF(try HEIFFileBytes(source), maxBytes: limits.maxMetadataBytes)
            let converter = try AVIFDecoding.converter(image.planes, header: header, hdr: hdr, file: reader.file)
            let bitmap = try converter.resampled(size: size, to: target, meter: meter)
            return RenderedImage(bitmap: bitmap, warnings: AVIFDecoding.warnings(header))
        }
    }
}

/// The pieces the still and the animation route share.
enum AVIFDecoding {
    /// The orientation that turns the coded image upright: `irot` (anticlockwise quarter turns), then `imir`
    /// (MIAF fixes that order; 0 exchanges top and bottom, 1 left and right).
    static func orientation(_ header: sp_avif_info) -> Orientation {
        let turned: [Orientation] = [.up, .left, .down, .right]
        let turn = turned[Int(header.irot_angle) & 3]
        switch header.imir_mode {
        case 0: return compose(turn, .downMirrored)
        case 1: return compose(turn, .upMirrored)
        default: return turn
        }
    }

    /// The orientation of applying `first`, then `second`.
    static func compose(_ first: Orientation, _ second: Orientation) -> Orientation {
        // Follow six labelled pixels of a 3×2 picture through both transforms.
        let probe = Bitmap(size: PixelSize(width: 3, height: 2), layout: .gray, pixels: [0, 1, 2, 3, 4, 5])
        let result = probe.applying(first).applying(second)
        return Orientation.allCases.first { probe.applying($0) == result } ?? .up
    }

    /// The TIFF structure of libavif's Exif payload: libavif drops the item's 4-byte offset field, so the TIFF
    /// header is at the start, or after an "Exif\0\0" prefix; a payload that still has the offset field is
    /// read as a HEIF Exif item. nil when no TIFF header is found.
    static func tiff(_ payload: [UInt8]) -> [UInt8]? {
        func isTIFF(_ at: Int) -> Bool {
            guard payload.count >= at + 8 else { return false }
            let head = payload[at..<at + 4]
            return head.elementsEqual([0x49, 0x49, 0x2A, 0x00]) || head.elementsEqual([0x4D, 0x4D, 0x00, 0x2A])
        }
        if isTIFF(0) { return payload }
        if payload.starts(with: Array("Exif".utf8) + [0, 0]), isTIFF(6) { return Array(payload[6...]) }
        return HEIFDecoding.exifTIFF(payload)
    }

    /// What dav1d holds to decode one image of the parsed size: its picture (the planes libavif hands over),
    /// counted twice for the reference and working buffers beside it.
    static func decodeMemory(_ header: sp_avif_info) -> Int {
        HEIFDecoding.decodeMemory(
            size: PixelSize(width: Int(header.width), height: Int(header.height)),
            bitDepth: Int(header.depth), hasAlpha: header.has_alpha != 0,
            monochrome: header.chroma == HEIFChroma.monochrome, chroma444: header.chroma != HEIFChroma.yuv420)
    }

    /// The tone map for an image with this CICP (PQ or HLG) and no ICC profile (an ICC profile wins over the
    /// CICP, as in browsers), with the content peak from `boxes`; nil for SDR.
    static func toneMap(_ nclx: sp_heif_nclx, header: sp_avif_info, boxes: HEIFHDRBoxes) -> HDRToneMap? {
        header.icc_length > 0 ? nil : HDRToneMap(nclx: nclx, peak: boxes.peakLuminance)
    }

    /// The row converter for decoded planes, after checking they are the parsed size and readable; PQ and HLG
    /// images are tone-mapped (`hdr`: what the file's boxes say about them).
    static func converter(_ planes: sp_heif_planes, header: sp_avif_info, hdr: HEIFHDRBoxes, file: String) throws
        -> HEIFRowConverter
    {
        guard Int(planes.width) == Int(header.width), Int(planes.height) == Int(header.height) else {
            throw SharePipeError.corrupt(
                file: file, phase: .decode,
                reason: "decoded image is \(planes.width)×\(planes.height), "
                    + "the header says \(header.width)×\(header.height)")
        }
        if let problem = HEIFRowConverter.validate(planes) {
            throw SharePipeError.unsupportedFormat(file: file, missing: .feature, reason: "AVIF \(problem)")
        }
        guard let matrix = YCbCrMatrix(nclx: planes.nclx) else {
            throw SharePipeError.unsupportedFormat(
                file: file, missing: .feature,
                reason: "AVIF matrix coefficients \(planes.nclx.matrix_coefficients) are not supported")
        }
        var converter = HEIFRowConverter(planes: planes, matrix: matrix, premultiplied: header.premultiplied_alpha != 0)
        converter.toneMap = toneMap(planes.nclx, header: header, boxes: hdr)
        return converter
    }

    /// What the report should say about the reading: a clean aperture left out, as browsers leave it.
    static func warnings(_ header: sp_avif_info) -> [String] {
        header.has_clap != 0
            ? ["AVIF clean aperture (clap) not applied: the whole image is shown, as browsers show it"] : []
    }
}
