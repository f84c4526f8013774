#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// The service profiles in force: the built-in ones, added to or overridden by a user profile file.
///
/// A profile file is JSON: `{"profiles": [{"name": "discord", "maxStillBytes": 20971520}, …]}`. An entry
/// whose name matches a built-in profile changes only the fields it gives; a new name adds a profile and
/// must give `maxStillBytes`. Unknown fields are errors (a typo must not silently keep the old limit).
/// The option fields, their nesting (`animated.maxTotalPixels`) and their checks are `OptionTable`'s
/// (`OptionSpec.profileField`); `name`, `displayName` and `source` describe the profile.
public struct ProfileCatalog: Sendable {
    public private(set) var profiles: [ServiceProfile]

    /// The built-in profiles only.
    public static let builtIn = ProfileCatalog(profiles: ServiceProfile.builtIn)

    public init(profiles: [ServiceProfile]) { self.profiles = profiles }

    /// The profile with this name (case-insensitive).
    public func named(_ name: String) -> ServiceProfile? {
        profiles.first { $0.name == name.lowercased() }
    }

    /// Where a user profile file is looked for when none is named: `$SHAREPIPE_PROFILES`, else
    /// `$XDG_CONFIG_HOME/sharepipe/profiles.json`, else `~/.config/sharepipe/profiles.json`.
    public static var defaultUserFile: String {
        if let explicit = getenv("SHAREPIPE_PROFILES") { return String(cString: explicit) }
        if let config = getenv("XDG_CONFIG_HOME") { return String(cString: config) + "/sharepipe/profiles.json" }
        let home = getenv("HOME").map { String(cString: $0) } ?? ""
        return home + "/.config/sharepipe/profiles.json"
    }

    /// The built-in profiles with `path` applied; with no path, the default file if it exists.
    public static func load(userFile path: String?) throws -> ProfileCatalog {
        let file = path ?? defaultUserFile
        guard path != nil || FileIO.exists(file) else { return builtIn }
        let reader = try ByteReader(.file(path: file))
        var bytes: [UInt8] = []
        while let byte = try reader.next() {
            bytes.append(byte)
            if bytes.count > 1 << 20 { throw ProfileFileError(file: file, message: "file is larger than 1 MiB") }
        }
        return try builtIn.applying(json: bytes, file: file)
    }

    /// These profiles with a profile file's entries applied.
    public func applying(json: [UInt8], file: String) throws -> ProfileCatalog {
        let decoded: ProfileFile
        do {
            decoded = try JSONDecoder().decode(ProfileFile.self, from: Data(json))
        } catch var error as ProfileFileError {
            error.file = file
            throw error
        } catch let DecodingError.typeMismatch(type, context), let DecodingError.valueNotFound(type, context) {
            throw ProfileFileError(
                file: file, message: "field `\(context.codingPath.jsonPath)`: expected \(Self.describe(type))",
                field: context.codingPath.jsonPath)
        } catch let DecodingError.keyNotFound(key, context) {
            let path = (context.codingPath + [key]).jsonPath
            throw ProfileFileError(file: file, message: "missing field `\(path)`", field: path)
        } catch let DecodingError.dataCorrupted(context) {
            throw ProfileFileError(
                file: file,
                message: "not valid JSON\(context.codingPath.isEmpty ? "" : " at `\(context.codingPath.jsonPath)`")",
                field: context.codingPath.isEmpty ? nil : context.codingPath.jsonPath)
        }
        var catalog = self
        for (index, entry) in decoded.profiles.enumerated() {
            let position = "profiles[\(index)]"
            let profile: ServiceProfile
            if let existing = catalog.named(entry.name) {
                profile = entry.applied(to: existing)
            } else {
                let required = OptionTable.maxBytes.profileField!
                guard entry.gives(OptionTable.maxBytes) else {
                    throw ProfileFileError(
                        file: file, message: "missing field `\(position).\(required)` (new profile '\(entry.name)')",
                        field: "\(position).\(required)")
                }
                // The byte limit is replaced by the entry's own in `applied(to:)`.
                profile = entry.applied(
                    to: ServiceProfile(
                        name: entry.name.lowercased(), displayName: entry.name,
                        maxStillBytes: 0, source: "user profile file \(file)",
                        confidence: "user"))
            }
            do {
                _ = try profile.options().checked()
            } catch SharePipeError.invalidOptions(let invalid) {
                let field = OptionTable.option(named: invalid.option)?.profileField ?? invalid.option
                throw ProfileFileError(
                    file: file, message: "\(position) ('\(entry.name)'): \(invalid.message(on: .profileFile))",
                    option: invalid, field: "\(position).\(field)")
            } catch {
                throw ProfileFileError(file: file, message: "\(position) ('\(entry.name)'): \(error)")
            }
            if let existing = catalog.profiles.firstIndex(where: { $0.name == profile.name }) {
                catalog.profiles[existing] = profile
            } else {
                catalog.profiles.append(profile)
            }
        }
        return catalog
    }

