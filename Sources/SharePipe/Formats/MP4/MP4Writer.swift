#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes one H.264 video track as an ISO-BMFF (MP4) file: `ftyp`, then `moov`, then `mdat`, so a player can
/// start before the whole file has arrived ("fast start"), which services ask for.
///
/// Samples are appended as they are encoded and spilled to an unlinked temporary file; the sample tables grow
/// by a few bytes per frame (size, start time, key flag). `finish` writes the header, now that every sample's
/// size and place is known, followed by the spilled samples, into a second unlinked file: memory stays flat in
/// the frame count, as on the GIF route.
///
/// Time: the media timescale is 1000 (milliseconds) by default, so every frame keeps its own duration exactly
/// (`stts`) for GIF delays (centiseconds) and APNG/WebP/AVIF durations (milliseconds); another can be asked for
/// (`FramePacing`: 23,000 for a 23 fps minimum, so that 1/23 s is a whole number of ticks too). Key frames are
/// listed in `stss` (left out when every sample is one). Colour: `colr` `nclx` says BT.709 primaries, transfer and matrix,
/// limited range, as the stream's VUI does. No edit list: presentation starts at the first sample. The header
/// holds only what players read (no `pasp`: square pixels are the default; no handler name; two compatible
/// brands): it is most of the file for a small animation.
///
/// `repeats` > 1 plays the samples that many times in a row without storing them again: each repeat is one
/// more chunk pointing at the same bytes (the first sample of each is an IDR picture, so it decodes alone).
final class MP4Writer {
    /// Ticks per second of the media and movie time.
    let timescale: Int
    let size: PixelSize
    private var spill: Int32?
    private var memory: [UInt8] = []
    private var spilledBytes = 0
    private(set) var sampleSizes: [UInt32] = []
    private(set) var sampleStarts: [Int] = []
    private var keySamples: [UInt32] = []

    /// A writer for pictures of `size`, its times in `timescale` ticks a second, spilling into `temporaryDirectory`
    /// (nil: `$TMPDIR`, else `/tmp`); in memory when no temporary file can be made.
    init(size: PixelSize, timescale: Int = 1000, temporaryDirectory: String? = nil) {
        precondition(timescale >= 1 && timescale <= Int(UInt32.max))
        self.size = size
        self.timescale = timescale
        spill = UnlinkedTemporaryFile.make(prefix: "sharepipe-samples", in: temporaryDirectory)
    }

    deinit { if let spill { _ = close(spill) } }

    /// The number of samples appended.
    var sampleCount: Int { sampleSizes.count }
    /// The bytes of sample data appended.
    var sampleBytes: Int { spilledBytes }

    /// Appends one sample (length-prefixed NAL units) shown from `start` (in ticks of the timescale), which must
    /// be later than the previous sample's start.
    func append(_ sample: UnsafeBufferPointer<UInt8>, isKey: Bool, start: Int) throws {
        precondition(sampleStarts.last.map { start > $0 } ?? (start == 0))
        precondition(!sample.isEmpty && sample.count <= Int(UInt32.max))
        if let spill {
            var done = 0
            while done < sample.count {
                let wrote = pwrite(spill, sample.baseAddress! + done, sample.count - done, off_t(spilledBytes + done))
                if wrote < 0 && errno == EINTR { continue }
                guard wrote > 0 else {
                    throw EncoderFailure(
                        reason: "writing the video's samples: \(FileIO.errnoText())", outOfMemory: false)
                }
                done += wrote
            }
        } else {
            memory.append(contentsOf: sample)
        }
        spilledBytes += sample.count
        sampleSizes.append(UInt32(sample.count))
        sampleStarts.append(start)
        if isKey { keySamples.append(UInt32(sampleSizes.count)) }
    }

