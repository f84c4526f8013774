import Foundation
import Testing
@testable import SharePipe

/// Privacy is an allow-list: under `all` and `gps` nothing SharePipe cannot parse survives (an unknown JPEG
/// APPn, PNG or WebP chunk, GIF extension, HEIF box) and content credentials (C2PA) go too, on every route a
/// format has (metadata rewrite, lossless turn, re-encode, format change, animation), reported by kind. Under
/// `none` content credentials stay on the metadata-only copy and are removed, and said to be, wherever the
/// image data changes. Every planted marker is first shown visible to `LeakScanner` in the input.
@Suite("Privacy allow-list", .tags(.witness), .skipped(whenListed: "witness"))
struct PrivacyAllowListTests {
    static let c2paMarker = "SPC2PA-AUTHOR-Q7"
    static let unknownMarker = "SPUNKNOWN-SEGMENT-Z3"

    /// One route of one format: how to make the input take it, and what the result must show.
    struct Route: CustomStringConvertible {
        var name: String
        var configure: @Sendable (inout PrepareOptions) -> Void = { _ in }
        var method: PreparationMethod?
        var format: ImageFormat?
        var description: String { name }
    }

    static let modes: [StripMode] = [.all, .gps]

    /// Prepares `input` on `route` under `mode` and checks that neither marker nor the planted coordinate
    /// survives and that the report names content credentials and unknown metadata as removed.
    func expectNothingUnparsedSurvives(
        _ input: [UInt8], route: Route, mode: StripMode, unknownKind: MetadataKind = .other,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        LeakScanner.expectPlanted(Self.c2paMarker, in: input, sourceLocation: sourceLocation)
        LeakScanner.expectPlanted(Self.unknownMarker, in: input, sourceLocation: sourceLocation)
        LeakScanner.expectPlanted(Plant.coordinate, in: input, sourceLocation: sourceLocation)
        var options = PrepareOptions(strip: mode)
        route.configure(&options)
        let result = try SharePipe.prepare(.bytes(input), options: options)
        let context = "(\(route), strip \(mode))"
        if let method = route.method { #expect(result.method == method, "\(context)", sourceLocation: sourceLocation) }
        if let format = route.format { #expect(result.format == format, "\(context)", sourceLocation: sourceLocation) }
        LeakScanner.expectAbsent(Self.c2paMarker, in: result.bytes, context, sourceLocation: sourceLocation)
        LeakScanner.expectAbsent(Self.unknownMarker, in: result.bytes, context, sourceLocation: sourceLocation)
        LeakScanner.expectAbsent(Plant.coordinate, in: result.bytes, context, sourceLocation: sourceLocation)
        #expect(
            result.removedMetadata.isSuperset(of: [.contentCredentials, unknownKind]),
            "\(context): \(result.removedMetadata)",
            sourceLocation: sourceLocation)
        #expect(
            !result.adjustments.contains { $0.hasPrefix("content credentials") }, "\(context)",
            sourceLocation: sourceLocation)
        _ = try Decode.bitmap(result.bytes)
        // The outside witness: exiftool finds no GPS, JUMBF or C2PA in the output.
        if Tool.available("exiftool") {
            let listing = try exiftool(result.bytes, ["-a", "-G1", "-s", "-GPS:all", "-JUMBF:all", "-C2PA:all"])
            #expect(listing.isEmpty, "\(context): exiftool sees \(listing)", sourceLocation: sourceLocation)
        }
    }

