import CSharePipe
import Foundation
import Testing
@testable import SharePipe

/// JPEGs within the caps whose only change is their orientation are turned without decoding
/// (`JPEGTurner`, TurboJPEG's tjTransform with TJXOPT_PERFECT): the pixels must be exactly those of
/// `jpegtran -perfect` with the same operation, the metadata that of the rewriter, orientation 1.
@Suite("Lossless turns", .tags(.witness), .skipped(whenListed: "witness"))
struct LosslessTurnTests {
    /// jpegtran's operation for the turn that displays orientation N upright.
    static let jpegtranArguments: [Orientation: [String]] = [
        .upMirrored: ["-flip", "horizontal"], .down: ["-rotate", "180"], .downMirrored: ["-flip", "vertical"],
        .leftMirrored: ["-transpose"], .right: ["-rotate", "90"], .rightMirrored: ["-transverse"],
        .left: ["-rotate", "270"],
    ]

    /// Full-size decode through the shim (libjpeg, no resampling): bytes of RGB rows.
    static func pixels(_ bytes: [UInt8]) throws -> (size: PixelSize, rgb: [UInt8]) {
        let bitmap = try Decode.bitmap(bytes)
        return (bitmap.size, bitmap.pixels)
    }

    /// The `orient-N.jpg` set: 600×400 displayed, 4:4:4, so every dimension is a whole number of 8×8 MCUs.
    @Test(arguments: Orientation.allCases)
    func turnsEveryOrientationExactlyAsJpegtran(_ orientation: Orientation) throws {
        let path = Fixtures.path("jpeg/orient-\(orientation.rawValue).jpg")
        let result = try SharePipe.prepare(.file(path: path), options: PrepareOptions())
        #expect(result.size == PixelSize(width: 600, height: 400))
        guard orientation != .up else {
            #expect(result.method == .metadataRewrite)
            return
        }
        #expect(result.method == .losslessTurn)
        #expect(result.appliedOrientation == orientation)
        #expect(result.adjustments.isEmpty, "\(result.adjustments)")

        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let reference = directory + "/jpegtran.jpg"
        let run = try Tool.run(
            "jpegtran",
            ["-perfect", "-copy", "none"] + Self.jpegtranArguments[orientation]!
                + ["-outfile", reference, path])
        #expect(run.status == 0, "\(run.stderr)")
        let ours = try Self.pixels(result.bytes), theirs = try Self.pixels(Fixtures.bytes(reference))
        #expect(ours.size == theirs.size)
        #expect(ours.rgb == theirs.rgb, "orientation \(orientation.rawValue): pixels differ from jpegtran's")

        // An outside witness: no orientation other than 1, no Exif left in `all` mode, upright red corner.
        let output = directory + "/out.jpg"
        try Fixtures.write(result.bytes, to: output)
        let tags = try Tool.run("exiftool", ["-s", "-s", "-s", "-n", "-Orientation", "-EXIF:all", output])
        #expect(tags.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(tags.stdout)")
        let bitmap = try Decode.bitmap(result.bytes)
        let topLeft = bitmap.rgb(50, 50)
        #expect(topLeft[0] > 200 && topLeft[1] < 60 && topLeft[2] < 60, "top-left \(topLeft)")
    }

    @Test func keepsGPSModeExifWithOrientationOne() throws {
        var options = PrepareOptions()
        options.strip = .gps
        let result = try SharePipe.prepare(.file(path: Fixtures.path("jpeg/gps-orient6.jpg")), options: options)
        #expect(result.method == .losslessTurn)
        #expect(result.size == PixelSize(width: 640, height: 480))
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let output = directory + "/out.jpg"
        try Fixtures.write(result.bytes, to: output)
        let tags = try Tool.run("exiftool", ["-s", "-s", "-s", "-n", "-Orientation", "-Make", "-GPS:all", output])
        #expect(tags.stdout.split(separator: "\n") == ["1", "SharePipeCam"], "\(tags.stdout)")
    }

    /// 203×157 at 4:2:0 is not a whole number of 16×16 MCUs: the turn would move partial blocks, so the
    /// image is re-encoded and the report says why.
    @Test func nonAlignedImageFallsBackToReencodingAndSaysSo() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let input = directory + "/odd.jpg"
        try Fixtures.write(Fixtures.bytes(Fixtures.path("progressive/sa-2x2-203x157.jpg")), to: input)
        let tagged = try Tool.run("exiftool", ["-q", "-overwrite_original", "-n", "-Orientation=6", input])
        #expect(tagged.status == 0, "\(tagged.stderr)")
        let result = try SharePipe.prepare(.file(path: input), options: PrepareOptions())
        #expect(result.method == .reencoded)
        #expect(result.size == PixelSize(width: 157, height: 203))
        #expect(
            result.adjustments.contains {
                $0.hasPrefix("orientation applied by re-encoding (203×157 is not a whole number of MCUs")
            },
            "\(result.adjustments)")
    }

    @Test func turnOverTheByteLimitFallsBackToTheQualitySearch() throws {
        var options = PrepareOptions()
        options.maxBytes = 4000
        let result = try SharePipe.prepare(.file(path: Fixtures.path("jpeg/gps-orient6.jpg")), options: options)
        #expect(result.method == .reencoded)
        #expect(result.bytes.count <= 4000)
        #expect(result.adjustments.contains { $0.contains("is over the byte limit") }, "\(result.adjustments)")
    }

    @Test func theShimRefusesAnImperfectTurnAndNamesIt() throws {
        let jpeg = try Fixtures.bytes(Fixtures.path("progressive/sa-2x2-203x157.jpg"))
        var message = shimMessageBuffer()
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = sp_jpeg_turn_losslessly(jpeg, jpeg.count, SP_JPEG_TURN_ROTATE_90, 1, &out, &length, &message)
        defer { sp_free(out) }
        #expect(status == SP_ERR_ARGUMENT)
        #expect(shimText(message).contains("not perfect"))
        #expect(out == nil && length == 0)
    }
}
