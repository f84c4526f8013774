import SharePipe

#if canImport(Glibc)
    import Glibc
#endif

/// The CLI's confinement (`ProcessSandbox`), entered once the inputs, `--out`, `--report` and the profiles
/// have been resolved and opened, before the first file is read: it reads where its inputs are (the whole
/// filesystem with `--files-from`, whose list is read as the batch goes), writes only under `--out` and its
/// own temporary folder, runs no program, makes no process and opens no socket. `--no-sandbox` leaves it out.
enum CLISandbox {
    /// The temporary folder of this run (made in `$TMPDIR`, else `/tmp`; removed at exit), or nil.
    nonisolated(unsafe) static var temporaryFolder: String?
    /// Whether the process is confined (`confine(reading:readingAnywhere:writing:)` succeeded).
    nonisolated(unsafe) static var isConfined = false

    /// `error` for `input`, saying why where the sandbox is the reason: a symbolic link in an input folder that
    /// leads outside the inputs is not followed (reading through it would let a file someone else put in the
    /// folder open any file of the user's to the decoders), and "Permission denied" alone would not say so.
    static func explained(_ error: SharePipeError, input: String) -> SharePipeError {
        guard isConfined, case .unreadable(let file, let reason) = error,
            reason.hasPrefix(String(cString: strerror(EACCES)))
        else { return error }
        var info = stat()
        guard lstat(input, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { return error }
        return .unreadable(
            file: file,
            reason: reason + " (a symbolic link out of the inputs, which the sandbox does not follow: a list "
                + "given with --files-from is read wherever it leads, and --no-sandbox reads anything)")
    }

    /// Confines the process; `inputs` are read (files or folders), `output` written beneath (nil: nothing).
    /// A layer the kernel lacks is named on standard error; one it has but that cannot be applied is fatal.
    static func confine(reading inputs: [String], readingAnywhere: Bool, writing output: String?) throws {
        var rules = ProcessSandbox.Rules.system()
        if readingAnywhere {
            rules.allow("/", .read)
        } else {
            for input in inputs where input != "-" { rules.allow(input, .read) }
        }
        if let output, output != "-" { rules.allow(output, .write) }
        // The library's unlinked temporary files (an animation's frames, an animated GIF being written): in a
        // folder of this run's own, so nothing else in $TMPDIR becomes writable.
        if let folder = makeTemporaryFolder() {
            rules.allow(folder, .write)
            rules.allow(String(folder[..<(folder.lastIndex(of: "/") ?? folder.endIndex)]), .removeFolders)
        }
        do throws(ProcessSandbox.Failure) {
            let report = try ProcessSandbox.enter(rules)
            isConfined = true
            if report.layers.contains(where: { !$0.on }) {
                printError("note: sandbox: \(report.summary)")
            }
        } catch {
            throw fatal("cannot confine the process: \(error.description) (--no-sandbox runs without it)")
        }
    }

    /// Makes the run's temporary folder and points `$TMPDIR` (where the library makes its temporary files) at
    /// it; nil when it cannot be made (the library's files then go where they would without the sandbox, and
    /// fail there if that is not writable).
    private static func makeTemporaryFolder() -> String? {
        let parent = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        let base = parent.hasSuffix("/") && parent.count > 1 ? String(parent.dropLast()) : parent
        var template = Array("\(base)/sharepipe-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else { return nil }
        let folder = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        setenv("TMPDIR", folder, 1)
        temporaryFolder = folder
        atexit {
            if let folder = CLISandbox.temporaryFolder { _ = rmdir(folder) }
        }
        return folder
    }
}
