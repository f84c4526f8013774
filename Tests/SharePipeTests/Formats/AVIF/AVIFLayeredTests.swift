import Foundation
import Testing
@testable import SharePipe

/// Layered AVIF: one `av01` item holding two AV1 spatial layers in one temporal unit, a blue
/// base layer key frame coded at half size (32×24) and an enhancement layer of quadrants (64×48), an inter frame
/// predicted from it, made
/// by scripts/fixtures/make-layered-avif.py (libaom through ctypes, the box writer beside it) from PPMs drawn by
/// ImageMagick, once per run. The variants differ only in their properties (`a1lx`, `lsel`, `a1op`), so the
/// same coded data shows blue or quadrants by which layer is selected.
///
/// What the witnesses show (Chromium 156 through browser_frames.py, libavif 0.11.1's avifdec):
/// - progressive (`a1lx`, no `lsel` or `lsel` 0xFFFF) and plain (neither): both show the quadrants, 64×48;
/// - `lsel` 0, or `a1op` 1 (the operating point of the base layer alone), with `ispe` 32×24: both show blue,
///   32×24;
/// - `lsel` 1: libavif shows the quadrants; Chromium 156 draws nothing (a transparent 64×48 canvas), as it
///   draws nothing for the AV1-AVIF conformance files whose `lsel` picks layer 1 (Apple's
///   animals_00_multilayer_lsel, _a1op_lsel, _grid_lsel). SharePipe prepares the layer the file selects;
/// - `lsel` 2 of two layers in `a1lx`: both refuse it (Chromium does not load it).
@Suite(.tags(.witness), .skipped(whenListed: "witness"), .serialized) struct AVIFLayeredTests {
    /// The folder of generated layered AVIFs (made once per test process).
    static let fixtures: String = {
        let directory = NSTemporaryDirectory() + "sharepipe-avif-layered-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func run(_ tool: String, _ arguments: [String]) {
            let output = try? Tool.run(tool, arguments)
            if output?.status != 0 { print("fixture: \(tool) \(arguments) failed: \(output?.stderr ?? "not run")") }
        }
        let blue = directory + "/blue.ppm"
        let quadrants = directory + "/quadrants.ppm"
        run(Witness.convert, ["-size", "64x48", "xc:blue", "-depth", "8", "PPM:" + blue])
        // Red top left, green top right, blue bottom left, white bottom right.
        run(
            Witness.convert,
            [
                "-size", "64x48", "xc:red", "-fill", "lime", "-draw", "rectangle 32,0 63,23",
                "-fill", "blue", "-draw", "rectangle 0,24 31,47", "-fill", "white", "-draw", "rectangle 32,24 63,47",
                "-depth", "8", "PPM:" + quadrants,
            ])
        let script = Fixtures.root + "/scripts/fixtures/make-layered-avif.py"
        for (name, options) in variants {
            run("python3", [script, directory + "/" + name, blue, quadrants, "--half-base"] + options)
        }
        return directory
    }()

    /// The file name and the script's options of each variant.
    static let variants: [(String, [String])] = [
        ("progressive.avif", ["--lsel", "none"]),
        ("progressive-ffff.avif", ["--lsel", "0xFFFF"]),
        ("plain.avif", ["--lsel", "none", "--no-a1lx"]),
        ("base-lsel.avif", ["--lsel", "0"]),
        ("base-a1op.avif", ["--lsel", "none", "--no-a1lx", "--a1op", "1"]),
        ("enhancement-lsel.avif", ["--lsel", "1"]),
        ("missing-layer.avif", ["--lsel", "2"]),
    ]

    static func bytes(_ name: String) throws -> [UInt8] {
        try Witness.require(Witness.convert, "python3")
        let bytes = try Fixtures.bytes(fixtures + "/" + name)
        try #require(
            !bytes.isEmpty,
            "\(name) was not made (libaom3 through python3's ctypes: scripts/fixtures/make-layered-avif.py)")
        return bytes
    }

    /// The item's coded data: the `mdat` payload (the script stores only the item there).
    static func codedData(_ bytes: [UInt8]) throws -> [UInt8] {
        let mdat = try #require(AVIFTests.box("mdat", in: bytes))
        return Array(bytes[(mdat + 8)...])
    }

    /// The box of `type` in `bytes`, whole (nil when absent).
    static func property(_ type: String, in bytes: [UInt8]) -> [UInt8]? {
        guard let at = AVIFTests.box(type, in: bytes) else { return nil }
        let size = bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
        return Array(bytes[at..<at + size])
    }

    static let quadrantColours: [(Int, Int, [Int])] = [
        (10, 10, [255, 0, 0]), (50, 10, [0, 255, 0]), (10, 40, [0, 0, 255]), (50, 40, [255, 255, 255]),
    ]

    /// The prepared image of `name` (default options: a PNG or JPEG at the input's size), decoded.
    static func prepared(_ name: String) throws -> Bitmap {
        try Decode.bitmap(try SharePipe.prepare(.bytes(try bytes(name)), options: PrepareOptions()).bytes)
    }

    @Test func theFixturesAreOneCodedStreamOfTwoLayers() throws {
        // Every variant holds the same AV1 data; only the properties differ.
        let coded = try Self.codedData(try Self.bytes("plain.avif"))
        for (name, _) in Self.variants {
            #expect(try Self.codedData(try Self.bytes(name)) == coded, "\(name)")
        }
        // Two frames: the base layer's key frame (no OBU extension: spatial id 0) and an inter frame with spatial
        // id 1 (an OBU header with the extension flag, its extension byte's spatial_id bits 01). A frame header
        // starts with show_existing_frame (0 here) and frame_type (0 key, 1 inter).
        var position = 0
        var frames: [(spatialID: Int, frameType: Int)] = []
        while position < coded.count {
            let header = coded[position]
            let type = Int(header >> 3) & 15
            let hasExtension = header & 4 != 0
            let spatialID = hasExtension ? Int(coded[position + 1] >> 3) & 3 : 0
            var size = 0
            var shift = 0
            var at = position + 1 + (hasExtension ? 1 : 0)
            while true {
                let byte = coded[at]
                at += 1
                size |= Int(byte & 0x7F) << shift
                shift += 7
                if byte & 0x80 == 0 { break }
            }
            if type == 6 { frames.append((spatialID, Int(coded[at] >> 5) & 3)) }  // OBU_FRAME
            position = at + size
        }
        #expect(frames.map(\.spatialID) == [0, 1] && frames.map(\.frameType) == [0, 1], "\(frames)")
        // The a1lx of the progressive file gives the base layer's size; the last layer is the rest.
        let a1lx = try #require(Self.property("a1lx", in: try Self.bytes("progressive.avif")))
        let baseSize = Int(a1lx[9]) << 8 | Int(a1lx[10])
        #expect(baseSize > 0 && baseSize < coded.count)
        #expect(Self.property("a1lx", in: try Self.bytes("plain.avif")) == nil)
    }

    @Test func aProgressiveOrPlainLayeredImageShowsItsLastLayerAsChromiumDoes() throws {
        for name in ["progressive.avif", "progressive-ffff.avif", "plain.avif"] {
            let info = try SharePipe.inspect(.bytes(try Self.bytes(name)))
            #expect(info.size == PixelSize(width: 64, height: 48) && info.frameCount == 1, "\(name)")
            let decoded = try Self.prepared(name)
            #expect(decoded.size == PixelSize(width: 64, height: 48), "\(name)")
            for (x, y, colour) in Self.quadrantColours {
                #expect(
                    AVIFTests.close(Array(decoded.rgb(x, y).prefix(3)), colour, tolerance: 8),
                    "\(name) (\(x),\(y)) \(decoded.rgb(x, y))")
            }
        }
    }

    @Test func theBaseLayerSelectedByLselOrA1opIsShownAtItsOwnSize() throws {
        for name in ["base-lsel.avif", "base-a1op.avif"] {
            let result = try SharePipe.prepare(.bytes(try Self.bytes(name)), options: PrepareOptions())
            #expect(result.size == PixelSize(width: 32, height: 24), "\(name)")
            let decoded = try Decode.bitmap(result.bytes)
            for (x, y) in [(2, 2), (29, 2), (2, 21), (29, 21), (16, 12)] {
                #expect(
                    AVIFTests.close(Array(decoded.rgb(x, y).prefix(3)), [0, 0, 253], tolerance: 8),
                    "\(name) (\(x),\(y)) \(decoded.rgb(x, y))")
            }
        }
    }

    @Test func anLselOfTheEnhancementLayerShowsThatLayer() throws {
        // libavif 0.11.1 decodes both layers and returns layer 1; Chromium 156 draws nothing for it (see the
        // suite's note): the selected layer is prepared.
        let decoded = try Self.prepared("enhancement-lsel.avif")
        #expect(decoded.size == PixelSize(width: 64, height: 48))
        for (x, y, colour) in Self.quadrantColours {
            #expect(
                AVIFTests.close(Array(decoded.rgb(x, y).prefix(3)), colour, tolerance: 8),
                "(\(x),\(y)) \(decoded.rgb(x, y))")
        }
    }

    @Test func anLselOfALayerTheFileDoesNotHoldIsRefusedNamingTheFile() throws {
        _ = try Self.bytes("missing-layer.avif")
        let path = Self.fixtures + "/missing-layer.avif"
        // libavif: "BMFF parsing failed: lsel property requests layer index [2] which isn't present in a1lx
        // property ([2] layers)" — the file contradicts itself, so it is damage, not a missing feature.
        #expect {
            _ = try SharePipe.prepare(.file(path: path), options: PrepareOptions())
        } throws: { error in
            guard case SharePipeError.corrupt(let file, _, let reason)? = error as? SharePipeError else { return false }
            return file == path && reason.contains("lsel") && !reason.hasSuffix("\n")
        }
    }
}
