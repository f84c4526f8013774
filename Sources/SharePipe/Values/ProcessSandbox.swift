import CSharePipe

#if canImport(Glibc)
    import Glibc
#endif

/// The process sandbox the CLI and the server enter once they have read their settings and opened what they
/// need: after it, a decoder taken over by a hostile file can no longer run a program, make a process, open a
/// socket or connect, trace another process, or touch a file outside the paths its `Rules` kept.
///
/// Three layers, applied to every thread and reported one by one (a kernel may lack a layer): no new
/// privileges; a seccomp-bpf filter that answers EPERM (the call fails, the job fails `internal`, the process
/// lives) to execve/execveat, fork/vfork/clone of a process (threads stay; clone3 answers ENOSYS), ptrace and
/// process_vm_*, socket/socketpair/bind/listen/connect, mounts and namespaces, bpf, keys, personality,
/// io_uring, modules, perf events and the like; Landlock, which leaves only the `Rules`' paths, and where the
/// kernel has them denies TCP bind/connect (ABI 4) and signals or abstract Unix sockets outside the process
/// (ABI 6). Nothing undoes it.
public enum ProcessSandbox {
    /// The paths the process keeps.
    public struct Rules: Sendable {
        /// (path, access): read, write beneath, or only remove folders beneath.
        public private(set) var paths: [(path: String, access: Access)] = []

        /// What a path may be used for.
        public enum Access: Sendable {
            /// Read files and list folders at or beneath it.
            case read
            /// Read, create, write, rename and remove files and folders beneath it.
            case write
            /// Only remove empty folders beneath it (where a folder of one's own was made).
            case removeFolders
        }

        /// Rules for what every SharePipe process still reads: the system's libraries and their data (`/usr`,
        /// the loader's cache, the time zone), the folders of every library mapped now (a toolchain's runtime
        /// outside `/usr`), the folders the loader searches for a library opened later by its name
        /// (`LD_LIBRARY_PATH`'s and `/etc/ld.so.conf`'s: libheif built into `/opt`), `/proc` (its own memory
        /// figures, and Dispatch's worker monitor, which reads
        /// `/proc/<tid>/stat` of every worker thread and stops the process when it cannot: Landlock cannot name
        /// the threads yet to come, so the whole of `/proc` stays readable), the CPU list (`nproc`), `/dev/null` and
        /// `/dev/urandom`.
        public static func system() -> Rules {
            var rules = Rules()
            for path in [
                "/usr", "/lib", "/lib64", "/etc/ld.so.cache", "/etc/localtime", "/etc/timezone",
                "/proc", "/sys/devices/system/cpu", "/sys/fs/cgroup", "/dev/urandom",
            ] { rules.allow(path, .read) }
            rules.allow("/dev/null", .write)
            for folder in mappedLibraryFolders() { rules.allow(folder, .read) }
            // Where a library loaded on first use after confinement is looked for, so that it is found where it
            // would be without the sandbox (a folder Landlock hides makes the loader go on to the next one, and
            // the library is "not available" when it is only there).
            for folder in loaderSearchFolders() { rules.allow(folder, .read) }
            // A library file named by SHAREPIPE_LIBHEIF and the like (tests point one elsewhere).
            for variable in [
                "SHAREPIPE_LIBHEIF", "SHAREPIPE_LIBDE265", "SHAREPIPE_LIBAVIF", "SHAREPIPE_LIBWEBP",
                "SHAREPIPE_LIBWEBPDEMUX", "SHAREPIPE_LIBWEBPMUX", "SHAREPIPE_LIBLCMS2",
            ] {
                if let value = getenv(variable).map({ String(cString: $0) }), value.hasPrefix("/") {
                    rules.allow(value, .read)
                }
            }
            return rules
        }

        public init() {}

        /// Keeps `path` (a file or a folder; one that does not exist is left out) for `access`.
        public mutating func allow(_ path: String, _ access: Access) { paths.append((path, access)) }

