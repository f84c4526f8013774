import Foundation
import Testing

@testable import SharePipe

/// The placeholders (`PreparedImage.placeholder`): BlurHash and ThumbHash against the reference Python packages
/// (PyPI `blurhash`, `thumbhash`; `scripts/witnesses/placeholder.py`), on the same pixels and on the outputs.
@Suite(.tags(.witness), .skipped(whenListed: "witness"))
struct PlaceholderTests {
    /// One case for the witness: the pixels (raw RGBA or an image file) and SharePipe's hashes of them.
    struct Case: Encodable {
        var rgba: String?
        var width: Int?
        var height: Int?
        var image: String?
        var x = 4
        var y = 4
        var blurhash: String
        var thumbhash: String
    }

    struct Answer: Decodable {
        var width: Int
        var height: Int
        var blurhash: String
        var thumbhash: String
        var blurhashDecodedDifference: Double
        var thumbhashDecodedDifference: Double
    }

    /// The reference packages' answers to `cases`.
    static func witness(_ cases: [Case], in directory: String) throws -> [Answer] {
        try Witness.require("python3")
        let path = directory + "/cases.json"
        try JSONEncoder().encode(cases).write(to: URL(fileURLWithPath: path))
        let output = try Tool.run("python3", [Fixtures.root + "/scripts/witnesses/placeholder.py", path])
        try #require(output.status == 0, "placeholder witness failed: \(output.stderr)")
        let answers: [Answer]
        do {
            answers = try JSONDecoder().decode([Answer].self, from: Data(output.stdout.utf8))
        } catch {
            Issue.record("the witness's answer is not the JSON expected (\(error)): \(output.stdout.prefix(2000))")
            throw error
        }
        try #require(answers.count == cases.count)
        return answers
    }

    /// Generated pictures: flat, gradients, alpha, odd and extreme aspect ratios.
    static func pictures() -> [(name: String, bitmap: Bitmap)] {
        func make(_ width: Int, _ height: Int, _ layout: PixelLayout, _ pixel: (Int, Int) -> [Int]) -> Bitmap {
            var pixels = [UInt8]()
            pixels.reserveCapacity(width * height * layout.channels)
            for y in 0..<height { for x in 0..<width { pixels += pixel(x, y).map { UInt8(clamping: $0) } } }
            return Bitmap(size: PixelSize(width: width, height: height), layout: layout, pixels: pixels)
        }
        return [
            ("flat", make(320, 240, .rgb) { _, _ in [128, 128, 128] }),
            ("gradient", make(400, 300, .rgb) { x, y in [x * 255 / 399, y * 255 / 299, 255 - x * 255 / 399] }),
            ("gray-ramp", make(90, 61, .gray) { x, _ in [x * 255 / 89] }),
            (
                "alpha",
                make(200, 200, .rgba) { x, y in
                    let d = (x - 100) * (x - 100) + (y - 100) * (y - 100)
                    return [220, 40 + x / 2, 30, d < 80 * 80 ? 255 : d < 95 * 95 ? 128 : 0]
                }
            ),
            ("tall", make(30, 500, .rgb) { _, y in [y / 2, 255 - y / 2, 90] }),
            ("tiny", make(7, 3, .rgb) { x, y in [x * 36, y * 120, 200] }),
        ]
    }

