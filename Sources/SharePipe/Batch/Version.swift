/// The release of SharePipe (`sharepipe --version`, and the `version` field of every JSON report line).
/// CHANGELOG.md lists what each release changed.
public enum SharePipeVersion {
    public static let current = "0.4.0"
}
