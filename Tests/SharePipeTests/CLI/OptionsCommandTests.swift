import Foundation
import Testing
@testable import SharePipe

/// `sharepipe options`, which scripts/docs-reference reads to write the docs' option tables: every row of
/// `OptionTable`, in its order, with each surface's name, the default and the help.
@Suite struct OptionsCommandTests {
    @Test func jsonListsEveryOptionWithEachSurfacesName() throws {
        let run = try Tool.run(Tool.sharepipe, ["options", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]])
        #expect(rows.map { $0["name"] as? String } == OptionTable.all.map(\.name))
        for (row, spec) in zip(rows, OptionTable.all) {
            #expect(row["flag"] as? String == spec.flag, "\(spec.name)")
            #expect(row["profileField"] as? String == spec.profileField, "\(spec.name)")
            #expect(row["query"] as? String == spec.queryName, "\(spec.name)")
            #expect(row["clientMaySet"] as? Bool == spec.clientMaySet, "\(spec.name)")
            #expect(row["defaultValue"] as? String == spec.defaultValue, "\(spec.name)")
            #expect(row["help"] as? String == spec.help, "\(spec.name)")
        }
        let maxBytes = try #require(rows.first { $0["name"] as? String == "maxBytes" })
        #expect(maxBytes["valid"] as? String == "at least 1024 bytes, at most 1099511627776")
        #expect(maxBytes["type"] as? String == "optional integer")
        let strip = try #require(rows.first { $0["name"] as? String == "strip" })
        #expect(strip["type"] as? String == "all|gps|none" && strip["defaultValue"] as? String == "all")
    }

    @Test func textIsATableOfEveryOption() throws {
        let run = try Tool.run(Tool.sharepipe, ["options"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.count == OptionTable.all.count + 1)
        #expect(lines.first?.hasPrefix("option") == true)
        let row = try #require(lines.first { $0.hasPrefix("limits.maxPixels ") })
        #expect(row.contains("--max-pixels") && row.contains("max_pixels (operator)"))
    }
}
