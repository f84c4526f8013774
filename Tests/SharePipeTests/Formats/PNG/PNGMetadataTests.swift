import Foundation
import Testing
@testable import SharePipe

@Suite("PNG metadata", .tags(.witness), .skipped(whenListed: "witness"))
struct PNGMetadataTests {
    private static let metadataChunkTypes: Set<String> = ["eXIf", "tEXt", "zTXt", "iTXt", "tIME"]

    private func prepare(_ name: String, strip: StripMode, maxShortEdge: Int = 1080) throws -> PreparedImage {
        try Pipeline.prepare(
            PNGFixtures.source(name), options: PrepareOptions(maxShortEdge: maxShortEdge, strip: strip))
    }

    @Test("strip all: Exif, text and tIME go; the orientation is applied to the pixels; pHYs follows the turn")
    func stripAllAppliesOrientation() throws {
        let result = try prepare("gps-orient6.png", strip: .all)
        #expect(result.format == .png)
        #expect(result.method == .reencoded)
        #expect(result.appliedOrientation == .right)
        #expect(result.size == PixelSize(width: 64, height: 48))
        #expect(result.removedMetadata == [.exif, .gps, .text, .time])
        #expect(result.keptMetadata.isEmpty)

        let listing = try PNGListing(result.bytes)
        #expect(listing.allCRCsMatch)
        #expect(Set(listing.types).isDisjoint(with: Self.metadataChunkTypes), "\(listing.types)")
        // pHYs is structure: kept, and its x/y densities swap with the quarter turn (2835 × 5670 → 5670 × 2835).
        #expect(listing.data("pHYs") == [0, 0, 0x16, 0x26, 0, 0, 0x0B, 0x13, 1])

        let bitmap = try Decode.bitmap(result.bytes)
        #expect(close(bitmap.rgb(8, 8), [255, 0, 0], tolerance: 2))  // red top-left, as displayed
        #expect(close(bitmap.rgb(56, 8), [0, 255, 0], tolerance: 2))  // green top-right
        #expect(close(bitmap.rgb(56, 40), [0, 0, 255], tolerance: 2))  // blue bottom-right
        #expect(close(bitmap.rgb(8, 40), [128, 128, 128], tolerance: 2))  // grey bottom-left
    }

    @Test("strip gps: Exif stays without GPS (orientation 1); XMP and raw-profile text go; plain text stays")
    func stripGPS() throws {
        let result = try prepare("gps-orient6.png", strip: .gps)
        let listing = try PNGListing(result.bytes)
        #expect(listing.allCRCsMatch)
        let exifData = try #require(listing.data("eXIf"))
        let exif = try ExifEditor(tiff: exifData)
        #expect(!exif.hasGPS)
        #expect(exif.orientation == 1)
        #expect(exif.string(ExifEditor.Tag.make) == "SharePipeCam")
        #expect(listing.textKeywords.sorted() == ["Comment", "Title"])
        #expect(!listing.types.contains("tIME"), "tIME is unsafe-to-copy: it goes when the pixels are re-encoded")
        #expect(result.removedMetadata == [.gps, .time])
        #expect(result.keptMetadata == [.exif, .text])

        try Witness.require("exiftool")

        do {
            let path = Fixtures.temporaryDirectory() + "/gps.png"
            defer { Fixtures.cleanUp(FileIO.parentDirectory(of: path)) }
            try Fixtures.write(result.bytes, to: path)
            let witness = try Tool.run(
                "exiftool",
                ["-n", "-s", "-a", "-G1", "-GPS:all", "-XMP:all", "-IPTC:all", "-Orientation", "-Make", path])
            #expect(!witness.stdout.contains("GPS"), "\(witness.stdout)")
            #expect(!witness.stdout.contains("XMP"), "\(witness.stdout)")
            #expect(!witness.stdout.contains("IPTC"), "\(witness.stdout)")
            #expect(witness.stdout.contains("Orientation                     : 1"), "\(witness.stdout)")
            #expect(witness.stdout.contains("SharePipeCam"), "\(witness.stdout)")
        }
    }

