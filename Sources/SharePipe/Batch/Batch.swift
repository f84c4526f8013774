#if canImport(Glibc)
    import Glibc
#endif
import Dispatch

/// One set of options a batch prepares every file for, optionally named after a service.
public struct BatchTarget: Sendable {
    /// The service's name; its outputs go to `out/<service>/`.
    public var service: String?
    public var options: PrepareOptions

    public init(service: String? = nil, options: PrepareOptions) {
        self.service = service
        self.options = options
    }
}

/// The result for one file (and one service) of a batch.
public struct BatchReport: Sendable {
    public var input: String
    /// The service this output is for, when the batch named services.
    public var service: String?
    /// The output path (planned, under `dryRun`).
    public var output: String?
    public var inputBytes: Int?
    /// The prepared image. Its `bytes` are released once written (empty here); `bytes` below is the size.
    public var result: PreparedImage?
    /// The size of the output written.
    public var bytes: Int?
    public var error: SharePipeError?
    /// Skipped because the output already existed (`--skip-existing`).
    public var skipped: Bool = false
    /// Only planned (`dryRun`): nothing was decoded or written.
    public var planned: Bool = false
    /// The variants written beside the output (`PrepareOptions.variants`), in the order asked; each one's report
    /// is the matching `result.variants` entry.
    public var variantOutputs: [BatchVariantOutput] = []
}

/// One variant file a batch wrote beside an output.
public struct BatchVariantOutput: Sendable {
    /// The variant's name.
    public var name: String
    /// Where it was written.
    public var output: String
    /// Its size in bytes; nil when only planned (`dryRun`).
    public var bytes: Int?
}

/// Runs the pipeline over files and folders, mirroring the input tree under an output directory.
///
/// Streaming: one thread walks the inputs into a bounded queue, `jobs` workers prepare and write each file,
/// and the caller's thread receives each report as it is done (the one writer: it prints and counts).
/// Nothing per file is kept after its report is handed over, and the list of all files is never built,
/// so memory does not grow with the number of files.
public struct Batch: Sendable {
    public var outputDirectory: String
    public var targets: [BatchTarget]
    public var recursive: Bool
    public var jobs: Int
    public var skipExisting: Bool
    /// Only this share of the inputs (`--shard i/n`).
    public var shard: BatchShard?
    /// Plan only: read headers, report where outputs would go, write nothing.
    public var dryRun: Bool

    public init(
        outputDirectory: String, options: PrepareOptions, recursive: Bool = false, jobs: Int = 1,
        skipExisting: Bool = false
    ) {
        self.init(
            outputDirectory: outputDirectory, targets: [BatchTarget(options: options)], recursive: recursive,
            jobs: jobs, skipExisting: skipExisting)
    }

    /// A batch preparing every file once per target (service).
    public init(
        outputDirectory: String, targets: [BatchTarget], recursive: Bool = false, jobs: Int = 1,
        skipExisting: Bool = false, shard: BatchShard? = nil, dryRun: Bool = false
    ) {
        precondition(!targets.isEmpty, "a batch needs at least one target")
        self.outputDirectory =
            outputDirectory.count > 1 && outputDirectory.hasSuffix("/")
            ? String(outputDirectory.dropLast()) : outputDirectory
        self.targets = targets
        self.recursive = recursive
        self.jobs = max(1, jobs)
        self.skipExisting = skipExisting
        self.shard = shard
        self.dryRun = dryRun
    }

    /// Walks `inputs`, prepares and writes every file for every target, and calls `report` on the calling
    /// thread with each report as soon as its file is done (in completion order). A failure on one file
    /// never stops the others. Returns what the walk saw.
    public func run(_ inputs: BatchInputs, report: (BatchReport) -> Void) -> BatchWalkSummary {
        let items = BlockingQueue<BatchItem>(capacity: 2 * jobs)
        let reports = BlockingQueue<[BatchReport]>(capacity: 2 * jobs)
        let summary = Locked(BatchWalkSummary())  // set on the walk's thread, read after it ends
        let group = DispatchGroup()
        let threads = DispatchQueue(label: "sharepipe.batch", attributes: .concurrent)
        let walk = BatchWalk(outputDirectory: outputDirectory, recursive: recursive, shard: shard)
        threads.async(group: group) {
            let walked = walk.walk(inputs, emit: items.push) { path in
                reports.push([
                    BatchReport(input: path, error: .unreadable(file: path, reason: "no such file or directory"))
                ])
            }
            summary.withLock { $0 = walked }
            items.close()
        }
        for _ in 0..<jobs {
            threads.async(group: group) {
                while let item = items.pop() { reports.push(process(item)) }
            }
        }
        group.notify(queue: .global()) { reports.close() }
        while let done = reports.pop() {
            for each in done { report(each) }
        }
        return summary.withLock { $0 }
    }

