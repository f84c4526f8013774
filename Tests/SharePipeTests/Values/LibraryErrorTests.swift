import Foundation
import Testing
@testable import SharePipe

/// Errors say what happened: a file a library cannot decode for want of a feature is
/// `unsupportedFormat` naming the feature, not `corrupt`; no message carries a library's trailing newline.
@Suite struct LibraryErrorTests {
    @Test func aCodecLibheifLacksIsUnsupportedNotCorrupt() throws {
        // A single-image HEIC whose item type says VVC (ISO/IEC 23008-12 `vvc1`), which libheif 1.15 cannot decode.
        var bytes = try Fixtures.bytes(Fixtures.path("heif/mirror.heic"))
        let infe = try #require(APNGTests.offset(of: "infe", in: bytes))
        let type = infe + 8 + 4 + 2 + 2
        try #require(Array(bytes[type..<type + 4]) == Array("hvc1".utf8))
        bytes.replaceSubrange(type..<type + 4, with: Array("vvc1".utf8))
        #expect {
            _ = try SharePipe.prepare(.bytes(bytes), options: ServiceProfile.x.options())
        } throws: { error in
            guard case SharePipeError.unsupportedFormat(let file, _, let reason)? = error as? SharePipeError else {
                return false
            }
            return file == "<memory>" && reason.contains("Unsupported") && !reason.hasSuffix("\n")
        }
    }

    @Test func libheifsTrailingNewlineIsGone() throws {
        // libheif 1.15 ends this message ("… (points to file position 2710)") with a newline.
        let path = Fixtures.path("broken/truncated.heic")
        do {
            _ = try SharePipe.prepare(.file(path: path), options: ServiceProfile.x.options())
            Issue.record("a truncated HEIC was prepared")
        } catch let error as SharePipeError {
            guard case .corrupt(let file, _, let reason) = error else { Issue.record("\(error)"); return }
            #expect(file == path && reason.contains("points to file position"))
            #expect(!reason.contains("\n") && !"\(error)".contains("\n"), "\(reason.debugDescription)")
        }
        // The CLI's line for it is one line.
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let run = try Tool.run(Tool.sharepipe, ["prepare", path, "--out", directory, "--service", "x"])
        let failed = (run.stdout + run.stderr).split(separator: "\n").filter { $0.hasPrefix("FAILED") }
        #expect(failed.count == 1 && failed[0].hasSuffix("(for x)"), "\(run.stdout)\(run.stderr)")
    }
}
