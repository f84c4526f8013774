import Foundation
import Testing
@testable import SharePipe

/// HEIF/HEIC and AVIF end to end, through `SharePipe.prepare` and the CLI: detection by bytes, output format,
/// displayed orientation (irot applied once, the Exif orientation never), metadata per strip mode with
/// exiftool as the witness, colour profile, alpha, byte limits.
@Suite(.tags(.witness), .skipped(whenListed: "witness")) struct HEIFPipelineTests {
    static func prepare(_ file: String, _ configure: (inout PrepareOptions) -> Void = { _ in }) throws -> PreparedImage
    {
        var options = PrepareOptions()
        configure(&options)
        return try SharePipe.prepare(.file(path: Fixtures.path("heif/" + file)), options: options)
    }

    /// exiftool's listing of the given tags in `bytes` (written to a temporary file).
    static func exiftool(_ bytes: [UInt8], _ arguments: [String]) throws -> String {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Fixtures.write(bytes, to: directory + "/out")
        return try Tool.run("exiftool", ["-a", "-G1", "-s"] + arguments + [directory + "/out"]).stdout
    }

    @Test func formatsAreDetectedByTheirBrands() throws {
        #expect(try ImageFormat.detect(.file(path: Fixtures.path("heif/gps-irot.heic"))) == .heif)
        #expect(try ImageFormat.detect(.file(path: Fixtures.path("heif/corners.avif"))) == .avif)
        // An AVIF whose major brand is mif1 names avif among its compatible brands.
        var bytes = try Fixtures.bytes(Fixtures.path("heif/corners.avif"))
        let compatible = String(decoding: bytes[16..<min(32, bytes.count)], as: UTF8.self)
        #expect(compatible.contains("avif") || compatible.contains("mif1"))
        bytes.replaceSubrange(8..<12, with: Array("mif1".utf8))
        if compatible.contains("avif") { #expect(ImageFormat.sniff(Array(bytes.prefix(64))) == .avif) }
        // Not by name: a HEIC renamed .jpg is still a HEIC.
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Fixtures.write(try Fixtures.bytes(Fixtures.path("heif/corners-444.heic")), to: directory + "/photo.jpg")
        #expect(try ImageFormat.detect(.file(path: directory + "/photo.jpg")) == .heif)
    }

    @Test func heicBecomesAJPEGWithIrotAppliedOnceAndNoGPS() throws {
        try Witness.require("exiftool")
        let result = try Self.prepare("gps-irot.heic")
        #expect(result.format == .jpeg && result.inputFormat == .heif)
        #expect(result.size == PixelSize(width: 600, height: 400))
        let bitmap = try Decode.bitmap(result.bytes)
        HEIFDecodeTests.expectCorners(bitmap, tolerance: 16)
        #expect(result.removedMetadata.isSuperset(of: [.exif, .gps, .xmp]))
        let left = try Self.exiftool(result.bytes, ["-GPS:all", "-EXIF:all", "-XMP:all", "-Orientation"])
        #expect(left.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "exiftool still finds:\n\(left)")
        // The witness sees them in the input, so the check can fail.
        let input = try Tool.run(
            "exiftool", ["-s", "-GPSLatitude", "-XMP-photoshop:City", Fixtures.path("heif/gps-irot.heic")]
        ).stdout
        #expect(input.contains("GPSLatitude") && input.contains("Berlin"))
    }

    @Test func stripGPSKeepsCameraExifWithOrientationOne() throws {
        try Witness.require("exiftool")
        let result = try Self.prepare("gps-irot.heic") { $0.strip = .gps }
        let listing = try Self.exiftool(result.bytes, ["-Make", "-GPS:all", "-XMP:all", "-Orientation#"])
        #expect(listing.contains("SharePipeCam"), "\(listing)")
        #expect(!listing.contains("GPS") && !listing.contains("XMP"), "\(listing)")
        // The Exif orientation 6 of the HEIF must not make a viewer turn the JPEG: written as 1.
        #expect(listing.contains("Orientation") && listing.contains(": 1"), "\(listing)")
        HEIFDecodeTests.expectCorners(try Decode.bitmap(result.bytes), tolerance: 16)
    }

    @Test func stripNoneKeepsExifAndXMPWithOrientationReset() throws {
        try Witness.require("exiftool")
        let result = try Self.prepare("gps-irot.heic") { $0.strip = .none }
        let listing = try Self.exiftool(result.bytes, ["-GPSLatitude", "-XMP-photoshop:City", "-Orientation#"])
        #expect(listing.contains("GPSLatitude") && listing.contains("Berlin"), "\(listing)")
        #expect(listing.contains("Orientation") && listing.contains(": 1"), "\(listing)")
    }

    @Test func downscalesToTheShortEdgeCap() throws {
        let result = try Self.prepare("gps-irot.heic") { $0.maxShortEdge = 200 }
        #expect(result.size == PixelSize(width: 300, height: 200))
        HEIFDecodeTests.expectCorners(try Decode.bitmap(result.bytes), tolerance: 20)
        // The pipeline counted libheif's planes.
        #expect(
            result.peakPixelBytes
                >= HEIFDecoding.decodeMemory(
                    size: PixelSize(width: 600, height: 400), bitDepth: 8,
                    hasAlpha: false, monochrome: false))
    }

    @Test func avifWithAlphaBecomesAPNGWithItsAlpha() throws {
        let result = try Self.prepare("alpha.avif")
        #expect(result.format == .png)
        let bitmap = try Decode.bitmap(result.bytes)
        #expect(bitmap.layout.hasAlpha)
        #expect(close(bitmap.rgb(40, 40), [255, 0, 0, 255], tolerance: 12), "\(bitmap.rgb(40, 40))")
        #expect(close(bitmap.rgb(220, 60), [0, 0, 255, 128], tolerance: 12), "\(bitmap.rgb(220, 60))")
        #expect(bitmap.rgb(40, 160)[3] <= 2)
    }

    @Test func opaqueAVIFBecomesAJPEG() throws {
        let result = try Self.prepare("corners.avif")
        #expect(result.format == .jpeg && result.inputFormat == .avif)
        HEIFDecodeTests.expectCorners(try Decode.bitmap(result.bytes), tolerance: 16)
    }

    @Test func nclxColourTravelsAsAnICCProfile() throws {
        let result = try Self.prepare("p3-nclx.heic")
        let info = try Decode.info(result.bytes)
        #expect(info.metadataKinds.contains(.icc))
        #expect(result.keptMetadata.contains(.icc))
        try Witness.require("exiftool")
        let listing = try Self.exiftool(
            result.bytes,
            [
                "-ICC_Profile:ProfileDescription", "-ICC_Profile:ColorSpaceData",
                "-ICC_Profile:ProfileDateTime",
            ])
        #expect(listing.contains("SharePipe nclx 12/13"), "\(listing)")
        // The profile Little CMS builds carries a fixed date, not the clock's: the same input, the same bytes.
        #expect(listing.contains("2022:01:01 00:00:00"), "\(listing)")
    }

    @Test func byteLimitIsMet() throws {
        let result = try Self.prepare("gps-irot.heic") { $0.maxBytes = 2500 }
        #expect(result.byteCount <= 2500)
        #expect(try Decode.bitmap(result.bytes).size == result.size)
    }

    @Test func bombsAndDamageFailNamingTheFile() throws {
        for (name, kind) in [("huge-ispe.heic", "tooLarge"), ("truncated.heic", "corrupt")] {
            let path = Fixtures.path("broken/" + name)
            #expect { try SharePipe.prepare(.file(path: path)) } throws: { error in
                guard let error = error as? SharePipeError else { return false }
                return error.kind == kind && error.description.hasPrefix(path)
            }
        }
    }

    @Test func cliPreparesAndInspectsHEIF() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let run = try Tool.run(Tool.sharepipe, ["prepare", Fixtures.path("heif"), "--out", directory, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let outputs = try FileManager.default.contentsOfDirectory(atPath: directory + "/heif").sorted()
        #expect(
            outputs == [
                "alpha.png", "corners-444.jpg", "corners.jpg", "gps-irot.jpg", "mirror-rotate.jpg",
                "mirror.jpg", "p3-nclx.jpg", "ten-bit.jpg",
            ], "\(outputs)")
        let inspect = try Tool.run(Tool.sharepipe, ["inspect", Fixtures.path("heif/gps-irot.heic")])
        #expect(inspect.stdout.contains("HEIF 600×400"), "\(inspect.stdout)")
        #expect(inspect.stdout.contains("gps"), "\(inspect.stdout)")
    }
}