    static func describe(_ type: Any.Type) -> String {
        switch type {
        case is Int.Type, is Int?.Type: return "a whole number"
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        case is [ImageFormat].Type, is [Any].Type: return "a list"
        case is [String: Any].Type: return "an object"
        default: return "\(type)"
        }
    }
}

/// A profile file that cannot be used, with the file and the field at fault.
public struct ProfileFileError: Error, Sendable, CustomStringConvertible {
    public var file: String = ""
    public var message: String
    /// The option a profile set to a value that cannot work, as `PrepareOptions` names it (the message
    /// names the profile field: `maxStillBytes` for `maxBytes`).
    public var option: InvalidOption?
    /// The JSON path of the field at fault, when one is: `profiles[0].animated.maxTotalPixels`.
    public var field: String?
    public var description: String { "\(file): bad profile file: \(message)" }

    public init(file: String = "", message: String, option: InvalidOption? = nil, field: String? = nil) {
        self.file = file
        self.message = message
        self.option = option
        self.field = field
    }
}

extension [CodingKey] {
    var jsonPath: String {
        var path = ""
        for key in self {
            if let index = key.intValue {
                path += "[\(index)]"
            } else {
                path += (path.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return path
    }
}

/// A coding key for any name, to find fields the file gives that we do not know.
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { self.stringValue = String(intValue); self.intValue = intValue }
}

private func refuseUnknownKeys(_ decoder: Decoder, known: Set<String>) throws {
    let container = try decoder.container(keyedBy: AnyKey.self)
    for key in container.allKeys where !known.contains(key.stringValue) {
        let path = (decoder.codingPath + [key]).jsonPath
        throw ProfileFileError(
            message: "unknown field `\(path)` (known: \(known.sorted().joined(separator: ", ")))", field: path)
    }
}

struct ProfileFile: Decodable {
    var profiles: [ProfileEntry]

    private enum Keys: String, CodingKey { case profiles }

    init(from decoder: Decoder) throws {
        try refuseUnknownKeys(decoder, known: ["profiles"])
        profiles = try decoder.container(keyedBy: Keys.self).decode([ProfileEntry].self, forKey: .profiles)
    }
}

/// One entry of a profile file: the name, and any of the profile's own fields and of `OptionTable`'s
/// profile fields.
struct ProfileEntry: Decodable {
    var name: String
    var displayName: String?
    var source: String?
    /// The option fields given, in table order.
    var settings: [(spec: OptionSpec, value: OptionValue)] = []

    /// Fields that describe the profile rather than set an option.
    private static let ownFields: Set<String> = ["name", "displayName", "source"]

    /// The option fields (`OptionSpec.profileField`) by their path, split at the dot: `animated.maxBytes` →
    /// ["animated", "maxBytes"].
    private static let optionFields: [(spec: OptionSpec, path: [String])] = OptionTable.all.compactMap { spec in
        spec.profileField.map { (spec, $0.split(separator: ".").map(String.init)) }
    }

    init(from decoder: Decoder) throws {
        try refuseUnknownKeys(decoder, known: Self.ownFields.union(Self.optionFields.map { $0.path[0] }))
        let c = try decoder.container(keyedBy: AnyKey.self)
        name = try c.decode(String.self, forKey: AnyKey(stringValue: "name"))
        displayName = try c.decodeIfPresent(String.self, forKey: AnyKey(stringValue: "displayName"))
        source = try c.decodeIfPresent(String.self, forKey: AnyKey(stringValue: "source"))
        // One level of nesting: a group (`animated`) is an object of option fields.
        var groups: [String: KeyedDecodingContainer<AnyKey>] = [:]
        for (spec, path) in Self.optionFields {
            var container = c
            if path.count == 2 {
                if groups[path[0]] == nil {
                    let key = AnyKey(stringValue: path[0])
                    guard c.contains(key), try !c.decodeNil(forKey: key) else { continue }
                    let group = try c.superDecoder(forKey: key)
                    try refuseUnknownKeys(
                        group,
                        known: Set(
                            Self.optionFields.filter { $0.path.count == 2 && $0.path[0] == path[0] }
                                .map { $0.path[1] }))
                    groups[path[0]] = try group.container(keyedBy: AnyKey.self)
                }
                guard let group = groups[path[0]] else { continue }
                container = group
            }
            if let value = try Self.decode(
                spec.profileBinding!, forKey: AnyKey(stringValue: path[path.count - 1]), in: container)
            {
                settings.append((spec, value))
            }
        }
    }

    /// The value of a field whose profile binding is `binding`, or nil when the field is absent (or null).
    private static func decode(
        _ binding: OptionField<ServiceProfile>, forKey key: AnyKey,
        in c: KeyedDecodingContainer<AnyKey>
    ) throws -> OptionValue? {
        switch binding {
        case .integer, .optionalInteger:
            do {
                return try c.decodeIfPresent(Int.self, forKey: key).map { .integer($0) }
            } catch let error as DecodingError {
                throw error
            } catch {
                // A number that is no `Int` (1.5, 1e400, 20 digits): Foundation's JSONDecoder throws its own
                // error here, which reaches the caller as "not valid JSON" without the field.
                let path = (c.codingPath + [key]).jsonPath
                throw ProfileFileError(message: "field `\(path)`: expected a whole number", field: path)
            }
        case .boolean: return try c.decodeIfPresent(Bool.self, forKey: key).map { .boolean($0) }
        case .strip: return try c.decodeIfPresent(StripMode.self, forKey: key).map { .word($0.rawValue) }
        case .strategy: return try c.decodeIfPresent(FitStrategy.self, forKey: key).map { .word($0.rawValue) }
        case .formats, .formatList: return try c.decodeIfPresent([ImageFormat].self, forKey: key).map { .formats($0) }
        case .families: return try c.decodeIfPresent(Set<FormatFamily>.self, forKey: key).map { .families($0) }
        case .quality:
            // A number as before, or "auto" / "auto:SCORE".
            if let number = try? c.decodeIfPresent(Int.self, forKey: key) { return .quality(.fixed(number)) }
            if (try? c.decodeNil(forKey: key)) ?? true { return nil }
            // A number in quotes stays refused, as for every whole-number field.
            guard let text = try? c.decode(String.self, forKey: key), text.hasPrefix("auto"),
                let setting = QualitySetting(text: text)
            else {
                let path = (c.codingPath + [key]).jsonPath
                throw ProfileFileError(
                    message: "field `\(path)`: expected a whole number, auto or auto:SCORE", field: path)
            }
            return .quality(setting)
        case .names: return try c.decodeIfPresent([String].self, forKey: key).map { .names($0) }
        case .variantDeclarations:
            return try c.decodeIfPresent([VariantEntry].self, forKey: key).map {
                .variantDeclarations($0.map(\.variant))
            }
        case .aspectRatio: return try c.decodeIfPresent(AspectRatio.self, forKey: key).map { .aspectRatio($0) }
        case .animationOutput:
            return try c.decodeIfPresent(AnimationOutput.self, forKey: key).map { .word($0.rawValue) }
        }
    }

    /// Whether the entry sets the option of `spec`.
    func gives(_ spec: OptionSpec) -> Bool { settings.contains { $0.spec.name == spec.name } }

    func applied(to base: ServiceProfile) -> ServiceProfile {
        var p = base
        if let displayName { p.displayName = displayName }
        for (spec, value) in settings { spec.profileBinding!.set(value, in: &p) }
        if let source { p.source = source }
        return p
    }
}

/// One variant a profile file declares (`OutputVariant`): unknown fields are errors, as everywhere in the file.
struct VariantEntry: Decodable {
    var variant: OutputVariant

    private enum Keys: String, CodingKey, CaseIterable {
        case name, maxPixels, maxLongEdge, format, quality, progressive
    }

    init(from decoder: Decoder) throws {
        try refuseUnknownKeys(decoder, known: Set(Keys.allCases.map(\.rawValue)))
        let c = try decoder.container(keyedBy: Keys.self)
        variant = OutputVariant(
            name: try c.decode(String.self, forKey: .name),
            maxPixels: try c.decodeIfPresent(Int.self, forKey: .maxPixels),
            maxLongEdge: try c.decodeIfPresent(Int.self, forKey: .maxLongEdge),
            format: try c.decodeIfPresent(ImageFormat.self, forKey: .format),
            quality: try c.decodeIfPresent(Int.self, forKey: .quality),
            progressive: try c.decodeIfPresent(Bool.self, forKey: .progressive))
    }
}
