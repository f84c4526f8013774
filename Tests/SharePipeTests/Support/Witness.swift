import Foundation
import Testing

/// Outside tools the tests use as witnesses (exiftool, gifsicle, ImageMagick, heif-convert, dwebp, ffmpeg, avifenc, …).
/// The README's test command installs every one of them (scripts/install-deps), so a missing witness fails the test
/// that needs it, naming the tool, instead of letting its checks pass unseen.
enum Witness {
    /// ImageMagick 6, always by absolute path: the first `convert` on PATH may be a stand-in that is not ImageMagick.
    static let convert = "/usr/bin/convert"
    static let identify = "/usr/bin/identify"

    /// The executable's path: `tool` itself when it is a path, else the first match on PATH.
    static func path(_ tool: String) -> String? {
        if tool.contains("/") { return FileManager.default.isExecutableFile(atPath: tool) ? tool : nil }
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(
            separator: ":")
        return directories.map { "\($0)/\(tool)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Thrown by `Tool.run` for a tool that is not installed.
    struct Missing: Error, CustomStringConvertible {
        var tool: String
        var description: String { "witness tool \(tool) is missing: scripts/install-deps installs it" }
    }

    /// Fails the calling test (and stops it) when any of `tools` is missing, saying which and how to install it.
    static func require(_ tools: String..., sourceLocation: SourceLocation = #_sourceLocation) throws {
        for tool in tools {
            try #require(
                path(tool) != nil,
                "witness tool \(tool) is missing: scripts/install-deps installs it (the README's test command runs it)",
                sourceLocation: sourceLocation)
        }
    }
}
