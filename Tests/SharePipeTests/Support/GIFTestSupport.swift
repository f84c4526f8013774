import Foundation
import Testing
@testable import SharePipe

/// A GIF read back in full: the container, every frame's own properties, and each frame as a viewer
/// shows it (composited on the screen, RGBA), made with the library's own reader and compositor.
struct DecodedGIF {
    var container: GIFContainer
    var frames: [GIFFrame]
    var pictures: [[UInt8]]
    var warnings: [String]

    var size: PixelSize { container.screenSize }
    var delays: [Int] { frames.map(\.delay) }
    var disposals: [Int] { frames.map { $0.disposal.rawValue } }

    init(_ bytes: [UInt8]) throws { try self.init(.bytes(bytes)) }

    init(_ source: ImageSource) throws {
        var frames: [GIFFrame] = [], pictures: [[UInt8]] = []
        let (container, warnings) = try GIFReader.with(source) { reader -> (GIFContainer, [String]) in
            let stream = GIFStream(reader)
            let canvas = GIFCanvas(size: stream.container.screenSize, meter: PixelMemoryMeter())
            while let frame = try stream.nextFrame() {
                try canvas.draw(frame, globalPalette: stream.container.globalPalette, from: stream)
                frames.append(frame)
                pictures.append(canvas.pixels)
                canvas.dispose(frame)
            }
            return (stream.container, stream.warnings)
        }
        self.container = container
        self.frames = frames
        self.pictures = pictures
        self.warnings = warnings
    }

    /// Every picture resampled to `size` with the library's Lanczos resampler (the reference for outputs).
    func pictures(scaledTo size: PixelSize) -> [[UInt8]] {
        pictures.map { pixels in
            let bitmap = Bitmap(size: self.size, layout: .rgba, pixels: pixels)
            // No checkpoint: cannot throw.
            return try! InMemoryResample.resize(bitmap, to: size, meter: PixelMemoryMeter()).pixels
        }
    }
}

/// How far two RGBA pictures of the same size are apart, with GIF's binary transparency.
struct PictureDifference: CustomStringConvertible {
    /// Mean absolute difference per colour channel over pixels opaque in both.
    var meanColorError: Double
    /// Share of pixels opaque in one and transparent in the other.
    var alphaMismatch: Double

    init(_ a: [UInt8], _ b: [UInt8]) {
        precondition(a.count == b.count, "pictures differ in size")
        var error = 0, both = 0, mismatched = 0
        var index = 0
        while index < a.count {
            let opaqueA = a[index + 3] >= 128, opaqueB = b[index + 3] >= 128
            if opaqueA != opaqueB {
                mismatched += 1
            } else if opaqueA {
                both += 1
                for c in 0..<3 { error += abs(Int(a[index + c]) - Int(b[index + c])) }
            }
            index += 4
        }
        meanColorError = both == 0 ? 0 : Double(error) / Double(both * 3)
        alphaMismatch = Double(mismatched) / Double(a.count / 4)
    }

    var description: String { "mean colour error \(meanColorError), alpha mismatch \(alphaMismatch)" }
}

/// Outside witnesses: gifsicle and ImageMagick (always /usr/bin/convert and /usr/bin/identify: the first
/// `convert` on PATH may be a stand-in that is not ImageMagick).
enum GIFWitness {
    static let convert = Witness.convert
    static let identify = Witness.identify

    /// Fails the calling test when ImageMagick or gifsicle is missing (scripts/install-deps installs them).
    static func require(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try Witness.require(convert, identify, "gifsicle", sourceLocation: sourceLocation)
    }

    /// What `gifsicle --info` says: frame count and loop ("forever", a count, or "none").
    static func gifsicleInfo(_ path: String) throws -> (frames: Int, loop: String, interlacedFrames: Int) {
        let output = try Tool.run("gifsicle", ["--info", path]).stdout
        let frames = output.split(separator: "\n").filter {
            $0.trimmingCharacters(in: .whitespaces).hasPrefix("+ image #")
        }.count
        var loop = "none"
        if output.contains("loop forever") {
            loop = "forever"
        } else if let range = output.range(of: "loop count ") {
            loop = String(output[range.upperBound...].prefix { $0.isNumber })
        }
        let interlaced = output.split(separator: "\n").filter { $0.contains("+ image #") && $0.contains(" interlaced") }
            .count
        return (frames, loop, interlaced)
    }

    /// `identify -format '%T %D\n'`: each frame's delay (centiseconds) and disposal name.
    static func delaysAndDisposals(_ path: String) throws -> [(delay: Int, disposal: String)] {
        let output = try Tool.run(identify, ["-format", "%T %D\n", path]).stdout
        return output.split(separator: "\n").map { line in
            let parts = line.split(separator: " ")
            return (Int(parts[0]) ?? -1, parts.count > 1 ? String(parts[1]) : "")
        }
    }

    /// `convert FILE -coalesce [-resize WxH!] -depth 8 rgba:-`, split into frames.
    static func coalesced(_ path: String, size: PixelSize, resizeTo target: PixelSize? = nil) throws -> [[UInt8]] {
        var arguments = [path, "-coalesce"]
        if let target { arguments += ["-resize", "\(target.width)x\(target.height)!"] }
        arguments += ["-depth", "8", "rgba:-"]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: convert)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = Pipe()
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let frameSize = (target ?? size).area * 4
        let bytes = [UInt8](data)
        return stride(from: 0, to: bytes.count, by: frameSize).map {
            Array(bytes[$0..<min(bytes.count, $0 + frameSize)])
        }
    }
}

/// GIF-specific fixture helpers.
enum GIFFixtures {
    static func path(_ name: String) -> String { Fixtures.path("gif/" + name) }

    /// Prepares a fixture and writes the output to a temporary file (for the witnesses).
    static func prepare(_ name: String, options: PrepareOptions = PrepareOptions()) throws -> (
        result: PreparedImage, path: String
    ) {
        let result = try SharePipe.prepare(.file(path: path(name)), options: options)
        let directory = Fixtures.temporaryDirectory()
        let output = directory + "/" + name
        try Fixtures.write(result.bytes, to: output)
        return (result, output)
    }

    /// Counts occurrences of `needle` in `bytes`.
    static func count(_ needle: String, in bytes: [UInt8]) -> Int {
        let pattern = Array(needle.utf8)
        guard bytes.count >= pattern.count else { return 0 }
        var found = 0
        for start in 0...(bytes.count - pattern.count) where bytes[start] == pattern[0] {
            if Array(bytes[start..<start + pattern.count]) == pattern { found += 1 }
        }
        return found
    }
}
