/// Which option cannot work and why: the payload of `SharePipeError.invalidOptions`, so a caller (the CLI
/// naming its flags, say) can tell which option was wrong without reading text. `message(on:)` names the
/// options as a surface of `OptionTable` does (a flag, a profile field, a query parameter).
public struct InvalidOption: Sendable, Equatable, CustomStringConvertible {
    /// What a valid value is: a phrase, or a bound set by another option.
    public enum Expected: Sendable, Equatable, ExpressibleByStringLiteral {
        /// A fixed requirement, e.g. "at least 1024 bytes".
        case phrase(String)
        /// At least the value of `option` ("at least maxShortEdge").
        case atLeast(option: String)
        /// From 1 up to `option`, whose value is `value` ("1...quality (85)").
        case upTo(option: String, value: Int)

        public init(stringLiteral value: String) { self = .phrase(value) }
    }

    /// The option's name as `PrepareOptions` (or `SharePipeline.Configuration`) spells it: `minQuality`,
    /// `limits.maxPixels`, `animation.maxBytes`, `memoryBudget`.
    public let option: String
    /// What a valid value is.
    public let expected: Expected
    /// The value given, as text.
    public let found: String

    public init(_ option: String, expected: Expected, found: String) {
        self.option = option
        self.expected = expected
        self.found = found
    }

    /// "expected 1...quality (85) for `minQuality`, got 90".
    public var description: String { text(for: "`\(option)`") { $0 } }

    /// The message with every option named by `name` (an option's name as `PrepareOptions` spells it →
    /// how the reader knows it, e.g. a command-line flag): "expected 1...--quality (85) for --min-quality, got 90".
    public func message(naming name: (String) -> String) -> String { text(for: name(option), naming: name) }

    private func text(for named: String, naming name: (String) -> String) -> String {
        let requirement: String
        switch expected {
        case .phrase(let text): requirement = text
        case .atLeast(let other): requirement = "at least \(name(other))"
        case .upTo(let other, let value): requirement = "1...\(name(other)) (\(value))"
        }
        return "expected \(requirement) for \(named), got \(found)"
    }
}
