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
    @Option(help: "Service profile whose limits to meet; repeat for several services (outputs go to --out/<service>/). `sharepipe services` lists them. Explicit options below override the profile.")
    var service: [String] = []

    @Option(help: "JSON file adding or overriding service profiles (default: $SHAREPIPE_PROFILES, else ~/.config/sharepipe/profiles.json if it exists).")
    var profiles: String?

    @Option(help: "Largest short edge of the output in pixels (never enlarged).")
    var maxShortEdge: Int?

    @Option(help: "Largest output size in bytes.")
    var maxBytes: Int?

    @Option(help: "Metadata to remove: all (keep only the colour profile; the default), gps (keep Exif without location), none.")
    var strip: StripMode?

    @Option(help: "Highest JPEG quality; the byte-limit search starts here (default 85).")
    var quality: Int?

    @Option(help: "Lowest JPEG quality the byte-limit search may use before shrinking dimensions (default 40).")
    var minQuality: Int?

    @Flag(help: "Write progressive JPEGs.")
    var progressive = false

    @Option(help: "memoryFirst (re-decode for each size) or cpuFirst (keep the first decode).")
    var strategy: FitStrategy = .memoryFirst

    @Option(help: "Refuse images with more pixels than this (decompression bombs).")
    var maxPixels: Int = ImageLimits().maxPixels

    @Option(help: "Refuse images wider or taller than this.")
    var maxDimension: Int = ImageLimits().maxDimension

    @Option(help: "Refuse input files larger than this many bytes, before reading them.")
    var maxInputBytes: Int = ImageLimits().maxInputBytes

    @Option(help: "Refuse GIFs with more frames than this (checked on the header walk, before decoding).")
    var maxFrames: Int = ImageLimits().maxFrames

    @Option(help: "Refuse animations whose frames add up to more pixels than this (frames × width × height).")
    var maxFramePixels: Int = ImageLimits().maxTotalFramePixels

    func validate() throws {
        let catalog = try loadCatalog()
        for name in service where catalog.named(name) == nil {
            let names = catalog.profiles.map(\.name).joined(separator: ", ")
            throw ValidationError("unknown service '\(name)' (known: \(names))")
        }
        do {
            for (_, options) in try makeTargets() { try options.validate() }
        } catch let error as SharePipeError {
            throw ValidationError(error.description)
        }
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
        base.limits.maxPixels = maxPixels
        base.limits.maxDimension = maxDimension
        base.limits.maxInputBytes = maxInputBytes
        base.limits.maxFrames = maxFrames
        base.limits.maxTotalFramePixels = maxFramePixels
        let catalog = try loadCatalog()
        let profiles = service.compactMap { catalog.named($0) }
        let targets: [(String?, PrepareOptions)] = profiles.isEmpty
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
        let batch = Batch(outputDirectory: out, targets: try pipeline.makeTargets().map { BatchTarget(service: $0.name, options: $0.options) },
                          recursive: recursive, jobs: jobs, skipExisting: skipExisting)
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
