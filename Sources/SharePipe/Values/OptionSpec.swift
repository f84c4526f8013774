/// Where an option is set: each names it its own way.
public enum OptionSurface: Sendable, CaseIterable {
    /// `PrepareOptions`' property path: `animation.maxTotalPixels`.
    case library
    /// The `sharepipe` flag: `--max-bytes`. Options without a flag come from a profile file on the command
    /// line, so they are named by their profile field.
    case commandLine
    /// A profile file's field: `animated.maxTotalPixels`, `maxStillBytes`.
    case profileFile
    /// An HTTP query parameter: `max_bytes`.
    case query
}

/// One row of `OptionTable`.
public struct OptionSpec: Sendable, CustomStringConvertible {
    /// The value's type.
    public enum Kind: Sendable, Equatable {
        /// A whole number; `optional` when the option may be unset (no cap).
        case integer(optional: Bool)
        /// true or false.
        case boolean
        /// One of these words.
        case choice([String])
        /// A list of formats (`ImageFormat` raw values); unset accepts every format.
        case formats
        /// A set of input families (`FormatFamily` raw values); empty by default.
        case families
        /// A whole number, or `auto` / `auto:SCORE` (`QualitySetting`).
        case quality
        /// A list of names (`OptionTable.variants`), one a value: a flag or query parameter given again adds one.
        case names
        /// A width:height ratio (`AspectRatio`); unset by default.
        case aspectRatio
    }

    /// The values an option accepts (an unset optional is always accepted).
    public enum ValidValues: Sendable, Equatable {
        /// Every value of its type.
        case any
        /// At least `minimum` (`phrase` says so in messages: "a positive number of pixels") and at most
        /// `atMost` ("at most 1099511627776").
        case atLeast(Int, phrase: String, atMost: Int = Int.max)
        /// A number in this range.
        case within(ClosedRange<Int>)
        /// At least the value of the option named (maxLongEdge ≥ maxShortEdge).
        case atLeastOption(String)
        /// From 1 up to the value of the option named (minQuality ≤ quality).
        case fromOneUpToOption(String)
        /// A number in the range, and at most the value of the option named where that is set
        /// (video.minFrameRate ≤ video.maxFrameRate).
        case withinAndUpToOption(ClosedRange<Int>, String)
        /// At least one element; `phrase` says so in messages.
        case nonEmpty(phrase: String)
        /// Names of variants the options declare (`PrepareOptions.declaredVariants`), each once.
        case declaredVariants
        /// A ratio whose terms and elongation are within `AspectRatio`'s bounds.
        case aspectRatio
    }

    /// The name as `PrepareOptions` spells it, the path for nested values: `limits.maxPixels`.
    public let name: String
    /// The `sharepipe prepare` flag (`--max-bytes`), or nil when the CLI has none.
    public let flag: String?
    /// The profile file's field, dotted where nested (`animated.maxTotalPixels`), or nil.
    public let profileField: String?
    /// The HTTP query parameter (`max_bytes`), or nil.
    public let queryName: String?
    /// Whether a server's client may set it by its query name; the others (the limits, the strategy) are
    /// the server operator's.
    public let clientMaySet: Bool
    /// The values accepted.
    public let valid: ValidValues
    /// One sentence for help texts.
    public let help: String

    let field: OptionField<PrepareOptions>
    let profileBinding: OptionField<ServiceProfile>?

    init(
        _ name: String, _ field: OptionField<PrepareOptions>, flag: String? = nil,
        profile: (field: String, binding: OptionField<ServiceProfile>)? = nil, query: String? = nil,
        clientMaySet: Bool = false, valid: ValidValues = .any, help: String
    ) {
        self.name = name
        self.field = field
        self.flag = flag.map { "--" + $0 }
        self.profileField = profile?.field
        self.profileBinding = profile?.binding
        self.queryName = query
        self.clientMaySet = clientMaySet
        self.valid = valid
        self.help = help
    }

    /// The type of the value.
    public var kind: Kind { field.kind }

