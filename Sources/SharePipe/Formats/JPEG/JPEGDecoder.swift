import CSharePipe

/// Reads JPEGs with libjpeg-turbo: header and markers without pixels, then DCT-scaled scanlines streamed
/// into the resampler. The full-resolution image is never in memory. A progressive file's coefficients must
/// be kept for the whole image until its last scan; the shim's compact store keeps only those the DCT scale
/// reads plus a non-zero map (`sp_jpeg_coefficients.c`, about a fifth of libjpeg's own arrays at 3/8), within
/// `ImageLimits.maxDecoderMemory`. Past `storeBudget` the file is decoded in bands of rows (the file read once
/// per band, the store keeping values for the band only), so the store stays near the budget, up to `maxBands`
/// reads. A Huffman-coded file's reads decode each scan over their own band's rows only, starting from the
/// entropy decoder's state the previous read saved there (`sp_jpeg_band_skip.c`): every scan is decoded about
/// once in all, and the store keeps nothing outside the band. Other multi-scan files (arithmetic coding,
/// multi-scan baseline) decode the whole file per band, the store keeping the non-zero map of every block.
struct JPEGDecoder: RowStreamingDecoder {
    /// Rows asked of libjpeg at once (each call returns at most one iMCU row); `MemoryEstimate` prices them.
    static let rowBatch = 16
    /// Bytes of the compact coefficient store past which a progressive file is decoded in bands. The bench's
    /// 24 MP camera file at 3/8 needs 13.7 MB and decodes in one band; its 48 MP file at 2/8 needs 33 MB and
    /// takes three reads, in which the entropy decoder reads 1.18 times the rows of one decode (the margins the
    /// bands share, and early scans of rows a band drops when it passes the budget), where each read decoded
    /// the whole file before.
    static let storeBudget = 14 << 20
    /// The most bands (decodes of the file) one image gets: past that the store exceeds the budget instead
    /// (an image so large that its non-zero map alone fills the budget would otherwise take a decode per row).
    static let maxBands = 8

    var format: ImageFormat { .jpeg }

    func probe(_ source: ImageSource, limits: ImageLimits) throws -> ImageInfo {
        let byteCount = try source.byteCount()
        return try JPEGReader.with(source, limits: limits) { reader in
            let header = try reader.readHeader(saveMarkers: true)
            // Decoded at a reduced DCT scale: an image over the default pixel limit is left to the pipeline's cost check.
            try limits.checkHeader(width: Int(header.width), height: Int(header.height), file: reader.file)
            let metadata = JPEGMarkers.metadata(from: reader.markers())
            var storedOrientation: Int?
            for case .exif(let tiff) in metadata {
                storedOrientation = (try? ExifEditor(tiff: tiff))?.orientation
                break
            }
            let colorModel: ColorModel
            switch header.jpeg_color_space {
            case 1: colorModel = .gray  // JCS_GRAYSCALE
            case 4: colorModel = .cmyk  // JCS_CMYK
            case 5: colorModel = .ycck  // JCS_YCCK
            default: colorModel = .rgb
            }
            var info = ImageInfo(
                format: .jpeg, size: PixelSize(width: Int(header.width), height: Int(header.height)),
                colorModel: colorModel, bitDepth: 8, progressive: header.progressive != 0,
                orientation: Orientation(exifValue: storedOrientation),
                storedOrientationValue: storedOrientation, frameCount: 1, hasAlpha: false,
                metadata: metadata, byteCount: byteCount)
            info.jpegAdobeInverted = header.saw_adobe_marker != 0
            // A motion photo's video after the image's end (`EmbeddedVideo`).
            if let video = try EmbeddedVideoDetector.inJPEG(source, metadata: metadata) {
                info.metadata.append(.embeddedVideo(video))
            }
            if let note = Self.gainMapNote(metadata) {
                // The MPF index would point past the end of any output: it goes with the gain map.
                info.probeAdjustments.append(note)
                info.metadata.removeAll { Self.isMPF($0) }
            }
            return info
        }
    }