    /// Under `none`: content credentials kept on the metadata-only copy, removed with a note wherever the
    /// image data changes.
    func expectContentCredentialsUnderNone(
        _ input: [UInt8], route: Route, keptOnCopy: Bool,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        LeakScanner.expectPlanted(Self.c2paMarker, in: input, sourceLocation: sourceLocation)
        var options = PrepareOptions(strip: .none)
        route.configure(&options)
        let result = try SharePipe.prepare(.bytes(input), options: options)
        let context = "(\(route), strip none)"
        if let method = route.method { #expect(result.method == method, "\(context)", sourceLocation: sourceLocation) }
        let note = result.adjustments.contains { $0.hasPrefix("content credentials removed") }
        if keptOnCopy {
            LeakScanner.expectPresent(Self.c2paMarker, in: result.bytes, context, sourceLocation: sourceLocation)
            #expect(
                !result.removedMetadata.contains(.contentCredentials)
                    && result.keptMetadata.contains(.contentCredentials),
                "\(context)", sourceLocation: sourceLocation)
            #expect(!note, "\(context): \(result.adjustments)", sourceLocation: sourceLocation)
        } else {
            LeakScanner.expectAbsent(Self.c2paMarker, in: result.bytes, context, sourceLocation: sourceLocation)
            #expect(result.removedMetadata.contains(.contentCredentials), "\(context)", sourceLocation: sourceLocation)
            #expect(note, "\(context): \(result.adjustments)", sourceLocation: sourceLocation)
        }
    }

    // MARK: Every written format

    /// A written format's still with a C2PA store and an unknown segment planted: what its metadata rewrite,
    /// re-encode and format change must drop. The formats SharePipe writes (a metadata rewriter in their
    /// descriptor) are exactly these (`everyWrittenFormatIsPlanted`); the input-only ones are below.
    struct PlantedFormat: CustomStringConvertible, Sendable {
        var format: ImageFormat
        /// What the planted markers sit in: "APP11 C2PA and an unknown APP15".
        var what: String
        var fixture: String
        var plant: @Sendable (_ image: [UInt8], _ c2pa: String, _ unknown: String) -> [UInt8]
        /// A short edge small enough to re-encode the fixture.
        var reencodeShortEdge: Int
        /// The other format a format change writes.
        var changedTo: ImageFormat
        var description: String { "\(format.displayName): \(what)" }

        func input() throws -> [UInt8] {
            plant(
                try Fixtures.bytes(Fixtures.path(fixture)), PrivacyAllowListTests.c2paMarker,
                PrivacyAllowListTests.unknownMarker)
        }

        var routes: [Route] {
            [
                Route(name: "metadata rewrite", method: .metadataRewrite, format: format),
                Route(
                    name: "re-encode", configure: { [reencodeShortEdge] in $0.maxShortEdge = reencodeShortEdge },
                    method: .reencoded,
                    format: format),
                Route(
                    name: "format change", configure: { [changedTo] in $0.acceptedFormats = [changedTo] },
                    method: .reencoded,
                    format: changedTo),
            ]
        }
    }

    static let planted: [PlantedFormat] = [
        PlantedFormat(
            format: .jpeg, what: "APP11 C2PA and an unknown APP15", fixture: "jpeg/orient-1.jpg",
            plant: { Plant.jpeg($0, c2pa: $1, unknown: $2) }, reencodeShortEdge: 200, changedTo: .png),
        PlantedFormat(
            format: .png, what: "caBX and an unknown safe-to-copy chunk", fixture: "png/rgb-8.png",
            plant: { Plant.png($0, c2pa: $1, unknown: $2) }, reencodeShortEdge: 30, changedTo: .jpeg),
        PlantedFormat(
            format: .gif, what: "the C2PA_GIF extension and an unknown application extension",
            fixture: "gif/single-frame.gif",
            plant: { Plant.gif($0, c2pa: $1, unknown: $2) }, reencodeShortEdge: 100, changedTo: .png),
        PlantedFormat(
            format: .webp, what: "the C2PA chunk and an unknown chunk", fixture: "webp/icc.webp",
            plant: { Plant.webp($0, c2pa: $1, unknown: $2) }, reencodeShortEdge: 100, changedTo: .jpeg),
    ]

    @Test(
        "Every written format: the planted C2PA store and unknown segment go under all and gps on every route",
        arguments: planted, modes)
    func onEveryRoute(format: PlantedFormat, mode: StripMode) throws {
        let input = try format.input()
        for route in format.routes {
            try expectNothingUnparsedSurvives(input, route: route, mode: mode)
        }
    }

