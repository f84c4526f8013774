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

@main
struct SharePipeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sharepipe",
        abstract:
            "Prepare images for posting: strip private metadata, apply orientation, downscale, fit under a service's byte limit.",
        version: SharePipeVersion.current,
        subcommands: [PrepareCommand.self, InspectCommand.self, ServicesCommand.self],
        defaultSubcommand: PrepareCommand.self
    )

    /// ArgumentParser's own `main`, with a usage error ending in exit status 2 (README "Exit status")
    /// instead of its default 64.
    static func main() {
        do {
            var command = try parseAsRoot(nil)
            try command.run()
        } catch {
            if exitCode(for: error) == .validationFailure {
                printError(fullMessage(for: error))
                Glibc.exit(ExitStatus.usage)
            }
            exit(withError: error)
        }
    }
}

/// The exit statuses, distinct and documented in the README.
enum ExitStatus {
    /// Every file was prepared (or skipped because its output exists).
    static let success: Int32 = 0
    /// Some files failed; the others were prepared.
    static let someFailed: Int32 = 1
    /// The command line is wrong: nothing was done.
    static let usage: Int32 = 2
    /// Nothing to do, or a fatal I/O error (an unwritable --out or --report) stopped the batch at once.
    static let nothingDoneOrFatal: Int32 = 3
    /// Some file failed by a SharePipe bug (error kind `internal`), not by a fault of the input: report it.
    /// The other files were prepared, and the other failures reported, as under `someFailed`.
    static let internalError: Int32 = 4
}

extension StripMode: ExpressibleByArgument {}
extension FitStrategy: ExpressibleByArgument {}

extension NameSpecification {
    /// The long flag `OptionTable` gives the option (`--max-bytes`).
    static func table(_ spec: OptionSpec) -> NameSpecification {
        guard let name = spec.flagName else { preconditionFailure("OptionTable gives \(spec.name) no flag") }
        return .customLong(name)
    }
}

extension ArgumentHelp {
    /// The option's help from `OptionTable`; `showingDefault` adds the library's default, for optional
    /// flags whose default ArgumentParser cannot show (a service's profile may replace it).
    static func table(_ spec: OptionSpec, showingDefault: Bool = false) -> ArgumentHelp {
        guard showingDefault else { return ArgumentHelp(spec.help) }
        return ArgumentHelp(spec.help.dropLast() + " (default \(spec.defaultValue)).")
    }
}

/// Options that shape how each image is prepared.
struct PipelineOptions: ParsableArguments {
    @Option(
        help:
            "Service profile whose limits to meet; repeat for several services (outputs go to --out/<service>/). `sharepipe services` lists them. Explicit options below override the profile."
    )
    var service: [String] = []

    @Option(
        help:
            "JSON file adding or overriding service profiles (default: $SHAREPIPE_PROFILES, else ~/.config/sharepipe/profiles.json if it exists)."
    )
    var profiles: String?

    // The flags below that set an option take their names and help from the library's `OptionTable`.

    @Option(name: .table(OptionTable.maxShortEdge), help: .table(OptionTable.maxShortEdge, showingDefault: true))
    var maxShortEdge: Int?

    @Option(name: .table(OptionTable.maxBytes), help: .table(OptionTable.maxBytes))
    var maxBytes: Int?

    @Option(name: .table(OptionTable.strip), help: .table(OptionTable.strip))
    var strip: StripMode?

    @Option(name: .table(OptionTable.quality), help: .table(OptionTable.quality, showingDefault: true))
    var quality: Int?

    @Option(name: .table(OptionTable.minQuality), help: .table(OptionTable.minQuality, showingDefault: true))
    var minQuality: Int?

    @Flag(name: .table(OptionTable.progressive), help: .table(OptionTable.progressive))
    var progressive = false

    @Option(name: .table(OptionTable.strategy), help: .table(OptionTable.strategy))
    var strategy: FitStrategy = .memoryFirst

    /// nil: not given (`ImageLimits.maxPixels` unset: the cost-based default).
    @Option(name: .table(OptionTable.limitsMaxPixels), help: .table(OptionTable.limitsMaxPixels))
    var maxPixels: Int?

    @Option(name: .table(OptionTable.limitsMaxStreamedMemory), help: .table(OptionTable.limitsMaxStreamedMemory))
    var maxStreamedMemory: Int = ImageLimits().maxStreamedMemory

    @Option(name: .table(OptionTable.limitsMaxDimension), help: .table(OptionTable.limitsMaxDimension))
    var maxDimension: Int = ImageLimits().maxDimension

    @Option(name: .table(OptionTable.limitsMaxInputBytes), help: .table(OptionTable.limitsMaxInputBytes))
    var maxInputBytes: Int = ImageLimits().maxInputBytes

    @Option(name: .table(OptionTable.limitsMaxFrames), help: .table(OptionTable.limitsMaxFrames))
    var maxFrames: Int = ImageLimits().maxFrames

    @Option(name: .table(OptionTable.limitsMaxTotalFramePixels), help: .table(OptionTable.limitsMaxTotalFramePixels))
    var maxFramePixels: Int = ImageLimits().maxTotalFramePixels

    func validate() throws {
        let catalog = try loadCatalog()
        for name in service where catalog.named(name) == nil {
            let names = catalog.profiles.map(\.name).joined(separator: ", ")
            throw ValidationError("unknown service '\(name)' (known: \(names))")
        }
        // The CLI's entry check: the same `validate()` the library's entry points run, with the flags named.
        do {
            for (_, options) in try makeTargets() { try options.validate() }
        } catch SharePipeError.invalidOptions(let invalid) {
            throw ValidationError("invalid options: " + PipelineOptions.namingFlags(invalid))
        } catch let error as SharePipeError {
            throw ValidationError(error.description)
        }
    }

