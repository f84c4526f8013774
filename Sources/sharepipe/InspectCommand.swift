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
