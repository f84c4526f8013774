import Foundation
import Testing
@testable import SharePipe

/// A `sharepipe` (or strace) process in the background, its output going to files so it can never block
/// on a full pipe.
final class BackgroundRun {
    let process = Process()
    private let logs: String

    init(_ arguments: [String], logs: String, underStrace straceArguments: [String]? = nil) throws {
        self.logs = logs
        if let straceArguments {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["strace"] + straceArguments + ["--", Tool.sharepipe] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: Tool.sharepipe)
            process.arguments = arguments
        }
        for name in ["stdout", "stderr"] {
            _ = FileManager.default.createFile(atPath: "\(logs)/\(name).log", contents: nil)
        }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: logs + "/stdout.log"))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logs + "/stderr.log"))
        try process.run()
    }

    var stdout: String { (try? String(contentsOfFile: logs + "/stdout.log", encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOfFile: logs + "/stderr.log", encoding: .utf8)) ?? "" }

    /// The first child of the process (sharepipe under strace).
    var child: pid_t? {
        let pid = process.processIdentifier
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8) else {
            return nil
        }
        return text.split(separator: " ").first.flatMap { pid_t($0) }
    }

    /// Waits until the process ends (true) or `seconds` pass (false, and the process is killed).
    func wait(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            return false
        }
        process.waitUntilExit()
        return true
    }
}