    @Test func theHashesAreTheReferencePackagesHashesOfTheSamePixels() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        var cases: [Case] = []
        var names: [String] = []
        for (name, bitmap) in Self.pictures() {
            let thumbnail = PlaceholderThumbnail(bitmap)
            #expect(max(thumbnail.size.width, thumbnail.size.height) <= 100)
            for (x, y) in [(4, 4), (3, 5), (1, 1), (9, 9)] {
                let placeholder = thumbnail.placeholder(xComponents: x, yComponents: y)
                let path = directory + "/\(name).rgba"
                try Fixtures.write(thumbnail.rgba, to: path)
                cases.append(
                    Case(
                        rgba: path, width: thumbnail.size.width, height: thumbnail.size.height, x: x, y: y,
                        blurhash: placeholder.blurHash, thumbhash: placeholder.thumbHash))
                names.append("\(name) \(x)×\(y)")
            }
        }
        let answers = try Self.witness(cases, in: directory)
        for (index, answer) in answers.enumerated() {
            // The same algorithm on the same pixels: the same text, unless a value lands on a rounding edge
            // (Python rounds halves to even, JavaScript's reference up); then the decoded pictures agree.
            #expect(
                cases[index].blurhash == answer.blurhash || answer.blurhashDecodedDifference <= 1,
                "\(names[index]): BlurHash \(cases[index].blurhash), reference \(answer.blurhash)")
            #expect(
                cases[index].thumbhash == answer.thumbhash || answer.thumbhashDecodedDifference <= 1,
                "\(names[index]): ThumbHash \(cases[index].thumbhash), reference \(answer.thumbhash)")
        }
        // Most agree to the character (a check that cannot pass on the decoded tolerance alone).
        let equal = zip(cases, answers).filter { $0.blurhash == $1.blurhash && $0.thumbhash == $1.thumbhash }.count
        #expect(equal * 10 >= cases.count * 9, "\(equal) of \(cases.count) hashes equal to the reference")
        // The component counts are in the BlurHash's first character; 1 × 1 is the average colour alone.
        #expect(cases.filter { $0.x == 3 && $0.y == 5 }.allSatisfy { $0.blurhash.first == BlurHash.digits[2 + 4 * 9] })
        #expect(cases.filter { $0.x == 1 && $0.y == 1 }.allSatisfy { $0.blurhash.count == 6 })
    }

    /// An Exif APP1 payload holding only an Orientation.
    static func exifOrientation(_ value: UInt16) -> [UInt8] {
        Array("Exif\0\0".utf8) + [0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08, 0x00, 0x01]
            + [0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, UInt8(value >> 8), UInt8(value & 0xFF), 0x00, 0x00]
            + [0x00, 0x00, 0x00, 0x00]
    }

    /// Prepared outputs — generated pictures, one or more TestImages of every folder; stills of every route,
    /// an animation's first frame, orientations applied — checked twice against the reference packages:
    /// - fed the very pixels SharePipe hashed (its render reduced to 100 px): the same hashes (or, on a rounding
    ///   edge, decoded placeholders within 1 level on average);
    /// - fed the output file's own pixels (decoded by Pillow, reduced with its box filter): decoded placeholders
    ///   within 8 levels on average for BlurHash and 16 for ThumbHash. The output is the render encoded (lossy
    ///   for JPEG, WebP, GIF's palette) and one step of a quantised term moves a decoded placeholder by about 5
    ///   levels: the reference ThumbHash of a 267 × 200 colour gradient and of the same picture through JPEG q85
    ///   decode 10.8 levels apart. A placeholder of the picture unturned is tens of levels away (checked last).
    @Test func theOutputsPlaceholdersAgreeWithTheReference() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let pictures = Dictionary(uniqueKeysWithValues: Self.pictures().map { ($0.name, $0.bitmap) })
        let settings = EncodeSettings(quality: 95, progressive: false)
        // Left half red, right half blue, stored sideways: displayed (orientation 6, turned clockwise) the red is
        // on top.
        var sideways = [UInt8]()
        for _ in 0..<160 { for x in 0..<240 { sideways += x < 120 ? [230, 20, 20] : [20, 20, 230] } }
        let sidewaysJPEG = Plant.jpeg(
            try JPEGEncoder().encode(
                Bitmap(size: PixelSize(width: 240, height: 160), layout: .rgb, pixels: sideways),
                settings: settings, metadata: []),
            segments: [(0xE1, Self.exifOrientation(6))])
        var inputs: [(String, ImageSource, PrepareOptions)] = [
            (
                "gradient.jpg",
                .bytes(try JPEGEncoder().encode(pictures["gradient"]!, settings: settings, metadata: [])),
                PrepareOptions(maxShortEdge: 200)
            ),
            (
                "alpha.png", .bytes(try PNGEncoder().encode(pictures["alpha"]!, settings: settings, metadata: [])),
                PrepareOptions()
            ),
            ("orient6.jpg", .bytes(sidewaysJPEG), PrepareOptions()),
        ]
        for name in [
            "jpeg/gps-orient6.jpg", "jpeg/orient-5.jpg", "jpeg/large-4000x3000.jpg", "jpeg/cmyk-adobe.jpg",
            "png/detail-rgba-8-interlaced.png", "png/palette-4-trns.png", "png/gps-orient6.png",
            "apng/dispose-blend.png", "gif/disposals.gif", "gif/large-1600x1200.gif", "webp/animated.webp",
            "webp/lossless-alpha.webp", "webp/gps-orient6.webp",
            "heif/corners.avif", "heif/mirror-rotate.heic", "heif-grid/grid-irot1.heic",
            "progressive/restart-420-203x157.jpg",
        ] where FileManager.default.fileExists(atPath: Fixtures.path(name)) {
            inputs.append((name, .file(path: Fixtures.path(name)), PrepareOptions()))
        }
        #expect(inputs.count >= 16, "the TestImages the test names are there")
        var cases: [Case] = []
        var names: [String] = []
        for (name, source, options) in inputs {
            let prepared = try SharePipe.prepare(source, options: options)
            let placeholder = try #require(prepared.placeholder, "\(name): no placeholder")
            let pixels = try #require(prepared.placeholderPixels)
            let stem = directory + "/" + name.replacingOccurrences(of: "/", with: "-")
            try Fixtures.write(pixels.rgba, to: stem + ".rgba")
            try Fixtures.write(prepared.bytes, to: stem + ".out." + prepared.format.rawValue)
            let label = "\(name) (\(prepared.method.rawValue), \(prepared.frameCount) frames)"
            cases.append(
                Case(
                    rgba: stem + ".rgba", width: pixels.size.width, height: pixels.size.height,
                    blurhash: placeholder.blurHash, thumbhash: placeholder.thumbHash))
            cases.append(
                Case(
                    image: stem + ".out." + prepared.format.rawValue, blurhash: placeholder.blurHash,
                    thumbhash: placeholder.thumbHash))
            names += [label + ", its pixels", label + ", the output's pixels"]
            // The pixels hashed have the output's aspect ratio.
            let aspect = Double(prepared.size.width) / Double(prepared.size.height)
            let hashedAspect = Double(pixels.size.width) / Double(pixels.size.height)
            #expect(abs(hashedAspect / aspect - 1) < 0.15, "\(label): hashed \(pixels.size), output \(prepared.size)")
        }
        let answers = try Self.witness(cases, in: directory)
        var equal = 0
        for (index, answer) in answers.enumerated() {
            let ours = cases[index]
            if ours.rgba != nil {
                if ours.blurhash == answer.blurhash && ours.thumbhash == answer.thumbhash { equal += 1 }
                #expect(
                    ours.blurhash == answer.blurhash || answer.blurhashDecodedDifference <= 1,
                    "\(names[index]): BlurHash \(ours.blurhash) vs \(answer.blurhash)")
                #expect(
                    ours.thumbhash == answer.thumbhash || answer.thumbhashDecodedDifference <= 1,
                    "\(names[index]): ThumbHash \(ours.thumbhash) vs \(answer.thumbhash)")
            } else {
                #expect(
                    answer.blurhashDecodedDifference <= 8,
                    "\(names[index]): BlurHash \(ours.blurhash) vs \(answer.blurhash)")
                #expect(
                    answer.thumbhashDecodedDifference <= 16,
                    "\(names[index]): ThumbHash \(ours.thumbhash) vs \(answer.thumbhash)")
            }
        }
        #expect(equal * 10 >= inputs.count * 9, "\(equal) of \(inputs.count) equal to the reference's")
        // The check above can fail: the sideways picture hashed unturned is far from its output.
        let unturned = PlaceholderThumbnail(
            Bitmap(size: PixelSize(width: 240, height: 160), layout: .rgb, pixels: sideways)
        ).placeholder(xComponents: 4, yComponents: 4)
        let turned = try #require(names.firstIndex { $0.hasPrefix("orient6.jpg") && $0.hasSuffix("output's pixels") })
        let control = try Self.witness(
            [Case(image: cases[turned].image, blurhash: unturned.blurHash, thumbhash: unturned.thumbHash)],
            in: directory)
        #expect(control[0].blurhashDecodedDifference > 30 && control[0].thumbhashDecodedDifference > 30)
    }

    @Test func theMetadataRewriteAndTheLosslessTurnHavePlaceholdersToo() throws {
        // A small JPEG needing only its metadata removed: the metadata rewrite; one turned: the lossless turn.
        var pixels = [UInt8]()
        for y in 0..<64 { for x in 0..<96 { pixels += [UInt8(x * 2), UInt8(y * 4), 128] } }
        let jpeg = try JPEGEncoder().encode(
            Bitmap(size: PixelSize(width: 96, height: 64), layout: .rgb, pixels: pixels),
            settings: EncodeSettings(quality: 90, progressive: false), metadata: [])
        let rewritten = try SharePipe.prepare(.bytes(Plant.jpeg(jpeg, segments: [(0xE1, Self.exifOrientation(1))])))
        #expect(rewritten.method == .metadataRewrite)
        #expect(rewritten.placeholder != nil)
        let turned = try SharePipe.prepare(.bytes(Plant.jpeg(jpeg, segments: [(0xE1, Self.exifOrientation(6))])))
        #expect(turned.method == .losslessTurn)
        let placeholder = try #require(turned.placeholder)
        // ThumbHash's header says landscape or not: the turned picture is portrait.
        let header = try #require(decodedBase64(placeholder.thumbHash))
        #expect(header[4] & 0x80 == 0, "portrait")
        #expect(
            try #require(decodedBase64(rewritten.placeholder!.thumbHash))[4] & 0x80 != 0, "landscape")
    }

    @Test func componentsOutsideOneToNineAreRefused() {
        var options = PrepareOptions()
        options.blurHashXComponents = 0
        #expect(throws: SharePipeError.self) { try options.validate() }
        options.blurHashXComponents = 9
        options.blurHashYComponents = 10
        #expect(throws: SharePipeError.self) { try options.validate() }
        options.blurHashYComponents = 1
        #expect(throws: Never.self) { try options.validate() }
    }
}

/// Standard Base64 decoded (the test's own, so the encoder is not checked against itself).
func decodedBase64(_ text: String) -> [UInt8]? {
    Data(base64Encoded: text).map { [UInt8]($0) }
}
