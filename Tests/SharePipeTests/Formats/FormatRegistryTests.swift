import Foundation
import Testing
@testable import SharePipe

/// `FormatRegistry.all` is the one list of formats: these check that it covers `ImageFormat`, that its
/// signatures never claim the same file twice, and that the lists outside the library (the fuzz targets)
/// follow it.
struct FormatRegistryTests {
    @Test("Every ImageFormat case has exactly one descriptor, and descriptor(for:) hands it out")
    func everyCaseHasOneDescriptor() {
        let formats = (FormatRegistry.all + FormatRegistry.writtenOnly).map(\.format)
        #expect(formats.count == Set(formats).count, "\(formats)")
        #expect(Set(formats) == Set(ImageFormat.allCases))
        for descriptor in FormatRegistry.all + FormatRegistry.writtenOnly {
            #expect(FormatRegistry.descriptor(for: descriptor.format).format == descriptor.format)
            #expect(descriptor.format.fileExtension == descriptor.fileExtension)
            #expect(descriptor.format.mediaType == descriptor.mediaType)
        }
    }

    @Test("No committed test image is claimed by two signatures, and each sniffs as the format its decoder reads")
    func signaturesAreExclusive() throws {
        let root = Fixtures.root + "/TestImages"
        let files = try #require(FileManager.default.enumerator(atPath: root)).compactMap { $0 as? String }
        var sniffed = 0
        for file in files {
            let path = root + "/" + file
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
                continue
            }
            let prefix = Array(try Fixtures.bytes(path).prefix(64))
            let claims = FormatRegistry.all.filter { $0.matches(prefix) }.map(\.format)
            #expect(claims.count <= 1, "\(file): \(claims)")
            guard let format = claims.first else { continue }
            sniffed += 1
            #expect(ImageFormat.sniff(prefix) == format, "\(file)")
            // What the signature claims, the decoder reads (or rejects as damaged, never as another format).
            if let info = try? SharePipe.inspect(.file(path: path)) { #expect(info.format == format, "\(file)") }
        }
        #expect(sniffed > 100, "only \(sniffed) images sniffed under \(root)")
    }

    @Test("The unrecognised-signature message names every format")
    func unknownSignatureNamesEveryFormat() {
        let bytes = Array("not an image at all".utf8)
        #expect(throws: SharePipeError.self) { try SharePipe.inspect(.bytes(bytes)) }
        do {
            _ = try SharePipe.inspect(.bytes(bytes))
        } catch {
            let message = "\(error)"
            let names = FormatRegistry.all.map(\.signatureName)
            let list = names.dropLast().joined(separator: ", ") + " or " + names.last!
            #expect(message.hasSuffix("not a \(list) (unrecognised signature)"), "\(message)")
            for descriptor in FormatRegistry.all { #expect(message.contains(descriptor.signatureName), "\(message)") }
        }
    }

    /// Fuzz/Package.swift makes a target of every `Fuzz/Sources/Fuzz<Name>` folder and scripts/fuzz runs
    /// each; every format must be fed by one of them (`format: .<case>`; FuzzHEIF feeds HEIF and AVIF).
    @Test("Every format has a fuzz target")
    func everyFormatIsFuzzed() throws {
        let sources = Fixtures.root + "/Fuzz/Sources"
        let targets = try FileManager.default.contentsOfDirectory(atPath: sources)
            .filter { $0.hasPrefix("Fuzz") && $0 != "FuzzSupport" }
        #expect(targets.count >= 6, "\(targets)")
        let mains = try targets.map { try String(contentsOfFile: "\(sources)/\($0)/main.swift", encoding: .utf8) }
        for format in ImageFormat.allCases {
            #expect(
                mains.contains { $0.contains(".\(format.rawValue)") },
                "no fuzz target under \(sources) feeds .\(format.rawValue)")
        }
        let manifest = try String(contentsOfFile: Fixtures.root + "/Fuzz/Package.swift", encoding: .utf8)
        #expect(
            manifest.contains("contentsOfDirectory"),
            "Fuzz/Package.swift no longer derives its targets from Fuzz/Sources")
    }
}