    /// The message of an invalid option with every option named by its flag (`OptionTable`), with a hint
    /// where a profile or a default supplied the value. Options no flag sets come from a profile file on the
    /// command line: they are named by their profile field (`animated.maxTotalPixels`).
    static func namingFlags(_ invalid: InvalidOption) -> String {
        var text = invalid.message(on: .commandLine)
        if invalid.option == "minQuality" {
            text += " (--min-quality defaults to 40 or the service's floor: lower it together with --quality)"
        }
        return text
    }

    func loadCatalog() throws -> ProfileCatalog {
        do {
            return try ProfileCatalog.load(userFile: profiles)
        } catch let error as ProfileFileError {
            throw ValidationError(error.description)
        } catch let error as SharePipeError {
            throw ValidationError(error.description)
        }
    }

    /// One (service name, options) per --service, or a single unnamed target without one.
    func makeTargets() throws -> [(name: String?, options: PrepareOptions)] {
        var base = PrepareOptions(progressive: progressive, strategy: strategy)
        if let maxPixels { base.limits.maxPixels = maxPixels }
        base.limits.maxStreamedMemory = maxStreamedMemory
        base.limits.maxDimension = maxDimension
        base.limits.maxInputBytes = maxInputBytes
        base.limits.maxFrames = maxFrames
        base.limits.maxTotalFramePixels = maxFramePixels
        let catalog = try loadCatalog()
        let profiles = service.compactMap { catalog.named($0) }
        let targets: [(String?, PrepareOptions)] =
            profiles.isEmpty
            ? [(nil, base)] : profiles.map { ($0.name, $0.options(basedOn: base)) }
        return targets.map { name, profileOptions in
            var options = profileOptions
            if let strip { options.strip = strip }
            if let quality { options.quality = quality }
            if let minQuality { options.minQuality = minQuality }
            if let maxShortEdge { options.maxShortEdge = maxShortEdge }
            if let maxBytes { options.maxBytes = maxBytes }
            return (name, options)
        }
    }
}

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

func isDirectory(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
}

/// Prints a fatal error and returns the exit status to throw.
func fatal(_ message: String) -> ExitCode {
    printError("sharepipe: " + message)
    return ExitCode(ExitStatus.nothingDoneOrFatal)
}

/// `prepare -` and `--out -`: one image through standard input and/or output. Standard input is held in
/// memory (one image, limited by --max-input-bytes); with `--out -` nothing is written to a file.
struct StandardIO {
    let batch: Batch
    let input: String
    let json: Bool
    let report: AppendOnlyFile?
    /// Enters the sandbox, once the output folder is there.
    let confine: () throws -> Void

    func run() throws {
        let toStandardOutput = batch.outputDirectory == "-"
        let source: ImageSource
        if input == "-" {
            let limit = batch.targets.map(\.options.limits.maxInputBytes).max() ?? Int.max
            guard let bytes = readStandardInput(limit: limit) else {
                printError("FAILED <stdin>: too large: exceeds the input limit of \(limit) bytes")
                throw ExitCode(ExitStatus.someFailed)
            }
            source = .bytes(bytes)
        } else {
            source = .file(path: input)
        }
        if !toStandardOutput {
            do { try batch.checkOutputDirectory() } catch {
                throw fatal("cannot write to --out \(batch.outputDirectory): \(PrepareCommand.reason(error))")
            }
        }
        try confine()
        let reporter = Reporter(json: json, report: report, toStandardError: toStandardOutput)
        let reports = batch.process(
            source, named: input == "-" ? "stdin" : input,
            sink: toStandardOutput ? { try writeStandardOutput($0.bytes) } : nil)
        for each in reports { reporter.fileDone(each) }
        reporter.summary()
        if let status = reporter.failureStatus { throw ExitCode(status) }
    }

    /// Standard input whole, or nil past `limit` bytes.
    private func readStandardInput(limit: Int) -> [UInt8]? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let got = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if got < 0 && errno == EINTR { continue }
            if got <= 0 { return bytes }
            bytes += chunk[0..<got]
            if bytes.count > limit { return nil }
        }
    }

    private func writeStandardOutput(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                throw SharePipeError.unwritable(file: "<stdout>", reason: String(cString: strerror(errno)))
            }
            offset += written
        }
    }
}

struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect", abstract: "Show what an image's header says, without decoding pixels.")

    @Argument(help: "Image files.")
    var files: [String]

    @Flag(help: "Print JSON.")
    var json = false

    @Flag(help: "Run without the process sandbox (by default it reads only the files named, and writes nothing).")
    var noSandbox = false

    func run() throws {
        if !noSandbox { try CLISandbox.confine(reading: files, readingAnywhere: false, writing: nil) }
        var failed = false, internalFailure = false
        for file in files {
            do {
                let info = try SharePipe.inspect(.file(path: file))
                if json {
                    print(JSONText.encode(InspectJSON(file: file, info: info)))
                } else {
                    print(InspectText.describe(file: file, info: info))
                }
            } catch {
                failed = true
                if case .internalError? = error as? SharePipeError { internalFailure = true }
                printError("\(error)")
            }
        }
        if internalFailure { throw ExitCode(ExitStatus.internalError) }
        if failed { throw ExitCode(ExitStatus.someFailed) }
    }
}

struct ServicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "services", abstract: "List the service profiles.")

    @Option(help: "JSON file adding or overriding service profiles.")
    var profiles: String?

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let catalog: ProfileCatalog
        do {
            catalog = try ProfileCatalog.load(userFile: profiles)
        } catch let error as ProfileFileError {
            throw ValidationError(error.description)
        }
        if json {
            print(JSONText.encode(catalog.profiles))
        } else {
            print(ServicesTable.render(catalog.profiles))
        }
    }
}
