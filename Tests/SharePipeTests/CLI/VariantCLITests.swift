import Foundation
import Testing
@testable import SharePipe

/// `sharepipe prepare --variant NAME`: every file written beside the output, each in the report.
@Suite(.serialized) struct VariantCLITests {
    @Test func theVariantIsWrittenBesideTheOutputAndReported() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try FileManager.default.createDirectory(atPath: directory + "/in", withIntermediateDirectories: true)
        try Fixtures.write(VariantTests.photo, to: directory + "/in/IMG_1.jpg")
        let run = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", directory + "/in/IMG_1.jpg", "--out", directory + "/out", "--service", "mastodon",
                "--variant", "small", "--json",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let outputs = try FileManager.default.contentsOfDirectory(atPath: directory + "/out/mastodon").sorted()
        #expect(outputs == ["IMG_1.jpg", "IMG_1.small.jpg"])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(run.stdout.split(separator: "\n")[0].utf8)) as? [String: Any])
        let variants = try #require(object["variants"] as? [[String: Any]])
        #expect(variants.count == 1)
        let small = variants[0]
        #expect(
            small["name"] as? String == "small"
                && small["output"] as? String == directory + "/out/mastodon/IMG_1.small.jpg")
        let written = try Fixtures.bytes(directory + "/out/mastodon/IMG_1.small.jpg")
        let info = try Decode.info(written)
        #expect(small["bytes"] as? Int == written.count && small["format"] as? String == "jpeg")
        #expect(small["width"] as? Int == info.size.width && small["height"] as? Int == info.size.height)
        #expect(info.size.area <= 230_400 && small["quality"] as? Int == 90)
        #expect(object["bytes"] as? Int == (try Fixtures.bytes(directory + "/out/mastodon/IMG_1.jpg")).count)
        // In text, one line per file written.
        let text = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", directory + "/in/IMG_1.jpg", "--out", directory + "/text", "--service", "mastodon",
                "--variant", "small",
            ])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(
            text.stdout.contains(
                "  variant small → \(directory)/text/mastodon/IMG_1.small.jpg: \(info.size), \(written.count) bytes, JPEG q90"
            ),
            "\(text.stdout)")
    }

    @Test func aVariantNameThatAnotherInputsOutputCouldTakeIsRefusedNotOverwritten() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try FileManager.default.createDirectory(atPath: directory + "/in", withIntermediateDirectories: true)
        try Fixtures.write(VariantTests.photo, to: directory + "/in/a.jpg")
        try FileManager.default.copyItem(
            atPath: Fixtures.path("jpeg/orient-1.jpg"), toPath: directory + "/in/a.small.jpg")
        let run = try Tool.run(
            Tool.sharepipe,
            ["prepare", directory + "/in", "--out", directory + "/out", "--service", "mastodon", "--variant", "small"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("a.small.jpg could be the output of the input"), "\(run.stderr)")
        // The other input's own output is its own; the refused job wrote nothing.
        let outputs = try FileManager.default.subpathsOfDirectory(atPath: directory + "/out/mastodon").sorted()
        #expect(outputs.contains("in/a.small.jpg") && !outputs.contains("in/a.jpg"), "\(outputs)")
        let kept = try Decode.info(try Fixtures.bytes(directory + "/out/mastodon/in/a.small.jpg"))
        #expect(kept.size == (try Decode.info(try Fixtures.bytes(Fixtures.path("jpeg/orient-1.jpg")))).size)
    }

    @Test func theVariantFlagIsCheckedAtTheEntry() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let unknown = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", Fixtures.path("jpeg/orient-1.jpg"), "--out", directory, "--service", "x", "--variant",
                "small",
            ])
        #expect(unknown.status != 0)
        #expect(
            unknown.stderr.contains(
                "a variant the service profile declares (it declares none) for --variant, got 'small'"),
            "\(unknown.stderr)")
        let toStandardOutput = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", Fixtures.path("jpeg/orient-1.jpg"), "--out", "-", "--service", "mastodon", "--variant",
                "small",
            ])
        #expect(
            toStandardOutput.status != 0 && toStandardOutput.stderr.contains("--variant"), "\(toStandardOutput.stderr)")
    }
}
