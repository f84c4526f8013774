import Foundation
import Testing
@testable import SharePipe

/// Named variants (`OutputVariant`, `PrepareOptions.variants`): prepared beside the main output from the same
/// decode, within the profile's rules and the variant's own caps.
@Suite struct VariantTests {
    /// A 3000 × 2000 JPEG with detail (bars and a gradient), made once per run.
    static let photo: [UInt8] = {
        let size = PixelSize(width: 3000, height: 2000)
        var pixels = [UInt8](repeating: 0, count: size.area * 3)
        for y in 0..<size.height {
            for x in 0..<size.width {
                let i = (y * size.width + x) * 3
                let bar: UInt8 = (x / 40 + y / 40) % 2 == 0 ? 40 : 0
                pixels[i] = UInt8(x * 200 / size.width) + bar
                pixels[i + 1] = UInt8(y * 200 / size.height) + bar
                pixels[i + 2] = 100 + bar
            }
        }
        return try! JPEGEncoder().encode(
            Bitmap(size: size, layout: .rgb, pixels: pixels), settings: EncodeSettings(quality: 90, progressive: false),
            metadata: [])
    }()

    static func mastodon(_ variants: [String] = ["small"], strategy: FitStrategy = .memoryFirst) -> PrepareOptions {
        var options = ServiceProfile.mastodon.options()
        options.variants = variants
        options.strategy = strategy
        return options
    }

    @Test(arguments: [FitStrategy.memoryFirst, .cpuFirst])
    func mastodonSmallIsMadeFromTheMainOutputsDecode(strategy: FitStrategy) throws {
        let prepared = try SharePipe.prepare(.bytes(Self.photo), options: Self.mastodon(strategy: strategy))
        // One decode of the source for both outputs: the variant's is none.
        #expect(prepared.sourceDecodes == 1)
        let small = try #require(prepared.variants.first)
        #expect(prepared.variants.count == 1 && small.name == "small")
        #expect(small.image.sourceDecodes == 0)
        // The main output as without the variant, byte for byte.
        var alone = Self.mastodon([], strategy: strategy)
        alone.variants = []
        let main = try SharePipe.prepare(.bytes(Self.photo), options: alone)
        #expect(main.bytes == prepared.bytes && main.variants.isEmpty)
        // Mastodon's `small`: at most 230,400 px, the aspect kept, a progressive JPEG at q90 (its own file).
        let size = small.image.size
        #expect(size.area <= 230_400 && size.area > 225_000, "\(size)")
        #expect(abs(Double(size.width) / Double(size.height) - 1.5) < 0.01, "\(size)")
        #expect(small.image.format == .jpeg && small.image.quality == 90)
        let info = try Decode.info(small.image.bytes)
        #expect(info.size == size && info.progressive)
        #expect(small.image.placeholder == nil && prepared.placeholder != nil)
        // Its pixels are the picture's: the variant downscaled matches the main output downscaled.
        let fromMain = try InMemoryResample.resize(
            try Decode.bitmap(prepared.bytes), to: size, meter: PixelMemoryMeter())
        let variant = try Decode.bitmap(small.image.bytes)
        var difference = 0
        for y in stride(from: 0, to: size.height, by: 7) {
            for x in stride(from: 0, to: size.width, by: 7) {
                difference = max(difference, zip(fromMain.rgb(x, y), variant.rgb(x, y)).map { abs($0 - $1) }.max()!)
            }
        }
        #expect(difference < 40, "largest channel difference \(difference)")
    }

    /// `photo` with an Exif orientation of 6 (displayed 2000 × 3000).
    static let rotatedPhoto = Plant.jpeg(
        photo,
        segments: [
            (
                0xE1,
                Array("Exif".utf8) + [
                    0, 0, 0x4D, 0x4D, 0, 0x2A, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0,
                ]
                    + [0, 0, 0, 0]
            )
        ])

    @Test(arguments: [FitStrategy.memoryFirst, .cpuFirst])
    func aRotatedPhotosVariantIsUprightAndFromTheSameDecode(strategy: FitStrategy) throws {
        let prepared = try SharePipe.prepare(.bytes(Self.rotatedPhoto), options: Self.mastodon(strategy: strategy))
        #expect(prepared.appliedOrientation == .right && prepared.size == PixelSize(width: 1080, height: 1620))
        let small = try #require(prepared.variants.first).image
        #expect(prepared.sourceDecodes == 1 && small.sourceDecodes == 0)
        #expect(small.size.height > small.size.width && small.size.area <= 230_400, "\(small.size)")
        // The same picture, upright: the main output reduced to the variant's size matches it.
        let fromMain = try InMemoryResample.resize(
            try Decode.bitmap(prepared.bytes), to: small.size, meter: PixelMemoryMeter())
        let variant = try Decode.bitmap(small.bytes)
        var difference = 0
        for y in stride(from: 0, to: small.size.height, by: 5) {
            for x in stride(from: 0, to: small.size.width, by: 5) {
                difference = max(difference, zip(fromMain.rgb(x, y), variant.rgb(x, y)).map { abs($0 - $1) }.max()!)
            }
        }
        #expect(difference < 40, "largest channel difference \(difference)")
    }

    @Test func anImageWithinTheVariantsCapsIsCopiedOnce() throws {
        // 80 × 60: the main output is a metadata-only copy, and so would the variant be: the same bytes, no decode.
        let prepared = try SharePipe.prepare(
            .file(path: Fixtures.path("png/colour-chunks.png")), options: Self.mastodon())
        let small = try #require(prepared.variants.first).image
        #expect(prepared.method == .metadataRewrite && small.method == .metadataRewrite)
        #expect(small.bytes == prepared.bytes && small.size == prepared.size)
        #expect(prepared.sourceDecodes == 1 && small.sourceDecodes == 0)
    }

