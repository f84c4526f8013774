import ArgumentParser
import SharePipe
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@main
struct SharePipeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sharepipe",
        abstract: "Prepare images for posting: strip private metadata, apply orientation, downscale, fit under a service's byte limit.",
        subcommands: [PrepareCommand.self, InspectCommand.self, ServicesCommand.self],
        defaultSubcommand: PrepareCommand.self
    )
}

extension StripMode: ExpressibleByArgument {}
extension FitStrategy: ExpressibleByArgument {}

/// Options that shape how each image is prepared.
struct PipelineOptions: ParsableArguments {
    @Option(help: "Service profile whose limits to meet (x, weibo). Explicit options below override it.")
    var service: String?

    @Option(help: "Largest short edge of the output in pixels (never enlarged).")
    var maxShortEdge: Int?

    @Option(help: "Largest output size in bytes.")
    var maxBytes: Int?

    @Option(help: "Metadata to remove: all (keep only the colour profile), gps (keep Exif without location), none.")
    var strip: StripMode = .all

    @Option(help: "Highest JPEG quality; the byte-limit search starts here.")
    var quality: Int = 85

    @Option(help: "Lowest JPEG quality the byte-limit search may use before shrinking dimensions.")
    var minQuality: Int = 40

    @Flag(help: "Write progressive JPEGs.")
    var progressive = false

    @Option(help: "memoryFirst (re-decode for each size) or cpuFirst (keep the first decode).")
    var strategy: FitStrategy = .memoryFirst

    @Option(help: "Refuse images with more pixels than this (decompression bombs).")
    var maxPixels: Int = ImageLimits().maxPixels

    @Option(help: "Refuse images wider or taller than this.")
    var maxDimension: Int = ImageLimits().maxDimension

    func validate() throws {
        if let service, ServiceProfile.named(service) == nil {
            let names = ServiceProfile.builtIn.map(\.name).joined(separator: ", ")
            throw ValidationError("unknown service '\(service)' (known: \(names))")
        }
        do { try makeOptions().validate() } catch let error as SharePipeError { throw ValidationError(error.description) }
    }

    func makeOptions() -> PrepareOptions {
        var base = PrepareOptions(strip: strip, quality: quality, minQuality: minQuality, progressive: progressive,
                                  strategy: strategy)
        base.limits.maxPixels = maxPixels
        base.limits.maxDimension = maxDimension
        if let service, let profile = ServiceProfile.named(service) { base = profile.options(basedOn: base) }
        if let maxShortEdge { base.maxShortEdge = maxShortEdge }
        if let maxBytes { base.maxBytes = maxBytes }
        return base
    }
}

struct PrepareCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prepare",
        abstract: "Prepare files and directories; outputs mirror the input tree under --out.")

    @Argument(help: "Image files or directories.")
    var inputs: [String]

    @Option(name: .shortAndLong, help: "Output directory (created if missing). Inputs are never overwritten.")
    var out: String

    @OptionGroup var pipeline: PipelineOptions

    @Flag(name: .shortAndLong, help: "Descend into subdirectories.")
    var recursive = false

    @Option(name: .shortAndLong, help: "Files to prepare at once.")
    var jobs: Int = 1

    @Flag(help: "Skip inputs whose output already exists (to finish an interrupted batch).")
    var skipExisting = false

    @Flag(help: "Print one JSON object per file instead of text.")
    var json = false

    func validate() throws {
        if jobs < 1 { throw ValidationError("expected at least 1 for --jobs, got \(jobs)") }
    }

    func run() throws {
        SignalCleanup.install()
        let batch = Batch(outputDirectory: out, options: pipeline.makeOptions(), recursive: recursive, jobs: jobs,
                          skipExisting: skipExisting)
        let (items, missing) = batch.plan(inputs)
        let reporter = Reporter(json: json, total: items.count)
        for path in missing { reporter.missing(path) }
        let reports = batch.run(items) { _, report in reporter.fileDone(report) }
        reporter.summary(reports, missing: missing.count)
        if !missing.isEmpty || reports.contains(where: { $0.error != nil }) { throw ExitCode(1) }
    }
}

struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect", abstract: "Show what an image's header says, without decoding pixels.")

    @Argument(help: "Image files.")
    var files: [String]

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        var failed = false
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
                printError("\(error)")
            }
        }
        if failed { throw ExitCode(1) }
    }
}

struct ServicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "services", abstract: "List the service profiles.")

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        if json {
            print(JSONText.encode(ServiceProfile.builtIn))
            return
        }
        print("name     still limit   animated limit  short edge  source")
        for profile in ServiceProfile.builtIn {
            let animated = profile.maxAnimatedBytes.map(String.init) ?? "-"
            print("\(profile.name.padding(8)) \(String(profile.maxStillBytes).padding(13)) \(animated.padding(15)) \(String(profile.maxShortEdge).padding(11)) \(profile.source)")
        }
    }
}
