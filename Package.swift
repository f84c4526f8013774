// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "SharePipe",
    // Linux only: built and tested on Debian 12, and nothing checks a macOS build. `platforms` is no list of
    // supported systems (SwiftPM has no way to say "Linux only"); it only sets the deployment floor on Apple
    // systems, and without it that floor would be macOS 10.13, below what the code needs (Duration and
    // ContinuousClock in SharePipeline: macOS 13). So it names macOS 13, the truthful floor, and claims no
    // more: the shim's lazy loader opens Linux SONAMEs (libheif.so.1, libwebp.so.7, …), so HEIF, AVIF, WebP
    // and CMYK would fail as "not available" on macOS as it stands.
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "SharePipe", targets: ["SharePipe"]),
        .executable(name: "sharepipe", targets: ["sharepipe"]),
        // Test support shared with Server/'s tests (another package cannot depend on a test target): not API.
        .library(name: "SharePipeTestSupport", targets: ["SharePipeTestSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        // Documentation only: `swift package generate-documentation --target SharePipe`.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The only C in the project: setjmp-guarded calls into libjpeg(-turbo), libpng, giflib,
        // libheif, libwebp and Little CMS. libheif, libwebp(demux, mux) and lcms2 are not linked: the shim
        // loads them on first use (sp_lazy.h), so JPEG, PNG and GIF jobs never map them.
        .target(
            name: "CSharePipe",
            linkerSettings: [
                .linkedLibrary("jpeg"),
                .linkedLibrary("turbojpeg"),
                .linkedLibrary("png16"),
                .linkedLibrary("gif"),
                .linkedLibrary("dl"),
            ]
        ),
        .target(
            name: "SharePipe",
            dependencies: [
                "CSharePipe",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "sharepipe",
            dependencies: [
                "SharePipe",
                "CSharePipe",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The seeded generator and the extreme values of the option property tests (root and Server/).
        .target(name: "SharePipeTestSupport"),
        .testTarget(
            name: "SharePipeTests",
            dependencies: ["SharePipe", "CSharePipe", "SharePipeTestSupport"],
            // The CLI's help and JSON snapshots, read by CLISnapshotTests from the source tree.
            exclude: ["CLI/Snapshots"]
        ),
    ]
)
