import CSharePipe

/// The chroma format a HEIF/AVIF is coded in, read from its decoder configuration boxes (`hvcC`, `av1C`)
/// in `meta/iprp/ipco`.
///
/// libheif 1.15 has no call that says how a primary image is coded, and asked for YCbCr with an undefined
/// chroma it upsamples 4:2:0 to 4:4:4 — twice the chroma memory, for nothing. So the shim asks for the coded
/// format explicitly. Every configuration box of the file is looked at (the primary image's, a grid's
/// tiles', a thumbnail's, the alpha item's, which is monochrome and set aside); when the colour ones do not
/// all agree the answer is 4:4:4, which loses nothing.
enum HEIFChroma {
    /// libheif's heif_chroma values for planar images.
    static let monochrome: Int32 = 0, yuv420: Int32 = 1, yuv422: Int32 = 2, yuv444: Int32 = 3

    /// heif_chroma for the file's coded chroma: 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4.
    static func coded(_ source: ImageSource, maxMetaBytes: Int) throws -> Int32 {
        let reader = try ByteReader(source)
        var found = Set<Int32>()
        // Top level: find meta (skipping ftyp and anything before it; mdat normally follows meta).
        while let header = try boxHeader(reader) {
            guard header.type == "meta" else {
                guard let body = header.bodySize else { break }
                try reader.skip(body)
                continue
            }
            guard let metaBody = header.bodySize, metaBody >= 4, metaBody <= maxMetaBytes else { break }
            try reader.skip(4)  // version and flags
            try walk(reader, length: metaBody - 4, path: ["meta"], found: &found)
            break
        }
        // Alpha (and depth) items are coded monochrome: they say nothing about the colour image's chroma.
        let colour = found.subtracting([monochrome])
        if colour.count == 1, let only = colour.first { return only }
        return found == [monochrome] ? monochrome : yuv444
    }

    private static func walk(_ reader: ByteReader, length: Int, path: [String], found: inout Set<Int32>) throws {
        var left = length
        while left >= 8 {
            guard let header = try boxHeader(reader), let body = header.bodySize,
                body + header.headerSize <= left
            else { return }
            left -= body + header.headerSize
            switch (path.last ?? "", header.type) {
            case ("meta", "iprp"), ("iprp", "ipco"):
                try walk(reader, length: body, path: path + [header.type], found: &found)
            case ("ipco", "hvcC") where body >= 17:
                let config = try reader.bytes(17)
                found.insert(Int32(config[16] & 3))  // chroma_format_idc: the same numbering
                try reader.skip(body - 17)
            case ("ipco", "av1C") where body >= 3:
                let config = try reader.bytes(3)
                let monochrome = config[2] & 0x10 != 0, x = config[2] & 0x08 != 0, y = config[2] & 0x04 != 0
                found.insert(monochrome ? Self.monochrome : x && y ? yuv420 : x ? yuv422 : yuv444)
                try reader.skip(body - 3)
            default:
                try reader.skip(body)
            }
        }
    }

    private struct BoxHeader {
        var type: String
        var headerSize: Int
        /// nil for a box that runs to the end of the file (size 0).
        var bodySize: Int?
    }

    private static func boxHeader(_ reader: ByteReader) throws -> BoxHeader? {
        guard let first = try reader.next() else { return nil }
        let rest = try reader.bytes(7)
        let size32 = Int(first) << 24 | Int(rest[0]) << 16 | Int(rest[1]) << 8 | Int(rest[2])
        let type = String(decoding: rest[3..<7], as: UTF8.self)
        switch size32 {
        case 0: return BoxHeader(type: type, headerSize: 8, bodySize: nil)
        case 1:
            let large = try reader.bytes(8).reduce(0) { $0 << 8 | Int($1) }
            guard large >= 16 else { return nil }
            return BoxHeader(type: type, headerSize: 16, bodySize: large - 16)
        default:
            guard size32 >= 8 else { return nil }
            return BoxHeader(type: type, headerSize: 8, bodySize: size32 - 8)
        }
    }
}
