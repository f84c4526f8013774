// swift-tools-version:6.1
// An example posting endpoint on top of SharePipe. A separate package so the library itself never depends on
// Hummingbird (or SwiftNIO): build and test it from this folder with ./test.sh.
import PackageDescription

let package = Package(
    name: "PostingServer",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "posting-server", targets: ["posting-server"]),
    ],
    dependencies: [
        // The root package by path; named, because a path dependency is otherwise known by its folder's name.
        .package(name: "SharePipe", path: "../.."),
        // Default traits off: they pull in swift-configuration and full Foundation, which the example does not use.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        // 1.16.2: `LogEvent`, which the tests' capturing log handler implements.
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // Already in Hummingbird's graph; named for `ByteBuffer` and `HTTPField`, which Hummingbird does not re-export.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        // For the tests' graceful shutdown of the live server.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.0.0"),
    ],
    targets: [
        // The routes and the application builder, importable by the tests.
        .target(
            name: "PostingService",
            dependencies: [
                .product(name: "SharePipe", package: "SharePipe"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .executableTarget(
            name: "posting-server",
            dependencies: [
                "PostingService",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "PostingServiceTests",
            dependencies: [
                "PostingService",
                .product(name: "SharePipe", package: "SharePipe"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ]
)
