// swift-tools-version:6.1
// libFuzzer targets for SharePipe's decoders: one executable per format, each feeding the public pipeline
// `.bytes(data)` with small limits. Build and run them with `scripts/fuzz` (see Fuzz/README.md); they link
// only with `-Xswiftc -sanitize=fuzzer` (which brings libFuzzer's driver).
//
// Every folder Sources/Fuzz<Name> (but FuzzSupport) is a target: a new format's fuzz target is its folder
// and main.swift, nothing here (FormatRegistryTests checks every format is fed by one).
import Foundation
import PackageDescription

let fuzzTargets = ((try? FileManager.default.contentsOfDirectory(atPath: Context.packageDirectory + "/Sources")) ?? [])
    .filter { $0.hasPrefix("Fuzz") && $0 != "FuzzSupport" }
    .sorted()

let package = Package(
    name: "SharePipeFuzz",
    dependencies: [
        // scripts/fuzz points this at a snapshot of the sources, so edits made while it builds cannot break it.
        .package(name: "SharePipe", path: Context.environment["SHAREPIPE_ROOT"] ?? "..")
    ],
    targets: [
        // The shared entry: options, invariants checked on every output.
        .target(name: "CFuzzDriver"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzDriver", .product(name: "SharePipe", package: "SharePipe")]),
    ]
        + fuzzTargets.map {
            .executableTarget(
                name: $0, dependencies: ["FuzzSupport", .product(name: "SharePipe", package: "SharePipe")])
        }
)
