/// One input file and the name its outputs take under the output directory.
///
/// The naming rule (docs/cli.md, "Output names"): an output keeps the input's path below the folder given
/// (or, for a file given by itself, just its name) and takes the output format's extension:
/// `pics/IMG_1.jpeg` → `out/[<service>/]pics/IMG_1.jpg`. Two inputs never share an output:
/// - files of one folder that share a stem (`pic.gif`, `pic.png`) keep their whole name and add the
///   extension only if the format changed: `pic.gif.png`, `pic.png`;
/// - arguments that would take the same name under `--out` (`cam1/IMG_1.jpg cam2/IMG_1.jpg`, or `a/pics
///   b/pics`) are numbered in the order given: `IMG_1.jpg`, `IMG_1~2.jpg`; `pics/`, `pics~2/`;
/// - what is left (a file whose output name is the name of another file in its folder, like `x.gif` →
///   `x.gif.png` beside a real `x.gif.png`) fails with an error naming both files: the name belongs to the
///   file that has it.
/// The rule depends only on the inputs, never on timing, so `--jobs` and `--shard` do not change it.
public struct BatchItem: Sendable, Equatable {
    /// The file to read.
    public var input: String
    /// The output's path below the output directory (and service folder), with the input's extension.
    public var relativeName: String
    /// Whether the output keeps the input's whole name (its stem is shared by another file of its folder).
    public var keepsFullName: Bool
    /// Whether the output folder mirrors the input's folder, so another file there could own the output name.
    public var mirrorsFolder: Bool

    public init(input: String, relativeName: String, keepsFullName: Bool = false, mirrorsFolder: Bool = false) {
        self.input = input
        self.relativeName = relativeName
        self.keepsFullName = keepsFullName
        self.mirrorsFolder = mirrorsFolder
    }

    /// The output's path below the output directory for an output in `format`.
    public func outputName(for format: ImageFormat) -> String {
        let (stem, fileExtension) = BatchItem.split(relativeName)
        if keepsFullName || fileExtension == nil {
            if let fileExtension, BatchItem.extension(fileExtension, names: format) { return relativeName }
            return relativeName + "." + format.fileExtension
        }
        return stem + "." + format.fileExtension
    }

    /// The name below the output directory of this item's variant `name` in `format`: the output's name with
    /// the variant's before its extension (`pics/IMG_1.jpg` → `pics/IMG_1.small.jpg`; `pic.gif.png` →
    /// `pic.gif.small.png`). A variant's name has no dot (`OutputVariant.isValidName`), so it never equals
    /// the output's name nor another variant's.
    public func variantOutputName(_ name: String, for format: ImageFormat) -> String {
        BatchItem.split(outputName(for: format)).stem + "." + name + "." + format.fileExtension
    }

    /// Every name an output of this item could take (for `--skip-existing`).
    var possibleOutputNames: [String] {
        var seen = Set<String>()
        return ImageFormat.allCases.map(outputName(for:)).filter { seen.insert($0).inserted }
    }

    /// Whether a file extension is one of `format`'s (`jpg`, `jpeg`, `JPG` for JPEG).
    static func `extension`(_ fileExtension: String, names format: ImageFormat) -> Bool {
        let lowered = fileExtension.lowercased()
        return lowered == format.fileExtension || lowered == format.rawValue || (format == .jpeg && lowered == "jpe")
    }

    /// A path's last component.
    static func lastComponent(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    /// Splits the last component's extension off: `a/b.c.jpg` → (`a/b.c`, `jpg`); `a/.x`, `a/b` → no extension.
    static func split(_ path: String) -> (stem: String, fileExtension: String?) {
        let name = lastComponent(path)
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex, name.index(after: dot) != name.endIndex else {
            return (path, nil)
        }
        let fileExtension = String(name[name.index(after: dot)...])
        return (String(path.dropLast(fileExtension.count + 1)), fileExtension)
    }

    /// The stem of a file name: `pic.gif` → `pic`.
    static func stem(_ name: String) -> String { split(name).stem }
}
