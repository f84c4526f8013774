import Foundation
import Testing
@testable import SharePipe

/// Every input the fuzzers ever crashed on (Fuzz/crashers/<target>/, saved by scripts/fuzz) replayed through
/// the same options and checks as the fuzz harness, so a crasher, once fixed, stays fixed.
///
/// Keep `options(forLength:)` and `check` in step with Fuzz/Sources/FuzzSupport/FuzzHarness.swift (the fuzz
/// package cannot be a dependency of this test target).
@Suite struct HardeningFuzzRegressionTests {
    static let crashers: [String] = {
        let root = Fixtures.root + "/Fuzz/crashers"
        // Every target's folder (scripts/fuzz names them after Fuzz/Sources/Fuzz<Name>, lowercased).
        let targets = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).filter { !$0.hasPrefix(".") }
            .sorted()
        return targets.flatMap { target in
            ((try? FileManager.default.contentsOfDirectory(atPath: root + "/" + target)) ?? [])
                .filter { !$0.hasPrefix(".") }.sorted().map { "\(target)/\($0)" }
        }
    }()

    static let limits = ImageLimits(
        maxDimension: 4096, maxPixels: 4_000_000, maxFrames: 64, maxTotalFramePixels: 16_000_000,
        maxInputBytes: 1 << 20, maxDecoderMemory: 64 << 20)

    static func options(forLength count: Int) -> PrepareOptions {
        let strip = StripMode.allCases[count % StripMode.allCases.count]
        var options = PrepareOptions(
            maxShortEdge: 96, maxBytes: (count / 3) % 2 == 1 ? 2048 : nil, strip: strip,
            limits: limits, strategy: (count / 6) % 2 == 1 ? .cpuFirst : .memoryFirst,
            minShortEdge: 16)
        options.animation.maxFrames = 16
        return options
    }

    /// What the harness checks, as test expectations.
    static func replay(_ bytes: [UInt8], name: String) {
        let options = options(forLength: bytes.count)
        let result: PreparedImage
        do {
            result = try SharePipe.prepare(.bytes(bytes), options: options)
        } catch let error as SharePipeError {
            #expect(error.description.hasPrefix("<memory>: "), "\(name): \(error)")
            return
        } catch {
            Issue.record("\(name): not a SharePipeError: \(error)")
            return
        }
        #expect(ImageFormat.sniff(Array(result.bytes.prefix(16))) == result.format, "\(name)")
        let limit = result.frameCount > 1 ? options.animatedMaxBytes : options.maxBytes
        if let limit { #expect(result.byteCount <= limit, "\(name)") }
        guard let info = try? SharePipe.inspect(.bytes(result.bytes)) else {
            Issue.record("\(name): the output cannot be read back")
            return
        }
        #expect(info.format == result.format && info.size == result.size, "\(name)")
        if result.method == .reencoded { #expect(result.size.shortEdge <= options.maxShortEdge, "\(name)") }
        switch options.strip {
        case .all: #expect(info.metadataKinds.subtracting([.icc]).isEmpty, "\(name): \(info.metadataKinds)")
        case .gps:
            #expect(
                info.metadataKinds.isDisjoint(with: [.gps, .exifThumbnail, .xmp, .iptc]),
                "\(name): \(info.metadataKinds)")
        case .none: break
        }
    }

    @Test func everySavedCrasherNowPassesTheHarnessChecks() throws {
        // No crasher found (the folder moved, emptied, or the root is wrong) would replay nothing and pass.
        try #require(!Self.crashers.isEmpty, "no saved crashers under \(Fixtures.root)/Fuzz/crashers")
        for name in Self.crashers {
            Self.replay(try Fixtures.bytes(Fixtures.root + "/Fuzz/crashers/" + name), name: name)
        }
    }

    /// The harness checks themselves, on inputs that exercise every branch: a good image in each strip mode
    /// (by length), a broken one, and one whose format is not the target's.
    @Test func theReplayChecksHoldOnKnownInputs() throws {
        var jpeg = try Fixtures.bytes(Fixtures.path("jpeg/gps-orient6.jpg"))
        for _ in 0..<6 {
            Self.replay(jpeg, name: "gps-orient6.jpg + \(jpeg.count % 6)")
            jpeg.append(0)  // bytes after EOI are ignored; the length picks the next options
        }
        Self.replay(try Fixtures.bytes(Fixtures.path("broken/truncated.jpg")), name: "truncated.jpg")
        Self.replay(try Fixtures.bytes(Fixtures.path("png/palette-meta.png")), name: "palette-meta.png")
        Self.replay(try Fixtures.bytes(Fixtures.path("gif/metadata.gif")), name: "metadata.gif")
        for name in ["gps-orient6.webp", "lossless-alpha.webp", "animated.webp"] {
            var webp = try Fixtures.bytes(Fixtures.path("webp/" + name))
            for _ in 0..<12 {
                Self.replay(webp, name: "\(name) + \(webp.count % 12)")
                webp.append(0)  // bytes after the RIFF data are ignored; the length picks the next options
            }
        }
        Self.replay(try Fixtures.bytes(Fixtures.path("broken/truncated.webp")), name: "truncated.webp")
    }
}
