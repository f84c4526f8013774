#if canImport(Glibc)
    import Glibc
#endif

/// Where a batch's inputs come from.
public enum BatchInputs: Sendable {
    /// Files and folders named on the command line. Each one takes its own name under the output
    /// directory (numbered `~2`, `~3`… when an earlier one took it); a folder's files keep their path below it.
    case paths([String])
    /// A list of paths, one per line or NUL-separated, read as the batch goes (never held whole). Each
    /// path is mirrored below the output directory as written (a leading `/` or `./` dropped).
    case list(BatchList)
}

/// A list of input paths read lazily from a file or standard input (`--files-from`).
public final class BatchList: @unchecked Sendable {
    private let handle: UnsafeMutablePointer<FILE>
    private let separator: Int32
    /// The list's name for messages.
    public let name: String

    /// Opens `path` (`-` for standard input); `nulSeparated` reads NUL-terminated paths (`find -print0`).
    public init(path: String, nulSeparated: Bool) throws {
        if path == "-" {
            let descriptor = dup(STDIN_FILENO)
            guard descriptor >= 0, let opened = fdopen(descriptor, "r") else {
                if descriptor >= 0 { close(descriptor) }
                throw SharePipeError.unreadable(file: "standard input", reason: FileIO.errnoText())
            }
            handle = opened
            name = "standard input"
        } else {
            guard let opened = fopen(path, "r") else {
                throw SharePipeError.unreadable(file: path, reason: FileIO.errnoText())
            }
            handle = opened
            name = path
        }
        separator = nulSeparated ? 0 : 10
    }

    deinit { fclose(handle) }

    /// The next non-empty path, or nil at the end of the list.
    func next() -> String? {
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while true {
            let length = getdelim(&line, &capacity, separator, handle)
            guard length >= 0, let line else { return nil }
            var bytes = UnsafeBufferPointer(
                start: UnsafeRawPointer(line).assumingMemoryBound(to: UInt8.self), count: length)[...]
            if bytes.last == UInt8(separator) { bytes = bytes.dropLast() }
            if separator == 10, bytes.last == 13 { bytes = bytes.dropLast() }  // CRLF lists
            if !bytes.isEmpty { return String(decoding: bytes, as: UTF8.self) }
        }
    }
}

/// A stable share of the inputs: file number `index` of `count` (1-based), chosen by a hash of the input
/// path, so machines given the same inputs and different indexes split them with no coordinator.
public struct BatchShard: Sendable, Equatable {
    public var index: Int
    public var count: Int

    public init(index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    /// Whether `path` belongs to this share: FNV-1a of its bytes, modulo `count` (the same on every machine
    /// and every run, unlike Swift's seeded `Hasher`).
    public func contains(_ path: String) -> Bool {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in path.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return Int(hash % UInt64(count)) == index - 1
    }
}

/// What the walk saw besides the files it passed on.
public struct BatchWalkSummary: Sendable, Equatable {
    /// Files passed to the workers.
    public var files = 0
    /// Files left to other shards.
    public var otherShards = 0
    /// Subfolders not entered because the batch is not recursive.
    public var subfoldersSkipped = 0
    /// Sidecar files (.xmp, .txt …) passed over.
    public var sidecarsSkipped = 0
    /// Inputs or folders skipped because they are the output directory or inside it.
    public var insideOutput = 0
    /// Inputs that do not exist (reported as failures too).
    public var missing = 0
    /// Videos (`.MOV`, `.mp4`) passed over beside a photo of the same name that this batch prepares: an Apple
    /// Live Photo's (or another camera's) clip, which can carry the place it was filmed. One entry per such
    /// video, so a caller can name each.
    public var videosBesidePhotos: [VideoBesidePhoto] = []
}

/// A video beside a photo of the same name (`IMG_0001.MOV` beside `IMG_0001.HEIC`: a Live Photo pair) that a
/// batch passes over: the photo is prepared, the video is not.
public struct VideoBesidePhoto: Sendable, Equatable {
    /// The video's path.
    public var video: String
    /// The photo's path.
    public var photo: String

    /// The photo extensions a video beside them is a pair's: HEIC/HEIF (Apple Live Photos) and JPEG.
    static let photoExtensions: Set<String> = ["heic", "heif", "jpg", "jpeg"]
    /// The extensions of the videos looked for.
    static let videoExtensions: Set<String> = ["mov", "mp4"]

