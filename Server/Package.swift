// swift-tools-version:6.1
// sharepipe-server: SharePipe as an HTTP sidecar (Hummingbird 2). Its own package, depending on the root
// package by path, so the library and the `sharepipe` CLI never build SwiftNIO. Build and test it from this
// folder with ./test.sh; the release binary:
//   swift build -c release --static-swift-stdlib --product sharepipe-server
import PackageDescription

let package = Package(
    name: "SharePipeServer",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "sharepipe-server", targets: ["sharepipe-server"])
    ],
    dependencies: [
        // The root package by path; named, because a path dependency is otherwise known by its folder's name.
        .package(name: "SharePipe", path: ".."),
        // Default traits off: they pull in swift-configuration and full Foundation, which the server does not use.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // Already in Hummingbird's graph; named for `ByteBuffer`, `Channel` and `HTTPField`, which Hummingbird
        // does not re-export.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        // Already in Hummingbird's graph; named for `HTTPRequestPart`/`HTTPResponsePart`, the parts a channel
        // handler after Hummingbird's HTTP codec reads and writes (`MalformedRequestAnswer`).
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        // SIGTERM/SIGINT: graceful shutdown of the HTTP server.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.0.0"),
    ],
    targets: [
        // The multipart reading alone, without dependencies: the fuzz package compiles it (Fuzz/Sources/FuzzMultipart).
        .target(name: "SharePipeMultipart"),
        // Configuration, routes, metrics, logging: importable by the tests.
        .target(
            name: "SharePipeServer",
            dependencies: [
                "SharePipeMultipart",
                .product(name: "SharePipe", package: "SharePipe"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "sharepipe-server",
            dependencies: ["SharePipeServer"]
        ),
        .testTarget(
            name: "SharePipeServerTests",
            dependencies: [
                "SharePipeServer",
                .product(name: "SharePipe", package: "SharePipe"),
                .product(name: "SharePipeTestSupport", package: "SharePipe"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ]
)