    /// The flag without its dashes (`max-bytes`), as ArgumentParser's `.customLong` takes it.
    public var flagName: String? { flag.map { String($0.dropFirst(2)) } }

    /// The default value as text (`1080`, `none` for an unset option, `all`, `false`).
    public var defaultValue: String { field.get(PrepareOptions()).text }

    /// How `surface` names the option: a flag bare (`--max-bytes`), other names in backquotes.
    public func displayName(on surface: OptionSurface) -> String {
        switch surface {
        case .library: return "`\(name)`"
        case .commandLine: return flag ?? "`\(profileField ?? name)`"
        case .profileFile: return "`\(profileField ?? name)`"
        case .query: return "`\(queryName ?? name)`"
        }
    }

    /// `name (kind) = default`.
    public var description: String { "\(name) (\(kind)) = \(defaultValue)" }

    /// Why this option's value in `options` cannot work, or nil when it can.
    func invalidity(in options: PrepareOptions) -> InvalidOption? {
        let value = field.get(options)
        switch (valid, value) {
        case (.declaredVariants, _):
            return options.variantProblem.map { InvalidOption(name, expected: .phrase($0.expected), found: $0.found) }
        case (.any, _), (_, .integer(nil)), (_, .formats(nil)), (_, .families), (_, .aspectRatio(nil)):
            return nil
        case (.aspectRatio, .aspectRatio(let ratio?)):
            return ratio.invalidity.map { InvalidOption(name, expected: .phrase($0), found: "\(ratio)") }
        case (.atLeast(let minimum, let phrase, let maximum), .integer(let number?)):
            if number < minimum { return InvalidOption(name, expected: .phrase(phrase), found: "\(number)") }
            return number <= maximum
                ? nil : InvalidOption(name, expected: .phrase("at most \(maximum)"), found: "\(number)")
        case (.within(let range), .quality(.fixed(let number))):
            return range.contains(number)
                ? nil
                : InvalidOption(
                    name, expected: .phrase("\(range.lowerBound)...\(range.upperBound)"), found: "\(number)")
        case (.within, .quality(.auto(let target))):
            let targets = QualitySetting.targets
            return targets.contains(target)
                ? nil
                : InvalidOption(
                    name,
                    expected: .phrase(
                        "a score of \(Int(targets.lowerBound)) to \(Int(targets.upperBound)) after auto:"),
                    found: "\(QualitySetting.auto(target: target))")
        case (.within(let range), .integer(let number?)):
            return range.contains(number)
                ? nil
                : InvalidOption(
                    name, expected: .phrase("\(range.lowerBound)...\(range.upperBound)"), found: "\(number)")
        case (.atLeastOption(let other), .integer(let number?)):
            guard let bound = Self.number(other, in: options), number < bound else { return nil }
            return InvalidOption(name, expected: .atLeast(option: other), found: "\(number)")
        case (.fromOneUpToOption(let other), .integer(let number?)):
            guard let bound = Self.number(other, in: options) else { return nil }
            return number >= 1 && number <= bound
                ? nil
                : InvalidOption(name, expected: .upTo(option: other, value: bound), found: "\(number)")
        case (.withinAndUpToOption(let range, let other), .integer(let number?)):
            guard range.contains(number) else {
                return InvalidOption(
                    name, expected: .phrase("\(range.lowerBound)...\(range.upperBound)"), found: "\(number)")
            }
            guard let bound = Self.number(other, in: options), number > bound else { return nil }
            return InvalidOption(name, expected: .upTo(option: other, value: bound), found: "\(number)")
        case (.nonEmpty(let phrase), .formats(let formats?)):
            return formats.isEmpty ? InvalidOption(name, expected: .phrase(phrase), found: "\(formats)") : nil
        default:
            preconditionFailure("OptionTable: \(name)'s check does not fit its type")
        }
    }

