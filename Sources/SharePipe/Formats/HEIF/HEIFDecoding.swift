import CSharePipe

/// What a HEIF/AVIF header read found about the primary image. No pixels were decoded.
struct HEIFProbe {
    /// The size as displayed: libheif applies `irot`, `imir` and `clap` on decode, so this is the size the
    /// decoded planes have, and the orientation left to apply is always `.up`.
    var size: PixelSize
    /// The coded size (`ispe`), before the transforms.
    var codedSize: PixelSize
    var hasAlpha: Bool
    var premultipliedAlpha: Bool
    var bitDepth: Int
    var monochrome: Bool
    /// Exif (TIFF), XMP and other items of the primary image, then its ICC profile: the file's own, or one
    /// equivalent to its nclx description.
    var metadata: [MetadataBlock]
    /// The orientation stored in the Exif item, if any. Informational only: `irot`/`imir` are authoritative
    /// and already applied by libheif, so this is never applied again.
    var exifOrientationValue: Int?
    /// The nclx colour description (`colr` nclx box), if any.
    var nclx: sp_heif_nclx?
    /// Parts of the file that are not the primary image and are never read: other top-level images,
    /// thumbnails, depth maps, auxiliary images.
    var otherImages: Int, thumbnails: Int, hasDepth: Bool, auxiliaryImages: Int
    /// The grid the tile route decodes (`HEIFTileDecoding`), nil when libheif decodes the image.
    var grid: HEIFGrid? = nil
    /// Changes the render will make that were not asked for (HDR tone-mapped, a gain map left out).
    var adjustments: [String] = []
}

/// HEIF (HEIC) and AVIF through libheif, primary image only.
///
/// Probe: the boxes and metadata items, never pixels; the primary image's size is checked against
/// `ImageLimits` before anything is decoded. Render: libheif decodes the primary image to its native
/// YCbCr planes (4:2:0 stays 4:2:0; no interleaved RGB copy), transforms applied; each row is converted to
/// RGB with the nclx matrix and range and pushed into the resampler, so only the planes and the resampler's
/// window are held.
///
/// Memory: libheif 1.15 decodes a whole image (a grid image's tiles are assembled into one image: its API
/// has no way to decode one tile of the primary image), so the planes are the peak. They are priced by
/// `decodeMemory` and checked against `ImageLimits.maxDecoderMemory` before decoding. A grid of 8-bit HEVC
/// tiles without alpha (phone photos) skips libheif's decode: `HEIFGrid` reads its boxes and
/// `HEIFTileDecoding` decodes one row of tiles at a time with libde265 (about a sixth of the planes' memory).
/// A single 8-bit HEVC image without alpha is read the same way as a grid of one tile: libde265 decodes it
/// and its rows are converted from libde265's own picture (no copy of the planes, no libheif decode).
enum HEIFDecoding {
    /// Tiles decoded at once on both grid routes: libheif's tile-decoding threads for grid images the tile
    /// route does not take, and the tile route's (`HEIFTileDecoding`: each tile in its own thread with its own
    /// libde265 decoder). Measured on
    /// a 4032×3024 grid HEIC (libheif 1.15, 2 cores): peak RSS 60.7 MB with 0 (tiles in the calling thread),
    /// 60.3 MB with 2; wall 2.97 s → 2.45 s. Two threads cost no memory there, so two.
    static let decodingThreads = 2

