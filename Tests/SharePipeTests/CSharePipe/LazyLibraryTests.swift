import Foundation
import Testing
@testable import SharePipe

/// libheif, libwebp (+ demux, mux) and lcms2 are loaded by the shim on first use (sp_lazy.h), not linked.
/// Each case runs the CLI in a process of its own, so the load it checks is that process's first one.
@Suite(.tags(.witness), .skipped(whenListed: "witness"), .serialized) struct LazyLibraryTests {
    /// The CLI with extra environment variables.
    static func sharepipe(_ environment: [String], _ arguments: [String]) throws -> Tool.Output {
        try Tool.run("env", environment + [Tool.sharepipe] + arguments)
    }

    @Test func theBinaryDoesNotLinkTheLazyLibraries() throws {
        try Witness.require("objdump")
        let run = try Tool.run("objdump", ["-p", Tool.sharepipe])
        #expect(run.status == 0, "\(run.stderr)")
        let needed = run.stdout.split(separator: "\n").filter { $0.contains("NEEDED") }.map { String($0) }
        #expect(needed.contains { $0.contains("libjpeg") }, "\(needed)")  // the parse found the list
        let lazy = try Self.lazyLibraries()
        #expect(lazy.count >= 7, "\(lazy)")
        // Each library a shim file loads on first use, and the codecs they bring.
        for library in lazy.map(\.id) + ["libx265", "libaom", "libdav1d"] {
            #expect(!needed.contains { $0.contains(library) }, "\(library) is linked: \(needed)")
        }
    }

    /// Foundation's internationalisation half brings ICU: with `--static-swift-stdlib` (how the package is
    /// built for installing) its 34 MB of data and code joined the binary, and a 24 MP JPEG job's peak RSS
    /// went from 18 to 22.5 MiB, nearly all of it the larger binary's pages. SharePipe imports
    /// FoundationEssentials (or nothing) where it needs Foundation; this debug binary's dynamic links show it.
    @Test func theBinaryDoesNotLinkFoundationsInternationalisation() throws {
        try Witness.require("objdump")
        let run = try Tool.run("objdump", ["-p", Tool.sharepipe])
        #expect(run.status == 0, "\(run.stderr)")
        let needed = run.stdout.split(separator: "\n").filter { $0.contains("NEEDED") }.map { String($0) }
        #expect(needed.contains { $0.contains("libFoundationEssentials") }, "\(needed)")
        for library in ["libFoundation.so", "libFoundationInternationalization", "lib_FoundationICU"] {
            #expect(!needed.contains { $0.contains(library) }, "\(library) is linked: \(needed)")
        }
    }

    /// The libraries the shim loads on first use, read from their `SP_LAZY_DEFINE(id, "soname", …)` lines in
    /// Sources/CSharePipe (each format's shim file defines its own, sp_lazy.h).
    static func lazyLibraries() throws -> [(id: String, soname: String)] {
        let folder = Fixtures.root + "/Sources/CSharePipe"
        return try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".c") }.sorted()
            .flatMap { file in
                try String(contentsOfFile: folder + "/" + file, encoding: .utf8).split(separator: "\n")
                    .filter { $0.hasPrefix("SP_LAZY_DEFINE(") }
                    .map { line in
                        let fields = line.dropFirst("SP_LAZY_DEFINE(".count).split(separator: ",").map {
                            $0.trimmingCharacters(in: .whitespaces)
                        }
                        return (
                            id: fields[0], soname: fields[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                        )
                    }
            }
    }

    @Test func heifAndWebPJobsLoadTheirLibrariesOnFirstUse() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        // HEIC (libheif, and lcms2 for nclx → ICC), a WebP re-encoded as WebP (libwebp + libwebpmux for its
        // chunks) and an animated WebP (libwebpdemux).
        let run = try Self.sharepipe(
            [],
            [
                "prepare", Fixtures.path("heif/corners-444.heic"), Fixtures.path("heif/p3-nclx.heic"),
                Fixtures.path("webp/gps-orient6.webp"), Fixtures.path("webp/animated.webp"),
                "--out", directory, "--strip", "gps",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let heic = try Decode.bitmap(Fixtures.bytes(directory + "/corners-444.jpg"))
        #expect(heic.size == PixelSize(width: 600, height: 400))
        HEIFDecodeTests.expectCorners(heic)
        #expect(
            try Decode.bitmap(Fixtures.bytes(directory + "/p3-nclx.jpg")).size == PixelSize(width: 128, height: 128))
        let webp = try WebPFixtures.witnessDecode(Fixtures.bytes(directory + "/gps-orient6.webp"))
        #expect(webp.size == PixelSize(width: 320, height: 240))
        #expect(close(webp.rgb(16, 16), [255, 0, 0, 255], tolerance: 16))
        #expect(try WebPFixtures.exiftool(Fixtures.bytes(directory + "/gps-orient6.webp")).contains("SharePipeCam"))
        #expect(
            try Decode.bitmap(Fixtures.bytes(directory + "/animated.gif")).size == PixelSize(width: 160, height: 120))
    }

    @Test(arguments: [
        (
            "SHAREPIPE_LIBHEIF=libsharepipe-missing.so.1", "heif/corners-444.heic",
            "unsupported format: libheif not available (libsharepipe-missing.so.1: cannot open"
        ),
        (
            "SHAREPIPE_LIBHEIF=libwebp.so.7", "heif/corners-444.heic",
            "unsupported format: libheif not available (libwebp.so.7 has no heif_"
        ),
        (
            "SHAREPIPE_LIBWEBP=libsharepipe-missing.so.7", "webp/gps-orient6.webp",
            "unsupported format: libwebp not available"
        ),
        (
            "SHAREPIPE_LIBDE265=libsharepipe-missing.so.0", "heif-grid/grid.heic",
            "unsupported format: libde265 not available"
        ),
        (
            "SHAREPIPE_LIBLCMS2=libsharepipe-missing.so.2", "heif/p3-nclx.heic",
            "unsupported format: liblcms2 not available"
        ),
        (
            "SHAREPIPE_LIBAVIF=libsharepipe-missing.so.15", "heif/corners.avif",
            "unsupported format: libavif not available"
        ),
        (
            "SHAREPIPE_LIBAVIF=libwebp.so.7", "heif/alpha.avif",
            "unsupported format: libavif not available (libwebp.so.7 has no avif"
        ),
    ])
    func aLibraryThatCannotBeLoadedFailsTheJobNamingTheFile(setting: String, fixture: String, expected: String) throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let input = Fixtures.path(fixture)
        let run = try Self.sharepipe(
            [setting], ["prepare", input, Fixtures.path("jpeg/orient-1.jpg"), "--out", directory])
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")  // a failed file, not a crash (signals give 128+)
        #expect(run.stderr.contains("FAILED \(input): \(expected)"), "\(run.stderr)")
        // The other job of the batch, a JPEG, needs none of them.
        #expect(run.stdout.contains("processed 1, failed 1"), "\(run.stdout)")
        #expect(
            try Decode.bitmap(Fixtures.bytes(directory + "/orient-1.jpg")).size == PixelSize(width: 600, height: 400))
    }

    /// Animated WebP is composited by SharePipe from the file: libwebpdemux (WebPAnimDecoder) is not needed to
    /// prepare it, only the tests' reference decode uses it.
    @Test func animatedWebPNeedsNoLibwebpdemux() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let run = try Self.sharepipe(
            ["SHAREPIPE_LIBWEBPDEMUX=libsharepipe-missing.so.2"],
            ["prepare", Fixtures.path("webp/animated.webp"), "--out", directory, "--service", "x"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(try GIFWitness.gifsicleInfo(directory + "/x/animated.gif").frames > 1)
    }

    /// A CMYK JPEG with an embedded profile without lcms2: converted naively, with a warning, never failed.
    @Test func cmykWithoutLittleCMSFallsBackWithAWarning() throws {
        let directory = Fixtures.temporaryDirectory()
        defer { Fixtures.cleanUp(directory) }
        let run = try Self.sharepipe(
            ["SHAREPIPE_LIBLCMS2=libsharepipe-missing.so.2"],
            ["prepare", Fixtures.path("jpeg-color/cmyk-icc.jpg"), "--out", directory])
        #expect(run.status == 0, "\(run.stderr)")
        #expect((run.stdout + run.stderr).contains("liblcms2 not available"), "\(run.stdout)\(run.stderr)")
    }
}