    /// The value of the whole-number option `name` refers to (nil when unset); a row naming an option that
    /// is not one traps, so a misspelt bound cannot turn a check off.
    private static func number(_ name: String, in options: PrepareOptions) -> Int? {
        // Under auto the search may go up to 100.
        if case .quality(let setting)? = OptionTable.option(named: name)?.field.get(options) {
            if case .fixed(let number) = setting { return number }
            return 100
        }
        guard case .integer(let value)? = OptionTable.option(named: name)?.field.get(options) else {
            preconditionFailure("OptionTable: \(name) is not a whole-number option")
        }
        return value
    }

    /// `text` read as this option's value, or `invalidOptions` naming the option and saying what text is
    /// expected. Numbers are decimal integers (`Int`'s range; no exponent, no spaces); booleans are
    /// `true`/`false`/`1`/`0`; words are spelt exactly; formats are separated by commas.
    func parse(_ text: String) throws(SharePipeError) -> OptionValue {
        let value: OptionValue?
        switch kind {
        case .integer: value = Int(text).map { OptionValue.integer($0) }
        case .boolean:
            value = ["true": true, "1": true, "false": false, "0": false][text].map { OptionValue.boolean($0) }
        case .choice(let words): value = words.contains(text) ? OptionValue.word(text) : nil
        case .formats:
            let formats = text.split(separator: ",", omittingEmptySubsequences: false).map {
                ImageFormat(rawValue: String($0))
            }
            value = formats.contains(nil) ? nil : OptionValue.formats(formats.compactMap { $0 })
        case .families:
            value = FormatFamily.parse(text).map { OptionValue.families($0) }
        case .quality: value = QualitySetting(text: text).map { OptionValue.quality($0) }
        case .names:
            value = OutputVariant.isValidName(text) ? OptionValue.names([text]) : nil
        case .aspectRatio:
            value = AspectRatio(text).map { OptionValue.aspectRatio($0) }
        }
        guard let value else {
            throw .invalidOptions(InvalidOption(name, expected: .phrase(kind.textPhrase), found: Self.quoted(text)))
        }
        return value
    }

    /// Text as an error shows it: quoted, cut after 40 characters.
    static func quoted(_ text: String) -> String {
        text.count <= 40 ? "'\(text)'" : "'\(text.prefix(40))…' (\(text.utf8.count) bytes)"
    }
}

extension OptionSpec.Kind: CustomStringConvertible {
    /// `integer`, `integer?`, `boolean`, `all|gps|none`, `formats`.
    public var description: String {
        switch self {
        case .integer(let optional): return optional ? "integer?" : "integer"
        case .boolean: return "boolean"
        case .choice(let words): return words.joined(separator: "|")
        case .formats: return "formats"
        case .families: return "families"
        case .quality: return "integer|auto[:SCORE]"
        case .names: return "names"
        case .aspectRatio: return "W:H?"
        }
    }

    /// What text a value of this kind is written as.
    public var textPhrase: String {
        switch self {
        case .integer: return "a whole number"
        case .boolean: return "true or false"
        case .choice(let words): return "one of " + words.joined(separator: ", ")
        case .formats:
            return "formats separated by commas (" + ImageFormat.allCases.map(\.rawValue).joined(separator: ", ") + ")"
        case .families:
            return "format families separated by commas ("
                + FormatFamily.allCases.map(\.rawValue).joined(separator: ", ") + "), or none"
        case .quality: return "a whole number, auto or auto:SCORE"
        case .names: return "a name of 1 to 32 of a-z, 0-9, _ and -"
        case .aspectRatio: return "a ratio W:H of whole numbers (1:1, 4:5)"
        }
    }
}

/// An option's value, whatever its type.
enum OptionValue: Sendable, Equatable {
    case integer(Int?)
    case boolean(Bool)
    case word(String)
    case formats([ImageFormat]?)
    case families(Set<FormatFamily>)
    case quality(QualitySetting)
    case names([String])
    case variantDeclarations([OutputVariant])
    case aspectRatio(AspectRatio?)