    static func probe(_ source: ImageSource, limits: ImageLimits) throws -> HEIFProbe {
        try HEIFReader.with(source, limits: limits) { reader in
            let info = try reader.info()
            // The tile route streams: an image over the default pixel limit is left to the pipeline's cost check;
            // libheif's route (the whole planes) is held to the pixel limit below.
            try limits.checkHeader(width: Int(info.width), height: Int(info.height), file: reader.file)
            var metadata: [MetadataBlock] = []
            var exifOrientation: Int?
            for item in try reader.metadataItems(count: Int(info.metadata_blocks), maxBytes: limits.maxMetadataBytes) {
                switch item.type {
                case "Exif":
                    guard let tiff = exifTIFF(item.data) else {
                        metadata.append(.other(tag: "heif:Exif", data: item.data))
                        continue
                    }
                    if exifOrientation == nil { exifOrientation = (try? ExifEditor(tiff: tiff))?.orientation }
                    metadata.append(.exif(tiff))
                case "mime" where item.contentType == "application/rdf+xml":
                    metadata.append(.xmp(item.data))
                case _ where ContentCredentials.isHEIFItem(type: item.type, contentType: item.contentType):
                    metadata.append(.other(tag: ContentCredentials.heifTag, data: item.data))
                default:
                    metadata.append(.other(tag: "heif:\(item.type)", data: item.data))
                }
            }
            // The C2PA manifest store of a BMFF file is a top-level `uuid` box, which libheif does not report.
            metadata += try ContentCredentials.heifBoxes(try HEIFFileBytes(source), maxBytes: limits.maxMetadataBytes)
            let nclx = info.nclx.present != 0 ? info.nclx : nil
            let embedded = try reader.iccProfile(length: info.icc_length)
            if let icc = try HEIFColorProfile.iccProfile(embedded: embedded, nclx: info.nclx, file: reader.file) {
                metadata.append(.icc(icc))
            }
            var probe = HEIFProbe(
                size: PixelSize(width: Int(info.width), height: Int(info.height)),
                codedSize: PixelSize(width: Int(info.ispe_width), height: Int(info.ispe_height)),
                hasAlpha: info.has_alpha != 0, premultipliedAlpha: info.premultiplied_alpha != 0,
                bitDepth: max(Int(info.luma_bits), 8), monochrome: info.chroma_bits < 0,
                metadata: metadata, exifOrientationValue: exifOrientation, nclx: nclx,
                otherImages: max(Int(info.top_level_images) - 1, 0), thumbnails: Int(info.thumbnails),
                hasDepth: info.has_depth != 0, auxiliaryImages: Int(info.auxiliary_images))
            let hdr = try HEIFHDRBoxes.read(try HEIFFileBytes(source), maxBytes: limits.maxMetadataBytes)
            if info.icc_length == 0, let toneMap = HDRToneMap(nclx: info.nclx, peak: hdr.peakLuminance) {
                probe.adjustments.append(toneMap.description)
            }
            if let note = hdr.gainMapNote { probe.adjustments.append(note) }
            probe.grid = try tileRoute(source, info: info, limits: limits)
            if probe.grid == nil {
                try limits.check(width: Int(info.width), height: Int(info.height), file: reader.file)
            }
            return probe
        }
    }

    /// The TIFF structure of a HEIF Exif item: its first four bytes give the offset of the TIFF header from
    /// the end of those four bytes (usually 0, or 6 past an "Exif\0\0" prefix). nil when no TIFF header is
    /// where the offset (or the common prefix) says.
    static func exifTIFF(_ item: [UInt8]) -> [UInt8]? {
        guard item.count >= 12 else { return nil }
        let offset = Int(item[0]) << 24 | Int(item[1]) << 16 | Int(item[2]) << 8 | Int(item[3])
        for start in [4 + offset, 10] where start >= 4 && start + 8 <= item.count {
            let head = item[start..<start + 4]
            if head.elementsEqual([0x49, 0x49, 0x2A, 0x00]) || head.elementsEqual([0x4D, 0x4D, 0x00, 0x2A]) {
                return Array(item[start...])
            }
        }
        return nil
    }

    /// What libheif allocates to decode an image of `size` (displayed) at `bitDepth`: the planes (luma,
    /// two chroma planes at 4:2:0 when `chroma444` is false, alpha), counted twice because the codec's
    /// own picture (or, with `irot`/`imir`, the transformed copy) exists next to libheif's planes while the
    /// decode runs.
    static func decodeMemory(size: PixelSize, bitDepth: Int, hasAlpha: Bool, monochrome: Bool, chroma444: Bool = false)
        -> Int
    {
        let bytesPerSample = bitDepth > 8 ? 2 : 1
        let luma = size.area * bytesPerSample
        let chroma =
            monochrome
            ? 0 : (chroma444 ? 2 * luma : 2 * ((size.width + 1) / 2) * ((size.height + 1) / 2) * bytesPerSample)
        let alpha = hasAlpha ? luma : 0
        return 2 * (luma + chroma + alpha)
    }

