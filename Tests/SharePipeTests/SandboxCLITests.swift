import Foundation
import Testing

@testable import SharePipe

/// The CLI's process sandbox, seen from the real `sharepipe` executable: what a hijacked decoder tries is
/// refused inside the job (the debug builds' `SHAREPIPE_DEBUG_FAULT=hijack-*`), the process lives to report it,
/// the kernel shows the filter from outside, and outputs are the same bytes with the sandbox as without.
@Suite struct SandboxCLITests {
    static let hijacks = ["hijack-exec", "hijack-read", "hijack-write", "hijack-connect", "hijack-fork"]

    /// A folder holding `in/photo.jpg` and `in/second.png` (copies), and where `out/` goes.
    static func inputFolder() throws -> String {
        let directory = Fixtures.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/in", withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: Fixtures.path("jpeg/orient-6.jpg"), toPath: directory + "/in/photo.jpg")
        try FileManager.default.copyItem(
            atPath: Fixtures.path("png/detail-rgb-16.png"), toPath: directory + "/in/second.png")
        return directory
    }

    /// Every file's bytes beneath `folder`, by relative path.
    static func tree(_ folder: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(atPath: folder)
        while let relative = enumerator?.nextObject() as? String {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: folder + "/" + relative, isDirectory: &isFolder),
                !isFolder.boolValue
            {
                files[relative] = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + relative))
            }
        }
        return files
    }

    #if DEBUG
        @Test("each act of a hijacked decoder is refused inside the job; the job fails internal, the CLI goes on")
        func hijackedDecoderIsRefused() throws {
            for hijack in Self.hijacks {
                let directory = try Self.inputFolder()
                defer { Fixtures.cleanUp(directory) }
                let run = try Tool.run(
                    "env",
                    [
                        "SHAREPIPE_DEBUG_FAULT=\(hijack)", Tool.sharepipe, "prepare", directory + "/in", "--out",
                        directory + "/out", "--json",
                    ])
                // Both files reached the fault and were reported: the process lived past the first.
                let lines = run.stdout.split(separator: "\n").compactMap {
                    try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
                }
                #expect(run.status == 4, "\(hijack): \(run.status) \(run.stderr)")
                #expect(lines.count == 2, "\(hijack): \(run.stdout) \(run.stderr)")
                for line in lines {
                    #expect(line["errorKind"] as? String == "internal", "\(hijack): \(line)")
                    let error = line["error"] as? String ?? ""
                    #expect(error.contains("\(hijack) refused ("), "\(hijack): \(error)")
                }
                // Nothing was made beside the inputs.
                let beside = try FileManager.default.contentsOfDirectory(atPath: directory + "/in").sorted()
                #expect(beside == ["photo.jpg", "second.png"], "\(hijack): \(beside)")
            }
        }

        @Test("--no-sandbox turns it off: the same faults are let through (the hook sees what it does)")
        func noSandboxLetsThemThrough() throws {
            for hijack in ["hijack-read", "hijack-write", "hijack-fork"] {
                let directory = try Self.inputFolder()
                defer { Fixtures.cleanUp(directory) }
                let run = try Tool.run(
                    "env",
                    [
                        "SHAREPIPE_DEBUG_FAULT=\(hijack)", Tool.sharepipe, "prepare", directory + "/in/photo.jpg",
                        "--out", directory + "/out", "--json", "--no-sandbox",
                    ])
                #expect(run.status == 4 && run.stdout.contains("\(hijack) ALLOWED"), "\(hijack): \(run.stdout)")
                let beside = try FileManager.default.contentsOfDirectory(atPath: directory + "/in")
                #expect(beside.count == (hijack == "hijack-write" ? 3 : 2), "\(hijack): \(beside)")
            }
        }
    #endif

    @Test("from outside: a running sharepipe has the seccomp filter and no new privileges (status file)")
    func kernelShowsTheFilter() throws {
        let directory = try Self.inputFolder()
        defer { Fixtures.cleanUp(directory) }
        // --files-from - confines before reading its list: the process waits on standard input, confined.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Tool.sharepipe)
        process.arguments = ["prepare", "--files-from", "-", "--out", directory + "/out"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        var status = ""
        for _ in 0..<500 {
            status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
            if status.contains("Seccomp:\t2") { break }
            usleep(10_000)
        }
        input.fileHandleForWriting.write(Data((directory + "/in/photo.jpg\n").utf8))
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        #expect(status.contains("Seccomp:\t2") && status.contains("NoNewPrivs:\t1"), "\(status)")
        #expect(process.terminationStatus == 0)
        #expect(try Self.tree(directory + "/out").count == 1, "the listed file, read from anywhere, was prepared")
    }

    @Test("outputs are the same bytes with the sandbox and without, over TestImages (animations' temporary files too)")
    func sameOutputsWithAndWithoutTheSandbox() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let arguments = [Fixtures.root + "/TestImages", "--recursive", "--jobs", "2", "--service", "mastodon"]
        // Its own $TMPDIR, to see the run's temporary folder removed at exit.
        try FileManager.default.createDirectory(atPath: directory + "/tmp", withIntermediateDirectories: true)
        let confined = try Tool.run(
            "env",
            ["TMPDIR=\(directory)/tmp", Tool.sharepipe, "prepare"] + arguments + ["--out", directory + "/confined"])
        let free = try Tool.run(
            Tool.sharepipe, ["prepare"] + arguments + ["--out", directory + "/free", "--no-sandbox"])
        #expect(confined.status == free.status, "\(confined.stderr)")
        // No note that the sandbox fell short and no refusal to confine (not the bare word: a checkout's path may
        // hold it).
        #expect(
            !confined.stderr.contains("note: sandbox:") && !confined.stderr.contains("cannot confine"),
            "\(confined.stderr)")
        let confinedTree = try Self.tree(directory + "/confined"), freeTree = try Self.tree(directory + "/free")
        #expect(confinedTree.count > 100 && confinedTree.keys.contains { $0.hasSuffix(".gif") })
        #expect(confinedTree.keys.sorted() == freeTree.keys.sorted())
        for (path, bytes) in confinedTree where freeTree[path] != bytes { Issue.record("\(path) differs") }
        // One image to standard output, an animation (its GIF goes through an unlinked temporary file).
        let animation = Fixtures.path("webp/animated.webp")
        let streamed = try Tool.run(
            "sh", ["-c", "'\(Tool.sharepipe)' prepare '\(animation)' --out - --service mastodon | sha256sum"])
        let streamedFree = try Tool.run(
            "sh",
            ["-c", "'\(Tool.sharepipe)' prepare '\(animation)' --out - --service mastodon --no-sandbox | sha256sum"])
        #expect(streamed.status == 0 && streamed.stdout == streamedFree.stdout, "\(streamed.stderr)")
        // The run's temporary folder is gone.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/tmp") == [])
    }

    @Test("a link out of the input folder is not followed under the sandbox, and its error says why")
    func linkOutOfTheInputsIsRefusedAndExplained() throws {
        let directory = try Self.inputFolder()
        defer { Fixtures.cleanUp(directory) }
        // A link beside the photos to a file outside the input folder, and one to a photo inside it.
        try FileManager.default.createDirectory(atPath: directory + "/elsewhere", withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: Fixtures.path("jpeg/orient-6.jpg"), toPath: directory + "/elsewhere/outside.jpg")
        try FileManager.default.createSymbolicLink(
            atPath: directory + "/in/link-out.jpg", withDestinationPath: directory + "/elsewhere/outside.jpg")
        try FileManager.default.createSymbolicLink(
            atPath: directory + "/in/link-in.jpg", withDestinationPath: "photo.jpg")
        let confined = try Tool.run(
            Tool.sharepipe, ["prepare", directory + "/in", "--out", directory + "/out", "--json"])
        #expect(confined.status != 0)
        let lines = confined.stdout.split(separator: "\n").map(String.init)
        let refused = try #require(lines.first { $0.contains("link-out.jpg") })
        #expect(refused.contains("a symbolic link out of the inputs") && refused.contains("--files-from"), "\(refused)")
        #expect(FileManager.default.fileExists(atPath: directory + "/out/in/link-in.jpg"))
        #expect(FileManager.default.fileExists(atPath: directory + "/out/in/photo.jpg"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/out/in/link-out.jpg"))
        // Listed with --files-from, or named as an input itself, it is read; without the sandbox, followed.
        let listed = try Tool.run(
            "sh",
            [
                "-c",
                "cd '\(directory)' && echo in/link-out.jpg | '\(Tool.sharepipe)' prepare --files-from - --out listed",
            ])
        #expect(listed.status == 0 && FileManager.default.fileExists(atPath: directory + "/listed/in/link-out.jpg"))
        let named = try Tool.run(
            Tool.sharepipe, ["prepare", directory + "/in/link-out.jpg", "--out", directory + "/named"])
        #expect(named.status == 0 && FileManager.default.fileExists(atPath: directory + "/named/link-out.jpg"))
        let free = try Tool.run(
            Tool.sharepipe, ["prepare", directory + "/in", "--out", directory + "/free", "--no-sandbox"])
        #expect(free.status == 0 && FileManager.default.fileExists(atPath: directory + "/free/in/link-out.jpg"))
    }

    @Test("inspect is confined too, and still loads a library on first use (libheif) after confinement")
    func inspectUnderTheSandbox() throws {
        let run = try Tool.run(Tool.sharepipe, ["inspect", Fixtures.path("heif/mirror.heic"), "--json"])
        #expect(run.status == 0 && run.stdout.contains("heif"), "\(run.stdout) \(run.stderr)")
    }

    @Test("a library loaded on first use from a folder in LD_LIBRARY_PATH (outside /usr) loads after confinement")
    func libraryFromLoaderPathLoads() throws {
        // libheif under a name only the temporary folder has: the loader finds it there or nowhere.
        let candidates = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"]
        let system = try #require(
            candidates.map { $0 + "/libheif.so.1" }.first { FileManager.default.fileExists(atPath: $0) },
            "libheif.so.1 is in none of \(candidates)")
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try FileManager.default.createDirectory(atPath: directory + "/lib", withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: URL(fileURLWithPath: system).resolvingSymlinksInPath().path,
            toPath: directory + "/lib/libsharepipe-test-heif.so.1")
        for sandbox in [true, false] {
            let out = directory + (sandbox ? "/out" : "/out-unconfined")
            let run = try Tool.run(
                "env",
                [
                    "LD_LIBRARY_PATH=\(directory)/lib", "SHAREPIPE_LIBHEIF=libsharepipe-test-heif.so.1",
                    Tool.sharepipe, "prepare", Fixtures.path("heif/mirror.heic"), "--out", out, "--json",
                ] + (sandbox ? [] : ["--no-sandbox"]))
            #expect(run.status == 0 && run.stdout.contains("\"status\":\"ok\""), "sandbox \(sandbox): \(run.stderr)")
            #expect(FileManager.default.fileExists(atPath: out + "/mirror.jpg"), "sandbox \(sandbox): \(run.stdout)")
        }
    }

    @Test("the loader's folders: LD_LIBRARY_PATH's absolute entries, then ld.so.conf's, includes followed once")
    func loaderSearchFolders() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        try FileManager.default.createDirectory(atPath: directory + "/conf.d", withIntermediateDirectories: true)
        let files = [
            "ld.so.conf":
                "# the main file\ninclude conf.d/*.conf\n/opt/a/lib   # a comment\nhwcap 0 nosegneg\n/opt/b=libc6\n",
            "conf.d/1-first.conf": "/opt/c\n\n/opt/d:/opt/e,/opt/f\n",
            "conf.d/2-loop.conf": "include \(directory)/ld.so.conf\nrelative/folder\n/opt/a/lib\n",
            "conf.d/ignored.txt": "/opt/not-included\n",
        ]
        for (name, text) in files {
            try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/" + name))
        }
        let folders = ProcessSandbox.Rules.loaderSearchFolders(
            environment: "/opt/env::relative;/opt/env2:/opt/c", configuration: directory + "/ld.so.conf")
        #expect(folders == ["/opt/env", "/opt/env2", "/opt/c", "/opt/d", "/opt/e", "/opt/f", "/opt/a/lib", "/opt/b"])
        #expect(ProcessSandbox.Rules.loaderSearchFolders(environment: nil, configuration: directory + "/none").isEmpty)
    }
}