    /// Where an item's output for `target` goes, in `format`.
    public func outputPath(_ item: BatchItem, _ target: BatchTarget, format: ImageFormat) -> String {
        outputFolder(target) + "/" + item.outputName(for: format)
    }

    private func outputFolder(_ target: BatchTarget) -> String {
        target.service.map { outputDirectory + "/" + $0 } ?? outputDirectory
    }

    /// Prepares one item for every target and writes the outputs atomically. Each target opens the
    /// source afresh; under `cpuFirst` they share one render (see `Pipeline.prepare(_:forEach:)`).
    public func process(_ item: BatchItem) -> [BatchReport] {
        let inputBytes = try? FileIO.size(of: item.input)
        var reports = targets.map { target -> BatchReport in
            var report = BatchReport(input: item.input, service: target.service)
            report.inputBytes = inputBytes
            if skipExisting,
                let existing = item.possibleOutputNames.map({ outputFolder(target) + "/" + $0 }).first(
                    where: FileIO.exists)
            {
                report.output = existing
                report.skipped = true
            }
            return report
        }
        let pending = reports.indices.filter { !reports[$0].skipped }
        let options = Self.checked(pending.map { targets[$0] })
        if dryRun {
            for (index, checked) in zip(pending, options) {
                if case .failure(let error) = checked { reports[index].error = error; continue }
                plan(item, target: targets[index], into: &reports[index])
            }
            return reports
        }
        // Outputs written to temporary files (animations) are copied to their place, never held whole.
        let results = Pipeline.prepare(.file(path: item.input), forEach: options, keepingOutputFiles: true)
        for (index, result) in zip(pending, results) {
            write(result, for: item, target: targets[index], into: &reports[index])
        }
        return reports
    }

    /// Each target's options checked, here at the batch's entry (`targets` may change between calls); a
    /// target whose options cannot work fails every file with `invalidOptions`.
    private static func checked(_ targets: [BatchTarget]) -> [Result<PrepareOptions.Checked, SharePipeError>] {
        targets.map { target in Result { () throws(SharePipeError) in try target.options.checked() } }
    }

    /// Prepares one image that is not a file of the walk (`-`, standard input, in the CLI) for every target.
    /// Outputs go to `<output directory>/[<service>/]<stem of name>.<ext>`, or, when `sink` is given, to
    /// `sink` (standard output) and nowhere else.
    public func process(
        _ source: ImageSource, named name: String,
        sink: ((PreparedImage) throws -> Void)? = nil
    ) -> [BatchReport] {
        let item = BatchItem(input: name, relativeName: BatchItem.lastComponent(name))
        let results = Pipeline.prepare(source, forEach: Self.checked(targets), keepingOutputFiles: sink == nil)
        return zip(targets, results).map { target, result in
            var report = BatchReport(input: name, service: target.service)
            report.inputBytes = try? source.byteCount()
            guard let sink else {
                write(result, for: item, target: target, into: &report)
                return report
            }
            do {
                var prepared = try result.get()
                try sink(prepared)
                report.output = "-"
                report.bytes = prepared.byteCount
                prepared.dropOutput()
                report.result = prepared
            } catch let error as SharePipeError {
                report.error = error
            } catch {
                report.error = .unwritable(file: "<stdout>", reason: "\(error)")
            }
            return report
        }
    }