    /// The report's line when the JPEG carries an HDR gain map: an MPF (APP2) multi-picture index whose
    /// secondary image is the gain map, announced by Ultra HDR's `hdrgm` XMP or an ISO 21496-1 APP2. The
    /// secondary image follows the primary's EOI, which no route writes (the re-encode writes new pixels, the
    /// metadata-only copy stops at EOI), and the probe leaves the MPF segment out of the metadata, so no strip
    /// mode writes it; browsers on an SDR display show the primary image, which is what is prepared. nil when
    /// there is no gain map.
    static func gainMapNote(_ metadata: [MetadataBlock]) -> String? {
        let iso21496 = Array("urn:iso:std:iso:ts:21496:-1".utf8)
        var hasMPF = false, ultraHDR = false, iso = false
        for block in metadata {
            switch block {
            case .other(let tag, let data) where tag == "APP2":
                if isMPF(block) { hasMPF = true }
                if data.starts(with: iso21496) { iso = true }
            case .xmp(let data):
                if data.firstRange(of: Array("http://ns.adobe.com/hdr-gain-map/".utf8)) != nil { ultraHDR = true }
            default:
                break
            }
        }
        guard hasMPF, ultraHDR || iso else { return nil }
        let kind = ultraHDR ? "Ultra HDR: hdrgm XMP" : "ISO 21496-1"
        return
            "gain map removed (\(kind), MPF secondary image): the SDR base image is prepared, as browsers show it on an SDR display"
    }

    /// An APP2 multi-picture (MPF) index segment.
    static func isMPF(_ block: MetadataBlock) -> Bool {
        if case .other("APP2", let data) = block { return data.starts(with: Array("MPF\0".utf8)) }
        return false
    }

    func render(
        _ source: ImageSource, info: ImageInfo, target: PixelSize, limits: ImageLimits,
        meter: PixelMemoryMeter
    ) throws -> RenderedImage {
        try render(source, info: info, target: target, sharp: false, limits: limits, meter: meter)
    }

    /// Decoded at the DCT scale that leaves the resampler a factor of two (`ScalePlan.sharpJPEGScaleNumerator`).
    func renderSharp(
        _ source: ImageSource, info: ImageInfo, target: PixelSize, limits: ImageLimits,
        meter: PixelMemoryMeter
    ) throws -> RenderedImage {
        try render(source, info: info, target: target, sharp: true, limits: limits, meter: meter)
    }

    func renderRows(
        _ source: ImageSource, info: ImageInfo, target: PixelSize, limits: ImageLimits, meter: PixelMemoryMeter,
        into sink: any RenderRowSink
    ) throws -> [String] {
        try render(source, info: info, target: target, sharp: false, limits: limits, meter: meter, sink: sink)
            .warnings
    }

