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
        } catch let error as ProfileFileError {
            throw ProfileFileError(file: file, message: error.message)
        } catch let DecodingError.typeMismatch(type, context), let DecodingError.valueNotFound(type, context) {
            throw ProfileFileError(file: file, message: "field `\(context.codingPath.jsonPath)`: expected \(Self.describe(type))")
        } catch let DecodingError.keyNotFound(key, context) {
            throw ProfileFileError(file: file, message: "missing field `\((context.codingPath + [key]).jsonPath)`")
        } catch let DecodingError.dataCorrupted(context) {
            throw ProfileFileError(file: file, message: "not valid JSON\(context.codingPath.isEmpty ? "" : " at `\(context.codingPath.jsonPath)`")")
        }
        var catalog = self
        for (index, entry) in decoded.profiles.enumerated() {
            let position = "profiles[\(index)]"
            let profile: ServiceProfile
            if let existing = catalog.named(entry.name) {
                profile = entry.applied(to: existing)
            } else {
                guard let bytes = entry.maxStillBytes else {
                    throw ProfileFileError(file: file, message: "missing field `\(position).maxStillBytes` (new profile '\(entry.name)')")
                }
                profile = entry.applied(to: ServiceProfile(name: entry.name.lowercased(), displayName: entry.name,
                                                           maxStillBytes: bytes, source: "user profile file \(file)",
                                                           confidence: "user"))
            }
            do {
                _ = try profile.options().checked()
            } catch SharePipeError.invalidOptions(let invalid) {
                let message = invalid.message { "`\(ProfileEntry.field(for: $0))`" }
                throw ProfileFileError(file: file, message: "\(position) ('\(entry.name)'): \(message)", option: invalid)
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
    public var description: String { "\(file): bad profile file: \(message)" }
}

extension [CodingKey] {
    var jsonPath: String {
        var path = ""
        for key in self {
            if let index = key.intValue { path += "[\(index)]" } else { path += (path.isEmpty ? "" : ".") + key.stringValue }
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
        throw ProfileFileError(message: "unknown field `\(path)` (known: \(known.sorted().joined(separator: ", ")))")
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

/// One entry of a profile file: every field optional but the name.
struct ProfileEntry: Decodable {
    var name: String
    var displayName: String?
    var maxStillBytes: Int?
    var maxShortEdge: Int?
    var maxLongEdge: Int?
    var maxWidth: Int?
    var maxHeight: Int?
    var maxPixels: Int?
    var maxEdgeSum: Int?
    var animated: AnimatedEntry?
    var formats: [ImageFormat]?
    var allowFormatChange: Bool?
    var strip: StripMode?
    var minQuality: Int?
    var maxQuality: Int?
    var source: String?

    private enum Keys: String, CodingKey, CaseIterable {
        case name, displayName, maxStillBytes, maxShortEdge, maxLongEdge, maxWidth, maxHeight, maxPixels, maxEdgeSum,
             animated, formats, allowFormatChange, strip, minQuality, maxQuality, source
    }

    init(from decoder: Decoder) throws {
        try refuseUnknownKeys(decoder, known: Set(Keys.allCases.map(\.rawValue)))
        let c = try decoder.container(keyedBy: Keys.self)
        name = try c.decode(String.self, forKey: .name)
        displayName = try c.decodeIfPresent(String.self, forKey: .displayName)
        maxStillBytes = try c.decodeIfPresent(Int.self, forKey: .maxStillBytes)
        maxShortEdge = try c.decodeIfPresent(Int.self, forKey: .maxShortEdge)
        maxLongEdge = try c.decodeIfPresent(Int.self, forKey: .maxLongEdge)
        maxWidth = try c.decodeIfPresent(Int.self, forKey: .maxWidth)
        maxHeight = try c.decodeIfPresent(Int.self, forKey: .maxHeight)
        maxPixels = try c.decodeIfPresent(Int.self, forKey: .maxPixels)
        maxEdgeSum = try c.decodeIfPresent(Int.self, forKey: .maxEdgeSum)
        animated = try c.decodeIfPresent(AnimatedEntry.self, forKey: .animated)
        formats = try c.decodeIfPresent([ImageFormat].self, forKey: .formats)
        allowFormatChange = try c.decodeIfPresent(Bool.self, forKey: .allowFormatChange)
        strip = try c.decodeIfPresent(StripMode.self, forKey: .strip)
        minQuality = try c.decodeIfPresent(Int.self, forKey: .minQuality)
        maxQuality = try c.decodeIfPresent(Int.self, forKey: .maxQuality)
        source = try c.decodeIfPresent(String.self, forKey: .source)
    }

    /// The profile field that sets an option of `PrepareOptions` (`maxBytes` → `maxStillBytes`).
    static func field(for option: String) -> String {
        switch option {
        case "maxBytes": return "maxStillBytes"
        case "quality": return "maxQuality"
        case "acceptedFormats": return "formats"
        case _ where option.hasPrefix("animation."): return "animated." + option.dropFirst("animation.".count)
        default: return option
        }
    }

    func applied(to base: ServiceProfile) -> ServiceProfile {
        var p = base
        if let displayName { p.displayName = displayName }
        if let maxStillBytes { p.maxStillBytes = maxStillBytes }
        if let maxShortEdge { p.caps.shortEdge = maxShortEdge }
        if let maxLongEdge { p.caps.longEdge = maxLongEdge }
        if let maxWidth { p.caps.width = maxWidth }
        if let maxHeight { p.caps.height = maxHeight }
        if let maxPixels { p.caps.pixels = maxPixels }
        if let maxEdgeSum { p.caps.edgeSum = maxEdgeSum }
        if let animated { p.animation = animated.applied(to: p.animation) }
        if let formats { p.formats = formats }
        if let allowFormatChange { p.allowFormatChange = allowFormatChange }
        if let strip { p.strip = strip }
        if let minQuality { p.minQuality = minQuality }
        if let maxQuality { p.maxQuality = maxQuality }
        if let source { p.source = source }
        return p
    }
}

struct AnimatedEntry: Decodable {
    var maxBytes: Int?
    var maxWidth: Int?
    var maxHeight: Int?
    var maxPixels: Int?
    var maxFrames: Int?
    var maxTotalPixels: Int?
    var allowed: Bool?

    private enum Keys: String, CodingKey, CaseIterable {
        case maxBytes, maxWidth, maxHeight, maxPixels, maxFrames, maxTotalPixels, allowed
    }

    init(from decoder: Decoder) throws {
        try refuseUnknownKeys(decoder, known: Set(Keys.allCases.map(\.rawValue)))
        let c = try decoder.container(keyedBy: Keys.self)
        maxBytes = try c.decodeIfPresent(Int.self, forKey: .maxBytes)
        maxWidth = try c.decodeIfPresent(Int.self, forKey: .maxWidth)
        maxHeight = try c.decodeIfPresent(Int.self, forKey: .maxHeight)
        maxPixels = try c.decodeIfPresent(Int.self, forKey: .maxPixels)
        maxFrames = try c.decodeIfPresent(Int.self, forKey: .maxFrames)
        maxTotalPixels = try c.decodeIfPresent(Int.self, forKey: .maxTotalPixels)
        allowed = try c.decodeIfPresent(Bool.self, forKey: .allowed)
    }

    func applied(to base: AnimationLimits) -> AnimationLimits {
        var a = base
        if let maxBytes { a.maxBytes = maxBytes }
        if let maxWidth { a.maxWidth = maxWidth }
        if let maxHeight { a.maxHeight = maxHeight }
        if let maxPixels { a.maxPixels = maxPixels }
        if let maxFrames { a.maxFrames = maxFrames }
        if let maxTotalPixels { a.maxTotalPixels = maxTotalPixels }
        if let allowed { a.allowed = allowed }
        return a
    }
}
