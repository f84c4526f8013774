// swift-tools-version:6.1
// SharePipe's benchmarks: a package of their own so the main build and CI stay light.
// In-process figures (malloc count, memory, time per prepare) come from ordo-one/benchmark:
//   cd bench && swift package --disable-sandbox benchmark
// Whole-process comparisons with vipsthumbnail, ImageMagick and gifsicle: bench/compare.
import PackageDescription

let package = Package(
    name: "SharePipeBench",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "SharePipe", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.0", traits: ["MallocInterposer"]),
        // Already in the graph through benchmark; named here for the peak-live-heap metric's hook.
        .package(url: "https://github.com/ordo-one/malloc-interposer.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-atomics.git", from: "1.0.0"),
    ],
    targets: [
        .executableTarget(
            name: "PrepareBenchmarks",
            dependencies: [
                .product(name: "SharePipe", package: "SharePipe"),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
                .product(name: "Atomics", package: "swift-atomics"),
            ],
            path: "Benchmarks/PrepareBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark")
            ]
        )
    ]
)