        /// The folders the dynamic loader searches for a library opened by its name, beyond `/usr` and `/lib`:
        /// the absolute entries of `LD_LIBRARY_PATH` (`environment`) and the folders `configuration` (the
        /// loader cache's source, `/etc/ld.so.conf`) lists, its `include` files followed as ldconfig follows
        /// them.
        static func loaderSearchFolders(
            environment: String? = getenv("LD_LIBRARY_PATH").map { String(cString: $0) },
            configuration: String = "/etc/ld.so.conf"
        ) -> [String] {
            var folders: [String] = []
            // The loader splits LD_LIBRARY_PATH at ':' and ';'; an empty or relative entry names the working
            // folder, which the sandbox does not open up.
            for entry in (environment ?? "").split(whereSeparator: { $0 == ":" || $0 == ";" })
            where entry.hasPrefix("/") {
                folders.append(String(entry))
            }
            var visited = Set<String>()
            readLoaderConfiguration(configuration, into: &folders, visited: &visited)
            var seen = Set<String>()
            return folders.filter { seen.insert($0).inserted }
        }

        /// Reads one ldconfig configuration file: a folder per line (an old `folder=TYPE` suffix dropped),
        /// `include PATTERN…` (relative to the file's folder, expanded with glob, in order), `hwcap` lines
        /// skipped, `#` to the end of a line a comment. A file already read is not read again.
        private static func readLoaderConfiguration(
            _ path: String, into folders: inout [String], visited: inout Set<String>
        ) {
            guard visited.count < 256, visited.insert(path).inserted, let file = fopen(path, "r") else { return }
            defer { fclose(file) }
            let base = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
            var line: UnsafeMutablePointer<CChar>?
            var capacity = 0
            defer { free(line) }
            while getline(&line, &capacity, file) > 0, let line {
                var text = Substring(String(cString: line))
                if let hash = text.firstIndex(of: "#") { text = text[..<hash] }
                let words = text.split(whereSeparator: \.isWhitespace)
                guard let first = words.first else { continue }
                if first == "include" {
                    for pattern in words.dropFirst() {
                        let absolute = pattern.hasPrefix("/") ? String(pattern) : base + "/" + pattern
                        for match in globbed(absolute) {
                            readLoaderConfiguration(match, into: &folders, visited: &visited)
                        }
                    }
                } else if first != "hwcap" {
                    for word in words {
                        for entry in word.split(whereSeparator: { $0 == ":" || $0 == "," }) {
                            let folder = entry.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                            if folder.hasPrefix("/") { folders.append(folder) }
                        }
                    }
                }
            }
        }

        /// The paths `pattern` matches, sorted (none when nothing does).
        private static func globbed(_ pattern: String) -> [String] {
            var matches = glob_t()
            defer { globfree(&matches) }
            guard glob(pattern, 0, nil, &matches) == 0 else { return [] }
            return (0..<Int(matches.gl_pathc)).compactMap { index in
                matches.gl_pathv[index].map { String(cString: $0) }
            }
        }

        /// The folders of the files mapped into the process (its executable and shared libraries).
        static func mappedLibraryFolders() -> [String] {
            guard let maps = fopen("/proc/self/maps", "r") else { return [] }
            defer { fclose(maps) }
            var folders = Set<String>()
            var line: UnsafeMutablePointer<CChar>?
            var capacity = 0
            defer { free(line) }
            while getline(&line, &capacity, maps) > 0, let line {
                let text = String(cString: line)
                guard let slash = text.firstIndex(of: "/") else { continue }
                let path = text[slash...].trimmingSuffix { $0 == "\n" || $0 == " " }
                guard !path.hasSuffix("(deleted)"), let last = path.lastIndex(of: "/") else { continue }
                let folder = String(path[..<last])
                if !folder.isEmpty { folders.insert(folder) }
            }
            return folders.sorted()
        }
    }

    /// Which layers are on.
    public struct Report: Sendable, Equatable {
        /// `PR_SET_NO_NEW_PRIVS`.
        public var noNewPrivileges = false
        /// The seccomp-bpf filter.
        public var seccomp = false
        /// The kernel's Landlock ABI (0: none).
        public var landlockABI = 0
        /// Landlock's filesystem rules.
        public var landlockFilesystem = false
        /// Landlock's network rules (no TCP bind/connect; ABI 4 and later).
        public var landlockNetwork = false
        /// Landlock's scopes (signals and abstract Unix sockets; ABI 6 and later).
        public var landlockScopes = false
        /// Why a layer is off ("" when every one is on).
        public var missing = ""

