#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// One input file and where its output goes.
public struct BatchItem: Sendable, Equatable {
    public var input: String
    /// Output path without extension (the extension follows the output format).
    public var outputStem: String
}

/// One set of options a batch prepares every file for, optionally named after a service.
public struct BatchTarget: Sendable {
    /// The service's name; outputs go to `out/<service>/` when a batch has several targets.
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
    public var output: String?
    public var inputBytes: Int?
    public var result: PreparedImage?
    public var error: SharePipeError?
    /// Skipped because the output already existed (`--skip-existing`).
    public var skipped: Bool = false
}

/// Runs the pipeline over files and directories, mirroring the input tree under an output directory.
public struct Batch: Sendable {
    public var outputDirectory: String
    public var targets: [BatchTarget]
    public var recursive: Bool
    public var jobs: Int
    public var skipExisting: Bool

    public init(outputDirectory: String, options: PrepareOptions, recursive: Bool = false, jobs: Int = 1,
                skipExisting: Bool = false) {
        self.init(outputDirectory: outputDirectory, targets: [BatchTarget(options: options)], recursive: recursive,
                  jobs: jobs, skipExisting: skipExisting)
    }

    /// A batch preparing every file once per target (service).
    public init(outputDirectory: String, targets: [BatchTarget], recursive: Bool = false, jobs: Int = 1,
                skipExisting: Bool = false) {
        precondition(!targets.isEmpty, "a batch needs at least one target")
        self.outputDirectory = outputDirectory
        self.targets = targets
        self.recursive = recursive
        self.jobs = max(1, jobs)
        self.skipExisting = skipExisting
    }

    /// Expands inputs into items: a file maps to `out/<name>`, a directory's files to `out/<dir>/<relative path>`.
    public func plan(_ inputs: [String]) -> (items: [BatchItem], missing: [String]) {
        var items: [BatchItem] = []
        var missing: [String] = []
        for input in inputs {
            let trimmed = input.count > 1 && input.hasSuffix("/") ? String(input.dropLast()) : input
            if FileIO.isDirectory(trimmed) {
                let base = Batch.lastComponent(trimmed)
                for file in FileIO.listFiles(in: trimmed, recursive: recursive) where !Batch.isSidecar(file) {
                    let relative = String(file.dropFirst(trimmed.count + 1))
                    items.append(BatchItem(input: file, outputStem: Batch.stem(outputDirectory + "/" + base + "/" + relative)))
                }
            } else if FileIO.exists(trimmed) {
                items.append(BatchItem(input: trimmed, outputStem: Batch.stem(outputDirectory + "/" + Batch.lastComponent(trimmed))))
            } else {
                missing.append(input)
            }
        }
        return (items, missing)
    }

    /// Prepares and writes every item for every target, `jobs` files at a time; reports come back in input
    /// order (then target order). A failure on one file never stops the others. `progress` is called
    /// (serially) after each output.
    public func run(_ items: [BatchItem], progress: @Sendable (Int, BatchReport) -> Void = { _, _ in }) -> [BatchReport] {
        let results = ResultSlots(count: items.count)
        let next = Counter()
        let progressLock = Mutex()
        let workers = min(jobs, max(1, items.count))
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while true {
                let index = next.increment()
                if index >= items.count { break }
                let reports = process(items[index])
                results.set(index, reports)
                progressLock.locked { for report in reports { progress(index, report) } }
            }
        }
        return results.values()
    }

    /// Where an item's output for `target` goes, without extension.
    func outputStem(_ item: BatchItem, _ target: BatchTarget) -> String {
        guard targets.count > 1, let service = target.service else { return item.outputStem }
        let relative = item.outputStem.dropFirst(outputDirectory.count)
        return outputDirectory + "/" + service + relative
    }

    /// Prepares one item for every target and writes the outputs atomically. Each target opens the
    /// source afresh; under `cpuFirst` they share one render (see `Pipeline.prepare(_:forEach:)`).
    public func process(_ item: BatchItem) -> [BatchReport] {
        let inputBytes = try? FileIO.size(of: item.input)
        var reports = targets.map { target -> BatchReport in
            var report = BatchReport(input: item.input, service: target.service)
            report.inputBytes = inputBytes
            let stem = outputStem(item, target)
            if skipExisting, let existing = ImageFormat.allCases.map({ stem + "." + $0.fileExtension }).first(where: FileIO.exists) {
                report.output = existing
                report.skipped = true
            }
            return report
        }
        let pending = reports.indices.filter { !reports[$0].skipped }
        let results = Pipeline.prepare(.file(path: item.input), forEach: pending.map { targets[$0].options })
        for (index, result) in zip(pending, results) {
            write(result, for: item, target: targets[index], into: &reports[index])
        }
        return reports
    }

    private func write(_ prepared: Result<PreparedImage, SharePipeError>, for item: BatchItem, target: BatchTarget,
                       into report: inout BatchReport) {
        let stem = outputStem(item, target)
        do {
            let result = try prepared.get()
            let output = stem + "." + result.format.fileExtension
            if Batch.samePath(output, item.input) {
                throw SharePipeError.unwritable(file: output, reason: "output would overwrite the input")
            }
            try FileIO.makeDirectories(FileIO.parentDirectory(of: output))
            try FileIO.writeAtomically(result.bytes, to: output)
            report.output = output
            report.result = result
        } catch let error as SharePipeError {
            report.error = error
        } catch {
            report.error = .corrupt(file: item.input, reason: "\(error)")
        }
    }

    /// Files found while walking a directory that are never images (sidecars, notes) and are passed
    /// over silently. Files named explicitly are always tried, and images are recognised by their
    /// bytes, not their names: a JPEG called photo.png is still read as a JPEG.
    static let sidecarExtensions: Set<String> = ["md", "txt", "xmp", "json", "aae", "tsv", "csv", "html", "xml", "pdf", "mov", "mp4"]

    static func isSidecar(_ path: String) -> Bool {
        let name = lastComponent(path)
        guard let dot = name.lastIndex(of: ".") else { return false }
        return sidecarExtensions.contains(name[name.index(after: dot)...].lowercased())
    }

    static func lastComponent(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    static func stem(_ path: String) -> String {
        let name = lastComponent(path)
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return path }
        return String(path.dropLast(name.distance(from: dot, to: name.endIndex)))
    }

    static func samePath(_ a: String, _ b: String) -> Bool {
        guard let ra = realpath(b, nil) else { return false }
        defer { free(ra) }
        guard FileIO.exists(a), let rb = realpath(a, nil) else { return false }
        defer { free(rb) }
        return strcmp(ra, rb) == 0
    }
}

final class Counter: @unchecked Sendable {
    private let lock = Mutex()
    private var value = 0
    func increment() -> Int { lock.locked { defer { value += 1 }; return value } }
}

final class ResultSlots: @unchecked Sendable {
    private let lock = Mutex()
    private var slots: [[BatchReport]?]
    init(count: Int) { slots = Array(repeating: nil, count: count) }
    func set(_ index: Int, _ reports: [BatchReport]) { lock.locked { slots[index] = reports } }
    func values() -> [BatchReport] { lock.locked { slots.compactMap { $0 }.flatMap { $0 } } }
}