    /// The value as help texts show it.
    var text: String {
        switch self {
        case .integer(let number): return number.map { "\($0)" } ?? "none"
        case .boolean(let flag): return "\(flag)"
        case .word(let word): return word
        case .formats(let formats): return formats.map { $0.map(\.rawValue).joined(separator: ",") } ?? "all"
        case .families(let families): return FormatFamily.text(families)
        case .quality(let setting): return setting.description
        case .names(let names): return names.isEmpty ? "none" : names.joined(separator: ",")
        case .variantDeclarations(let declared):
            return declared.isEmpty ? "none" : declared.map(\.name).joined(separator: ",")
        case .aspectRatio(let ratio): return ratio.map(\.description) ?? "none"
        }
    }
}

/// Where a row's value lives in `Root` (`PrepareOptions`, or `ServiceProfile` for a profile's field).
enum OptionField<Root>: Sendable {
    case integer(WritableKeyPath<Root, Int> & Sendable)
    case optionalInteger(WritableKeyPath<Root, Int?> & Sendable)
    case boolean(WritableKeyPath<Root, Bool> & Sendable)
    case strip(WritableKeyPath<Root, StripMode> & Sendable)
    case strategy(WritableKeyPath<Root, FitStrategy> & Sendable)
    case formats(WritableKeyPath<Root, [ImageFormat]?> & Sendable)
    case formatList(WritableKeyPath<Root, [ImageFormat]> & Sendable)
    case families(WritableKeyPath<Root, Set<FormatFamily>> & Sendable)
    case quality(WritableKeyPath<Root, QualitySetting> & Sendable)
    case names(WritableKeyPath<Root, [String]> & Sendable)
    /// A profile's variant declarations (`OptionTable.variants`' profile field): the row's value is names.
    case variantDeclarations(WritableKeyPath<Root, [OutputVariant]> & Sendable)
    case aspectRatio(WritableKeyPath<Root, AspectRatio?> & Sendable)
    case animationOutput(WritableKeyPath<Root, AnimationOutput> & Sendable)

    var kind: OptionSpec.Kind {
        switch self {
        case .integer: return .integer(optional: false)
        case .optionalInteger: return .integer(optional: true)
        case .boolean: return .boolean
        case .strip: return .choice(StripMode.allCases.map(\.rawValue))
        case .strategy: return .choice(FitStrategy.allCases.map(\.rawValue))
        case .formats, .formatList: return .formats
        case .families: return .families
        case .quality: return .quality
        case .names, .variantDeclarations: return .names
        case .aspectRatio: return .aspectRatio
        case .animationOutput: return .choice(AnimationOutput.allCases.map(\.rawValue))
        }
    }

    func get(_ root: Root) -> OptionValue {
        switch self {
        case .integer(let path): return .integer(root[keyPath: path])
        case .optionalInteger(let path): return .integer(root[keyPath: path])
        case .boolean(let path): return .boolean(root[keyPath: path])
        case .strip(let path): return .word(root[keyPath: path].rawValue)
        case .strategy(let path): return .word(root[keyPath: path].rawValue)
        case .formats(let path): return .formats(root[keyPath: path])
        case .formatList(let path): return .formats(root[keyPath: path])
        case .families(let path): return .families(root[keyPath: path])
        case .quality(let path): return .quality(root[keyPath: path])
        case .names(let path): return .names(root[keyPath: path])
        case .variantDeclarations(let path): return .variantDeclarations(root[keyPath: path])
        case .aspectRatio(let path): return .aspectRatio(root[keyPath: path])
        case .animationOutput(let path): return .word(root[keyPath: path].rawValue)
        }
    }