    /// Decodes the primary image and streams its rows, converted to RGB(A) or gray(+alpha), through a
    /// resampler to `target` (at most the image size).
    /// `grid`: the probe's grid (`HEIFProbe.grid`, `ImageInfo.heifGrid`), the one `MemoryEstimate.heif`
    /// priced; the tile route decodes it as planned, without reading the boxes again. nil: libheif decodes
    /// the image (tests pass nil to compare a grid's two routes).
    static func render(
        _ source: ImageSource, grid: HEIFGrid?, target: PixelSize, limits: ImageLimits,
        meter: PixelMemoryMeter
    ) throws -> RenderedImage {
        // A grid of 8-bit HEVC tiles without alpha, decoded one row of tiles at a time, or a single 8-bit HEVC
        // image read from libde265's picture (HEIFTileDecoding).
        // Everything that would need libheif was settled by the plan: nothing falls back after rows were decoded.
        if let grid {
            return try HEIFTileDecoding.render(
                grid, file: try HEIFFileBytes(source), target: target,
                limits: limits, meter: meter)
        }
        // The coded chroma format, from the configuration boxes (4:4:4 when they cannot say).
        let chroma = (try? HEIFChroma.coded(source, maxMetaBytes: limits.maxMetadataBytes)) ?? HEIFChroma.yuv444
        return try HEIFReader.with(source, limits: limits) { reader in
            let info = try reader.info()
            let size = PixelSize(width: Int(info.width), height: Int(info.height))
            try limits.check(width: size.width, height: size.height, file: reader.file)
            let estimate = decodeMemory(
                size: size, bitDepth: max(Int(info.luma_bits), 8), hasAlpha: info.has_alpha != 0,
                monochrome: chroma == HEIFChroma.monochrome, chroma444: chroma != HEIFChroma.yuv420)
            if estimate > limits.maxDecoderMemory {
                throw SharePipeError.tooLarge(
                    file: reader.file,
                    exceeded: ExceededLimit(
                        .decoderMemory, found: estimate,
                        limit: limits.maxDecoderMemory, size: size,
                        detail: "decoding this HEIF"))
            }
            meter.allocate(estimate)
            var counted = estimate
            defer { meter.release(counted) }
            let planes = try reader.decodePlanes(chroma: chroma, threads: decodingThreads)
            defer { reader.releaseImage() }
            // The codec's copy is gone once decoding returns; the planes stay until the last row.
            let held = planeBytes(planes)
            meter.release(counted - held)
            counted = held
            guard Int(planes.width) == size.width, Int(planes.height) == size.height else {
                throw SharePipeError.corrupt(
                    file: reader.file, phase: .decode,
                    reason: "decoded image is \(planes.width)×\(planes.height), "
                        + "the header says \(size)")
            }
            if let problem = HEIFRowConverter.validate(planes) {
                throw SharePipeError.unsupportedFormat(file: reader.file, missing: .feature, reason: "HEIF \(problem)")
            }
            let nclx = planes.nclx.present != 0 ? planes.nclx : info.nclx
            guard let matrix = YCbCrMatrix(nclx: nclx) else {
                throw SharePipeError.unsupportedFormat(
                    file: reader.file, missing: .feature,
                    reason: "HEIF matrix coefficients \(nclx.matrix_coefficients) are not supported")
            }
            var converter = HEIFRowConverter(
                planes: planes, matrix: matrix, premultiplied: info.premultiplied_alpha != 0)
            if info.icc_length == 0 {
                // PQ or HLG without an ICC profile (which would win, as in browsers): tone-mapped to SDR.
                let hdr = try HEIFHDRBoxes.read(try HEIFFileBytes(source), maxBytes: limits.maxMetadataBytes)
                converter.toneMap = HDRToneMap(nclx: nclx, peak: hdr.peakLuminance)
            }
            let bitmap = try converter.resampled(size: size, to: target, meter: meter)
            return RenderedImage(bitmap: bitmap, warnings: [])
        }
    }

