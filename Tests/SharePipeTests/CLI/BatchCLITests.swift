import Foundation
import Testing
@testable import SharePipe

/// The batch as a user at any size meets it: nothing overwritten or dropped silently, outputs
/// never read back as inputs, every unasked change shown in the text, shards that split one list exactly,
/// `-` for standard input and output, and distinct exit statuses.
@Suite(.serialized) struct BatchCLITests {
    static func copy(_ fixture: String, to path: String) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Fixtures.path(fixture), toPath: path)
    }

    static func size(_ path: String) throws -> PixelSize { try Decode.bitmap(Fixtures.bytes(path)).size }

    static func jsonLines(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Runs `sharepipe` through bash, for redirections and pipes.
    static func shell(_ script: String) throws -> Tool.Output {
        try Tool.run("bash", ["-c", script, Tool.sharepipe])
    }

    // 1. Collisions across inputs: both files kept under predictable names, whichever --jobs.
    @Test(arguments: ["1", "2"]) func sameNamesFromTwoArgumentsAreBothKept(jobs: String) throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Self.copy("jpeg/tiny-16x16.jpg", to: directory + "/cam1/IMG_0001.jpg")
        try Self.copy("jpeg/orient-1.jpg", to: directory + "/cam2/IMG_0001.jpg")
        try Self.copy("jpeg/tiny-16x16.jpg", to: directory + "/a/pics/x.jpg")
        try Self.copy("jpeg/orient-1.jpg", to: directory + "/b/pics/x.jpg")
        let run = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", directory + "/cam1/IMG_0001.jpg", directory + "/cam2/IMG_0001.jpg",
                directory + "/a/pics", directory + "/b/pics", "--out", directory + "/o", "--jobs", jobs,
            ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("processed 4, failed 0"), "\(run.stdout)")
        #expect(filesBelow(directory + "/o") == ["IMG_0001.jpg", "IMG_0001~2.jpg", "pics/x.jpg", "pics~2/x.jpg"])
        #expect(try Self.size(directory + "/o/IMG_0001.jpg") == PixelSize(width: 16, height: 16))
        #expect(try Self.size(directory + "/o/IMG_0001~2.jpg") == PixelSize(width: 600, height: 400))
        #expect(try Self.size(directory + "/o/pics/x.jpg") == PixelSize(width: 16, height: 16))
        #expect(try Self.size(directory + "/o/pics~2/x.jpg") == PixelSize(width: 600, height: 400))
        #expect(run.stdout.contains("\(directory)/cam2/IMG_0001.jpg → \(directory)/o/IMG_0001~2.jpg"), "\(run.stdout)")
    }

    // 1. Collisions across format changes and services: files sharing a stem keep their whole names.
    @Test func formatChangesNeverMeetAnotherFilesOutput() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Self.copy("gif/loop3.gif", to: directory + "/in/pic.gif")
        try Self.copy("png/photo-160x120.png", to: directory + "/in/pic.png")
        try Self.copy("png/photo-160x120.png", to: directory + "/in/wall.png")
        try Self.copy("jpeg/orient-1.jpg", to: directory + "/in/wall.jpg")
        try Self.copy("gif/loop3.gif", to: directory + "/in/solo.gif")
        let run = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", directory + "/in", "--out", directory + "/o", "--jobs", "2",
                "--service", "bluesky", "--service", "instagram", "--animation", "still",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            filesBelow(directory + "/o") == [
                "bluesky/in/pic.gif.png", "bluesky/in/pic.png", "bluesky/in/solo.png", "bluesky/in/wall.jpg",
                "bluesky/in/wall.png",
                "instagram/in/pic.gif.jpg", "instagram/in/pic.png.jpg", "instagram/in/solo.jpg",
                "instagram/in/wall.jpg",
                "instagram/in/wall.png.jpg",
            ])
        // Each output holds its own input's picture.
        #expect(try Self.size(directory + "/o/bluesky/in/pic.gif.png") == PixelSize(width: 96, height: 64))
        #expect(try Self.size(directory + "/o/bluesky/in/pic.png") == PixelSize(width: 160, height: 120))
        #expect(try Self.size(directory + "/o/instagram/in/wall.jpg") == PixelSize(width: 600, height: 400))
        #expect(try Self.size(directory + "/o/instagram/in/wall.png.jpg") == PixelSize(width: 160, height: 120))
        // The format changes are reported in the text.
        #expect(run.stdout.contains("wall.png.jpg [instagram]") && run.stdout.contains("PNG → JPEG"), "\(run.stdout)")
    }

    // 1. What no name rule can keep apart fails, naming both files, and nothing is overwritten.
    @Test func anOutputNameOwnedByAnotherInputFailsNamingBoth() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Self.copy("jpeg/orient-1.jpg", to: directory + "/in/photo")
        try Self.copy("jpeg/tiny-16x16.jpg", to: directory + "/in/photo.jpg")
        let run = try Tool.run(Tool.sharepipe, ["prepare", directory + "/in", "--out", directory + "/o"])
        #expect(run.status == 1)
        #expect(
            run.stderr.contains("FAILED \(directory)/in/photo: ")
                && run.stderr.contains("belongs to the input \(directory)/in/photo.jpg"),
            "\(run.stderr)")
        #expect(filesBelow(directory + "/o") == ["in/photo.jpg"])
        #expect(try Self.size(directory + "/o/in/photo.jpg") == PixelSize(width: 16, height: 16))
    }

    // 2. The output tree inside the input tree is never read back, however many runs.
    @Test func outputInsideTheInputIsNeverAnInput() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        for (index, name) in ["jpeg/tiny-16x16.jpg", "jpeg/orient-6.jpg", "png/palette-8.png"].enumerated() {
            try Self.copy(name, to: directory + "/photos/sub\(index)/" + (name as NSString).lastPathComponent)
        }
        for _ in 0..<2 {
            let run = try Tool.run(
                Tool.sharepipe, ["prepare", directory + "/photos", "-r", "--out", directory + "/photos/out"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("processed 3, failed 0"), "\(run.stdout)")
        }
        #expect(filesBelow(directory + "/photos/out").count == 3)
        #expect(!FileManager.default.fileExists(atPath: directory + "/photos/out/photos/out"))
        // The output folder named as an input is skipped, and saying so is the answer.
        let again = try Tool.run(
            Tool.sharepipe, ["prepare", directory + "/photos/out", "--out", directory + "/photos/out"])
        #expect(again.status == 3)
        #expect(again.stderr.contains("inside --out skipped"), "\(again.stderr)")
    }

    // 3. An animation flattened to a still (--animation still), and a quality cap, are in the text and the JSON.
    @Test func unaskedChangesAreInTheTextOutput() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let gif = Fixtures.path("gif/loop3.gif")
        let frames = try SharePipe.inspect(.file(path: gif)).frameCount
        let text = try Tool.run(
            Tool.sharepipe, ["prepare", gif, "--out", directory, "--service", "bluesky", "--animation", "still"])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(
            text.stdout.contains("adjusted: ") && text.stdout.contains("first frame only (")
                && text.stdout.contains("\(frames)") && text.stdout.contains("animations written as stills)"),
            "\(text.stdout)")
        #expect(text.stdout.contains("GIF → PNG (accepted formats)"), "\(text.stdout)")
        let json = try Tool.run(
            Tool.sharepipe,
            ["prepare", gif, "--out", directory + "/j", "--service", "bluesky", "--animation", "still", "--json"])
        let object = try #require(Self.jsonLines(json.stdout).first)
        #expect(
            (object["adjustments"] as? [String])?.contains { $0.hasPrefix("first frame only") } == true, "\(object)")
        #expect(object["version"] as? String == SharePipeVersion.current)
        // A quality capped at the source's (Annex K q85 here, as fine as SharePipe's q84; asked 95) shows in the
        // text too.
        let jpeg = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", Fixtures.path("jpeg/large-4000x3000.jpg"), "--out", directory + "/q",
                "--quality", "95",
            ])
        #expect(
            jpeg.stdout.contains("; adjusted: quality capped at q84, as fine as the source's q85 tables"),
            "\(jpeg.stdout)")
        // Frames dropped for a frame limit (a profile allowing 2 frames; the GIF has 3).
        let profiles = directory + "/profiles.json"
        try Fixtures.write(
            Array(
                #"{"profiles": [{"name": "twoframes", "maxStillBytes": 5000000, "animated": {"maxFrames": 2}}]}"#.utf8),
            to: profiles)
        let decimated = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", gif, "--out", directory + "/d", "--profiles", profiles,
                "--service", "twoframes",
            ])
        #expect(decimated.status == 0, "\(decimated.stderr)")
        #expect(decimated.stdout.contains("adjusted: frames decimated"), "\(decimated.stdout)")
    }

    // 4 (functional part; RSS flatness is measured in bench/): three shards at once over one list, one
    // report file: every file done exactly once.
    @Test func threeShardsAtOnceDoEveryFileExactlyOnce() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let count = 24
        var list = ""
        for index in 0..<count {
            let relative = "lib/\(index % 4)/p\(index).jpg"
            try Self.copy("jpeg/tiny-16x16.jpg", to: directory + "/" + relative)
            list += relative + "\u{0}"
        }
        try Fixtures.write(Array(list.utf8), to: directory + "/list")
        let processes = try (1...3).map { shard -> Process in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Tool.sharepipe)
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
            process.arguments = [
                "prepare", "--files-from", "list", "-0", "--shard", "\(shard)/3", "--out", "out",
                "--report", "report.jsonl", "--jobs", "2",
            ]
            process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
            try process.run()
            return process
        }
        for process in processes { process.waitUntilExit() }
        #expect(processes.allSatisfy { $0.terminationStatus == 0 }, "\(processes.map(\.terminationStatus))")
        let lines = Self.jsonLines(try String(contentsOfFile: directory + "/report.jsonl", encoding: .utf8))
        #expect(lines.count == count)
        #expect(Set(lines.compactMap { $0["input"] as? String }).count == count)
        #expect(
            lines.allSatisfy { $0["status"] as? String == "ok" && $0["version"] as? String == SharePipeVersion.current }
        )
        #expect(filesBelow(directory + "/out").count == count)
        #expect(FileManager.default.fileExists(atPath: directory + "/out/lib/3/p23.jpg"))
        // The partition is a partition: the three shares planned again (--dry-run) are disjoint, non-empty and
        // cover the list.
        var planned: [Set<String>] = []
        for shard in 1...3 {
            let dry = try Self.shell(
                "cd '\(directory)' && \"$0\" prepare --files-from list -0 --shard \(shard)/3 --out dry --dry-run")
            #expect(dry.status == 0 && dry.stdout.contains("would write "), "\(dry.stdout)\(dry.stderr)")
            planned.append(
                Set(
                    dry.stdout.split(separator: "\n").filter { $0.hasPrefix("would write ") }
                        .map { $0.dropFirst("would write ".count).split(separator: " ")[0].description }))
        }
        #expect(planned.allSatisfy { !$0.isEmpty } && planned.map(\.count).reduce(0, +) == count)
        #expect(planned.reduce(Set<String>()) { $0.union($1) }.count == count)
        #expect(!FileManager.default.fileExists(atPath: directory + "/dry"), "--dry-run writes nothing")
    }

    // --files-from reads a list from standard input, one path a line.
    @Test func filesFromStandardInput() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Self.copy("jpeg/tiny-16x16.jpg", to: directory + "/a/one.jpg")
        try Self.copy("png/palette-8.png", to: directory + "/b/two.png")
        let run = try Self.shell(
            "cd '\(directory)' && printf 'a/one.jpg\\n./b/two.png\\n' | \"$0\" prepare --files-from - --out o --report o/reports/r.jsonl"
        )
        #expect(run.status == 0, "\(run.stderr)")
        // The report (its folder created, inside --out) lists both files; it is never read back as an input.
        #expect(filesBelow(directory + "/o") == ["a/one.jpg", "b/two.png", "reports/r.jsonl"])
        let lines = Self.jsonLines(try String(contentsOfFile: directory + "/o/reports/r.jsonl", encoding: .utf8))
        #expect(lines.compactMap { $0["input"] as? String }.sorted() == ["./b/two.png", "a/one.jpg"])
    }

    // 5. `-` in and out: cat a.jpg | sharepipe prepare - --out - > b.jpg
    @Test func standardInputToStandardOutput() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let input = Fixtures.path("jpeg/gps-orient6.jpg")
        let run = try Self.shell("cat '\(input)' | \"$0\" prepare - --out - --strip all > '\(directory)/b.jpg'")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("stdin → -"), "\(run.stderr)")
        let bytes = try Fixtures.bytes(directory + "/b.jpg")
        #expect(try Decode.bitmap(bytes).size == PixelSize(width: 640, height: 480))
        #expect(try Decode.info(bytes).metadataKinds.isDisjoint(with: [.exif, .gps, .xmp]))
        // One image only; a terminal is never written an image.
        let two = try Tool.run(Tool.sharepipe, ["prepare", input, input, "--out", "-"])
        #expect(two.status == 2 && two.stderr.contains("takes exactly one image"), "\(two.stderr)")
    }

    // 5. Exit statuses: 0 done, 1 some failed, 2 usage (naming the flag), 3 nothing to do or fatal I/O.
    @Test func exitStatusesAreDistinct() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try Self.copy("jpeg/tiny-16x16.jpg", to: directory + "/in/sub/a.jpg")
        try Self.copy("broken/truncated.jpg", to: directory + "/bad/t.jpg")
        try Self.copy("jpeg/tiny-16x16.jpg", to: directory + "/bad/ok.jpg")
        let out = directory + "/o"
        #expect(try Tool.run(Tool.sharepipe, ["prepare", directory + "/in", "-r", "--out", out]).status == 0)
        #expect(try Tool.run(Tool.sharepipe, ["prepare", directory + "/bad", "--out", out]).status == 1)
        let quality = try Tool.run(Tool.sharepipe, ["prepare", directory + "/in", "--out", out, "--quality", "30"])
        #expect(
            quality.status == 2 && quality.stderr.contains("--min-quality") && !quality.stderr.contains("minQuality"),
            "\(quality.stderr)")
        let shard = try Tool.run(Tool.sharepipe, ["prepare", directory + "/in", "--out", out, "--shard", "4/3"])
        #expect(shard.status == 2 && shard.stderr.contains("--shard"), "\(shard.stderr)")
        let nothing = try Tool.run(Tool.sharepipe, ["prepare", directory + "/in", "--out", out])
        #expect(
            nothing.status == 3 && nothing.stderr.contains("1 subfolder(s) skipped: use --recursive"),
            "\(nothing.stderr)")
        // Files found beside subfolders that were not walked: prepared, and the skipped subfolders named.
        // A checksum manifest beside the photos is a sidecar, not a failed image.
        try Self.copy("jpeg/tiny-16x16.jpg", to: directory + "/in/top.jpg")
        _ = FileManager.default.createFile(atPath: directory + "/in/MANIFEST.sha256", contents: Data("x\n".utf8))
        let shallow = try Tool.run(Tool.sharepipe, ["prepare", directory + "/in", "--out", directory + "/o2"])
        #expect(
            shallow.status == 0 && shallow.stdout.contains("processed 1, failed 0")
                && shallow.stderr.contains("1 subfolder(s) not walked: use --recursive"),
            "\(shallow.stdout)\(shallow.stderr)")
        _ = FileManager.default.createFile(atPath: directory + "/file", contents: Data())
        let fatal = try Tool.run(Tool.sharepipe, ["prepare", directory + "/in", "-r", "--out", directory + "/file/o"])
        #expect(fatal.status == 3 && fatal.stderr.split(separator: "\n").count == 1, "\(fatal.stderr)")
        let version = try Tool.run(Tool.sharepipe, ["--version"])
        #expect(version.status == 0 && version.stdout == SharePipeVersion.current + "\n")
    }
}