    /// The render; with a `sink`, its rows go there as the resampler makes them and the bitmap is empty.
    private func render(
        _ source: ImageSource, info: ImageInfo, target: PixelSize, sharp: Bool, limits: ImageLimits,
        meter: PixelMemoryMeter, sink: (any RenderRowSink)? = nil
    ) throws -> RenderedImage {
        try JPEGReader.with(source, limits: limits) { reader in
            let header = try reader.readHeader(saveMarkers: false)
            let stored = PixelSize(width: Int(header.width), height: Int(header.height))
            let numerator =
                sharp
                ? ScalePlan.sharpJPEGScaleNumerator(stored: stored, target: target)
                : ScalePlan.jpegScaleNumerator(stored: stored, target: target)
            let isCMYK = info.colorModel == .cmyk || info.colorModel == .ycck
            let space: sp_jpeg_out_space =
                info.colorModel == .gray ? SP_JPEG_OUT_GRAY : isCMYK ? SP_JPEG_OUT_CMYK : SP_JPEG_OUT_RGB
            let (decoded, components) = try reader.start(scaleNumerator: numerator, space: space)
            let layout: PixelLayout = components == 1 ? .gray : .rgb
            let outputTarget = PixelSize(
                width: min(target.width, decoded.width), height: min(target.height, decoded.height))
            try sink?.begin(size: outputTarget, layout: layout)
            // The decoded size is rounded up: the picture covers W·M/8 of it, mapped onto the output.
            var resampler = LanczosResampler(
                from: decoded, to: outputTarget, layout: layout, meter: meter,
                sourceExtent: ScalePlan.jpegDecodedExtent(stored: stored, numerator: numerator),
                rowSink: sink.map { sink in { try sink.push(row: $0) } })

            let batch = Self.rowBatch
            let rowBytes = decoded.width * components
            var rows = [UInt8](repeating: 0, count: rowBytes * batch)
            var rgbRow = [UInt8](repeating: 0, count: isCMYK ? decoded.width * 3 : 0)
            let bufferBytes = rows.count + rgbRow.count
            meter.allocate(bufferBytes)
            defer { meter.release(bufferBytes) }
            let inverted = info.jpegAdobeInverted
            let (profileTransform, colorWarning) =
                isCMYK ? CMYKProfileTransform.forImage(info, file: reader.file) : (nil, nil)
            while true {
                let got = try rows.withUnsafeMutableBufferPointer {
                    try reader.readRows(into: $0.baseAddress!, rowBytes: rowBytes, maxRows: batch)
                }
                if got == 0 { break }
                for r in 0..<got {
                    try rows.withUnsafeBufferPointer { all in
                        let row = UnsafeBufferPointer(rebasing: all[r * rowBytes..<(r + 1) * rowBytes])
                        if isCMYK {
                            rgbRow.withUnsafeMutableBufferPointer { rgb in
                                if let profileTransform {
                                    profileTransform.convert(row, into: rgb, pixels: decoded.width)
                                } else {
                                    CMYKConversion.toRGB(row, into: rgb, pixels: decoded.width, inverted: inverted)
                                }
                            }
                            try rgbRow.withUnsafeBufferPointer { try resampler.push(row: $0) }
                        } else {
                            try resampler.push(row: row)
                        }
                    }
                }
            }
            try reader.finish()
            var bitmap = Bitmap(size: PixelSize(width: 1, height: 1), layout: layout)
            do {
                if sink == nil { bitmap = try resampler.finish() } else { try resampler.finishRows() }
            } catch {
                throw SharePipeError.corrupt(file: reader.file, phase: .decode, reason: "image data ended early")
            }
            let warnings = reader.warnings()
            return RenderedImage(
                bitmap: bitmap,
                warnings: (warnings.count > 0 ? ["\(warnings.count) libjpeg warning(s), last: \(warnings.last)"] : [])
                    + (colorWarning.map { [$0] } ?? []))
        }
    }
}

/// CMYK to RGB without a colour-management engine: the naive complement product, which is what browsers
/// do for untagged CMYK (tagged CMYK goes through its profile: `CMYKProfileTransform`). Adobe's APP14 marker means the values are stored inverted (Photoshop writes
/// 255 − ink), which libjpeg passes through untouched.
enum CMYKConversion {
    static func toRGB(
        _ cmyk: UnsafeBufferPointer<UInt8>, into rgb: UnsafeMutableBufferPointer<UInt8>,
        pixels: Int, inverted: Bool
    ) {
        for p in 0..<pixels {
            var c = Int(cmyk[p * 4]), m = Int(cmyk[p * 4 + 1]), y = Int(cmyk[p * 4 + 2]), k = Int(cmyk[p * 4 + 3])
            if !inverted { c = 255 - c; m = 255 - m; y = 255 - y; k = 255 - k }
            // now c, m, y, k are "amount of paper showing" (255 = no ink)
            rgb[p * 3] = UInt8((c * k + 127) / 255)
            rgb[p * 3 + 1] = UInt8((m * k + 127) / 255)
            rgb[p * 3 + 2] = UInt8((y * k + 127) / 255)
        }
    }
}

extension ImageInfo {
    /// JPEG: whether an Adobe APP14 segment says the CMYK/YCCK samples are stored inverted.
    var jpegAdobeInverted: Bool {
        get { (formatDetail as? JPEGDetail)?.adobeInverted ?? false }
        set { formatDetail = JPEGDetail(adobeInverted: newValue) }
    }
}

/// A JPEG's `ImageInfo.formatDetail`.
struct JPEGDetail: Sendable {
    var adobeInverted: Bool
}
