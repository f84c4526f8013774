import Foundation
import Testing

@testable import SharePipe

/// The focal point (`PreparedImage.focus`) and the crop around it (`PrepareOptions.cropTo`), on generated
/// pictures with one salient object on a plain or mildly noisy ground, checked on the output's decoded pixels.
@Suite struct FocalPointTests {
    /// The object drawn: a saturated red disc, or a square of black and white checks on a neutral ground.
    enum Object: String, CaseIterable, Sendable {
        case redDisc, checkedSquare

        /// The object's colour at `x`, `y` (relative to its box of `edge` pixels), or nil outside it.
        func colour(_ x: Int, _ y: Int, edge: Int) -> [Int]? {
            switch self {
            case .redDisc:
                let r = Double(edge) / 2, dx = Double(x) + 0.5 - r, dy = Double(y) + 0.5 - r
                return dx * dx + dy * dy <= r * r ? [220, 30, 40] : nil
            case .checkedSquare:
                return (x / 6 + y / 6) % 2 == 0 ? [20, 20, 20] : [245, 245, 245]
            }
        }
    }

    /// A scene: the object's box (as displayed) in a picture of `size` (as displayed).
    struct Scene: Sendable, CustomStringConvertible {
        var size: PixelSize
        var object: Object
        var x: Int
        var y: Int
        var edge: Int
        var noisy: Bool
        var orientation: Orientation = .up

        var description: String {
            "\(object) \(edge)px at (\(x), \(y)) in \(size)\(noisy ? " noisy" : "") orientation \(orientation.rawValue)"
        }

        /// The displayed picture, RGB.
        func displayed() -> Bitmap {
            var generator = SplitMix(seed: UInt64(x * 7919 + y * 31 + edge))
            var pixels = [UInt8](repeating: 0, count: size.area * 3)
            for py in 0..<size.height {
                for px in 0..<size.width {
                    let noise = noisy ? Int(generator.next() % 13) - 6 : 0
                    var rgb = [196 + noise, 198 + noise, 190 + noise]
                    if px >= x && px < x + edge && py >= y && py < y + edge,
                        let colour = object.colour(px - x, py - y, edge: edge)
                    {
                        rgb = colour
                    }
                    for c in 0..<3 { pixels[(py * size.width + px) * 3 + c] = UInt8(clamping: rgb[c]) }
                }
            }
            return Bitmap(size: size, layout: .rgb, pixels: pixels)
        }

        /// A JPEG storing the picture so that a viewer honouring `orientation` shows `displayed()`.
        func jpeg() throws -> [UInt8] {
            let shown = displayed()
            let stored = Self.stored(shown, for: orientation)
            let bytes = try JPEGEncoder().encode(
                stored, settings: EncodeSettings(quality: 92, progressive: false), metadata: [])
            guard orientation != .up else { return bytes }
            return Plant.jpeg(bytes, segments: [(0xE1, Self.exifOrientation(orientation.rawValue))])
        }

        /// The stored pixels whose display under `orientation` is `shown` (`.up` and `.right` only).
        static func stored(_ shown: Bitmap, for orientation: Orientation) -> Bitmap {
            guard orientation == .right else { return shown }
            // Orientation 6 turns the stored picture a quarter clockwise: displayed (dx, dy) is stored
            // (dy, storedHeight − 1 − dx).
            let stored = PixelSize(width: shown.size.height, height: shown.size.width)
            var pixels = [UInt8](repeating: 0, count: stored.area * 3)
            for sy in 0..<stored.height {
                for sx in 0..<stored.width {
                    let dx = stored.height - 1 - sy, dy = sx
                    for c in 0..<3 {
                        pixels[(sy * stored.width + sx) * 3 + c] = shown.pixels[(dy * shown.size.width + dx) * 3 + c]
                    }
                }
            }
            return Bitmap(size: stored, layout: .rgb, pixels: pixels)
        }

