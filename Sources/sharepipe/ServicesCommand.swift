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
