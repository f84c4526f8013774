import SharePipe

/// The options a client may set in the query of `POST /v1/prepare`, over the service profile's. Which they
/// are, their query names, how their text is read and their valid values all come from the library's one
/// table of options (`OptionTable`: the rows with `clientMaySet`, by `OptionSpec.queryName`), the same table
/// the CLI's flags and the profile files are read through: strip, max_bytes, max_short_edge, quality,
/// min_quality, progressive, blurhash_x, blurhash_y, animation. Limits (pixels, frames, input bytes) are the operator's, not the client's.
public struct QueryOptions: Sendable {
    /// The option parameters in query order, as text: read and checked against each profile by `apply(to:)`
    /// (`PrepareOptions.applying(textValues:)`), because their valid values depend on the profile's.
    let values: [(name: String, value: String)]

    /// Every query parameter `/v1/prepare` takes: `service` and the options a client may set.
    public static let parameters = ["service"] + OptionTable.all.filter(\.clientMaySet).compactMap(\.queryName)

    /// A query parameter `/v1/prepare` does not take: the message names it.
    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    /// The option parameters of the query's (name, value) pairs; names other than `parameters` are refused.
    init(query: [(name: String, value: String)]) throws(Invalid) {
        for (name, _) in query where !Self.parameters.contains(name) {
            throw Invalid(
                description: "unknown query parameter \(name) (known: \(Self.parameters.joined(separator: ", ")))")
        }
        values = query.filter { $0.name != "service" }
    }

    init() { values = [] }

    /// Whether any option is set.
    var isEmpty: Bool { values.isEmpty }

    /// Whether the query asks for variants (`variant=`): the answer is then `multipart/mixed`, one part per output.
    var asksForVariants: Bool { values.contains { $0.name == OptionTable.variants.queryName } }

    /// Sets the given options over a profile's, as the CLI sets its flags over the profile's, and checks the
    /// result. Throws `invalidOptions` for text that is not a value of its option, an option given twice, or
    /// a value out of range (`message(for:)` names it by its query parameter).
    func apply(to options: inout PrepareOptions) throws(SharePipeError) {
        if values.isEmpty { return }
        options = try options.applying(textValues: values, scope: .client)
    }

    /// An invalid option's message with every option named by its query parameter ("expected at least
    /// 1024 bytes for max_bytes, got 10"); options no parameter sets (a profile's) keep their profile name.
    static func message(for invalid: InvalidOption) -> String {
        var text = invalid.message(on: .query)
        if invalid.option == "minQuality" {
            text += " (min_quality defaults to the service's floor: lower it together with quality)"
        }
        return "invalid options: " + text
    }
}