    @Test("strip none: everything but tIME is kept, orientation reset to 1 in Exif")
    func stripNone() throws {
        let result = try prepare("gps-orient6.png", strip: .none)
        let listing = try PNGListing(result.bytes)
        let exif = try ExifEditor(tiff: try #require(listing.data("eXIf")))
        #expect(exif.hasGPS)
        #expect(exif.orientation == 1)
        #expect(listing.textKeywords.sorted() == ["Comment", "Raw profile type iptc", "Title", "XML:com.adobe.xmp"])
        #expect(result.size == PixelSize(width: 64, height: 48))
        #expect(result.removedMetadata == [.time], "only tIME, which must not outlive re-encoded pixels")
    }

    @Test("the ICC profile is kept in every mode: re-compressed into iCCP, identical once inflated")
    func iccProfileSurvives() throws {
        let source = PNGFixtures.source("icc-p3.png")
        let original = try PNGDecoder().probe(source, limits: ImageLimits()).metadata.first
        for strip in StripMode.allCases {
            let result = try prepare("icc-p3.png", strip: strip, maxShortEdge: 40)
            #expect(result.method == .reencoded)
            let listing = try PNGListing(result.bytes)
            #expect(listing.types.contains("iCCP"))
            #expect(listing.data("pHYs") == [0, 0, 0x0B, 0x13, 0, 0, 0x16, 0x26, 1])
            #expect(listing.types.contains("tEXt") == (strip != .all))
            #expect(try Decode.info(result.bytes).metadata.first == original, "\(strip)")
            #expect(listing.colorType == 2 || listing.colorType == 3, "an RGB profile keeps the image in colour")
        }
    }

    @Test("colour chunks (sRGB, gAMA, cHRM) and pHYs are structure: carried unchanged into a re-encode")
    func colourChunksSurvive() throws {
        let source = try PNGListing(PNGFixtures.bytes("colour-chunks.png"))
        let result = try prepare("colour-chunks.png", strip: .all, maxShortEdge: 30)
        #expect(result.size == PixelSize(width: 40, height: 30))
        let listing = try PNGListing(result.bytes)
        for type in ["sRGB", "gAMA", "cHRM", "pHYs"] {
            #expect(listing.data(type) == source.data(type), "\(type)")
        }
        #expect(!listing.types.contains("tEXt"))
        let idat = try #require(listing.types.firstIndex(of: "IDAT"))
        #expect(listing.types.prefix(idat).contains("sRGB"))
    }

    @Test("a palette PNG that needs no resize is rewritten: palette, tRNS and image data byte for byte")
    func paletteRewrite() throws {
        let original = try PNGListing(PNGFixtures.bytes("palette-meta.png"))
        let result = try prepare("palette-meta.png", strip: .all)
        #expect(result.method == .metadataRewrite)
        #expect(result.removedMetadata == [.exif, .gps, .text, .time])
        let listing = try PNGListing(result.bytes)
        #expect(listing.types == ["IHDR", "PLTE", "tRNS", "IDAT", "IEND"])
        #expect(listing.allCRCsMatch)
        for type in ["IHDR", "PLTE", "tRNS", "IDAT"] {
            #expect(listing.data(type) == original.data(type), "\(type)")
        }

        let gps = try PNGListing(try prepare("palette-meta.png", strip: .gps).bytes)
        #expect(gps.allCRCsMatch, "the edited eXIf gets a fresh CRC")
        let exif = try ExifEditor(tiff: try #require(gps.data("eXIf")))
        #expect(!exif.hasGPS)
        #expect(gps.textKeywords == ["Title"], "the raw IPTC profile in zTXt goes in gps mode")
        #expect(gps.data("IDAT") == original.data("IDAT"))
        let idat = try #require(gps.types.firstIndex(of: "IDAT"))
        #expect(gps.types.prefix(idat).contains("eXIf"), "eXIf must precede the image data")
    }

    @Test(
        "metadata-only rewrites keep every colour type's pixels",
        arguments: ["palette-2-trns.png", "gray-16.png", "detail-rgb-16-interlaced.png"])
    func rewriteKeepsPixels(_ name: String) throws {
        let result = try prepare(name, strip: .all)
        #expect(result.method == .metadataRewrite)
        #expect(result.bytes == (try PNGFixtures.bytes(name)), "a file without metadata is copied unchanged")
    }

    @Test("a PNG prepared as JPEG reports text chunks as removed")
    func jpegOutcome() throws {
        let outcome = MetadataOutcome(
            kept: [
                .exif([0x4D, 0x4D, 0, 0x2A, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0]),
                .pngText(type: "tEXt", data: Array("Title\0x".utf8)),
                .other(tag: "tIME", data: [0, 0, 0, 0, 0, 0, 0]),
            ],
            removed: [.xmp])
        let jpeg = outcome.writtenAsJPEG(present: [.exif, .text, .other, .xmp])
        #expect(jpeg.kept.count == 1)
        #expect(jpeg.removed == [.text, .other, .xmp])
    }
}