        /// An APP1 Exif payload holding only the orientation tag.
        static func exifOrientation(_ value: Int) -> [UInt8] {
            Array("Exif\0\0".utf8) + [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8]  // big-endian TIFF, IFD0 at 8
                + [0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, UInt8(value), 0, 0, 0, 0, 0, 0]
        }

        /// The object's box in Mastodon's coordinates: (left, right) and (bottom, top).
        var focusBox: (x: ClosedRange<Double>, y: ClosedRange<Double>) {
            let w = Double(size.width), h = Double(size.height)
            return (
                (2 * Double(x) / w - 1)...(2 * Double(x + edge) / w - 1),
                (1 - 2 * Double(y + edge) / h)...(1 - 2 * Double(y) / h)
            )
        }
    }

    static let scenes: [Scene] = {
        var scenes: [Scene] = []
        let size = PixelSize(width: 1500, height: 1000)
        for object in Object.allCases {
            for noisy in [false, true] {
                scenes.append(Scene(size: size, object: object, x: 100, y: 120, edge: 260, noisy: noisy))
                scenes.append(Scene(size: size, object: object, x: 1080, y: 600, edge: 300, noisy: noisy))
                scenes.append(Scene(size: size, object: object, x: 640, y: 40, edge: 180, noisy: noisy))
            }
            scenes.append(
                Scene(size: PixelSize(width: 900, height: 1400), object: object, x: 560, y: 980, edge: 240, noisy: true)
            )
            // Stored as 1000 × 1500 with orientation 6: the focus belongs to the displayed picture.
            scenes.append(
                Scene(size: size, object: object, x: 1150, y: 90, edge: 250, noisy: true, orientation: .right))
            scenes.append(
                Scene(size: size, object: object, x: 150, y: 640, edge: 280, noisy: false, orientation: .right))
        }
        return scenes
    }()

    @Test(arguments: scenes)
    func focusLiesInsideTheObject(_ scene: Scene) async throws {
        let result = try await SharePipe.prepare(.bytes(try scene.jpeg()), options: PrepareOptions())
        #expect(result.appliedOrientation == scene.orientation)
        let focus = try #require(result.focus)
        let box = scene.focusBox
        #expect(box.x.contains(focus.x) && box.y.contains(focus.y), "\(scene): focus \(focus), box \(box)")
    }

    @Test func aPlainPictureHasItsFocusAtTheCentre() async throws {
        for (rgb, noisy) in [([128, 128, 128], false), ([40, 90, 200], false), ([196, 198, 190], true)] {
            let size = PixelSize(width: 1200, height: 800)
            var generator = SplitMix(seed: 5)
            var pixels = [UInt8](repeating: 0, count: size.area * 3)
            for i in 0..<size.area {
                let noise = noisy ? Int(generator.next() % 13) - 6 : 0
                for c in 0..<3 { pixels[i * 3 + c] = UInt8(clamping: rgb[c] + noise) }
            }
            let bytes = try JPEGEncoder().encode(
                Bitmap(size: size, layout: .rgb, pixels: pixels),
                settings: EncodeSettings(quality: 90, progressive: false), metadata: [])
            let focus = try #require(try await SharePipe.prepare(.bytes(bytes)).focus)
            #expect(abs(focus.x) <= 0.05 && abs(focus.y) <= 0.05, "\(rgb) noisy \(noisy): \(focus)")
        }
    }

    static let cropCases: [(Scene, AspectRatio)] = scenes.filter { $0.object == .redDisc }.flatMap { scene in
        [(scene, AspectRatio(width: 1, height: 1)), (scene, AspectRatio(width: 4, height: 5))]
    }