    /// Creates the output directory and proves a file can be made in it, before any work: an unwritable
    /// output directory is one error, not one per file.
    public func checkOutputDirectory() throws {
        try FileIO.makeDirectories(outputDirectory)
        let probe = outputDirectory + "/.sharepipe-probe-\(getpid())"
        let descriptor = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw SharePipeError.unwritable(file: outputDirectory, reason: FileIO.errnoText())
        }
        close(descriptor)
        unlink(probe)
    }

    /// `dryRun`: the output path from the header alone.
    private func plan(_ item: BatchItem, target: BatchTarget, into report: inout BatchReport) {
        do {
            let info = try inspect(.file(path: item.input), limits: target.options.limits)
            let output = outputPath(item, target, format: target.options.outputFormat(for: info.format))
            try checkOwnership(output, item: item)
            report.output = output
            report.planned = true
            for variant in target.options.requestedVariants {
                let format = variant.format ?? target.options.outputFormat(for: info.format)
                report.variantOutputs.append(
                    BatchVariantOutput(
                        name: variant.name, output: variantPath(item, target, variant: variant.name, format: format)))
            }
        } catch {
            report.error = .from(error, file: item.input)
        }
    }

    private func write(
        _ prepared: Result<PreparedImage, SharePipeError>, for item: BatchItem, target: BatchTarget,
        into report: inout BatchReport
    ) {
        do {
            var result = try prepared.get()
            let output = outputPath(item, target, format: result.format)
            try checkOwnership(output, item: item)
            try FileIO.makeDirectories(FileIO.parentDirectory(of: output))
            // The variants' names are checked before anything is written: a clash writes no file of the job.
            let variantPaths = try result.variants.map { variant in
                let path = self.variantPath(item, target, variant: variant.name, format: variant.image.format)
                try checkOwnership(path, item: item, variant: true)
                return path
            }
            try FileIO.writeAtomically(result, to: output)
            report.output = output
            report.bytes = result.byteCount
            for (variant, path) in zip(result.variants, variantPaths) {
                try FileIO.writeAtomically(variant.image, to: path)
                report.variantOutputs.append(
                    BatchVariantOutput(name: variant.name, output: path, bytes: variant.image.byteCount))
            }
            result.dropOutput()
            report.result = result
        } catch {
            report.error = .from(error, file: item.input)
        }
    }

    /// Where an item's variant `name` for `target` goes, in `format`: beside the output, the variant's name
    /// before the extension (`out/mastodon/IMG_1.small.jpg`; `BatchItem.variantOutputName(_:for:)`).
    public func variantPath(_ item: BatchItem, _ target: BatchTarget, variant name: String, format: ImageFormat)
        -> String
    {
        outputFolder(target) + "/" + item.variantOutputName(name, for: format)
    }

    /// Refuses an output that is the input itself, or whose name belongs to another file of the input's
    /// folder (see `BatchItem`): the error names both files. A `variant` output (`IMG_1.small.jpg`) is also
    /// refused when a file of the input's folder has its stem (`IMG_1.small.png`), whose own output it could be.
    private func checkOwnership(_ output: String, item: BatchItem, variant: Bool = false) throws {
        if variant {
            let stem = BatchItem.stem(BatchItem.lastComponent(output))
            let folder = FileIO.parentDirectory(of: item.input)
            let extensions = Set(ImageFormat.allCases.flatMap { [$0.fileExtension, $0.rawValue] } + ["jpeg", "jpe"])
            for fileExtension in extensions.sorted() {
                let owner = folder + "/" + stem + "." + fileExtension
                if FileIO.exists(owner) && !Batch.samePath(owner, item.input) {
                    throw SharePipeError.unwritable(
                        file: output,
                        reason:
                            "the variant's name \(BatchItem.lastComponent(output)) could be the output of the input "
                            + "\(owner); \(item.input) is not prepared so that neither overwrites the other (rename one of them)"
                    )
                }
            }
        }
        if Batch.samePath(output, item.input) {
            throw SharePipeError.unwritable(file: output, reason: "output would overwrite the input \(item.input)")
        }
        let name = BatchItem.lastComponent(output)
        if item.mirrorsFolder, name != BatchItem.lastComponent(item.input) {
            let owner = FileIO.parentDirectory(of: item.input) + "/" + name
            if FileIO.exists(owner) {
                throw SharePipeError.unwritable(
                    file: output,
                    reason: "the output name \(name) belongs to the input \(owner); \(item.input) is not "
                        + "prepared so that neither overwrites the other (rename one of them)")
            }
        }
    }

    /// Files found while walking a directory that are never images (sidecars, notes) and are passed
    /// over silently. Files named explicitly are always tried, and images are recognised by their
    /// bytes, not their names: a JPEG called photo.png is still read as a JPEG.
    static let sidecarExtensions: Set<String> = [
        "md", "txt", "xmp", "json", "jsonl", "aae", "tsv", "csv", "html", "xml",
        "pdf", "mov", "mp4", "log", "md5", "sha1", "sha256", "sha512", "sig", "asc",
    ]

    static func isSidecar(_ path: String) -> Bool {
        guard let fileExtension = BatchItem.split(lastComponent(path)).fileExtension else { return false }
        return sidecarExtensions.contains(fileExtension.lowercased())
    }

    static func lastComponent(_ path: String) -> String { BatchItem.lastComponent(path) }

    static func samePath(_ a: String, _ b: String) -> Bool {
        guard let ra = realpath(b, nil) else { return false }
        defer { free(ra) }
        guard FileIO.exists(a), let rb = realpath(a, nil) else { return false }
        defer { free(rb) }
        return strcmp(ra, rb) == 0
    }
}
