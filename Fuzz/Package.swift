// swift-tools-version:6.1
// libFuzzer targets for SharePipe's decoders: one executable per format, each feeding the public pipeline
// `.bytes(data)` with small limits. Build and run them with `scripts/fuzz` (see Fuzz/README.md); they link
// only with `-Xswiftc -sanitize=fuzzer` (which brings libFuzzer's driver).
import PackageDescription

let package = Package(
    name: "SharePipeFuzz",
    dependencies: [
        // scripts/fuzz points this at a snapshot of the sources, so edits made while it builds cannot break it.
        .package(name: "SharePipe", path: Context.environment["SHAREPIPE_ROOT"] ?? ".."),
    ],
    targets: [
        // The shared entry: options, invariants checked on every output.
        .target(name: "CFuzzDriver"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzDriver", .product(name: "SharePipe", package: "SharePipe")]),
        .executableTarget(name: "FuzzJPEG", dependencies: ["FuzzSupport"]),
        .executableTarget(name: "FuzzPNG", dependencies: ["FuzzSupport"]),
        .executableTarget(name: "FuzzGIF", dependencies: ["FuzzSupport"]),
        .executableTarget(name: "FuzzHEIF", dependencies: ["FuzzSupport"]),
        .executableTarget(name: "FuzzAVIF", dependencies: ["FuzzSupport"]),
        .executableTarget(name: "FuzzWebP", dependencies: ["FuzzSupport"]),
        .executableTarget(name: "FuzzAPNG", dependencies: ["FuzzSupport"]),
    ]
)