    /// The grid the tile route decodes for this primary image (a single HEVC image as a grid of one tile), nil
    /// when libheif decodes it: not a grid of 8-bit HEVC tiles nor one 8-bit HEVC image, alpha, or transforms
    /// that leave another displayed size (`clap`).
    static func tileRoute(_ source: ImageSource, info: sp_heif_info, limits: ImageLimits) throws -> HEIFGrid? {
        guard info.has_alpha == 0, info.luma_bits <= 8, info.chroma_bits <= 8, HDRToneMap.Transfer(info.nclx) == nil,
            let grid = try HEIFGrid.plan(HEIFFileBytes(source), limits: limits),
            grid.displayedSize == PixelSize(width: Int(info.width), height: Int(info.height))
        else { return nil }
        return grid
    }

    /// Bytes of the decoded planes as libheif holds them.
    static func planeBytes(_ planes: sp_heif_planes) -> Int {
        var total = Int(planes.y_stride) * Int(planes.height)
        if planes.cb != nil { total += (Int(planes.cb_stride) + Int(planes.cr_stride)) * Int(planes.chroma_height) }
        if planes.alpha != nil { total += Int(planes.alpha_stride) * Int(planes.height) }
        return total
    }
}

/// The decoder role for HEIF/HEIC and AVIF (one libheif-backed implementation serves both formats).
///
/// The orientation reported is always `.up`: libheif applies `irot`/`imir` while decoding, so the probe's
/// size is the displayed size, and the Exif orientation a HEIF may also carry is informational (applying it
/// would turn the picture a second time). So `storedOrientationValue` stays nil (no orientation is left to
/// apply); the Exif that is kept has its orientation reset to 1 by the metadata policy, like every format's.
struct HEIFDecoder: ImageDecoder {
    let format: ImageFormat

    func probe(_ source: ImageSource, limits: ImageLimits) throws -> ImageInfo {
        let byteCount = try source.byteCount()
        // The tiles priced from the `meta` box before libheif reads the items (which takes seconds for tens of
        // thousands of them): a small file declaring a grid of thousands of tiles stops here.
        let tiles = try HEIFGrid.declaredTileCount(HEIFFileBytes(source), maxBytes: limits.maxMetadataBytes)
        try limits.checkWork(
            WorkEstimate(tileCount: tiles, inputBytes: byteCount), size: nil, file: source.displayName)
        let probe = try HEIFDecoding.probe(source, limits: limits)
        var info = ImageInfo(
            format: format, size: probe.size,
            colorModel: probe.monochrome ? (probe.hasAlpha ? .grayAlpha : .gray) : (probe.hasAlpha ? .rgba : .rgb),
            bitDepth: probe.bitDepth, progressive: false, orientation: .up,
            storedOrientationValue: nil, frameCount: 1, hasAlpha: probe.hasAlpha,
            metadata: probe.metadata, byteCount: byteCount)
        info.heifGrid = probe.grid
        // A motion photo's video in a top-level box after the image (`EmbeddedVideo`).
        if let video = try EmbeddedVideoDetector.inHEIF(source, metadata: probe.metadata) {
            info.metadata.append(.embeddedVideo(video))
        }
        info.tileCount = tiles
        info.probeAdjustments = probe.adjustments
        return info
    }

    func render(
        _ source: ImageSource, info: ImageInfo, target: PixelSize, limits: ImageLimits,
        meter: PixelMemoryMeter
    ) throws -> RenderedImage {
        try HEIFDecoding.render(source, grid: info.heifGrid, target: target, limits: limits, meter: meter)
    }
}

extension ImageInfo {
    /// HEIF: the grid of HEVC tiles the tile route decodes (`HEIFTileDecoding`), nil where libheif decodes.
    var heifGrid: HEIFGrid? {
        get { formatDetail as? HEIFGrid }
        set { formatDetail = newValue.map { $0 as any Sendable } }
    }
}