    /// Sets `value`, which must be of this field's kind (the table's parsers and decoders make only such).
    func set(_ value: OptionValue, in root: inout Root) {
        switch (self, value) {
        case (.integer(let path), .integer(let number?)): root[keyPath: path] = number
        case (.optionalInteger(let path), .integer(let number)): root[keyPath: path] = number
        case (.boolean(let path), .boolean(let flag)): root[keyPath: path] = flag
        case (.strip(let path), .word(let word)) where StripMode(rawValue: word) != nil:
            root[keyPath: path] = StripMode(rawValue: word)!
        case (.strategy(let path), .word(let word)) where FitStrategy(rawValue: word) != nil:
            root[keyPath: path] = FitStrategy(rawValue: word)!
        case (.formats(let path), .formats(let formats)): root[keyPath: path] = formats
        case (.formatList(let path), .formats(let formats?)): root[keyPath: path] = formats
        case (.families(let path), .families(let families)): root[keyPath: path] = families
        case (.quality(let path), .quality(let setting)): root[keyPath: path] = setting
        case (.quality(let path), .integer(let number?)): root[keyPath: path] = .fixed(number)
        case (.names(let path), .names(let names)): root[keyPath: path] = names
        case (.variantDeclarations(let path), .variantDeclarations(let declared)): root[keyPath: path] = declared
        case (.aspectRatio(let path), .aspectRatio(let ratio)): root[keyPath: path] = ratio
        case (.animationOutput(let path), .word(let word)) where AnimationOutput(rawValue: word) != nil:
            root[keyPath: path] = AnimationOutput(rawValue: word)!
        default: preconditionFailure("OptionTable: a \(value) for a \(kind) field")
        }
    }
}

extension InvalidOption {
    /// The message with every option named as `surface` names it (`OptionTable`): on the command line
    /// "expected 1...--quality (85) for --min-quality, got 90"; in a profile file "expected at least 1024
    /// bytes for `maxStillBytes`, got 100".
    public func message(on surface: OptionSurface) -> String {
        message { OptionTable.displayName(of: $0, on: surface) }
    }
}

extension PrepareOptions {
    /// Which names `applying(textValues:scope:)` accepts.
    public enum TextValueScope: Sendable {
        /// Only the options a server's client may set (`OptionSpec.clientMaySet`): strip, max_bytes,
        /// max_short_edge, quality, min_quality, progressive.
        case client
        /// Every option with a query name, the limits and the strategy too (a server's own configuration).
        case all
    }

    /// These options with values given as text by their HTTP query names (`OptionSpec.queryName`), e.g.
    /// `[("max_bytes", "200000"), ("strip", "gps")]`: numbers in decimal, booleans `true`/`false`/`1`/`0`,
    /// words as spelt in `OptionSpec.Kind.choice`. The result passes `validate()`.
    ///
    /// - Throws: `SharePipeError.invalidOptions` for the first name that is unknown, outside `scope` or
    ///   given twice, or text that is not a value of the option's type (the `InvalidOption` names the option
    ///   as `PrepareOptions` spells it, or the name given when it is none; `message(on: .query)` names it by
    ///   its query name); then as `validate()` for values out of range.
    public func applying(
        textValues: [(name: String, value: String)],
        scope: TextValueScope = .client
    ) throws(SharePipeError) -> PrepareOptions {
        var options = self
        var seen: Set<String> = []
        for (name, text) in textValues {
            guard let spec = OptionTable.option(queryName: name), scope == .all || spec.clientMaySet else {
                let names = OptionTable.all.filter { scope == .all || $0.clientMaySet }.compactMap(\.queryName)
                throw .invalidOptions(
                    InvalidOption(
                        name, expected: .phrase("a parameter among " + names.joined(separator: ", ")),
                        found: OptionSpec.quoted(text)))
            }
            // A list (`variant=`) takes one name a parameter: given again, it adds one.
            if case .names = spec.kind, case .names(let added) = try spec.parse(text),
                case .names(let current) = spec.field.get(options)
            {
                spec.field.set(.names(current + added), in: &options)
                continue
            }
            guard seen.insert(name).inserted else {
                throw .invalidOptions(
                    InvalidOption(spec.name, expected: "one value", found: "a second one, " + OptionSpec.quoted(text)))
            }
            spec.field.set(try spec.parse(text), in: &options)
        }
        try options.validate()
        return options
    }
}
