import Foundation
@testable import SharePipe

/// Plants metadata SharePipe must not pass on into copies of committed test images: C2PA manifest stores where
/// the C2PA specification puts them, and blocks of unknown kind (a JPEG APPn, PNG or WebP chunk, GIF
/// extension, HEIF box). Each planted payload carries `marker` in several encodings and a GPS coordinate as
/// Exif rationals, so `LeakScanner` can look for every one of them in the output.
enum Plant {
    /// The coordinate every planted payload carries (52°31′12.34″), as a C2PA location assertion would.
    static let coordinate = PlantedCoordinate(degrees: 52, minutes: 31, secondsNumerator: 1234)

    /// A payload holding `marker` as ASCII, UTF-16LE and upper-case hex text, and `coordinate` as big-endian rationals.
    static func payload(_ marker: String) -> [UInt8] {
        let text = Array(marker.utf8)
        return Array("{\"author\":\"".utf8) + text + Array("\"}".utf8) + [0] + text.flatMap { [$0, 0] } + [0, 0]
            + LeakScanner.hex(text, upper: true) + [0] + coordinate.rationals(littleEndian: false)
    }

    /// A C2PA manifest store as JUMBF: a `jumb` superbox whose description box (`jumd`) has the C2PA type and
    /// label "c2pa", then a JSON content box with `content`.
    static func manifestStore(_ content: [UInt8]) -> [UInt8] {
        let label = Array("c2pa\0".utf8)
        let description = box("jumd", ContentCredentials.jumbfStoreUUID + [0x03] + label)
        return box("jumb", description + box("json", content))
    }

    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        be32(8 + payload.count) + Array(type.utf8) + payload
    }

    static func be32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8((value >> (24 - 8 * $0)) & 0xFF) } }
    static func le32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } }

    // MARK: JPEG

    /// `jpeg` with `segments` (marker code, payload) inserted after SOI and a JFIF APP0 if there is one.
    static func jpeg(_ jpeg: [UInt8], segments: [(code: UInt8, payload: [UInt8])]) -> [UInt8] {
        var insertAt = 2
        if jpeg[2] == 0xFF, jpeg[3] == 0xE0 { insertAt = 4 + (Int(jpeg[4]) << 8 | Int(jpeg[5])) }
        let bytes = segments.flatMap { segment -> [UInt8] in
            let length = segment.payload.count + 2
            return [0xFF, segment.code, UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)] + segment.payload
        }
        return Array(jpeg[..<insertAt]) + bytes + Array(jpeg[insertAt...])
    }

    /// The APP11 segments (JPEG XT / ISO 19566-5) that hold a JUMBF `box`: "JP", box instance 1, sequence
    /// numbers from 1; the first segment holds the box from its start, every later one repeats the box header
    /// (LBox, TBox) before its share of the rest.
    static func jpegJUMBFSegments(_ box: [UInt8], maxPayload: Int = 65533) -> [(code: UInt8, payload: [UInt8])] {
        let header = Array(box[0..<8])
        var segments: [(code: UInt8, payload: [UInt8])] = []
        var position = 0, sequence = 1
        while position < box.count {
            let prefix: [UInt8] = [0x4A, 0x50, 0x00, 0x01] + be32(sequence)
            let room = maxPayload - prefix.count - (position == 0 ? 0 : 8)
            let piece = Array(box[position..<min(box.count, position + room)])
            segments.append((0xEB, prefix + (position == 0 ? [] : header) + piece))
            position += piece.count
            sequence += 1
        }
        return segments
    }

    /// `jpeg` with a C2PA manifest store holding `marker` in APP11, and `marker` in an unknown APP15 segment.
    static func jpeg(_ jpeg: [UInt8], c2pa marker: String, unknown unknownMarker: String, manifestPadding: Int = 0)
        -> [UInt8]
    {
        let store = manifestStore(payload(marker) + [UInt8](repeating: 0x20, count: manifestPadding) + payload(marker))
        return Self.jpeg(
            jpeg, segments: jpegJUMBFSegments(store) + [(0xEF, Array("SPUNKNOWN\0".utf8) + payload(unknownMarker))])
    }

    // MARK: PNG

    /// `png` with `chunks` inserted before its first IDAT (for an APNG: before acTL's first frame data too).
    static func png(_ png: [UInt8], chunks: [(type: String, data: [UInt8])]) -> [UInt8] {
        var position = 8
        while position + 8 <= png.count {
            let length =
                Int(png[position]) << 24 | Int(png[position + 1]) << 16 | Int(png[position + 2]) << 8
                | Int(png[position + 3])
            let type = String(decoding: png[position + 4..<position + 8], as: UTF8.self)
            if type == "IDAT" || type == "fcTL" { break }
            position += 12 + length
        }
        let serialized = chunks.flatMap { PNGChunk(type: PNGChunkType(name: $0.type)!, data: $0.data).serialized }
        return Array(png[..<position]) + serialized + Array(png[position...])
    }

    /// `png` with a C2PA `caBX` chunk holding `marker` and an unknown safe-to-copy chunk `prVt` holding `unknownMarker`.
    static func png(_ png: [UInt8], c2pa marker: String, unknown unknownMarker: String) -> [UInt8] {
        Self.png(png, chunks: [("caBX", manifestStore(payload(marker))), ("prVt", payload(unknownMarker))])
    }

    // MARK: WebP

    /// An extended WebP (`webp` has a VP8X chunk) with `chunks` appended and its RIFF size set.
    static func webp(_ webp: [UInt8], chunks: [(fourCC: String, data: [UInt8])]) -> [UInt8] {
        precondition(webp[12..<16].elementsEqual("VP8X".utf8), "plant into an extended WebP")
        let riffEnd = 8 + (Int(webp[4]) | Int(webp[5]) << 8 | Int(webp[6]) << 16 | Int(webp[7]) << 24)
        var body = Array(webp[8..<riffEnd])
        for chunk in chunks {
            body +=
                Array(chunk.fourCC.utf8) + le32(chunk.data.count) + chunk.data + (chunk.data.count & 1 == 1 ? [0] : [])
        }
        return Array("RIFF".utf8) + le32(body.count) + body
    }

    /// `webp` with a `C2PA` chunk holding `marker` and an unknown `PRVT` chunk holding `unknownMarker`.
    static func webp(_ webp: [UInt8], c2pa marker: String, unknown unknownMarker: String) -> [UInt8] {
        Self.webp(webp, chunks: [("C2PA", manifestStore(payload(marker))), ("PRVT", payload(unknownMarker))])
    }

    // MARK: GIF

    /// `gif` with application extensions (11-byte identifier, data in sub-blocks) after its global colour table.
    static func gif(_ gif: [UInt8], applications: [(identifier: [UInt8], data: [UInt8])]) -> [UInt8] {
        let tableBytes = gif[10] & 0x80 != 0 ? 3 << (Int(gif[10] & 7) + 1) : 0
        let insertAt = 13 + tableBytes
        let extensions = applications.flatMap { app -> [UInt8] in
            [0x21, 0xFF, 0x0B] + app.identifier + GIFApplication.chunked(app.data) + [0]
        }
        return Array(gif[..<insertAt]) + extensions + Array(gif[insertAt...])
    }

    /// `gif` with a C2PA application extension ("C2PA_GIF" + 0x01 0x00 0x00) holding `marker` and an unknown one
    /// ("SPPRIVAT1.0") holding `unknownMarker`.
    static func gif(_ gif: [UInt8], c2pa marker: String, unknown unknownMarker: String) -> [UInt8] {
        Self.gif(
            gif,
            applications: [
                (Array("C2PA_GIF".utf8) + [1, 0, 0], manifestStore(payload(marker))),
                (Array("SPPRIVAT1.0".utf8), payload(unknownMarker)),
            ])
    }

    // MARK: HEIF / AVIF

    /// Where a HEIF/AVIF carries its C2PA manifest store.
    enum HEIFPlacement: String, CaseIterable, Sendable {
        /// The top-level `uuid` box with the C2PA extended type (the BMFF embedding).
        case uuidBox
        /// A `mime` item of content type `application/c2pa` that describes the primary image.
        case mimeItem
    }

    /// A copy of a committed HEIF/AVIF with a C2PA manifest store holding `marker` (placed as `placement` says)
    /// and an unknown top-level box `prvt` holding `unknownMarker`, written by scripts/fixtures/heif-boxes.py.
    static func heif(
        _ fixture: String, c2pa marker: String, unknown unknownMarker: String,
        placement: HEIFPlacement = .uuidBox
    ) throws -> [UInt8] {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Fixtures.write(manifestStore(payload(marker)), to: directory + "/c2pa.bin")
        try Fixtures.write(payload(unknownMarker), to: directory + "/prvt.bin")
        let store =
            placement == .uuidBox
            ? ["--top-box", "c2pa:" + directory + "/c2pa.bin"]
            : ["--mime-item", "application/c2pa:" + directory + "/c2pa.bin"]
        let result = try Tool.run(
            "python3",
            [Fixtures.root + "/scripts/fixtures/heif-boxes.py", Fixtures.path(fixture), directory + "/out"]
                + store + ["--top-box", "prvt:" + directory + "/prvt.bin"])
        guard result.status == 0 else { throw PlantingFailed(reason: result.stderr) }
        return try Fixtures.bytes(directory + "/out")
    }

    struct PlantingFailed: Error { var reason: String }
}