/// Polls `condition` every 10 ms for up to `seconds`.
func eventually(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// Files below `directory`, relative, sorted.
func filesBelow(_ directory: String) -> [String] {
    ((try? FileManager.default.subpathsOfDirectory(atPath: directory)) ?? [])
        .filter { !FileIO.isDirectory(directory + "/" + $0) }.sorted()
}

/// Nothing lost: inputs are only ever read, outputs appear whole or not at all, an interrupted batch leaves
/// no temporary file and finishes with `--skip-existing`, and an output directory that cannot be written
/// (read-only, full, not a directory) is a clear error for each file.
///
/// The tests run as root, which ignores permission bits, so "read-only" is made three other ways: a path
/// through a regular file (ENOTDIR, always available), an immutable directory (`chattr +i`, where the file
/// system supports it), and a full disk is a 64 KiB tmpfs mounted for the test (root with CAP_SYS_ADMIN);
/// the last two are skipped, with their reason, where they cannot be set up.
@Suite(.tags(.witness), .skipped(whenListed: "witness"), .serialized) struct HardeningFilesTests {
    static func command(_ arguments: [String]) -> Int32 {
        (try? Tool.run(arguments[0], Array(arguments.dropFirst())).status) ?? -1
    }

    /// Whether `chattr +i` works on a directory under the temporary directory.
    static let canMakeImmutable: Bool = {
        let directory = Fixtures.temporaryDirectory()
        defer { _ = command(["chattr", "-i", directory]); Fixtures.cleanUp(directory) }
        guard command(["chattr", "+i", directory]) == 0 else { return false }
        return !FileManager.default.createFile(atPath: directory + "/probe", contents: Data([1]))
    }()

    /// Whether a small tmpfs can be mounted (and unmounted) here.
    static let canMountTmpfs: Bool = {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        guard command(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", directory]) == 0 else { return false }
        return command(["umount", directory]) == 0
    }()

    static let hasStrace = Tool.available("strace")

    /// A directory `in/` with `count` copies of gps-thumb.jpg (800×600 with metadata).
    static func batch(_ count: Int) throws -> String {
        let directory = Fixtures.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/in", withIntermediateDirectories: true)
        for index in 0..<count {
            try FileManager.default.copyItem(
                atPath: Fixtures.path("jpeg/gps-thumb.jpg"),
                toPath: directory + String(format: "/in/photo-%03d.jpg", index))
        }
        return directory
    }

    static func temporaryFiles(_ directory: String) -> [String] {
        filesBelow(directory).filter { $0.hasSuffix(".tmp") }
    }

    /// Every output decodes whole: an interrupted run never leaves a partial file under a final name.
    static func expectWholeOutputs(_ directory: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for file in filesBelow(directory) {
            #expect(throws: Never.self, "\(file) is not a whole JPEG", sourceLocation: sourceLocation) {
                _ = try Decode.bitmap(Fixtures.bytes(directory + "/" + file))
            }
        }
    }

    /// Finishes an interrupted batch with --skip-existing and checks the summary and every output.
    static func finish(_ directory: String, count: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let existing = filesBelow(directory + "/out").count
        let rerun = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", directory + "/in", "--out", directory + "/out",
                "--max-short-edge", "500", "--skip-existing", "--jobs", "2",
            ])
        #expect(rerun.status == 0, "\(rerun.stderr)", sourceLocation: sourceLocation)
        #expect(
            rerun.stdout.contains("processed \(count - existing), failed 0, skipped \(existing)"), "\(rerun.stdout)",
            sourceLocation: sourceLocation)
        #expect(filesBelow(directory + "/out").count == count, sourceLocation: sourceLocation)
        #expect(temporaryFiles(directory + "/out").isEmpty, sourceLocation: sourceLocation)
        expectWholeOutputs(directory + "/out", sourceLocation: sourceLocation)
    }

    @Test(arguments: [SIGINT, SIGTERM])
    func interruptedBatchLeavesNoTemporaryFilesAndFinishesWithSkipExisting(_ signal: Int32) throws {
        let count = 30
        let directory = try Self.batch(count)
        defer { Fixtures.cleanUp(directory) }
        let run = try BackgroundRun(
            [
                "prepare", directory + "/in", "--out", directory + "/out", "--max-short-edge", "500",
                "--jobs", "2",
            ], logs: directory)
        #expect(eventually(seconds: 60) { filesBelow(directory + "/out").contains { $0.hasSuffix(".jpg") } })
        kill(run.process.processIdentifier, signal)
        #expect(run.wait(seconds: 60))
        #expect(run.process.terminationStatus == 128 + signal, "\(run.stderr)")
        #expect(run.stderr.contains("interrupted: temporary files removed; re-run with --skip-existing to finish"))
        #expect(Self.temporaryFiles(directory + "/out").isEmpty, "\(filesBelow(directory + "/out"))")
        let done = filesBelow(directory + "/out").count
        #expect(done > 0 && done < count, "the signal should land mid-batch (\(done) of \(count) done)")
        Self.expectWholeOutputs(directory + "/out")
        try Self.finish(directory, count: count)
    }

    /// Deterministic: strace holds every rename for 3 s, so temporary outputs are certainly on disk when
    /// SIGINT arrives, and the handler must remove them.
    @Test(.enabled(if: hasStrace, "needs strace to delay rename(2)"))
    func interruptWhileTemporaryFilesAreOnDiskRemovesThem() throws {
        let count = 8
        let directory = try Self.batch(count)
        defer { Fixtures.cleanUp(directory) }
        // LeakSanitizer cannot work under ptrace: it is switched off for the traced process (sanitized builds).
        let delays = [
            "-f", "-qq", "-o", "/dev/null", "-E", "ASAN_OPTIONS=detect_leaks=0", "-e",
            "trace=rename,renameat,renameat2",
            "-e", "inject=rename,renameat,renameat2:delay_enter=3000000",
        ]
        let run = try BackgroundRun(
            ["prepare", directory + "/in", "--out", directory + "/out", "--jobs", "2"],
            logs: directory, underStrace: delays)
        #expect(eventually(seconds: 60) { !Self.temporaryFiles(directory + "/out").isEmpty })
        let inFlight = Self.temporaryFiles(directory + "/out")
        let child = try #require(run.child)
        kill(child, SIGINT)
        #expect(run.wait(seconds: 60))
        #expect(run.process.terminationStatus == 128 + SIGINT, "\(run.stderr)")
        #expect(!inFlight.isEmpty)
        #expect(Self.temporaryFiles(directory + "/out").isEmpty, "left behind: \(filesBelow(directory + "/out"))")
        Self.expectWholeOutputs(directory + "/out")
        try Self.finish(directory, count: count)
    }

    /// An --out that cannot be written is fatal: one error naming --out, exit status 3, before any file is read.
    @Test func outputPathThroughARegularFileIsOneFatalError() throws {
        let directory = try Self.batch(3)
        defer { Fixtures.cleanUp(directory) }
        _ = FileManager.default.createFile(atPath: directory + "/blocker", contents: Data("x".utf8))
        let run = try Tool.run(Tool.sharepipe, ["prepare", directory + "/in", "--out", directory + "/blocker/out"])
        #expect(run.status == 3)
        #expect(
            run.stderr == "sharepipe: cannot write to --out \(directory)/blocker/out: Not a directory\n",
            "\(run.stderr)")
        #expect(run.stdout.isEmpty, "\(run.stdout)")
    }

    @Test(.enabled(if: canMakeImmutable, "needs chattr +i on the temporary directory's file system"))
    func readOnlyOutputDirectoryIsAClearErrorAndLeavesNothing() throws {
        let directory = try Self.batch(3)
        let out = directory + "/out/in"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        #expect(Self.command(["chattr", "+i", out]) == 0)
        defer { _ = Self.command(["chattr", "-i", out]); Fixtures.cleanUp(directory) }
        let run = try Tool.run(Tool.sharepipe, ["prepare", directory + "/in", "--out", directory + "/out", "--json"])
        #expect(run.status == 1)
        let objects = run.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(objects.count == 3)
        for object in objects {
            #expect(object["errorKind"] as? String == "unwritable")
            #expect(
                (object["error"] as? String)?.contains("cannot create a file in \(out): Operation not permitted")
                    == true,
                "\(object)")
        }
        #expect(filesBelow(out).isEmpty)
    }

    @Test(.enabled(if: canMountTmpfs, "needs root and mount(8) for a 64 KiB tmpfs"))
    func fullDiskIsAClearErrorAndLeavesNoPartialFile() throws {
        let directory = Fixtures.temporaryDirectory()
        let out = directory + "/full"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        #expect(Self.command(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", out]) == 0)
        defer { _ = Self.command(["umount", out]); Fixtures.cleanUp(directory) }
        // A 16×16 output fits; the noisy 2000×1500 one (hundreds of kB at full size) cannot.
        let run = try Tool.run(
            Tool.sharepipe,
            [
                "prepare", Fixtures.path("jpeg/tiny-16x16.jpg"),
                Fixtures.path("jpeg/noisy-2000x1500.jpg"), "--out", out,
                "--max-short-edge", "1500", "--quality", "95",
            ])
        #expect(run.status == 1)
        #expect(run.stdout.contains("processed 1, failed 1"), "\(run.stdout)")
        #expect(
            run.stderr.contains(
                "FAILED \(Fixtures.path("jpeg/noisy-2000x1500.jpg")): \(out)/noisy-2000x1500.jpg: cannot write: No space left on device"
            ),
            "\(run.stderr)")
        #expect(filesBelow(out) == ["tiny-16x16.jpg"])
        Self.expectWholeOutputs(out)
    }

    /// A photo library can hold a FIFO (opening it would wait for a writer forever) and a symbolic link back
    /// up the tree (following it would list the same photos again and again): neither hangs nor repeats.
    @Test func fifosAndSymlinkLoopsNeitherHangNorRepeat() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try FileManager.default.createDirectory(atPath: directory + "/in/a", withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: Fixtures.path("jpeg/tiny-16x16.jpg"), toPath: directory + "/in/a/tiny.jpg")
        try FileManager.default.createSymbolicLink(atPath: directory + "/in/a/up", withDestinationPath: "..")
        #expect(mkfifo(directory + "/in/pipe.jpg", 0o644) == 0)
        let run = try BackgroundRun(
            ["prepare", directory + "/in", "--recursive", "--out", directory + "/out"], logs: directory)
        #expect(run.wait(seconds: 60), "sharepipe hung")
        #expect(run.process.terminationStatus == 1)
        #expect(
            run.stderr.contains("FAILED \(directory)/in/pipe.jpg: cannot read: not a regular file"), "\(run.stderr)")
        #expect(run.stdout.contains("processed 1, failed 1, skipped 0"), "\(run.stdout)")
        #expect(filesBelow(directory + "/out") == ["in/a/tiny.jpg"])
        #expect(throws: SharePipeError.unreadable(file: "/dev/zero", reason: "not a regular file")) {
            try SharePipe.prepare(.file(path: "/dev/zero"))
        }
    }

    @Test func aFailedWriteRemovesItsTemporaryFile() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        // The final name is an existing directory: the temporary file is written, the rename fails.
        try FileManager.default.createDirectory(
            atPath: directory + "/out.jpg/inside", withIntermediateDirectories: true)
        #expect {
            try FileIO.writeAtomically([1, 2, 3], to: directory + "/out.jpg")
        } throws: { error in
            guard case .unwritable(let file, _) = error as? SharePipeError else { return false }
            return file == directory + "/out.jpg"
        }
        #expect(filesBelow(directory) == [])
        try FileIO.writeAtomically([1, 2, 3], to: directory + "/ok.bin")
        #expect(try Fixtures.bytes(directory + "/ok.bin") == [1, 2, 3])
        #expect(filesBelow(directory) == ["ok.bin"])
    }

    /// Inputs are opened read-only: made immutable (where chattr works), a batch over them still succeeds and
    /// leaves them byte for byte as they were; under strace no open of an input asks for write access.
    @Test func inputsAreOnlyEverRead() throws {
        let directory = try Self.batch(2)
        defer {
            _ = Self.command(["chattr", "-i", directory + "/in/photo-000.jpg", directory + "/in/photo-001.jpg"])
            Fixtures.cleanUp(directory)
        }
        try FileManager.default.copyItem(
            atPath: Fixtures.path("png/photo-160x120.png"), toPath: directory + "/in/p.png")
        try FileManager.default.copyItem(atPath: Fixtures.path("gif/loop3.gif"), toPath: directory + "/in/a.gif")
        let inputs = filesBelow(directory + "/in")
        let before = try inputs.map { try Fixtures.bytes(directory + "/in/" + $0) }
        if Self.canMakeImmutable {
            #expect(Self.command(["chattr", "+i"] + inputs.map { directory + "/in/" + $0 }) == 0)
        }
        let arguments = [
            "prepare", directory + "/in", "--out", directory + "/out", "--strip", "gps", "--max-short-edge", "100",
        ]
        let trace = directory + "/trace.txt"
        let run =
            Self.hasStrace
            ? try Tool.run(
                "strace",
                [
                    "-f", "-qq", "-E", "ASAN_OPTIONS=detect_leaks=0", "-e", "trace=open,openat,creat", "-o", trace,
                    "--", Tool.sharepipe,
                ] + arguments)
            : try Tool.run(Tool.sharepipe, arguments)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(filesBelow(directory + "/out").count == inputs.count)
        if Self.hasStrace {
            let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n")
            let inputOpens = lines.filter { $0.contains(directory + "/in/") }
            #expect(inputOpens.count >= inputs.count)
            #expect(
                inputOpens.allSatisfy { !$0.contains("O_WRONLY") && !$0.contains("O_RDWR") && !$0.contains("O_CREAT") },
                "\(inputOpens)")
        }
        _ = Self.command(["chattr", "-i"] + inputs.map { directory + "/in/" + $0 })
        #expect(try inputs.map { try Fixtures.bytes(directory + "/in/" + $0) } == before)
    }
}
