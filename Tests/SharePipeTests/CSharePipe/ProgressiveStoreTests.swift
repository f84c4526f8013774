import CSharePipe
import Foundation
import Testing
@testable import SharePipe

/// The compact coefficient store (Sources/CSharePipe/sp_jpeg_coefficients.c) against libjpeg's own
/// whole-image arrays: the same file, scale and output colour through the same shim, pixels compared byte
/// for byte. `SHAREPIPE_STORE_CORPUS` (directories, colon-separated) adds more files: scripts/check-progressive-store
/// generates scan-script, restart-interval, sampling and odd-size sets and runs this suite over them.
/// Banded decodes (the store keeping one band of rows, the file decoded once per band) are forced with a budget
/// of one byte, so every band is the smallest the band limit allows and every band boundary is exercised.
@Suite("Progressive coefficient store")
struct ProgressiveStoreTests {
    /// One decode through the shim.
    struct Decode: Equatable {
        var status: sp_status
        var width = 0, height = 0, components = 0
        var pixels: [UInt8] = []
        var storePeak = 0
        var bands = 0
        /// iMCU rows the entropy decoder read over every scan and band (-1: not counted, see sp_jpeg.h).
        var entropyRows = -1
        /// Whether the store ran its SSSE3 block codec.
        var vector = false
    }

    /// `bands`: decode in (at most) that many bands with a one-byte budget; 0: one decode. `portable`: the
    /// store's plain C block codec even where its SSSE3 one runs.
    static func decode(
        _ path: String, scale: Int, full: Bool, maxMemory: Int = 256 << 20, bands: Int = 0,
        budget: Int = 1, portable: Bool = false
    ) -> Decode {
        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        let limits = sp_jpeg_limits(max_memory: maxMemory, max_metadata: 0, max_segments: 0, max_scans: 500)
        var status = sp_jpeg_reader_open_file(path, limits, &handle, &message)
        guard status == SP_OK, let handle else { return Decode(status: status) }
        defer { sp_jpeg_reader_free(handle) }
        var header = sp_jpeg_header()
        status = sp_jpeg_reader_read_header(handle, 0, &header, &message)
        guard status == SP_OK else { return Decode(status: status) }
        sp_jpeg_reader_use_full_coefficients(handle, full ? 1 : 0)
        sp_jpeg_reader_use_portable_store(handle, portable ? 1 : 0)
        if bands > 0 { sp_jpeg_reader_set_band_budget(handle, budget, Int32(bands)) }
        let space =
            header.components == 1 ? SP_JPEG_OUT_GRAY : header.components == 4 ? SP_JPEG_OUT_CMYK : SP_JPEG_OUT_RGB
        var result = Decode(status: SP_OK)
        var w: Int32 = 0, h: Int32 = 0, c: Int32 = 0
        status = sp_jpeg_reader_start(handle, Int32(scale), space, &w, &h, &c, &message)
        guard status == SP_OK else { return Decode(status: status) }
        (result.width, result.height, result.components) = (Int(w), Int(h), Int(c))
        let rowBytes = result.width * result.components
        // A header claiming a huge image (TestImages/broken/huge-header.jpg): compared by status only.
        guard rowBytes * result.height <= 256 << 20 else { return result }
        result.pixels = [UInt8](repeating: 0, count: rowBytes * result.height)
        var done = 0
        while done < result.height {
            var rows: Int32 = 0
            status = result.pixels.withUnsafeMutableBufferPointer { buffer in
                sp_jpeg_reader_read_rows(
                    handle, buffer.baseAddress! + done * rowBytes, rowBytes,
                    Int32(result.height - done), &rows, &message)
            }
            guard status == SP_OK, rows > 0 else { break }
            done += Int(rows)
        }
        if status == SP_OK { status = sp_jpeg_reader_finish(handle, &message) }
        result.status = status == SP_ERR_END ? SP_OK : status
        result.storePeak = sp_jpeg_reader_coefficient_store_peak(handle)
        result.bands = Int(sp_jpeg_reader_band_count(handle))
        result.entropyRows = sp_jpeg_reader_entropy_rows(handle)
        result.vector = sp_jpeg_reader_store_vector(handle) != 0
        return result
    }