    @Test(
        "Every written format under none: C2PA kept by the metadata rewrite, removed (and said) by the re-encode",
        arguments: planted)
    func contentCredentialsUnderNone(format: PlantedFormat) throws {
        let input = try format.input()
        try expectContentCredentialsUnderNone(input, route: format.routes[0], keptOnCopy: true)
        try expectContentCredentialsUnderNone(input, route: format.routes[1], keptOnCopy: false)
    }

    @Test("Every format SharePipe writes has a planted input above; every input-only one a HEIF-family case below")
    func everyWrittenFormatIsPlanted() {
        let written = FormatRegistry.all.filter { $0.metadataRewriter != nil }.map(\.format)
        #expect(Set(Self.planted.map(\.format)) == Set(written))
        #expect(
            Set(Self.heifFamilyFixtures.compactMap { ImageFormat.sniff(try! Fixtures.bytes(Fixtures.path($0))) })
                == Set(FormatRegistry.all.filter { $0.writtenAs != nil && Self.keepsMetadata($0) }.map(\.format)))
    }

    /// Whether a format keeps any metadata under gps (one without metadata has nothing to plant).
    static func keepsMetadata(_ descriptor: FormatDescriptor) -> Bool {
        (descriptor.metadataPolicy as? StandardMetadataPolicy).map { !$0.table.keeps(.gps).isEmpty } ?? true
    }

    // MARK: JPEG

    @Test(
        "JPEG: the lossless turn drops APP11 C2PA and the unknown APP15; gps keeps the camera Exif without GPS",
        arguments: modes)
    func jpegLosslessTurn(mode: StripMode) throws {
        let input = Plant.jpeg(
            try Fixtures.bytes(Fixtures.path("jpeg/gps-orient6.jpg")), c2pa: Self.c2paMarker,
            unknown: Self.unknownMarker)
        try expectNothingUnparsedSurvives(
            input, route: Route(name: "lossless turn", method: .losslessTurn, format: .jpeg), mode: mode)
        guard mode == .gps else { return }
        try Witness.require("exiftool")
        let result = try SharePipe.prepare(.bytes(input), options: PrepareOptions(strip: .gps))
        let witness = try exiftool(result.bytes, ["-a", "-G1", "-s", "-GPS:all", "-Make", "-JUMBF:all", "-APP11:all"])
        #expect(!witness.contains("GPS") && !witness.contains("JUMBF"), "\(witness)")
        #expect(witness.contains("SharePipeCam"), "\(witness)")
    }

    @Test(
        "JPEG: a C2PA store over several APP11 segments is recognised in every one (continuations have no description box)"
    )
    func jpegMultiSegmentManifest() throws {
        let input = Plant.jpeg(
            try Fixtures.bytes(Fixtures.path("jpeg/orient-1.jpg")), c2pa: Self.c2paMarker, unknown: Self.unknownMarker,
            manifestPadding: 100_000)
        let info = try SharePipe.inspect(.bytes(input))
        let credentials = info.metadata.filter { $0.kind == .contentCredentials }
        #expect(credentials.count == 2, "\(info.metadata.map(\.kind))")
        try expectNothingUnparsedSurvives(input, route: Self.planted[0].routes[0], mode: .gps)
        try expectContentCredentialsUnderNone(input, route: Self.planted[0].routes[0], keptOnCopy: true)
    }

    @Test("JPEG under none: the lossless turn removes C2PA (and says so); the unknown segment stays in a JPEG output")
    func jpegNone() throws {
        let turned = Plant.jpeg(
            try Fixtures.bytes(Fixtures.path("jpeg/gps-orient6.jpg")), c2pa: Self.c2paMarker,
            unknown: Self.unknownMarker)
        try expectContentCredentialsUnderNone(
            turned, route: Route(name: "lossless turn", method: .losslessTurn), keptOnCopy: false)
        let plain = try Self.planted[0].input()
        let kept = try SharePipe.prepare(.bytes(plain), options: PrepareOptions(maxShortEdge: 200, strip: .none))
        LeakScanner.expectPresent(Self.unknownMarker, in: kept.bytes)
    }

    // MARK: PNG

    @Test("APNG → animated GIF: caBX and the unknown chunk go under all and gps", arguments: modes)
    func apngAnimation(mode: StripMode) throws {
        let input = Plant.png(
            try Fixtures.bytes(Fixtures.path("apng/palette.png")), c2pa: Self.c2paMarker, unknown: Self.unknownMarker)
        try expectNothingUnparsedSurvives(input, route: Route(name: "animation", format: .gif), mode: mode)
    }

    @Test("PNG gps keeps the parsed text and tIME, drops what it cannot parse")
    func pngGPSKeepsWhatItParses() throws {
        let base = try Fixtures.bytes(Fixtures.path("png/rgb-8.png"))
        let input = Plant.png(
            base,
            chunks: [
                ("tEXt", Array("Title\0Harbour".utf8)), ("tIME", [0x07, 0xE9, 1, 2, 3, 4, 5]),
                ("caBX", Plant.manifestStore(Plant.payload(Self.c2paMarker))),
                ("prVt", Plant.payload(Self.unknownMarker)),
            ])
        let result = try SharePipe.prepare(.bytes(input), options: PrepareOptions(strip: .gps))
        #expect(result.method == .metadataRewrite)
        let listing = try PNGListing(result.bytes)
        #expect(listing.types.contains("tEXt") && listing.types.contains("tIME"), "\(listing.types)")
        #expect(!listing.types.contains("caBX") && !listing.types.contains("prVt"), "\(listing.types)")
        #expect(result.removedMetadata == [.contentCredentials, .other])
    }

    // MARK: WebP

    @Test("Animated WebP → GIF: the C2PA chunk and an unknown chunk go under all and gps", arguments: modes)
    func webpAnimation(mode: StripMode) throws {
        let input = Plant.webp(
            try Fixtures.bytes(Fixtures.path("webp/animated.webp")), c2pa: Self.c2paMarker, unknown: Self.unknownMarker)
        try expectNothingUnparsedSurvives(input, route: Route(name: "animation", format: .gif), mode: mode)
    }

    // MARK: GIF

    @Test("Animated GIF: the extensions go on the metadata copy and on the re-written animation", arguments: modes)
    func gifAnimation(mode: StripMode) throws {
        let input = Plant.gif(
            try Fixtures.bytes(Fixtures.path("gif/delays-loop0.gif")), c2pa: Self.c2paMarker,
            unknown: Self.unknownMarker)
        try expectNothingUnparsedSurvives(
            input, route: Route(name: "animation copy", method: .metadataRewrite, format: .gif), mode: mode)
        try expectNothingUnparsedSurvives(
            input, route: Route(name: "animation", configure: { $0.maxShortEdge = 60 }, format: .gif), mode: mode)
    }

    // MARK: HEIF / AVIF

    static let heifFamilyFixtures = ["heif/mirror.heic", "heif/corners.avif"]

    @Test(
        "HEIC and AVIF: a C2PA uuid box or application/c2pa item and an unknown box go in every mode (always re-encoded; none says so)",
        arguments: heifFamilyFixtures, Plant.HEIFPlacement.allCases)
    func heifContentCredentials(fixture: String, placement: Plant.HEIFPlacement) throws {
        let input = try Plant.heif(fixture, c2pa: Self.c2paMarker, unknown: Self.unknownMarker, placement: placement)
        let info = try SharePipe.inspect(.bytes(input))
        #expect(info.metadataKinds.contains(.contentCredentials), "\(placement): \(info.metadataKinds)")
        let route = Route(name: "re-encode (\(fixture), \(placement))", method: .reencoded, format: .jpeg)
        for mode in Self.modes {
            // The unknown top-level box is never read (no kind to report); content credentials are.
            try expectNothingUnparsedSurvives(input, route: route, mode: mode, unknownKind: .contentCredentials)
        }
        try expectContentCredentialsUnderNone(input, route: route, keptOnCopy: false)
    }

    // MARK: Exif

    @Test("A GPS IFD pointer past the end of the Exif segment loses only the pointer: Make, Model and dates stay")
    func gpsPointerPastTheSegment() throws {
        var jpeg = try Fixtures.bytes(Fixtures.path("jpeg/gps-orient6.jpg"))
        // Find the Exif APP1 and point its GPS IFD pointer far past the segment's end.
        let exifStart = try #require(LeakScannerTestsSupport.range(of: Array("Exif\0\0".utf8), in: jpeg)) + 6
        let segmentLength = Int(jpeg[exifStart - 8]) << 8 | Int(jpeg[exifStart - 7])
        let tiff = Array(jpeg[exifStart..<(exifStart - 6 + segmentLength - 2)])
        let editor = try ExifEditor(tiff: tiff)
        let pointer = try #require(editor.entry(ExifEditor.Tag.gpsIFD, inIFDAt: editor.ifd0Offset))
        let past = tiff.count + 5000
        let value: [UInt8] = editor.littleEndian ? Plant.le32(past) : Plant.be32(past)
        jpeg.replaceSubrange((exifStart + pointer.fieldPosition)..<(exifStart + pointer.fieldPosition + 4), with: value)
        #expect(try ExifEditor(tiff: Array(jpeg[exifStart..<(exifStart + tiff.count)])).hasGPS)

        let result = try SharePipe.prepare(.bytes(jpeg), options: PrepareOptions(strip: .gps))
        #expect(
            result.keptMetadata.contains(.exif) && !result.removedMetadata.contains(.exif), "\(result.removedMetadata)")
        #expect(result.removedMetadata.contains(.gps))
        try Witness.require("exiftool")
        let witness = try exiftool(
            result.bytes, ["-a", "-G1", "-s", "-GPS:all", "-Make", "-Model", "-DateTimeOriginal"])
        #expect(!witness.contains("GPS"), "\(witness)")
        #expect(
            witness.contains("SharePipeCam") && witness.contains("TestModel") && witness.contains("DateTimeOriginal"),
            "\(witness)")
    }

    func exiftool(_ bytes: [UInt8], _ arguments: [String]) throws -> String {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Fixtures.write(bytes, to: directory + "/out")
        return try Tool.run("exiftool", arguments + [directory + "/out"]).stdout
    }

    // MARK: Keep tables

    @Test(
        "Every format's keep table: all keeps only the colour profile, none keeps every class, gps names only parsed classes"
    )
    func keepTables() {
        for format in ImageFormat.allCases {
            guard let policy = FormatRegistry.descriptor(for: format).metadataPolicy as? StandardMetadataPolicy else {
                Issue.record("\(format) has no keep table")
                continue
            }
            #expect(policy.table.keeps(.all) == [.colourProfile], "\(format)")
            #expect(policy.table.keeps(.none) == Set(MetadataClass.allCases), "\(format)")
            #expect(
                policy.table.keeps(.gps).isDisjoint(with: [.contentCredentials, .unparsed, .xmp, .iptc]), "\(format)")
        }
    }

    @Test("The CLI names content credentials in the text line and in the JSON, and says when none drops them")
    func cliReports() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let input = Plant.jpeg(
            try Fixtures.bytes(Fixtures.path("jpeg/orient-1.jpg")), c2pa: Self.c2paMarker, unknown: Self.unknownMarker)
        try Fixtures.write(input, to: directory + "/c2pa.jpg")
        let text = try Tool.run(
            Tool.sharepipe, ["prepare", directory + "/c2pa.jpg", "--strip", "gps", "--out", directory + "/gps"])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("removed: content credentials,other"), "\(text.stdout)")
        LeakScanner.expectAbsent(Self.c2paMarker, in: try Fixtures.bytes(directory + "/gps/c2pa.jpg"))
        let json = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", directory + "/c2pa.jpg", "--strip", "none", "--max-short-edge", "200",
                "--json", "--out", directory + "/none",
            ])
        #expect(json.stdout.contains("\"removedMetadata\":[\"contentCredentials\"]"), "\(json.stdout)")
        #expect(json.stdout.contains("content credentials removed (the image data changed"), "\(json.stdout)")
        #expect(MetadataKind.contentCredentials.displayName == "content credentials")
        #expect(MetadataKind.gps.displayName == "gps")
    }
}

enum LeakScannerTestsSupport {
    static func range(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        return (0...(haystack.count - needle.count)).first { haystack[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}
