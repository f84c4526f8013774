// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "SharePipe",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "SharePipe", targets: ["SharePipe"]),
        .executable(name: "sharepipe", targets: ["sharepipe"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        // Documentation only: `swift package generate-documentation --target SharePipe`.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The only C in the project: setjmp-guarded calls into libjpeg(-turbo), libpng, giflib,
        // libheif, libwebp and Little CMS.
        .target(
            name: "CSharePipe",
            linkerSettings: [
                .linkedLibrary("jpeg"),
                .linkedLibrary("turbojpeg"),
                .linkedLibrary("png16"),
                .linkedLibrary("gif"),
                .linkedLibrary("heif"),
                .linkedLibrary("de265"),
                .linkedLibrary("webp"),
                .linkedLibrary("webpdemux"),
                .linkedLibrary("webpmux"),
                .linkedLibrary("lcms2"),
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
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "SharePipeTests",
            dependencies: ["SharePipe", "CSharePipe"]
        ),
    ]
)
