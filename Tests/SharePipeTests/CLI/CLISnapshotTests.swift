import Foundation
import Testing

/// The CLI's help pages and its `--json` report, compared with the snapshots committed in `CLI/Snapshots/`,
/// so that a flag, a help line or a report field cannot change without the change showing in a diff.
///
/// On a difference the test fails with a unified diff (expected, then actual). When the change is intended,
/// re-record and commit the new snapshots with the diff:
///
///     SHAREPIPE_RECORD_SNAPSHOTS=1 swift test --skip-build --filter CLISnapshotTests
///
/// Recording writes every snapshot and fails the run once more (so a recording run never passes by
/// accident); the next run passes. Help is rendered at a fixed width (`COLUMNS`); in the JSON report the
/// paths of this machine (in `input`, `output`, `error`) and the release (`version`) are replaced by
/// placeholders, and every line is printed with sorted keys, one field a line.
@Suite(.serialized) struct CLISnapshotTests {
    /// Where the committed snapshots live.
    static let directory = Fixtures.root + "/Tests/SharePipeTests/CLI/Snapshots/"
    static let recording = ProcessInfo.processInfo.environment["SHAREPIPE_RECORD_SNAPSHOTS"] == "1"

    /// The help of the command and of each subcommand.
    @Test(arguments: [
        ("help.txt", ["--help"]),
        ("help-prepare.txt", ["prepare", "--help"]),
        ("help-inspect.txt", ["inspect", "--help"]),
        ("help-services.txt", ["services", "--help"]),
        ("help-options.txt", ["options", "--help"]),
    ])
    func help(snapshot: String, arguments: [String]) throws {
        let run = try Self.sharepipe(arguments)
        #expect(run.status == 0, "\(run.stderr)")
        try Self.compare(run.stdout, with: snapshot)
    }

    /// `prepare --json` on committed, generated fixtures: a lossless turn, a re-encode under X's limits that
    /// downscales and strips camera metadata, a metadata-only PNG rewrite, and a truncated file that fails.
    @Test func prepareJSON() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let inputs = ["jpeg/orient-6.jpg", "jpeg/large-4000x3000.jpg", "png/palette-meta.png", "broken/truncated.jpg"]
        let run = try Self.sharepipe(
            ["prepare"] + inputs.map(Fixtures.path) + ["--out", directory, "--json", "--service", "x"])
        #expect(run.status == 1, "a failed file ends the batch with status 1: \(run.stderr)")
        let lines = try run.stdout.split(separator: "\n").map { line in
            var object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            for (key, value) in object {
                guard let text = value as? String else { continue }
                object[key] =
                    key == "version"
                    ? "<version>"
                    : text.replacingOccurrences(of: Fixtures.path(""), with: "<TestImages>/")
                        .replacingOccurrences(of: directory, with: "<out>")
            }
            let data = try JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
            return String(decoding: data, as: UTF8.self)
        }
        // The batch prepares files in parallel: its lines come in the order files finish.
        try Self.compare(lines.sorted().joined(separator: "\n") + "\n", with: "prepare-json.txt")
    }

    /// Runs the built `sharepipe` at a fixed terminal width, in a clean environment.
    static func sharepipe(_ arguments: [String]) throws -> Tool.Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Tool.sharepipe)
        process.arguments = arguments
        process.environment = ["COLUMNS": "100", "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Tool.Output(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Fails with a unified diff when `actual` differs from the snapshot `name`; records it when asked to.
    static func compare(_ actual: String, with name: String, sourceLocation: SourceLocation = #_sourceLocation)
        throws
    {
        let path = directory + name
        if recording {
            try Data(actual.utf8).write(to: URL(fileURLWithPath: path))
            Issue.record("recorded \(name): review `git diff` and commit it", sourceLocation: sourceLocation)
            return
        }
        guard let expected = try? String(contentsOfFile: path, encoding: .utf8) else {
            Issue.record(
                "no snapshot \(name): record it (SHAREPIPE_RECORD_SNAPSHOTS=1)", sourceLocation: sourceLocation)
            return
        }
        guard actual != expected else { return }
        let actualPath = Fixtures.temporaryDirectory() + "/" + name
        defer { Fixtures.cleanUp((actualPath as NSString).deletingLastPathComponent) }
        try Data(actual.utf8).write(to: URL(fileURLWithPath: actualPath))
        let diff = try Tool.run("diff", ["-u", path, actualPath]).stdout
        Issue.record(
            "\(name) differs from its snapshot (if intended: SHAREPIPE_RECORD_SNAPSHOTS=1, then commit):\n\(diff)",
            sourceLocation: sourceLocation)
    }
}
