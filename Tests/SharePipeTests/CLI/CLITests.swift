import Foundation
import Testing
@testable import SharePipe

/// The `sharepipe` command run as a user would: real files in, real files and output lines out.
@Suite(.serialized) struct CLITests {
    static func sha(_ path: String) throws -> [UInt8] { try Fixtures.bytes(path) }

    /// A directory with good JPEGs, a truncated one and a text file named .jpg.
    static func makeBatch() throws -> String {
        let directory = Fixtures.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/in/sub", withIntermediateDirectories: true)
        for name in ["orient-6.jpg", "gps-thumb.jpg"] {
            try FileManager.default.copyItem(atPath: Fixtures.path("jpeg/" + name), toPath: directory + "/in/" + name)
        }
        try FileManager.default.copyItem(
            atPath: Fixtures.path("broken/truncated.jpg"), toPath: directory + "/in/truncated.jpg")
        try FileManager.default.copyItem(
            atPath: Fixtures.path("jpeg/orient-3.jpg"), toPath: directory + "/in/sub/orient-3.jpg")
        try Fixtures.write(Array("not an image".utf8), to: directory + "/in/sub/notes.jpg")
        return directory
    }

    @Test func batchGoesOnPastBadFilesAndEndsNonZeroWithASummary() throws {
        let directory = try Self.makeBatch()
        defer { Fixtures.cleanUp(directory) }
        let inputs = try FileManager.default.subpathsOfDirectory(atPath: directory + "/in").sorted()
        let before = try inputs.map { try? Self.sha(directory + "/in/" + $0) }

        let run = try Tool.run(
            Tool.sharepipe, ["prepare", directory + "/in", "--out", directory + "/out", "--recursive"])
        #expect(run.status == 1)
        #expect(run.stdout.contains("processed 3, failed 2, skipped 0"), "\(run.stdout)")
        #expect(run.stderr.contains("truncated.jpg: corrupt image"), "\(run.stderr)")
        #expect(
            run.stderr.contains("notes.jpg: unsupported format: not a JPEG, PNG, GIF, WebP, HEIC or AVIF"),
            "\(run.stderr)")
        // Outputs mirror the tree; bad files leave nothing behind, not even temporary files.
        let outputs = try FileManager.default.subpathsOfDirectory(atPath: directory + "/out").sorted()
        #expect(outputs == ["in", "in/gps-thumb.jpg", "in/orient-6.jpg", "in/sub", "in/sub/orient-3.jpg"])
        // Inputs are unchanged, byte for byte.
        let after = try inputs.map { try? Self.sha(directory + "/in/" + $0) }
        #expect(before == after)
    }

    @Test func jsonPrintsOneObjectPerFile() throws {
        let directory = try Self.makeBatch()
        defer { Fixtures.cleanUp(directory) }
        let run = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", directory + "/in/orient-6.jpg", directory + "/in/truncated.jpg",
                "--out", directory + "/out", "--json", "--max-bytes", "4000000",
            ])
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        let objects = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        let ok = try #require(objects.first { ($0["status"] as? String) == "ok" })
        #expect(ok["width"] as? Int == 600 && ok["height"] as? Int == 400)
        #expect(ok["inputWidth"] as? Int == 400 && ok["inputHeight"] as? Int == 600)
        #expect(ok["orientationApplied"] as? Int == 6)
        #expect((ok["removedMetadata"] as? [String])?.contains("exif") == true)
        // 400×600 within the caps, only its orientation to apply: its DCT blocks are turned, not re-encoded.
        #expect(ok["method"] as? String == "losslessTurn")
        #expect(ok["quality"] == nil || ok["quality"] is NSNull)
        let failed = try #require(objects.first { ($0["status"] as? String) == "failed" })
        #expect(failed["errorKind"] as? String == "corrupt")
        #expect(run.status == 1)
    }

    @Test func serviceProfileAppliesItsLimit() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let run = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", Fixtures.path("jpeg/large-4000x3000.jpg"), "--out", directory,
                "--service", "weibo",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        // With --service, outputs always go under out/<service>/, however many services are named.
        let output = try Fixtures.bytes(directory + "/weibo/large-4000x3000.jpg")
        #expect(output.count <= 5_000_000)
        #expect(try Decode.bitmap(output).size.shortEdge == 1080)
    }

    @Test func neverWritesOverAnInput() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let input = directory + "/orient-1.jpg"
        try FileManager.default.copyItem(atPath: Fixtures.path("jpeg/orient-1.jpg"), toPath: input)
        let before = try Fixtures.bytes(input)
        let run = try Tool.run(Tool.sharepipe, ["prepare", input, "--out", directory])
        #expect(run.status == 1)
        #expect(run.stderr.contains("would overwrite the input"))
        #expect(try Fixtures.bytes(input) == before)
    }

    @Test func skipExistingFinishesAnInterruptedBatch() throws {
        let directory = try Self.makeBatch()
        defer { Fixtures.cleanUp(directory) }
        _ = try Tool.run(Tool.sharepipe, ["prepare", directory + "/in/orient-6.jpg", "--out", directory + "/out"])
        let run = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", directory + "/in/orient-6.jpg", directory + "/in/gps-thumb.jpg",
                "--out", directory + "/out", "--skip-existing",
            ])
        #expect(run.status == 0)
        #expect(run.stdout.contains("processed 1, failed 0, skipped 1"), "\(run.stdout)")
    }

    @Test func badOptionsAreRefusedBeforeAnyWork() throws {
        let run = try Tool.run(Tool.sharepipe, ["prepare", "x.jpg", "--out", "never-written", "--quality", "140"])
        #expect(run.status != 0)
        #expect(run.stderr.contains("quality"))
        let unknown = try Tool.run(
            Tool.sharepipe, ["prepare", "x.jpg", "--out", "never-written", "--service", "myspace"])
        #expect(unknown.stderr.contains("unknown service 'myspace'"))
    }

    @Test func inspectReportsTheHeader() throws {
        let run = try Tool.run(Tool.sharepipe, ["inspect", "--json", Fixtures.path("jpeg/gps-orient6.jpg")])
        #expect(run.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as! [String: Any]
        #expect(object["width"] as? Int == 480 && object["height"] as? Int == 640)
        #expect(object["orientation"] as? Int == 6)
        #expect(
            (object["metadata"] as? [String]).map(Set.init) == [
                "exif", "gps", "exifThumbnail", "xmp", "iptc", "comment",
            ])
    }
}