        public init() {}

        /// Each layer by name ("no_new_privs", "seccomp", "landlock_fs", "landlock_net", "landlock_scope"),
        /// on or off, in this order.
        public var layers: [(name: String, on: Bool)] {
            [
                ("no_new_privs", noNewPrivileges), ("seccomp", seccomp), ("landlock_fs", landlockFilesystem),
                ("landlock_net", landlockNetwork), ("landlock_scope", landlockScopes),
            ]
        }

        /// "seccomp, landlock_fs … on (Landlock ABI 7)", with what is off and why.
        public var summary: String {
            let on = layers.filter(\.on).map(\.name), off = layers.filter { !$0.on }.map(\.name)
            var text = on.isEmpty ? "no layer on" : on.joined(separator: ", ") + " on"
            if landlockABI > 0 { text += " (Landlock ABI \(landlockABI))" }
            if !off.isEmpty { text += "; off: " + off.joined(separator: ", ") }
            if !missing.isEmpty { text += " (\(missing))" }
            return text
        }
    }

    /// A layer the kernel has could not be applied (the message says which; the report what is on).
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public var report: Report
    }

    /// The kernel's Landlock ABI version (0: the kernel has no Landlock, or it is turned off).
    public static var landlockABI: Int { Int(sp_sandbox_landlock_abi()) }

    /// Opens the libraries SharePipe loads on first use (libheif, libde265, libavif, libwebp and its demux
    /// and mux, Little CMS, OpenH264), as the server does before it confines itself. Returns why one could not be
    /// loaded (its formats then fail as "not available", as they would without the sandbox), or nil.
    public static func loadLibraries() -> String? {
        var message = shimMessageBuffer()
        return sp_lazy_load_all(&message) == 0 ? nil : shimText(message)
    }

    /// Confines the process for good with `rules` (see the type's description).
    ///
    /// - Returns: the layers on; a layer the kernel lacks is off and named in `missing`.
    /// - Throws: `Failure` when a path cannot be opened or a layer the kernel has could not be applied.
    public static func enter(_ rules: Rules) throws(Failure) -> Report {
        guard let handle = sp_sandbox_rules_create() else {
            throw Failure(description: "sandbox: out of memory", report: Report())
        }
        defer { sp_sandbox_rules_free(handle) }
        var message = shimMessageBuffer()
        for (path, access) in rules.paths {
            let bits: Int32
            switch access {
            case .read: bits = Int32(SP_SANDBOX_READ.rawValue)
            case .write: bits = Int32(SP_SANDBOX_WRITE.rawValue)
            case .removeFolders: bits = Int32(SP_SANDBOX_REMOVE_FOLDER.rawValue)
            }
            if sp_sandbox_allow(handle, path, bits, &message) != SP_OK {
                throw Failure(description: "sandbox: " + shimText(message), report: Report())
            }
        }
        var raw = sp_sandbox_report()
        let status = sp_sandbox_enter(handle, &raw)
        var report = Report()
        report.noNewPrivileges = raw.no_new_privileges != 0
        report.seccomp = raw.seccomp != 0
        report.landlockABI = Int(raw.landlock_abi)
        report.landlockFilesystem = raw.landlock_filesystem != 0
        report.landlockNetwork = raw.landlock_network != 0
        report.landlockScopes = raw.landlock_scopes != 0
        report.missing = withUnsafeBytes(of: raw.message) {
            String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
        }
        if status != SP_OK {
            throw Failure(description: "sandbox: \(report.missing)", report: report)
        }
        return report
    }
}

extension Substring {
    fileprivate func trimmingSuffix(while predicate: (Character) -> Bool) -> Substring {
        var end = endIndex
        while end > startIndex, predicate(self[index(before: end)]) { end = index(before: end) }
        return self[startIndex..<end]
    }
}
