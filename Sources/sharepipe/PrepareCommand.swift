import ArgumentParser
import SharePipe
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

struct PrepareCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prepare",
        abstract:
            "Prepare files and folders; outputs mirror the input tree under --out (under --out/<service>/ with --service)."
    )

    @Argument(help: "Image files or folders; `-` reads one image from standard input.")
    var inputs: [String] = []

    @Option(
        name: .shortAndLong,
        help: "Output folder (created if missing; never read as input); `-` writes the one image to standard output.")
    var out: String

    @OptionGroup var pipeline: PipelineOptions

    @Flag(name: .shortAndLong, help: "Descend into subfolders.")
    var recursive = false

    @Option(name: .shortAndLong, help: "Files to prepare at once.")
    var jobs: Int = 1

    @Flag(help: "Skip inputs whose output already exists (to finish an interrupted batch).")
    var skipExisting = false

    @Flag(help: "Print one JSON object per file instead of text.")
    var json = false

    @Option(
        help: "Read input paths from FILE, one a line (`-`: standard input); listed paths are mirrored under --out.")
    var filesFrom: String?

    @Flag(name: [.customShort("0"), .customLong("null")], help: "--files-from paths are NUL-separated (find -print0).")
    var nulSeparated = false

    @Option(help: "Prepare only share i of n (1-based), a stable partition by input path: run n of these anywhere.")
    var shard: String?

    @Option(help: "Append one JSON line per output to FILE as files finish (safe for several runs at once).")
    var report: String?

    @Flag(help: "Print what would be written, from the headers alone; write nothing.")
    var dryRun = false

    @Flag(
        help:
            "Run without the process sandbox (by default, once its files are resolved, sharepipe reads only its inputs, writes only under --out, and runs no program, process or socket)."
    )
    var noSandbox = false

    func validate() throws {
        if jobs < 1 { throw ValidationError("expected at least 1 for --jobs, got \(jobs)") }
        if inputs.isEmpty && filesFrom == nil {
            throw ValidationError("give files or folders to prepare, or --files-from FILE")
        }
        if !inputs.isEmpty && filesFrom != nil {
            throw ValidationError(
                "--files-from cannot be combined with paths on the command line (got \(inputs.count))")
        }
        if nulSeparated && filesFrom == nil { throw ValidationError("-0/--null only applies to --files-from") }
        if shard != nil { _ = try parsedShard() }
        let standardIO = inputs.contains("-") || out == "-"
        if standardIO && inputs.count != 1 {
            throw ValidationError("`-` (standard input or output) takes exactly one image: got \(inputs.count) inputs")
        }
        if out == "-" {
            if pipeline.service.count > 1 {
                throw ValidationError("--out - writes one image: give at most one --service")
            }
            if !pipeline.variant.isEmpty {
                throw ValidationError("--out - writes one image: --variant writes files beside it (give --out DIR)")
            }
            if let first = inputs.first, first != "-", isDirectory(first) {
                throw ValidationError("--out - writes one image, but \(inputs[0]) is a folder")
            }
            if isatty(STDOUT_FILENO) != 0 {
                throw ValidationError("--out - would write an image to the terminal: redirect standard output")
            }
        }
        if standardIO && (dryRun || shard != nil || filesFrom != nil) {
            throw ValidationError("`-` cannot be combined with --dry-run, --shard or --files-from")
        }
    }

    func parsedShard() throws -> BatchShard? {
        guard let shard else { return nil }
        let parts = shard.split(separator: "/")
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), count >= 1,
            (1...count).contains(index)
        else {
            throw ValidationError(
                "expected i/n with 1 ≤ i ≤ n for --shard, got '\(shard)' (Kubernetes: --shard $((JOB_COMPLETION_INDEX+1))/N)"
            )
        }
        return BatchShard(index: index, count: count)
    }

    func run() throws {
        SignalCleanup.install()
        let targets = try pipeline.makeTargets().map { BatchTarget(service: $0.name, options: $0.options) }
        let reportFile = try report.map { path in
            do { return try AppendOnlyFile(path: path) } catch {
                throw fatal("cannot write --report \(path): \(Self.reason(error))")
            }
        }
        let batch = Batch(
            outputDirectory: out, targets: targets, recursive: recursive, jobs: jobs,
            skipExisting: skipExisting, shard: try parsedShard(), dryRun: dryRun)
        if inputs == ["-"] || out == "-" {
            return try StandardIO(batch: batch, input: inputs[0], json: json, report: reportFile) {
                if !noSandbox {
                    try CLISandbox.confine(reading: inputs, readingAnywhere: false, writing: out)
                }
            }.run()
        }
        if !dryRun {
            do { try batch.checkOutputDirectory() } catch {
                throw fatal("cannot write to --out \(out): \(Self.reason(error))")
            }
        }
        let source: BatchInputs
        if let filesFrom {
            do { source = .list(try BatchList(path: filesFrom, nulSeparated: nulSeparated)) } catch {
                throw fatal("cannot read --files-from \(filesFrom): \(Self.reason(error))")
            }
        } else {
            source = .paths(inputs)
        }
        if !noSandbox {
            try CLISandbox.confine(
                reading: inputs, readingAnywhere: filesFrom != nil, writing: dryRun ? nil : out)
        }
        let reporter = Reporter(json: json, report: reportFile)
        let walk = batch.run(source) { reporter.fileDone($0) }
        if walk.files == 0 && walk.missing == 0 {
            let why = Self.nothingToDo(walk)
            printError("nothing to do: \(why)")
            // An empty share of a sharded batch is a share done, not a failure of the job running it.
            throw ExitCode(walk.otherShards > 0 ? ExitStatus.success : ExitStatus.nothingDoneOrFatal)
        }
        reporter.summary()
        // A Live Photo's video beside a prepared photo is passed over: name each, since it can carry the location.
        for pair in walk.videosBesidePhotos { reporter.videoNotPrepared(pair) }
        // Files were found, but a folder's subfolders were not walked: say so, or they pass unnoticed.
        if walk.subfoldersSkipped > 0 {
            printError("note: \(walk.subfoldersSkipped) subfolder(s) not walked: use --recursive to prepare them too")
        }
        if let status = reporter.failureStatus { throw ExitCode(status) }
    }

    /// Why a walk found no file, e.g. "3 subfolders skipped: use --recursive".
    static func nothingToDo(_ walk: BatchWalkSummary) -> String {
        var reasons: [String] = []
        if walk.subfoldersSkipped > 0 {
            reasons.append("\(walk.subfoldersSkipped) subfolder(s) skipped: use --recursive")
        }
        if walk.sidecarsSkipped > 0 {
            reasons.append("\(walk.sidecarsSkipped) sidecar file(s) (.xmp, .txt …) passed over")
        }
        if walk.insideOutput > 0 {
            reasons.append("\(walk.insideOutput) input(s) inside --out skipped: outputs are never inputs")
        }
        if walk.otherShards > 0 { reasons.append("all \(walk.otherShards) file(s) belong to other shards") }
        return reasons.isEmpty ? "no files found" : "no files to prepare; " + reasons.joined(separator: "; ")
    }

    static func reason(_ error: Error) -> String {
        switch error as? SharePipeError {
        case .unwritable(_, let reason)?, .unreadable(_, let reason)?: return reason
        default: return "\(error)"
        }
    }
}
