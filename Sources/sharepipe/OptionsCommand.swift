import ArgumentParser
import SharePipe

/// `sharepipe options`: every row of the library's `OptionTable`, with the name each surface gives it (flag,
/// profile field, query parameter), its default and its help. `scripts/docs-reference` writes the docs'
/// reference tables from `--json`.
struct OptionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "options",
        abstract: "List every option: its flag, profile-file field, server query parameter, default and help.")

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let rows = OptionTable.all.map(OptionRow.init)
        if json {
            print(JSONText.encode(rows))
        } else {
            print(OptionRow.table(rows))
        }
    }
}

/// One option as `sharepipe options` prints it (stable: fields are only ever added).
struct OptionRow: Encodable {
    /// The library's name (`limits.maxPixels`).
    var name: String
    /// `--max-pixels`, or nil when the command line has none.
    var flag: String?
    /// The profile file's field (`animated.maxFrames`), or nil.
    var profileField: String?
    /// The server's query parameter (`max_bytes`), or nil.
    var query: String?
    /// Whether a server's client may set it (the others are the operator's).
    var clientMaySet: Bool
    /// `integer`, `optional integer`, `boolean`, `formats` or the words of a choice (`all|gps|none`).
    var type: String
    /// What a valid value is, when narrower than the type (`1...100`, `at least 1024 bytes`).
    var valid: String?
    /// The library's default (`none` for an unset option).
    var defaultValue: String
    var help: String

    init(_ spec: OptionSpec) {
        name = spec.name
        flag = spec.flag
        profileField = spec.profileField
        query = spec.queryName
        clientMaySet = spec.clientMaySet
        switch spec.kind {
        case .integer(let optional): type = optional ? "optional integer" : "integer"
        case .boolean: type = "boolean"
        case .choice(let words): type = words.joined(separator: "|")
        case .formats: type = "formats"
        case .families: type = "families"
        case .quality: type = "integer|auto[:SCORE]"
        case .names: type = "names"
        case .aspectRatio: type = "aspect ratio (W:H)"
        }
        switch spec.valid {
        case .any: valid = nil
        case .atLeast(_, let phrase, let maximum):
            valid = maximum == Int.max ? phrase : "\(phrase), at most \(maximum)"
        case .within(let range): valid = "\(range.lowerBound)...\(range.upperBound)"
        case .atLeastOption(let other): valid = "at least \(OptionTable.displayName(of: other, on: .library))"
        case .fromOneUpToOption(let other): valid = "1...\(OptionTable.displayName(of: other, on: .library))"
        case .withinAndUpToOption(let range, let other):
            valid =
                "\(range.lowerBound)...\(range.upperBound), at most \(OptionTable.displayName(of: other, on: .library))"
        case .nonEmpty(let phrase): valid = phrase
        case .declaredVariants: valid = "variants the service profile declares"
        case .aspectRatio:
            valid =
                "1:\(AspectRatio.mostElongated) to \(AspectRatio.mostElongated):1, terms 1...\(AspectRatio.largestTerm)"
        }
        defaultValue = spec.defaultValue
        help = spec.help
    }

    /// The rows as a text table: name, flag, profile field, query, default.
    static func table(_ rows: [OptionRow]) -> String {
        let header = ["option", "flag", "profile field", "query", "default"]
        let lines = rows.map { row in
            [
                row.name, row.flag ?? "-", row.profileField ?? "-",
                row.query.map { row.clientMaySet ? $0 : $0 + " (operator)" } ?? "-", row.defaultValue,
            ]
        }
        let widths = header.indices.map { column in ([header] + lines).map { $0[column].count }.max() ?? 0 }
        return ([header] + lines).map { line in
            line.enumerated().map { $1.padding(widths[$0]) }.joined(separator: "  ").trimmingTrailingSpaces()
        }.joined(separator: "\n")
    }
}