    /// The whole file: header and samples, lasting `total` ticks (the last sample ends there; later than its
    /// start), the samples played `repeats` times. Written into an unlinked temporary file when one can be made
    /// (`file`), else into memory (`bytes`).
    func finish(sps: [UInt8], pps: [UInt8], total: Int, repeats: Int = 1, temporaryDirectory: String? = nil)
        throws -> (bytes: [UInt8], file: EncodedFile?)
    {
        precondition(!sampleSizes.isEmpty && total > sampleStarts.last! && repeats >= 1)
        precondition(keySamples.first == 1, "an MP4 track starts with a key frame")
        let mdatHeader = spilledBytes + 8 > Int(UInt32.max) ? 16 : 8
        let ftyp = Self.fileType()
        // The chunk offsets depend on the header's length, which depends on whether they need 64 bits.
        var moov = movie(sps: sps, pps: pps, total: total, repeats: repeats, dataStart: 0, wide: false)
        var dataStart = ftyp.count + moov.count + mdatHeader
        let wide = dataStart + spilledBytes > Int(UInt32.max)
        moov = movie(sps: sps, pps: pps, total: total, repeats: repeats, dataStart: dataStart, wide: wide)
        dataStart = ftyp.count + moov.count + mdatHeader
        moov = movie(sps: sps, pps: pps, total: total, repeats: repeats, dataStart: dataStart, wide: wide)
        var header = ftyp + moov
        if mdatHeader == 16 {
            header += BoxBytes.u32(1) + Array("mdat".utf8) + BoxBytes.u64(UInt64(spilledBytes + 16))
        } else {
            header += BoxBytes.u32(UInt32(spilledBytes + 8)) + Array("mdat".utf8)
        }
        guard let spill, let output = UnlinkedTemporaryFile.make(prefix: "sharepipe-output", in: temporaryDirectory)
        else {
            var bytes = header
            if let spill {
                var data = [UInt8](repeating: 0, count: spilledBytes)
                try data.withUnsafeMutableBytes {
                    try Self.readFully(spill, into: $0.baseAddress!, count: spilledBytes, at: 0)
                }
                bytes += data
            } else {
                bytes += memory
            }
            return (bytes, nil)
        }
        let file = EncodedFile(descriptor: output, byteCount: header.count + spilledBytes)
        try header.withUnsafeBytes { try Self.writeFully(output, $0.baseAddress!, count: header.count, at: 0) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var copied = 0
        try buffer.withUnsafeMutableBytes { buffer in
            while copied < spilledBytes {
                let count = min(buffer.count, spilledBytes - copied)
                try Self.readFully(spill, into: buffer.baseAddress!, count: count, at: copied)
                try Self.writeFully(output, buffer.baseAddress!, count: count, at: header.count + copied)
                copied += count
            }
        }
        return ([], file)
    }

    private static func readFully(_ descriptor: Int32, into target: UnsafeMutableRawPointer, count: Int, at offset: Int)
        throws
    {
        var done = 0
        while done < count {
            let got = pread(descriptor, target + done, count - done, off_t(offset + done))
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else {
                throw EncoderFailure(
                    reason: "reading the video's samples back: \(FileIO.errnoText())", outOfMemory: false)
            }
            done += got
        }
    }

    private static func writeFully(_ descriptor: Int32, _ source: UnsafeRawPointer, count: Int, at offset: Int) throws {
        var done = 0
        while done < count {
            let wrote = pwrite(descriptor, source + done, count - done, off_t(offset + done))
            if wrote < 0 && errno == EINTR { continue }
            guard wrote > 0 else {
                throw EncoderFailure(reason: "writing the video: \(FileIO.errnoText())", outOfMemory: false)
            }
            done += wrote
        }
    }

    // MARK: Boxes

    static func fileType() -> [UInt8] {
        BoxBytes.box("ftyp", Array("isom".utf8) + BoxBytes.u32(0x200) + Array("isomavc1".utf8))
    }

    /// The sample durations in ticks: each the next start minus its own, the last up to `total`; at most 2^32 − 1
    /// ticks (`stts`'s widest: 49.7 days in milliseconds), which no source's frame reaches at timescale 1000 (GIF:
    /// 655.35 s, APNG: 65,535 s) and no sample reaches at a larger one (a minimum frame rate splits them).
    func durations(total: Int) -> [Int] {
        (0..<sampleStarts.count).map { index in
            min(
                Int(UInt32.max),
                (index + 1 < sampleStarts.count ? sampleStarts[index + 1] : total) - sampleStarts[index])
        }
    }

    private func movie(sps: [UInt8], pps: [UInt8], total: Int, repeats: Int, dataStart: Int, wide: Bool) -> [UInt8] {
        let duration = UInt64(total) * UInt64(repeats)
        let long = duration > UInt64(UInt32.max)
        let unity: [UInt32] = [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000]
        let matrix = unity.flatMap(BoxBytes.u32)
        func times() -> [UInt8] {  // creation and modification time: 0 (unknown; nothing about the user's clock)
            long ? BoxBytes.u64(0) + BoxBytes.u64(0) : BoxBytes.u32(0) + BoxBytes.u32(0)
        }
        func length() -> [UInt8] { long ? BoxBytes.u64(duration) : BoxBytes.u32(UInt32(duration)) }
        let mvhd = BoxBytes.fullBox(
            "mvhd", version: long ? 1 : 0, flags: 0,
            times() + BoxBytes.u32(UInt32(timescale)) + length() + BoxBytes.u32(0x0001_0000)
                + BoxBytes.u16(0x0100) + [UInt8](repeating: 0, count: 10) + matrix
                + [UInt8](repeating: 0, count: 24) + BoxBytes.u32(2))
        let tkhd = BoxBytes.fullBox(
            "tkhd", version: long ? 1 : 0, flags: 3,
            times() + BoxBytes.u32(1) + BoxBytes.u32(0) + length() + [UInt8](repeating: 0, count: 8)
                + BoxBytes.u16(0) + BoxBytes.u16(0) + BoxBytes.u16(0) + BoxBytes.u16(0) + matrix
                + BoxBytes.u32(UInt32(size.width) << 16) + BoxBytes.u32(UInt32(size.height) << 16))
        let mdhd = BoxBytes.fullBox(
            "mdhd", version: long ? 1 : 0, flags: 0,
            times() + BoxBytes.u32(UInt32(timescale)) + length() + BoxBytes.u16(0x55C4) + BoxBytes.u16(0))
        let hdlr = BoxBytes.fullBox(
            "hdlr", version: 0, flags: 0,
            BoxBytes.u32(0) + Array("vide".utf8) + [UInt8](repeating: 0, count: 12) + [0])  // no handler name
        let vmhd = BoxBytes.fullBox("vmhd", version: 0, flags: 1, [UInt8](repeating: 0, count: 8))
        let dinf = BoxBytes.box(
            "dinf",
            BoxBytes.fullBox(
                "dref", version: 0, flags: 0, BoxBytes.u32(1) + BoxBytes.fullBox("url ", version: 0, flags: 1, [])))
        let stbl = BoxBytes.box(
            "stbl",
            sampleDescription(sps: sps, pps: pps) + timeToSample(total: total, repeats: repeats)
                + syncSamples(repeats: repeats) + sampleToChunk() + sampleSizeTable(repeats: repeats)
                + chunkOffsets(repeats: repeats, dataStart: dataStart, wide: wide))
        let minf = BoxBytes.box("minf", vmhd + dinf + stbl)
        let mdia = BoxBytes.box("mdia", mdhd + hdlr + minf)
        let trak = BoxBytes.box("trak", tkhd + mdia)
        return BoxBytes.box("moov", mvhd + trak)
    }

    private func sampleDescription(sps: [UInt8], pps: [UInt8]) -> [UInt8] {
        // avcC: version 1, profile, compatibility, level from the SPS; 4-byte NAL lengths; one SPS, one PPS.
        let avcC = BoxBytes.box(
            "avcC",
            [1, sps.count > 1 ? sps[1] : 77, sps.count > 2 ? sps[2] : 0, sps.count > 3 ? sps[3] : 31, 0xFF, 0xE1]
                + BoxBytes.u16(UInt16(sps.count)) + sps + [1] + BoxBytes.u16(UInt16(pps.count)) + pps)
        // colr nclx: BT.709 primaries (1), transfer (1), matrix (1), limited range.
        let colr = BoxBytes.box("colr", Array("nclx".utf8) + BoxBytes.u16(1) + BoxBytes.u16(1) + BoxBytes.u16(1) + [0])
        var name = [UInt8](repeating: 0, count: 32)  // compressorname: a Pascal string, empty
        name[0] = 0
        let avc1 = BoxBytes.box(
            "avc1",
            [UInt8](repeating: 0, count: 6) + BoxBytes.u16(1) + [UInt8](repeating: 0, count: 16)
                + BoxBytes.u16(UInt16(size.width)) + BoxBytes.u16(UInt16(size.height))
                + BoxBytes.u32(0x0048_0000) + BoxBytes.u32(0x0048_0000) + BoxBytes.u32(0) + BoxBytes.u16(1) + name
                + BoxBytes.u16(0x0018) + BoxBytes.u16(0xFFFF) + avcC + colr)  // no pasp: square pixels are the default
        return BoxBytes.fullBox("stsd", version: 0, flags: 0, BoxBytes.u32(1) + avc1)
    }

    private func timeToSample(total: Int, repeats: Int) -> [UInt8] {
        var runs: [(count: UInt32, delta: UInt32)] = []
        let durations = durations(total: total)
        for _ in 0..<repeats {
            for duration in durations {
                if let last = runs.last, last.delta == UInt32(duration) {
                    runs[runs.count - 1].count += 1
                } else {
                    runs.append((1, UInt32(duration)))
                }
            }
        }
        return BoxBytes.fullBox(
            "stts", version: 0, flags: 0,
            BoxBytes.u32(UInt32(runs.count)) + runs.flatMap { BoxBytes.u32($0.count) + BoxBytes.u32($0.delta) })
    }

    private func syncSamples(repeats: Int) -> [UInt8] {
        guard keySamples.count < sampleSizes.count else { return [] }  // every sample is a key frame
        let count = UInt32(sampleSizes.count)
        let all = (0..<UInt32(repeats)).flatMap { pass in keySamples.map { $0 + pass * count } }
        return BoxBytes.fullBox(
            "stss", version: 0, flags: 0, BoxBytes.u32(UInt32(all.count)) + all.flatMap(BoxBytes.u32))
    }

    /// Every chunk holds all the samples (one chunk per repeat).
    private func sampleToChunk() -> [UInt8] {
        BoxBytes.fullBox(
            "stsc", version: 0, flags: 0,
            BoxBytes.u32(1) + BoxBytes.u32(1) + BoxBytes.u32(UInt32(sampleSizes.count)) + BoxBytes.u32(1))
    }

    private func sampleSizeTable(repeats: Int) -> [UInt8] {
        let sizes = sampleSizes.flatMap(BoxBytes.u32)
        var table: [UInt8] = []
        table.reserveCapacity(sizes.count * repeats)
        for _ in 0..<repeats { table += sizes }
        return BoxBytes.fullBox(
            "stsz", version: 0, flags: 0, BoxBytes.u32(0) + BoxBytes.u32(UInt32(sampleSizes.count * repeats)) + table)
    }

    private func chunkOffsets(repeats: Int, dataStart: Int, wide: Bool) -> [UInt8] {
        let offsets = [UInt8](
            (0..<repeats).flatMap { _ in wide ? BoxBytes.u64(UInt64(dataStart)) : BoxBytes.u32(UInt32(dataStart)) })
        return BoxBytes.fullBox(wide ? "co64" : "stco", version: 0, flags: 0, BoxBytes.u32(UInt32(repeats)) + offsets)
    }
}

/// Big-endian fields and boxes of ISO-BMFF.
enum BoxBytes {
    static func u16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
    static func u32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }
    static func u64(_ value: UInt64) -> [UInt8] { u32(UInt32(value >> 32)) + u32(UInt32(value & 0xFFFF_FFFF)) }

    /// A box: 32-bit size, type, payload.
    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        u32(UInt32(8 + payload.count)) + Array(type.utf8) + payload
    }

    /// A full box: a box whose payload starts with a version byte and 24 bits of flags.
    static func fullBox(_ type: String, version: UInt8, flags: UInt32, _ payload: [UInt8]) -> [UInt8] {
        box(type, [version, UInt8((flags >> 16) & 0xFF), UInt8((flags >> 8) & 0xFF), UInt8(flags & 0xFF)] + payload)
    }
}