    @Test(arguments: cropCases)
    func theCropKeepsTheObjectWholeAtTheExactRatio(_ scene: Scene, _ ratio: AspectRatio) async throws {
        var options = PrepareOptions()
        options.cropTo = ratio
        let result = try await SharePipe.prepare(.bytes(try scene.jpeg()), options: options)
        #expect(result.method == .reencoded)
        #expect(
            result.size.width * ratio.height == result.size.height * ratio.width, "\(scene) \(ratio): \(result.size)")
        #expect(result.adjustments.contains { $0.hasPrefix("cropped to \(ratio) around the focal point (") })
        // The window keeps full resolution: the whole picture's short edge (1000) is the cap's 1080 or less.
        let window = ratio.largestSize(in: scene.size)
        #expect(result.size == window, "\(scene) \(ratio): \(result.size), window \(window)")
        let bitmap = try Decode.bitmap(result.bytes)
        #expect(bitmap.size == result.size)
        // The disc's red pixels, found in the output: all of them (its area), none cut by an edge.
        var count = 0
        var minX = Int.max, maxX = -1, minY = Int.max, maxY = -1
        for y in 0..<bitmap.size.height {
            for x in 0..<bitmap.size.width {
                let p = bitmap.rgb(x, y)
                if p[0] > 150 && p[1] < 100 && p[2] < 100 {
                    count += 1
                    (minX, maxX, minY, maxY) = (min(minX, x), max(maxX, x), min(minY, y), max(maxY, y))
                }
            }
        }
        let area = Double.pi * Double(scene.edge * scene.edge) / 4
        #expect(abs(Double(count) - area) / area < 0.05, "\(scene) \(ratio): \(count) red pixels, disc \(area)")
        #expect(maxX - minX + 1 >= scene.edge - 3 && maxY - minY + 1 >= scene.edge - 3, "\(scene) \(ratio): cut")
        // The output's focus is the disc's place in the crop.
        let focus = try #require(result.focus)
        let centreX = Double(minX + maxX + 1) / 2 / Double(bitmap.size.width) * 2 - 1
        let centreY = 1 - Double(minY + maxY + 1) / 2 / Double(bitmap.size.height) * 2
        #expect(abs(focus.x - centreX) < 0.1 && abs(focus.y - centreY) < 0.1, "\(scene) \(ratio): \(focus)")
    }

    @Test func theCropKeepsTheRatioUnderTheCapsAndTheByteLimit() async throws {
        let scene = Scene(
            size: PixelSize(width: 3000, height: 2000), object: .checkedSquare, x: 2300, y: 300, edge: 500,
            noisy: true)
        var options = PrepareOptions(maxShortEdge: 1080, maxBytes: 60_000)
        options.cropTo = AspectRatio(width: 4, height: 5)
        let result = try await SharePipe.prepare(.bytes(try scene.jpeg()), options: options)
        #expect(result.size.width * 5 == result.size.height * 4, "\(result.size)")
        #expect(result.byteCount <= 60_000)
        #expect(result.attempts.allSatisfy { $0.size.width * 5 == $0.size.height * 4 }, "\(result.attempts)")
        let bitmap = try Decode.bitmap(result.bytes)
        #expect(bitmap.size == result.size)
        // The window (1600 × 2000) is moved back inside the picture: it ends at its right edge, so the square
        // (x 2300...2800, y 300...800) is at 900...1400 of its 1600 columns. Its checks are there, whole; the ground
        // left of it is smooth.
        let scale = Double(result.size.height) / 2000
        func spread(_ xs: ClosedRange<Double>, _ ys: ClosedRange<Double>) -> Double {
            var values: [Double] = []
            for y in Int(ys.lowerBound * scale)..<Int(ys.upperBound * scale) {
                for x in Int(xs.lowerBound * scale)..<Int(xs.upperBound * scale) {
                    values.append(Double(bitmap.rgb(x, y)[1]))
                }
            }
            let mean = values.reduce(0, +) / Double(values.count)
            return (values.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(values.count)).squareRoot()
        }
        #expect(spread(920...1380, 320...780) > 60, "the square's checks")
        #expect(spread(920...1000, 320...780) > 60 && spread(1300...1380, 320...780) > 60, "the square's sides")
        #expect(spread(100...700, 320...780) < 15, "the ground")
    }

    @Test func aPictureAlreadyAtTheRatioIsNotCropped() async throws {
        let scene = Scene(
            size: PixelSize(width: 1000, height: 1000), object: .redDisc, x: 100, y: 100, edge: 200, noisy: false)
        var options = PrepareOptions()
        options.cropTo = AspectRatio(width: 1, height: 1)
        let result = try await SharePipe.prepare(.bytes(try scene.jpeg()), options: options)
        #expect(result.method == .metadataRewrite)
        #expect(!result.adjustments.contains { $0.hasPrefix("cropped") })
    }

    @Test func anAnimationIsRefusedAndItsFirstFrameCroppedWhenAnimationIsOff() async throws {
        let path = Fixtures.path("gif/large-1600x1200.gif")
        var options = PrepareOptions()
        options.cropTo = AspectRatio(width: 1, height: 1)
        await #expect {
            try await SharePipe.prepare(.file(path: path), options: options)
        } throws: { error in
            guard case SharePipeError.unsupportedFormat(let file, .feature, let reason) = error else { return false }
            return file.hasSuffix("large-1600x1200.gif") && reason.contains("cropping to 1:1 is for stills")
        }
        options.animation.allowed = false
        let still = try await SharePipe.prepare(.file(path: path), options: options)
        #expect(still.frameCount == 1 && still.size.width == still.size.height, "\(still.size)")
        #expect(still.adjustments.contains { $0.hasPrefix("cropped to 1:1 around the focal point (") })
    }

    @Test func ratiosAreCheckedAsTheTableChecksEveryOption() throws {
        #expect(AspectRatio("4:5") == AspectRatio(width: 4, height: 5))
        for text in ["", "4", "4:", ":5", "4:5:6", "-4:5", "4.5:1", " 4:5", "4/5", "+4:5", "٤:٥"] {
            #expect(AspectRatio(text) == nil, "\(text)")
        }
        for (ratio, message) in [
            (
                AspectRatio(width: 0, height: 1),
                "expected W:H with whole numbers from 1 to 10000 for --crop-to, got 0:1"
            ),
            (AspectRatio(width: 11, height: 1), "expected a ratio from 1:10 to 10:1 for --crop-to, got 11:1"),
            (
                AspectRatio(width: 1, height: 20_000),
                "expected W:H with whole numbers from 1 to 10000 for --crop-to, got 1:20000"
            ),
        ] {
            var options = PrepareOptions()
            options.cropTo = ratio
            #expect(throws: SharePipeError.self) { try options.validate() }
            do {
                try options.validate()
            } catch .invalidOptions(let invalid) {
                #expect(invalid.message(on: .commandLine) == message)
            } catch {
                Issue.record("\(error)")
            }
        }
        let parsed = try PrepareOptions().applying(textValues: [("crop_to", "191:100")])
        #expect(parsed.cropTo == AspectRatio(width: 191, height: 100))
        #expect(throws: SharePipeError.self) { try PrepareOptions().applying(textValues: [("crop_to", "square")]) }
        // In lowest terms; the largest window of the ratio.
        #expect(AspectRatio(width: 1920, height: 1080).reduced == AspectRatio(width: 16, height: 9))
        #expect(
            AspectRatio(width: 4, height: 5).largestSize(in: PixelSize(width: 1500, height: 1000))
                == PixelSize(width: 800, height: 1000))
        #expect(
            AspectRatio(width: 191, height: 100).largestSize(in: PixelSize(width: 1500, height: 1000)).width == 1500)
    }

    @Test func mastodonsConventionAndText() {
        #expect(FocalPoint(fractionX: 0, fractionY: 0) == FocalPoint(x: -1, y: 1))  // top left
        #expect(FocalPoint(fractionX: 1, fractionY: 1) == FocalPoint(x: 1, y: -1))  // bottom right
        #expect(FocalPoint(fractionX: 0.5, fractionY: 0.5) == .centre)
        #expect(FocalPoint(x: 0.25, y: -0.5).description == "0.25,-0.50")
        #expect(FocalPoint(fractionX: 0.4999, fractionY: 0.5001).description == "0.00,0.00")
        #expect(FocalPoint(x: -0.05, y: 1).description == "-0.05,1.00")
    }
}

/// A small deterministic generator for test noise.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