    /// "video beside IMG_0001.HEIC not prepared: it can carry the location".
    public var note: String {
        "video beside \(BatchItem.lastComponent(photo)) not prepared: it can carry the location"
    }
}

/// Turns the batch's inputs into items, one at a time: folders are listed one at a time (sorted), the
/// output directory and everything below it are never entered, and items of other shards are dropped.
/// Only the current folder's listing and the set of folders already entered (to stop symbolic-link
/// loops) are held, never the list of all files.
struct BatchWalk {
    let recursive: Bool
    let shard: BatchShard?
    /// The output directory's identity, when it exists (it is skipped wherever the walk meets it).
    let outputIdentity: FileIdentity?
    /// The output directory's real path, to recognise inputs named inside it.
    let outputRealPath: String?

    init(outputDirectory: String, recursive: Bool, shard: BatchShard?) {
        self.recursive = recursive
        self.shard = shard
        outputIdentity = FileIdentity(path: outputDirectory)
        outputRealPath = BatchWalk.realPath(outputDirectory)
    }

    /// Walks `inputs`, calling `emit` with each item of this shard and `missing` with each input that does not exist.
    func walk(_ inputs: BatchInputs, emit: (BatchItem) -> Void, missing: (String) -> Void) -> BatchWalkSummary {
        var state = State()
        switch inputs {
        case .paths(let paths):
            var claimed = Set<String>()
            for path in paths {
                let trimmed = BatchWalk.trimmed(path)
                guard FileIO.exists(trimmed) else {
                    state.summary.missing += 1
                    missing(path)
                    continue
                }
                let name = BatchItem.lastComponent(trimmed)
                if FileIO.isDirectory(trimmed) {
                    if isInsideOutput(trimmed) { state.summary.insideOutput += 1; continue }
                    walkFolder(trimmed, relative: BatchWalk.claim(name, in: &claimed), state: &state, emit: emit)
                } else {
                    let (stem, fileExtension) = BatchItem.split(name)
                    let claimedStem = BatchWalk.claim(stem, in: &claimed)
                    if offer(
                        BatchItem(input: trimmed, relativeName: claimedStem + (fileExtension.map { "." + $0 } ?? "")),
                        state: &state, emit: emit)
                    {
                        noteVideos(besideNamed: trimmed, state: &state)
                    }
                }
            }
        case .list(let list):
            var folder = FolderStems()
            while let path = list.next() {
                let trimmed = BatchWalk.trimmed(path)
                guard FileIO.exists(trimmed) else {
                    state.summary.missing += 1
                    missing(path)
                    continue
                }
                guard let relative = BatchWalk.mirrored(trimmed) else {
                    missing(path + " (a listed path with `..` cannot be mirrored under --out)")
                    state.summary.missing += 1
                    continue
                }
                if FileIO.isDirectory(trimmed) {
                    if isInsideOutput(trimmed) { state.summary.insideOutput += 1; continue }
                    walkFolder(trimmed, relative: relative, state: &state, emit: emit)
                } else {
                    let parent = FileIO.parentDirectory(of: trimmed)
                    if folder.path != parent { folder = FolderStems(listing: parent) }
                    let name = BatchItem.lastComponent(trimmed)
                    if offer(
                        BatchItem(
                            input: trimmed, relativeName: relative,
                            keepsFullName: folder.sharedStems.contains(BatchItem.stem(name)), mirrorsFolder: true),
                        state: &state, emit: emit)
                    {
                        noteVideos(beside: name, in: parent, videos: folder.videos, state: &state)
                    }
                }
            }
        }
        return state.summary
    }

    private struct State {
        var summary = BatchWalkSummary()
        var visited = Set<FileIdentity>()
    }

    /// Records the videos among `videos` (names in `folder`) that share the stem of the photo `photo` (a name in
    /// `folder`), when `photo` is a HEIC/HEIF or JPEG.
    private func noteVideos(beside photo: String, in folder: String, videos: [String], state: inout State) {
        guard VideoBesidePhoto.photoExtensions.contains(BatchItem.split(photo).fileExtension?.lowercased() ?? "")
        else { return }
        let prefix = folder.hasSuffix("/") ? folder : folder + "/"
        for video in videos where BatchItem.stem(video) == BatchItem.stem(photo) {
            state.summary.videosBesidePhotos.append(VideoBesidePhoto(video: prefix + video, photo: prefix + photo))
        }
    }

    /// For a photo named on its own (not found in a folder walk): a video of the same stem beside it.
    private func noteVideos(besideNamed path: String, state: inout State) {
        guard VideoBesidePhoto.photoExtensions.contains(BatchItem.split(path).fileExtension?.lowercased() ?? "")
        else { return }
        let stem = BatchItem.split(path).stem
        for fileExtension in ["MOV", "mov", "MP4", "mp4"] {
            let video = stem + "." + fileExtension
            if FileIO.exists(video), !FileIO.isDirectory(video) {
                state.summary.videosBesidePhotos.append(VideoBesidePhoto(video: video, photo: path))
            }
        }
    }

