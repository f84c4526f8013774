import Foundation
import Testing
@testable import SharePipe

/// The operator's switch that refuses whole input families (`ImageLimits.disabledFormats`, `--disable`), and the
/// structural checks made before any decoder library reads a HEIF/AVIF (a transform marked non-essential). The
/// AVIFs are made here by `avifenc`, the edited HEIF/AVIF boxes by scripts/fixtures/heif-boxes.py, once per run.
@Suite(.serialized) struct FormatFamilyTests {
    /// The folder of generated inputs (made once per test process).
    static let fixtures: String = {
        let directory = NSTemporaryDirectory() + "sharepipe-family-fixtures-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func run(_ tool: String, _ arguments: [String]) {
            let output = try? Tool.run(tool, arguments)
            if output?.status != 0 { print("fixture: \(tool) \(arguments) failed: \(output?.stderr ?? "not run")") }
        }
        let boxes = Fixtures.root + "/scripts/fixtures/heif-boxes.py"
        // 64×48: red top-left quadrant, the rest grey.
        run(
            Witness.convert,
            [
                "-size", "64x48", "xc:gray", "-fill", "red", "-draw", "rectangle 0,0 31,23",
                "PNG24:" + directory + "/picture.png",
            ])
        let exact = ["-s", "10", "-y", "444", "--min", "0", "--max", "0"]
        run("avifenc", exact + [directory + "/picture.png", directory + "/plain.avif"])
        // Every transform, essential as avifenc writes them; then each one in turn marked non-essential.
        run(
            "avifenc",
            exact + [
                "--crop", "0,0,48,32", "--irot", "1", "--imir", "0", directory + "/picture.png",
                directory + "/turned.avif",
            ])
        for property in ["clap", "irot", "imir"] {
            run(
                "python3",
                [boxes, directory + "/turned.avif", directory + "/\(property).avif", "--not-essential", property])
        }
        // The same AV1 items in a file whose brands say HEIC (heic, mif1): sniffed as HEIF, decoded by libheif
        // through its AV1 decoder.
        run("python3", [boxes, directory + "/plain.avif", directory + "/av1.heif", "--brands", "heic,mif1"])
        // A HEIC with an irot marked non-essential; a grid HEIC with one added non-essential.
        run(
            "python3",
            [boxes, Fixtures.path("heif/gps-irot.heic"), directory + "/irot.heic", "--not-essential", "irot"])
        run(
            "python3",
            [
                boxes, Fixtures.path("heif-grid/grid.heic"), directory + "/grid-irot.heic", "--irot", "1",
                "--not-essential", "irot",
            ])
        run(
            "python3",
            [
                boxes, Fixtures.path("heif/corners-444.heic"), directory + "/clap.heic", "--clap", "100,80",
                "--not-essential", "clap",
            ])
        return directory
    }()

    static func generated(_ name: String) throws -> String {
        try Witness.require(Witness.convert, "avifenc", "python3")
        let path = fixtures + "/" + name
        try #require(FileManager.default.fileExists(atPath: path), "\(name) was not made (see the fixture lines)")
        return path
    }

    static func options(disabling families: Set<FormatFamily>) -> PrepareOptions {
        var options = PrepareOptions(maxShortEdge: 32)
        options.limits.disabledFormats = families
        return options
    }

    /// An input of each family, and the family that refuses it.
    static let inputs: [(path: String, family: FormatFamily)] = [
        (Fixtures.path("jpeg/orient-6.jpg"), .jpeg), (Fixtures.path("png/gray-8.png"), .png),
        (Fixtures.path("apng/dispose-blend.png"), .apng), (Fixtures.path("gif/loop3.gif"), .gif),
        (Fixtures.path("webp/animated.webp"), .webp), (Fixtures.path("heif/gps-irot.heic"), .heif),
        (Fixtures.path("heif-grid/grid.heic"), .heif),
    ]

    @Test("Each family refused by its switch, with the file and the switch named; the others still prepared")
    func eachFamilyIsRefusedBySwitch() throws {
        let avif = try Self.generated("plain.avif")
        for (path, family) in Self.inputs + [(avif, .avif)] {
            do {
                _ = try SharePipe.prepare(.file(path: path), options: Self.options(disabling: [family]))
                Issue.record("--disable \(family) prepared \(path)")
            } catch let SharePipeError.unsupportedFormat(file, missing, reason) {
                #expect(file == path)
                #expect(missing == .disabled)
                #expect(reason.contains("--disable \(family.rawValue)"), "\(reason)")
            }
            // Every other family off: this one still prepares.
            let others = Set(FormatFamily.allCases).subtracting([family, family == .apng ? .png : family])
            let prepared = try SharePipe.prepare(.file(path: path), options: Self.options(disabling: others))
            #expect(prepared.size.width > 0 && !prepared.bytes.isEmpty)
        }
    }

    @Test("png covers animated PNGs; apng alone leaves still PNGs accepted")
    func pngAndAPNG() throws {
        let animated = Fixtures.path("apng/dispose-blend.png"), still = Fixtures.path("png/gray-8.png")
        #expect(try FormatFamilyGate.isAnimatedPNG(HEIFFileBytes(.file(path: animated))))
        #expect(try !FormatFamilyGate.isAnimatedPNG(HEIFFileBytes(.file(path: still))))
        #expect(throws: SharePipeError.self) {
            try SharePipe.prepare(.file(path: animated), options: Self.options(disabling: [.png]))
        }
        #expect(throws: SharePipeError.self) {
            try SharePipe.prepare(.file(path: animated), options: Self.options(disabling: [.apng]))
        }
        _ = try SharePipe.prepare(.file(path: still), options: Self.options(disabling: [.apng]))
    }

    @Test("The gate comes before any decoder: a HEIC whose body is garbage is refused as disabled, not corrupt")
    func refusedBeforeDecoding() throws {
        var bytes = Array(try Fixtures.bytes(Fixtures.path("heif/gps-irot.heic")).prefix(40))
        bytes += [UInt8](repeating: 0xA5, count: 200)
        let options = Self.options(disabling: [.heif])
        #expect(
            throws: SharePipeError.unsupportedFormat(
                file: "<memory>", missing: .disabled, reason: "HEIF/HEIC input is turned off here (--disable heif)")
        ) {
            try SharePipe.prepare(.bytes(bytes), options: options)
        }
        // inspect (and so the server's admission, which probes through it) refuses it the same way.
        #expect(throws: SharePipeError.self) { try SharePipe.inspect(.bytes(bytes), limits: options.limits) }
        // Without the switch, the same bytes reach libheif, which finds them damaged.
        #expect {
            try SharePipe.prepare(.bytes(bytes), options: PrepareOptions())
        } throws: { error in
            if case SharePipeError.corrupt = error { return true }
            return false
        }
    }

    @Test("An AV1-coded HEIF reaches libheif's AV1 decoder: --disable avif cuts it, --disable heif too")
    func av1InsideHEIF() throws {
        let path = try Self.generated("av1.heif")
        #expect(ImageFormat.sniff(try Fixtures.bytes(path)) == .heif)
        // Without a switch it is prepared (through libheif and its AV1 decoder): the path is real.
        let prepared = try SharePipe.prepare(.file(path: path), options: PrepareOptions(maxShortEdge: 32))
        #expect(prepared.format == .jpeg && prepared.inputSize == PixelSize(width: 64, height: 48))
        for family in [FormatFamily.avif, .heif] {
            do {
                _ = try SharePipe.prepare(.file(path: path), options: Self.options(disabling: [family]))
                Issue.record("\(family) did not refuse an AV1-coded HEIF")
            } catch let SharePipeError.unsupportedFormat(file, missing, reason) {
                #expect(file == path && missing == .disabled && reason.contains("--disable \(family.rawValue)"))
            }
        }
        // An HEVC HEIF is not AV1: --disable avif lets it through.
        _ = try SharePipe.prepare(
            .file(path: Fixtures.path("heif/gps-irot.heic")), options: Self.options(disabling: [.avif]))
    }

    @Test("A transform marked non-essential in ipma is corrupt, naming the property and the file")
    func nonEssentialTransformsAreRefused() throws {
        // The same transforms marked essential are prepared.
        let turned = try Self.generated("turned.avif")
        let prepared = try SharePipe.prepare(.file(path: turned), options: PrepareOptions(maxShortEdge: 32))
        #expect(prepared.size.width > 0)
        for (name, property) in [
            ("clap.avif", "clap"), ("irot.avif", "irot"), ("imir.avif", "imir"), ("irot.heic", "irot"),
            ("grid-irot.heic", "irot"), ("clap.heic", "clap"),
        ] {
            let path = try Self.generated(name)
            do {
                _ = try SharePipe.prepare(.file(path: path), options: PrepareOptions(maxShortEdge: 32))
                Issue.record("\(name) was prepared")
            } catch let SharePipeError.corrupt(file, phase, reason) {
                #expect(file == path && phase == .header)
                #expect(reason.contains("`\(property)`") && reason.contains("not marked essential"), "\(reason)")
            }
        }
    }

    /// The invalid option an `invalidOptions` error carries; nil for any other error.
    static func invalidOption(_ error: SharePipeError) -> InvalidOption? {
        if case .invalidOptions(let invalid) = error { return invalid }
        return nil
    }

    @Test("The switch's text: names, spaces, case, none; a wrong name is an invalid option naming --disable")
    func parsing() throws {
        #expect(FormatFamily.parse("heif,avif") == [.heif, .avif])
        #expect(FormatFamily.parse(" HEIF , avif ") == [.heif, .avif])
        #expect(FormatFamily.parse("none") == [] && FormatFamily.parse("") == [])
        #expect(FormatFamily.parse("heic") == nil && FormatFamily.parse("heif,") == nil)
        #expect(FormatFamily.text([.avif, .jpeg]) == "jpeg,avif")
        let options = try PrepareOptions().applying(textValues: [("disable", "webp,gif")], scope: .all)
        #expect(options.limits.disabledFormats == [.webp, .gif])
        do {
            _ = try PrepareOptions().applying(textValues: [("disable", "tiff")], scope: .all)
            Issue.record("tiff was taken")
        } catch let error as SharePipeError {
            #expect(Self.invalidOption(error)?.message(on: .commandLine).contains("--disable") == true)
        }
        // A server's client cannot widen it (nor set it at all): it is the operator's.
        var operators = PrepareOptions()
        operators.limits.disabledFormats = [.heif]
        do {
            let widened = try operators.applying(textValues: [("disable", "none")], scope: .client)
            Issue.record("a client's disable=none was taken: \(widened.limits.disabledFormats)")
        } catch let error as SharePipeError {
            #expect(Self.invalidOption(error)?.option == "disable")
        }
        #expect(OptionTable.limitsDisabledFormats.clientMaySet == false)
        #expect(OptionTable.limitsDisabledFormats.defaultValue == "none")
    }

    @Test("CLI: --disable refuses the file in its JSON line (errorUnsupported disabled), other files prepared")
    func commandLine() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let heic = Fixtures.path("heif/gps-irot.heic"), jpeg = Fixtures.path("jpeg/orient-6.jpg")
        let run = try Tool.run(
            Tool.sharepipe, ["prepare", heic, jpeg, "--out", directory, "--json", "--disable", "heif,avif"])
        #expect(run.status == 1)
        let objects = try run.stdout.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        let failed = try #require(objects.first { ($0["status"] as? String) == "failed" })
        #expect(failed["input"] as? String == heic)
        #expect(failed["errorKind"] as? String == "unsupportedFormat")
        #expect(failed["errorUnsupported"] as? String == "disabled")
        #expect((failed["error"] as? String)?.contains("--disable heif") == true)
        #expect(objects.contains { ($0["status"] as? String) == "ok" })
        let wrong = try Tool.run(Tool.sharepipe, ["prepare", jpeg, "--out", directory, "--disable", "heic"])
        #expect(wrong.status != 0 && wrong.stderr.contains("--disable"))
        let help = try Tool.run(Tool.sharepipe, ["prepare", "--help"])
        #expect(help.stdout.contains("--disable"))
    }
}
