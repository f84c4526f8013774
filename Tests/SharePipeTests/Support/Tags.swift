import Foundation
import Testing

extension Tag {
    /// A suite with a test that asks an outside tool (exiftool, ImageMagick, gifsicle, ffmpeg, heif-convert,
    /// dwebp, avifenc, jpegtran, strace, objdump, python3 with its packages) to witness an output or make an
    /// input. `scripts/install-deps` installs them; without one such a test fails naming it
    /// (`Witness.Missing`), never passes silently. Such suites also carry `.skipped(whenListed: "witness")`:
    /// `SHAREPIPE_SKIP_TAGS=witness swift test` runs the rest (this toolchain's `swift test --skip` matches
    /// test names, not tags).
    @Tag static var witness: Self
}

extension Trait where Self == ConditionTrait {
    /// Leaves the suite or test out, reported as skipped, when the environment variable `SHAREPIPE_SKIP_TAGS`
    /// (names separated by commas) lists `name`: a quick run of the suite without the outside witnesses.
    static func skipped(whenListed name: String) -> Self {
        let listed = (ProcessInfo.processInfo.environment["SHAREPIPE_SKIP_TAGS"] ?? "")
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        return .disabled(if: listed.contains(name), "SHAREPIPE_SKIP_TAGS lists \(name)")
    }
}
