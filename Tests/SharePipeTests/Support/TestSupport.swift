import Foundation
import Testing
@testable import SharePipe

/// Paths and helpers shared by the tests.
enum Fixtures {
    /// The repository root (…/Tests/SharePipeTests/Support/TestSupport.swift → four levels up).
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// A committed test image, e.g. `Fixtures.path("jpeg/orient-6.jpg")`.
    static func path(_ relative: String) -> String { root + "/TestImages/" + relative }

    /// The shared corpus of real-world images beside the repository, if present.
    static func corpus(_ relative: String) -> String { root + "/../shared/corpus/" + relative }

    /// A fresh temporary directory, removed by the caller with `cleanUp`.
    static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "sharepipe-tests-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func cleanUp(_ path: String) { try? FileManager.default.removeItem(atPath: path) }

    static func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }

    /// Damaged copies of `whole`, the same on every run: about `cuts` prefixes (cut anywhere) and `flips` copies
    /// with one byte changed at a position a fixed-seed generator picks.
    static func damagedCopies(of whole: [UInt8], cuts: Int, flips: Int, seed: UInt64) -> [[UInt8]] {
        var damaged = stride(from: 0, to: whole.count - 1, by: max(1, whole.count / cuts)).map {
            Array(whole.prefix($0))
        }
        var state = seed
        for _ in 0..<flips {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            var copy = whole
            copy[Int(state >> 33) % whole.count] ^= UInt8(truncatingIfNeeded: state >> 13) | 1
            damaged.append(copy)
        }
        return damaged
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}

/// Runs outside tools (exiftool, gifsicle, identify) as witnesses.
enum Tool {
    struct Output { var status: Int32; var stdout: String; var stderr: String }

    /// Runs `executable` (a name on PATH or a path). A missing one throws `Witness.Missing` naming it, so a check
    /// on a witness's output (say, "exiftool lists no GPS") cannot pass on the empty output of a tool not there.
    static func run(_ executable: String, _ arguments: [String]) throws -> Output {
        guard Witness.path(executable) != nil else { throw Witness.Missing(tool: executable) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [executable] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Whether a tool is on PATH (for tools that are not witnesses; a witness is required with `Witness.require`).
    static func available(_ executable: String) -> Bool { Witness.path(executable) != nil }

    /// The path of the built `sharepipe` executable next to the test bundle.
    static var sharepipe: String {
        let candidates = [".build/debug/sharepipe", ".build/release/sharepipe"]
        var bundle = URL(fileURLWithPath: CommandLine.arguments.first ?? "")
        // xctest/swift-testing runner lives in .build/<triple>/debug; the executable beside it.
        for _ in 0..<3 {
            let candidate = bundle.deletingLastPathComponent().appendingPathComponent("sharepipe").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            bundle.deleteLastPathComponent()
        }
        return candidates.map { Fixtures.root + "/" + $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
            ?? "sharepipe"
    }
}

/// Decoding outputs back to pixels, through the library's own decoders at full size.
enum Decode {
    /// Decodes an encoded image at full size (no resampling) into an 8-bit bitmap.
    static func bitmap(_ bytes: [UInt8]) throws -> Bitmap {
        let source = ImageSource.bytes(bytes)
        let format = try ImageFormat.detect(source)
        let decoder = FormatRegistry.descriptor(for: format).decoder
        let info = try decoder.probe(source, limits: ImageLimits())
        return try decoder.render(
            source, info: info, target: info.size, limits: ImageLimits(),
            meter: PixelMemoryMeter()
        ).bitmap
    }

    static func info(_ bytes: [UInt8]) throws -> ImageInfo {
        try SharePipe.inspect(.bytes(bytes))
    }
}

extension Bitmap {
    /// The RGB(A) of a pixel as Ints (gray expanded to three equal channels).
    func rgb(_ x: Int, _ y: Int) -> [Int] {
        let values = pixel(x: x, y: y).map(Int.init)
        switch layout {
        case .gray: return [values[0], values[0], values[0]]
        case .grayAlpha: return [values[0], values[0], values[0], values[1]]
        default: return values
        }
    }
}

/// Whether two colours are within `tolerance` on every channel.
func close(_ a: [Int], _ b: [Int], tolerance: Int) -> Bool {
    zip(a, b).allSatisfy { abs($0 - $1) <= tolerance }
}