    /// Every JPEG under `TestImages/` (committed, including the broken ones and `progressive/`'s scan
    /// scripts) and under the directories of `SHAREPIPE_STORE_CORPUS`.
    static func files() -> [String] {
        var roots = [Fixtures.path(""), Fixtures.root + "/Fuzz/crashers/jpeg"]
        if let extra = ProcessInfo.processInfo.environment["SHAREPIPE_STORE_CORPUS"] {
            roots += extra.split(separator: ":").map(String.init)
        }
        var found: [String] = []
        for root in roots {
            guard let walker = FileManager.default.enumerator(atPath: root) else { continue }
            for case let relative as String in walker {
                let path = root + "/" + relative
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                    let handle = FileHandle(forReadingAtPath: path)
                else { continue }
                let magic = handle.readData(ofLength: 3)
                try? handle.close()
                if [UInt8](magic) == [0xFF, 0xD8, 0xFF] { found.append(path) }
            }
        }
        return found.sorted()
    }

    @Test("decodes the pixels of libjpeg's own arrays, at every scale, for every JPEG, in one decode and in bands")
    func exactAgainstLibjpeg() throws {
        var compared = 0, progressive = 0, failedAlike = 0, banded = 0, bandDecodes = 0
        var storeBytes = 0
        for path in Self.files() {
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            // Large committed images are covered at the scales the pipeline uses for them.
            let scales = size > 400_000 ? [1, 2, 3] : Array(1...8)
            for scale in scales {
                let full = Self.decode(path, scale: scale, full: true)
                let compact = Self.decode(path, scale: scale, full: false)
                #expect(
                    compact.status == full.status, "\(path) at \(scale)/8: status \(compact.status) vs \(full.status)")
                guard full.status == SP_OK, compact.status == SP_OK else { failedAlike += 1; continue }
                #expect(compact.width == full.width && compact.height == full.height, "\(path) at \(scale)/8")
                #expect(compact.pixels == full.pixels, "\(path) at \(scale)/8: pixels differ")
                compared += 1
                if compact.storePeak > 0 {
                    progressive += 1
                    storeBytes += compact.storePeak
                    // In bands: the smallest 4 (a one-byte budget); up to 8 within half the one-decode peak,
                    // the store dropping rows from the band's end as the scans fill it; and for short images at
                    // the scales the pipeline uses most, one band per iMCU row (every row a band boundary).
                    var bandings = [(bands: 4, budget: 1), (bands: 8, budget: compact.storePeak / 2)]
                    if full.height <= 160 && (scale == 2 || scale == 3) { bandings.append((bands: 1000, budget: 1)) }
                    for (bands, budget) in bandings {
                        let band = Self.decode(path, scale: scale, full: false, bands: bands, budget: budget)
                        #expect(band.status == SP_OK, "\(path) at \(scale)/8 in \(bands) bands: status \(band.status)")
                        #expect(
                            band.pixels == full.pixels,
                            "\(path) at \(scale)/8 in \(bands) bands (\(band.bands) decodes): pixels differ")
                        if band.bands > 1 { banded += 1 }
                        bandDecodes += band.bands
                    }
                }
            }
        }
        print(
            "progressive store: \(compared) decodes compared (\(progressive) multi-scan), \(failedAlike) failed alike; "
                + "store peaks summed: \(storeBytes) bytes; banded: \(banded) decodes in more than one band, "
                + "\(bandDecodes) band decodes")
        #expect(progressive > 0)
        #expect(banded > 0)
    }

    @Test("the store's SSSE3 and plain C block codecs keep the same bytes and decode the same pixels")
    func vectorCodecMatchesPlainC() throws {
        var compared = 0, vectorDecodes = 0
        for path in Self.files() {
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            for scale in size > 400_000 ? [2, 3] : [1, 2, 3, 4, 8] {
                let plain = Self.decode(path, scale: scale, full: false, portable: true)
                guard plain.status == SP_OK, plain.storePeak > 0 else { continue }  // not multi-scan, or broken
                #expect(!plain.vector, "\(path): the plain C codec was asked for")
                // One decode, and the smallest 4 bands (every row of the store dropped, rewritten and re-read).
                for bands in [0, 4] {
                    let plainDecode =
                        bands == 0 ? plain : Self.decode(path, scale: scale, full: false, bands: bands, portable: true)
                    let vector = Self.decode(path, scale: scale, full: false, bands: bands)
                    #expect(vector.status == plainDecode.status, "\(path) at \(scale)/8, \(bands) bands")
                    #expect(vector.pixels == plainDecode.pixels, "\(path) at \(scale)/8, \(bands) bands: pixels differ")
                    // The same encoding: the same bytes held at every moment, so the same peak and bands.
                    #expect(
                        vector.storePeak == plainDecode.storePeak && vector.bands == plainDecode.bands,
                        "\(path) at \(scale)/8, \(bands) bands: store \(vector.storePeak) vs \(plainDecode.storePeak)")
                    compared += 1
                    if vector.vector { vectorDecodes += 1 }
                }
            }
        }
        print("store codecs: \(compared) multi-scan decodes compared, \(vectorDecodes) with the SSSE3 codec")
        #expect(compared > 0)
        #if arch(x86_64)
            // x86-64 CPUs have had SSSE3 and POPCNT since 2008 (Intel) and 2011 (AMD); without them the plain C
            // codec would only be compared with itself.
            #expect(vectorDecodes == compared)
        #endif
    }

    @Test("decodes a progressive file in bands within a budget, the pixels of one decode")
    func bandsWithinBudget() throws {
        let path = Fixtures.path("jpeg/progressive.jpg")
        let whole = Self.decode(path, scale: 3, full: false)
        // 1600×1200 at 3/8 holds about 1 MB in one decode; within 600 KB it takes several bands (the non-zero
        // map of every block stays, about 200 KB; values only for the band). The budget is checked after
        // each window of rows, so the peak may pass it by the growth of one window.
        let banded = Self.decode(path, scale: 3, full: false, bands: 8, budget: 600_000)
        #expect(whole.bands == 1 && banded.bands > 1, "bands: \(banded.bands)")
        #expect(banded.pixels == whole.pixels)
        #expect(
            banded.storePeak < 650_000 && banded.storePeak < whole.storePeak * 2 / 3,
            "store \(banded.storePeak) vs \(whole.storePeak)")
        // A budget the whole image fits in: one decode.
        let roomy = Self.decode(path, scale: 3, full: false, bands: 8, budget: 4 << 20)
        #expect(roomy.bands == 1 && roomy.pixels == whole.pixels)
    }

    @Test(
        "a banded decode reads each scan's rows about once over all bands, keeping nothing outside the band",
        arguments: [(2, 4), (3, 8), (1, 1000)])
    func bandsReadEachScanOnce(scale: Int, bands: Int) throws {
        let path = Fixtures.path("jpeg/progressive.jpg")  // 1600×1200, 4:2:0: 75 iMCU rows, 10 scans
        let whole = Self.decode(path, scale: scale, full: false)
        // A budget the whole image fits in: one read, every row of every scan once.
        let once = Self.decode(path, scale: scale, full: false, bands: 8, budget: 64 << 20)
        #expect(once.bands == 1 && once.pixels == whole.pixels)
        #expect(once.entropyRows == 75 * 10, "rows read in one decode: \(once.entropyRows)")
        let banded = Self.decode(path, scale: scale, full: false, bands: bands, budget: 1)
        #expect(banded.bands > 2, "bands: \(banded.bands)")
        #expect(banded.pixels == whole.pixels)
        // Every read decoding every scan over the whole image would read bands × 750 rows. Each band reads
        // its own rows, the margins around its output (9 iMCU rows at each boundary) and up to a checkpoint
        // stride before them.
        let boundaries = banded.bands - 1
        #expect(banded.entropyRows >= once.entropyRows)
        #expect(
            banded.entropyRows <= (75 + boundaries * 16) * 10,
            "rows read in \(banded.bands) bands: \(banded.entropyRows) (one decode: \(once.entropyRows))")
        // Nothing outside the band: below the store of a decode keeping the non-zero map of every block.
        #expect(banded.storePeak < whole.storePeak / 2, "store \(banded.storePeak) vs \(whole.storePeak)")
    }

    @Test("holds a 1600×1200 progressive file at 3/8 in a fraction of libjpeg's coefficient arrays")
    func storeIsSmall() throws {
        let compact = Self.decode(Fixtures.path("jpeg/progressive.jpg"), scale: 3, full: false)
        #expect(compact.status == SP_OK)
        // libjpeg's arrays: 4:2:0, 200 × 150 luma blocks and 2 × 100 × 75 chroma blocks of 128 bytes.
        let libjpeg = (200 * 150 + 2 * 100 * 75) * 128
        #expect(compact.storePeak > 0 && compact.storePeak < libjpeg / 3, "store \(compact.storePeak) vs \(libjpeg)")
    }

    @Test("the pipeline decodes in bands from a file and from bytes, the same output as one decode")
    func pipelineBandsFromFileAndBytes() throws {
        let path = Fixtures.path("jpeg/progressive.jpg")
        var options = PrepareOptions(maxShortEdge: 600)
        let whole = try SharePipe.prepare(.file(path: path), options: options)
        // A 1 MiB decoder limit gives a 512 KiB band budget: the 1600×1200 file at 4/8 (about 0.9 MB in one
        // decode) takes several bands.
        options.limits.maxDecoderMemory = 1 << 20
        let fromFile = try SharePipe.prepare(.file(path: path), options: options)
        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let fromBytes = try SharePipe.prepare(.bytes(data), options: options)
        #expect(fromFile.bytes == whole.bytes)
        #expect(fromBytes.bytes == whole.bytes)
        let banded = Self.decode(path, scale: 4, full: false, bands: JPEGDecoder.maxBands, budget: 512 << 10)
        #expect(banded.bands > 1, "bands: \(banded.bands)")
    }

    @Test("fails at the decoder memory limit instead of growing past it")
    func boundedByTheLimit() throws {
        let limited = Self.decode(Fixtures.path("jpeg/progressive.jpg"), scale: 3, full: false, maxMemory: 200_000)
        #expect(limited.status == SP_ERR_MEMORY)
        #expect(limited.storePeak <= 200_000 + 64 << 10)
        let error = #expect(throws: SharePipeError.self) {
            var options = PrepareOptions()
            options.limits.maxDecoderMemory = 200_000
            _ = try SharePipe.prepare(.file(path: Fixtures.path("jpeg/progressive.jpg")), options: options)
        }
        #expect("\(String(describing: error))".contains("decoder memory limit"))
    }

    // MARK: - A file rewritten between bands

    /// A JPEG of `width`×`height` (a gradient) encoded through the shim: baseline or progressive, 4:2:0 or 4:4:4.
    static func encoded(width: Int, height: Int, progressive: Bool, subsample420: Bool) -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                pixels[(y * width + x) * 3] = UInt8(x * 255 / max(width - 1, 1))
                pixels[(y * width + x) * 3 + 1] = UInt8(y * 255 / max(height - 1, 1))
                pixels[(y * width + x) * 3 + 2] = UInt8((x + y) % 256)
            }
        }
        let settings = sp_jpeg_encode_settings(
            quality: 80, progressive: progressive ? 1 : 0,
            subsample_420: subsample420 ? 1 : 0, optimize_coding: 1, write_jfif: 1,
            tables: Int32(SP_JPEG_TABLES_KLEIN_SILVERSTEIN_CARNEY.rawValue))
        var message = shimMessageBuffer()
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = sp_jpeg_encode(
            pixels, Int32(width), Int32(height), 3, settings, nil, 0, &output, &length, &message)
        precondition(status == SP_OK, shimText(message))
        defer { sp_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: length))
    }

    /// Rewrites the file at `path` in place (the same inode, so an open reader sees the new bytes).
    static func rewrite(_ path: String, with bytes: [UInt8]) throws {
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data(bytes))
        try handle.close()
    }

    @Test(
        "a banded decode fails, never writing wider rows, when the file is rewritten between bands",
        arguments: ["wider", "baseline", "444"])
    func fileRewrittenBetweenBands(_ change: String) throws {
        // The progressive 4:2:0 original is 203×157; the replacement differs in size, in coding process, or
        // only in its sampling factors (same size, same progressive mode).
        let replacement: [UInt8]
        switch change {
        case "wider":
            replacement = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Fixtures.path("jpeg/progressive.jpg"))))
        case "baseline": replacement = Self.encoded(width: 203, height: 157, progressive: false, subsample420: true)
        default: replacement = Self.encoded(width: 203, height: 157, progressive: true, subsample420: false)
        }
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/changing.jpg"
        try FileManager.default.copyItem(atPath: Fixtures.path("progressive/spectral-420-203x157.jpg"), toPath: path)

        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        let limits = sp_jpeg_limits(max_memory: 256 << 20, max_metadata: 0, max_segments: 0, max_scans: 500)
        #expect(sp_jpeg_reader_open_file(path, limits, &handle, &message) == SP_OK)
        let reader = try #require(handle)
        defer { sp_jpeg_reader_free(reader) }
        var header = sp_jpeg_header()
        #expect(sp_jpeg_reader_read_header(reader, 0, &header, &message) == SP_OK)
        sp_jpeg_reader_set_band_budget(reader, 1, 4)
        var width: Int32 = 0, height: Int32 = 0, components: Int32 = 0
        #expect(sp_jpeg_reader_start(reader, 8, SP_JPEG_OUT_RGB, &width, &height, &components, &message) == SP_OK)
        #expect(width == 203 && height == 157 && components == 3)
        let rowBytes = Int(width * components)
        // One row at a time into a buffer with room to spare: without the check a wider replacement's rows
        // land in the spare room and the read "succeeds".
        var scratch = [UInt8](repeating: 0, count: 64 << 10)
        var rows: Int32 = 0
        var status = scratch.withUnsafeMutableBufferPointer {
            sp_jpeg_reader_read_rows(reader, $0.baseAddress!, rowBytes, 1, &rows, &message)
        }
        #expect(status == SP_OK && rows == 1)
        try Self.rewrite(path, with: replacement)
        var read = 1
        while status == SP_OK && read < Int(height) {
            status = scratch.withUnsafeMutableBufferPointer {
                sp_jpeg_reader_read_rows(reader, $0.baseAddress!, rowBytes, 1, &rows, &message)
            }
            read += Int(rows)
            if rows == 0 { break }
        }
        #expect(status == SP_ERR_LIBRARY, "\(change): status \(status) after \(read) rows")
        #expect(shimText(message).contains("changed while it was read"), "\(change): \(shimText(message))")
        #expect(read < Int(height))
        #expect(sp_jpeg_reader_band_count(reader) == 1)
    }

    @Test("the pipeline's reader names the file that changed between bands")
    func readerNamesTheChangedFile() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/changing.jpg"
        try FileManager.default.copyItem(atPath: Fixtures.path("jpeg/progressive.jpg"), toPath: path)
        let replacement = try [UInt8](
            Data(contentsOf: URL(fileURLWithPath: Fixtures.path("progressive/spectral-420-203x157.jpg"))))
        var limits = PrepareOptions().limits
        limits.maxDecoderMemory = 1 << 20  // a 512 KiB band budget: 1600×1200 at 4/8 takes several bands
        let error = #expect(throws: SharePipeError.self) {
            try JPEGReader.with(.file(path: path), limits: limits) { reader in
                _ = try reader.readHeader(saveMarkers: false)
                let (size, components) = try reader.start(scaleNumerator: 4, space: SP_JPEG_OUT_RGB)
                let rowBytes = size.width * components
                var rows = [UInt8](repeating: 0, count: rowBytes * 16)
                var first = true
                while try rows.withUnsafeMutableBufferPointer({
                    try reader.readRows(into: $0.baseAddress!, rowBytes: rowBytes, maxRows: 16)
                }) > 0 {
                    if first { try Self.rewrite(path, with: replacement); first = false }
                }
                try reader.finish()
            }
        }
        guard case .corrupt(let file, _, let reason)? = error else {
            Issue.record("expected corrupt, got \(String(describing: error))")
            return
        }
        #expect(file == path)
        #expect(reason.contains("changed while it was read"), "\(reason)")
    }

    @Test("a banded decode saves the markers of the first read only")
    func bandsDoNotSaveMarkersAgain() throws {
        let path = Fixtures.path("jpeg/progressive.jpg")  // a JFIF APP0
        var message = shimMessageBuffer()
        var handle: OpaquePointer?
        let limits = sp_jpeg_limits(max_memory: 256 << 20, max_metadata: 1 << 20, max_segments: 100, max_scans: 500)
        #expect(sp_jpeg_reader_open_file(path, limits, &handle, &message) == SP_OK)
        let reader = try #require(handle)
        defer { sp_jpeg_reader_free(reader) }
        var header = sp_jpeg_header()
        #expect(sp_jpeg_reader_read_header(reader, 1, &header, &message) == SP_OK)
        #expect(sp_jpeg_reader_marker_count(reader) == 1)
        sp_jpeg_reader_set_band_budget(reader, 1, 4)
        var width: Int32 = 0, height: Int32 = 0, components: Int32 = 0
        #expect(sp_jpeg_reader_start(reader, 2, SP_JPEG_OUT_RGB, &width, &height, &components, &message) == SP_OK)
        let rowBytes = Int(width * components)
        var pixels = [UInt8](repeating: 0, count: rowBytes * Int(height))
        var done = 0, rows: Int32 = 0
        while done < Int(height) {
            let status = pixels.withUnsafeMutableBufferPointer {
                sp_jpeg_reader_read_rows(
                    reader, $0.baseAddress! + done * rowBytes, rowBytes, Int32(Int(height) - done),
                    &rows, &message)
            }
            guard status == SP_OK, rows > 0 else { break }
            done += Int(rows)
        }
        #expect(done == Int(height))
        #expect(sp_jpeg_reader_band_count(reader) > 1)
        // The first read's markers went with the first band's image pool; a later band's re-read saves none.
        #expect(sp_jpeg_reader_marker_count(reader) == 0)
        let whole = Self.decode(path, scale: 2, full: false)
        #expect(pixels == whole.pixels)
    }
}
