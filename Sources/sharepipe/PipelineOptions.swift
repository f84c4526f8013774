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
    var quality: QualitySetting?

    @Option(name: .table(OptionTable.minQuality), help: .table(OptionTable.minQuality, showingDefault: true))
    var minQuality: Int?

    @Flag(name: .table(OptionTable.progressive), help: .table(OptionTable.progressive))
    var progressive = false

    @Option(name: .table(OptionTable.strategy), help: .table(OptionTable.strategy))
    var strategy: FitStrategy = .memoryFirst

    @Option(name: .table(OptionTable.timeout), help: .table(OptionTable.timeout))
    var timeout: Int?

    @Option(name: .table(OptionTable.animationOutput), help: .table(OptionTable.animationOutput))
    var animation: AnimationOutput?

    @Option(
        name: .table(OptionTable.blurHashXComponents),
        help: .table(OptionTable.blurHashXComponents, showingDefault: true))
    var blurHashX: Int?

    @Option(
        name: .table(OptionTable.blurHashYComponents),
        help: .table(OptionTable.blurHashYComponents, showingDefault: true))
    var blurHashY: Int?

    @Option(name: .table(OptionTable.variants), help: .table(OptionTable.variants))
    var variant: [String] = []
    @Option(name: .table(OptionTable.cropTo), help: .table(OptionTable.cropTo), transform: PipelineOptions.ratio)
    var cropTo: AspectRatio?

    /// `--crop-to`'s text as a ratio, or an error saying what it takes.
    static func ratio(_ text: String) throws -> AspectRatio {
        guard let ratio = AspectRatio(text) else {
            throw ValidationError("--crop-to takes " + OptionSpec.Kind.aspectRatio.textPhrase + ", got '\(text)'")
        }
        return ratio
    }

    /// nil: not given (`ImageLimits.maxPixels` unset: the cost-based default).
    @Option(name: .table(OptionTable.limitsMaxPixels), help: .table(OptionTable.limitsMaxPixels))
    var maxPixels: Int?

    @Option(name: .table(OptionTable.limitsMaxStreamedMemory), help: .table(OptionTable.limitsMaxStreamedMemory))
    var maxStreamedMemory: Int = ImageLimits().maxStreamedMemory

    @Option(
        name: .table(OptionTable.limitsMaxWorkPerInputByte), help: .table(OptionTable.limitsMaxWorkPerInputByte))
    var maxWorkPerByte: Int = ImageLimits().maxWorkPerInputByte

    @Option(name: .table(OptionTable.limitsMaxDimension), help: .table(OptionTable.limitsMaxDimension))
    var maxDimension: Int = ImageLimits().maxDimension

    @Option(name: .table(OptionTable.limitsMaxInputBytes), help: .table(OptionTable.limitsMaxInputBytes))
    var maxInputBytes: Int = ImageLimits().maxInputBytes

    @Option(name: .table(OptionTable.limitsMaxFrames), help: .table(OptionTable.limitsMaxFrames))
    var maxFrames: Int = ImageLimits().maxFrames

    @Option(name: .table(OptionTable.limitsMaxTotalFramePixels), help: .table(OptionTable.limitsMaxTotalFramePixels))
    var maxFramePixels: Int = ImageLimits().maxTotalFramePixels

    @Option(
        name: .table(OptionTable.limitsDisabledFormats), help: .table(OptionTable.limitsDisabledFormats),
        transform: PipelineOptions.families)
    var disabledFormats: Set<FormatFamily> = []

    /// `--disable`'s text as families, or an error saying which names it takes.
    static func families(_ text: String) throws -> Set<FormatFamily> {
        guard let families = FormatFamily.parse(text) else {
            throw ValidationError("--disable takes " + OptionSpec.Kind.families.textPhrase + ", got '\(text)'")
        }
        return families
    }

    func validate() throws {
        let catalog = try loadCatalog()
        for name in service where catalog.named(name) == nil {
            let names = catalog.profiles.map(\.name).joined(separator: ", ")
            throw ValidationError("unknown service '\(name)' (known: \(names))")
        }
        // The CLI's entry check: the same `validate()` the library's entry points run, with the flags named.
        var service: String?
        do {
            for (name, options) in try makeTargets() {
                service = name
                try options.validate()
            }
        } catch SharePipeError.invalidOptions(let invalid) {
            // Which service, where several are named and a variant is asked for (each declares its own).
            let which = self.service.count > 1 && !variant.isEmpty ? service.map { " (for \($0))" } ?? "" : ""
            throw ValidationError("invalid options: " + PipelineOptions.namingFlags(invalid) + which)
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
        base.timeout = timeout
        if let blurHashX { base.blurHashXComponents = blurHashX }
        if let blurHashY { base.blurHashYComponents = blurHashY }
        if let maxPixels { base.limits.maxPixels = maxPixels }
        base.limits.maxStreamedMemory = maxStreamedMemory
        base.limits.maxWorkPerInputByte = maxWorkPerByte
        base.limits.maxDimension = maxDimension
        base.limits.maxInputBytes = maxInputBytes
        base.limits.maxFrames = maxFrames
        base.limits.maxTotalFramePixels = maxFramePixels
        base.limits.disabledFormats = disabledFormats
        let catalog = try loadCatalog()
        let profiles = service.compactMap { catalog.named($0) }
        let targets: [(String?, PrepareOptions)] =
            profiles.isEmpty
            ? [(nil, base)] : profiles.map { ($0.name, $0.options(basedOn: base)) }
        return targets.map { name, profileOptions in
            var options = profileOptions
            if let strip { options.strip = strip }
            if let quality { options.qualitySetting = quality }
            if let minQuality { options.minQuality = minQuality }
            if let maxShortEdge { options.maxShortEdge = maxShortEdge }
            if let maxBytes { options.maxBytes = maxBytes }
            if !variant.isEmpty { options.variants = variant }
            if let cropTo { options.cropTo = cropTo }
            if let animation { options.animationOutput = animation }
            return (name, options)
        }
    }
}