    /// Passes `item` on, unless it belongs to another shard; says whether it did.
    @discardableResult
    private func offer(_ item: BatchItem, state: inout State, emit: (BatchItem) -> Void) -> Bool {
        if let shard, !shard.contains(item.input) {
            state.summary.otherShards += 1
            return false
        }
        state.summary.files += 1
        emit(item)
        return true
    }

    /// Lists `path` (sorted), passes its files on, then walks its subfolders depth first when recursive.
    private func walkFolder(_ path: String, relative: String, state: inout State, emit: (BatchItem) -> Void) {
        guard let identity = FileIdentity(path: path), state.visited.insert(identity).inserted else { return }
        let entries = FolderStems.list(path)
        var files: [String] = []
        var folders: [String] = []
        var videos: [String] = []
        for name in entries {
            let child = path.hasSuffix("/") ? path + name : path + "/" + name
            if FileIO.isDirectory(child) {
                if let outputIdentity, FileIdentity(path: child) == outputIdentity {
                    state.summary.insideOutput += 1
                } else if recursive {
                    folders.append(name)
                } else {
                    state.summary.subfoldersSkipped += 1
                }
            } else if Batch.isSidecar(name) {
                state.summary.sidecarsSkipped += 1
                let fileExtension = BatchItem.split(name).fileExtension?.lowercased() ?? ""
                if VideoBesidePhoto.videoExtensions.contains(fileExtension) { videos.append(name) }
            } else {
                files.append(name)
            }
        }
        let shared = FolderStems.shared(files)
        let folder = path.hasSuffix("/") ? path : path + "/"
        for name in files {
            if offer(
                BatchItem(
                    input: folder + name, relativeName: relative + "/" + name,
                    keepsFullName: shared.contains(BatchItem.stem(name)), mirrorsFolder: true),
                state: &state, emit: emit)
            {
                noteVideos(beside: name, in: path, videos: videos, state: &state)
            }
        }
        for name in folders {
            walkFolder(
                (path.hasSuffix("/") ? path : path + "/") + name, relative: relative + "/" + name, state: &state,
                emit: emit)
        }
    }

    private func isInsideOutput(_ path: String) -> Bool {
        guard let outputRealPath, let real = BatchWalk.realPath(path) else { return false }
        return real == outputRealPath || real.hasPrefix(outputRealPath == "/" ? "/" : outputRealPath + "/")
    }

    /// `name`, or `name~2`, `name~3`… if an earlier argument took it.
    static func claim(_ name: String, in claimed: inout Set<String>) -> String {
        var candidate = name
        var number = 1
        while !claimed.insert(candidate).inserted {
            number += 1
            candidate = name + "~\(number)"
        }
        return candidate
    }

    /// A listed path as a relative path below the output directory: leading `/` and `./` and empty or `.`
    /// components dropped; nil when it climbs with `..`.
    static func mirrored(_ path: String) -> String? {
        let components = path.split(separator: "/").filter { $0 != "." }
        if components.contains("..") || components.isEmpty { return nil }
        return components.joined(separator: "/")
    }

    static func trimmed(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

/// A file's device and inode: the same folder reached by two paths has one identity.
struct FileIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

/// The stems shared by more than one file of a folder (`pic` for `pic.gif` and `pic.png`): those files'
/// outputs keep their whole names. Listing-based lists keep only the last folder's.
struct FolderStems {
    var path: String?
    var sharedStems: Set<String> = []
    /// The folder's videos (`.MOV`, `.mp4`), which a walk passes over as sidecars.
    var videos: [String] = []

    init() {}

    init(listing path: String) {
        self.path = path
        let entries = FolderStems.list(path)
        let files = entries.filter {
            !Batch.isSidecar($0) && !FileIO.isDirectory((path.hasSuffix("/") ? path : path + "/") + $0)
        }
        videos = entries.filter {
            VideoBesidePhoto.videoExtensions.contains(BatchItem.split($0).fileExtension?.lowercased() ?? "")
        }
        sharedStems = FolderStems.shared(files)
    }

    static func shared(_ names: [String]) -> Set<String> {
        var seen = Set<String>()
        var shared = Set<String>()
        for name in names where !seen.insert(BatchItem.stem(name)).inserted { shared.insert(BatchItem.stem(name)) }
        return shared
    }

    /// A folder's entries, sorted, hidden ones left out.
    static func list(_ path: String) -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted()
    }
}
