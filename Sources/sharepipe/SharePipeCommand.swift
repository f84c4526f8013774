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
        subcommands: [PrepareCommand.self, InspectCommand.self, ServicesCommand.self, OptionsCommand.self],
        defaultSubcommand: PrepareCommand.self
    )

    /// ArgumentParser's own `main`, with a usage error ending in exit status 2 (docs/cli.md, "Exit status")
    /// instead of its default 64.
    static func main() {
        // Freed memory goes back to the system at once: a job's peak is not kept by the heap for the next.
        ProcessAllocator.releaseFreedMemoryPromptly()
        // Start-up's code, and the decoder's once an auto search starts, is unmapped: not in a job's peak RSS.
        ProcessAllocator.unmapCodeAtPhases()
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

/// The exit statuses, distinct and documented in docs/cli.md.
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
extension QualitySetting: ExpressibleByArgument {
    /// `85`, `auto` or `auto:SCORE`.
    public init?(argument: String) { self.init(text: argument) }
}
extension AnimationOutput: ExpressibleByArgument {}

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

func isDirectory(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
}

/// Prints a fatal error and returns the exit status to throw.
func fatal(_ message: String) -> ExitCode {
    printError("sharepipe: " + message)
    return ExitCode(ExitStatus.nothingDoneOrFatal)
}