    @Test func withoutVariantsNothingMoreIsDecodedOrWritten() throws {
        let prepared = try SharePipe.prepare(.bytes(Self.photo), options: Self.mastodon([]))
        #expect(prepared.sourceDecodes == 1 && prepared.variants.isEmpty)
    }

    @Test func aVariantObeysTheByteLimitAndTheMetadataMode() throws {
        // A photo with GPS and orientation 6, 480 × 640 stored: the main output is a lossless turn (its render
        // is the placeholder's), so the variant is the one decode at its size; its Exif keeps no location.
        let source = ImageSource.file(path: Fixtures.path("jpeg/gps-orient6.jpg"))
        var options = Self.mastodon()
        options.strip = .gps
        let prepared = try SharePipe.prepare(source, options: options)
        let small = try #require(prepared.variants.first).image
        #expect(prepared.method == .losslessTurn)
        #expect(small.sourceDecodes == 1)
        #expect(small.size.width > small.size.height && small.size.area <= 230_400)
        let kinds = try Decode.info(small.bytes).metadataKinds
        #expect(kinds.contains(.exif) && !kinds.contains(.gps), "\(kinds)")
        #expect(small.removedMetadata.contains(.gps))
        // A byte limit every output meets.
        var tight = Self.mastodon()
        tight.maxBytes = 20_000
        let limited = try SharePipe.prepare(.bytes(Self.photo), options: tight)
        #expect(limited.byteCount <= 20_000)
        let limitedSmall = try #require(limited.variants.first).image
        #expect(limitedSmall.byteCount <= 20_000 && limitedSmall.attempts.allSatisfy { $0.fits || $0.bytes > 20_000 })
    }

    @Test func aVariantNotDeclaredIsRefusedByName() throws {
        var options = Self.mastodon(["thumb"])
        #expect(throws: SharePipeError.self) { try options.validate() }
        do {
            try options.validate()
        } catch .invalidOptions(let invalid) {
            #expect(invalid.option == "variants")
            #expect(invalid.message(on: .commandLine).contains("for --variant, got 'thumb'"), "\(invalid)")
            #expect(invalid.message(on: .commandLine).contains("(small)"))
        } catch {
            Issue.record("\(error)")
        }
        options.variants = ["small", "small"]
        #expect(throws: SharePipeError.self) { try options.validate() }
        // No profile, no variants.
        var plain = PrepareOptions()
        plain.variants = ["small"]
        #expect(throws: SharePipeError.self) { try plain.validate() }
        // Query text: one name a parameter, repeated to add; a bad name is refused by parameter.
        let base = ServiceProfile.mastodon.options()
        #expect(try base.applying(textValues: [("variant", "small")]).variants == ["small"])
        #expect(throws: SharePipeError.self) {
            try base.applying(textValues: [("variant", "small"), ("variant", "small")])
        }
        for bad in ["", "Small", "../x", "a.b", "small,small", String(repeating: "s", count: 33)] {
            #expect(throws: SharePipeError.self) { try base.applying(textValues: [("variant", bad)]) }
        }
    }

    @Test func aProfileFileDeclaresVariantsAndRefusesUnknownFields() throws {
        let json = """
            {"profiles": [{"name": "mastodon", "variants": [{"name": "thumb", "maxPixels": 40000, "format": "webp",
              "quality": 80}, {"name": "small", "maxLongEdge": 640}]}]}
            """
        let catalog = try ProfileCatalog.builtIn.applying(json: Array(json.utf8), file: "profiles.json")
        let mastodon = try #require(catalog.named("mastodon"))
        #expect(mastodon.variants.map(\.name) == ["thumb", "small"])
        var options = mastodon.options()
        options.variants = ["thumb", "small"]
        let prepared = try SharePipe.prepare(.bytes(Self.photo), options: options)
        #expect(prepared.sourceDecodes == 1)
        #expect(prepared.variants.map(\.name) == ["thumb", "small"])
        let thumb = prepared.variants[0].image, small = prepared.variants[1].image
        #expect(thumb.format == .webp && thumb.size.area <= 40_000 && thumb.sourceDecodes == 0)
        #expect(try Decode.info(thumb.bytes).format == .webp)
        #expect(small.size.width == 640 && abs(small.size.height - 427) <= 1 && small.sourceDecodes == 0)
        for bad in [
            #"{"profiles": [{"name": "mastodon", "variants": [{"name": "small", "maxPixel": 1}]}]}"#,
            #"{"profiles": [{"name": "mastodon", "variants": [{"name": "a/b"}]}]}"#,
            #"{"profiles": [{"name": "mastodon", "variants": [{"name": "s", "quality": 0}]}]}"#,
            #"{"profiles": [{"name": "mastodon", "variants": [{"name": "s"}, {"name": "s"}]}]}"#,
            #"{"profiles": [{"name": "mastodon", "variants": [{"name": "s", "format": "heif"}]}]}"#,
        ] {
            #expect(throws: ProfileFileError.self, "\(bad)") {
                try ProfileCatalog.builtIn.applying(json: Array(bad.utf8), file: "profiles.json")
            }
        }
    }

    @Test func variantFilesSitBesideTheOutputWithTheirName() {
        let item = BatchItem(input: "pics/IMG_1.jpeg", relativeName: "pics/IMG_1.jpeg")
        #expect(item.outputName(for: .jpeg) == "pics/IMG_1.jpg")
        #expect(item.variantOutputName("small", for: .jpeg) == "pics/IMG_1.small.jpg")
        let kept = BatchItem(input: "pic.gif", relativeName: "pic.gif", keepsFullName: true)
        #expect(kept.variantOutputName("small", for: .png) == "pic.gif.small.png")
    }
}
