import Foundation
import Testing
@testable import SharePipe

/// The JPEG segments the metadata rewrite keeps as structure carry no picture and nothing unparsed: the JFIF
/// APP0 header loses its RGB thumbnail, a JFXX extension thumbnail goes, and an Adobe APP14 keeps only the
/// 12 bytes libjpeg reads — under `all` and `gps`. Under `none` the thumbnails stay on the metadata copy.
@Suite("JPEG structure segments", .tags(.witness), .skipped(whenListed: "witness"))
struct JPEGStructureSegmentsTests {
    static let thumbnailMarker = "SPJFIF-THUMBNAIL-K8"
    static let extensionMarker = "SPJFXX-THUMBNAIL-M2"
    static let adobeMarker = "SPADOBE-TRAILING-R5"

    /// `TestImages/jpeg/orient-1.jpg` with a JFIF header holding a 4×4 thumbnail, a JFXX APP0 and a padded Adobe APP14.
    static func input() throws -> [UInt8] {
        let original = try Fixtures.bytes(Fixtures.path("jpeg/orient-1.jpg"))
        #expect(
            Array(original[2...3]) == [0xFF, 0xE0] && original[4] == 0 && original[5] == 16,
            "fixture starts with a bare JFIF APP0")
        var thumbnail = Array(thumbnailMarker.utf8)
        thumbnail += [UInt8](repeating: 0x80, count: 4 * 4 * 3 - thumbnail.count)
        let jfif = Array("JFIF\0".utf8) + [1, 1, 0, 0, 1, 0, 1, 4, 4] + thumbnail
        let jfxx = Array("JFXX\0".utf8) + [0x10] + Array(extensionMarker.utf8)
        let adobe = Array("Adobe".utf8) + [0, 100, 0, 0, 0, 0, 1] + Array(adobeMarker.utf8)
        func segment(_ code: UInt8, _ payload: [UInt8]) -> [UInt8] {
            [0xFF, code, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
        }
        return [0xFF, 0xD8] + segment(0xE0, jfif) + segment(0xE0, jfxx) + segment(0xEE, adobe) + Array(original[20...])
    }

    @Test(
        "all and gps: the metadata rewrite drops the JFIF and JFXX thumbnails and Adobe's extra bytes, pixels unchanged",
        arguments: [StripMode.all, .gps])
    func thumbnailsGo(mode: StripMode) throws {
        let input = try Self.input()
        for marker in [Self.thumbnailMarker, Self.extensionMarker, Self.adobeMarker] {
            LeakScanner.expectPlanted(marker, in: input)
        }
        let result = try SharePipe.prepare(.bytes(input), options: PrepareOptions(strip: mode))
        #expect(result.method == .metadataRewrite)
        for marker in [Self.thumbnailMarker, Self.extensionMarker, Self.adobeMarker] {
            LeakScanner.expectAbsent(marker, in: result.bytes, "strip \(mode)")
        }
        #expect(result.removedMetadata.contains(.other), "\(result.removedMetadata)")
        // The JFIF header stays, 16 bytes long with a 0×0 thumbnail; the Adobe segment is its 12 bytes.
        #expect(
            Array(result.bytes[2...19]) == [0xFF, 0xE0, 0, 16] + Array("JFIF\0".utf8) + [1, 1, 0, 0, 1, 0, 1, 0, 0])
        let adobe: [UInt8] = [0xFF, 0xEE, 0, 14] + Array("Adobe".utf8) + [0, 100, 0, 0, 0, 0, 1]
        #expect(result.bytes.indices.contains { result.bytes[$0...].starts(with: adobe) })
        #expect(try Decode.bitmap(result.bytes) == Decode.bitmap(input))
        try Witness.require("exiftool")
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Fixtures.write(result.bytes, to: directory + "/out.jpg")
        let listing = try Tool.run(
            "exiftool",
            [
                "-a", "-G1", "-s", "-ThumbnailImage", "-ThumbnailWidth", "-ThumbnailTIFF",
                directory + "/out.jpg",
            ]
        ).stdout
        #expect(listing.isEmpty, "exiftool sees \(listing)")
    }

    @Test("none: the metadata rewrite keeps both thumbnails")
    func noneKeepsThumbnails() throws {
        let result = try SharePipe.prepare(.bytes(try Self.input()), options: PrepareOptions(strip: .none))
        #expect(result.method == .metadataRewrite)
        LeakScanner.expectPresent(Self.thumbnailMarker, in: result.bytes, "strip none")
        LeakScanner.expectPresent(Self.extensionMarker, in: result.bytes, "strip none")
        #expect(!result.removedMetadata.contains(.other), "\(result.removedMetadata)")
    }

    @Test("all: a re-encode writes libjpeg's own JFIF header, without either thumbnail")
    func reencodeHasNoThumbnail() throws {
        var options = PrepareOptions(strip: .all)
        options.maxShortEdge = 100
        let result = try SharePipe.prepare(.bytes(try Self.input()), options: options)
        #expect(result.method == .reencoded)
        for marker in [Self.thumbnailMarker, Self.extensionMarker, Self.adobeMarker] {
            LeakScanner.expectAbsent(marker, in: result.bytes, "re-encode")
        }
    }
}
