// swift-tools-version: 6.1
// The asset benchmark driver (docs/assets.md, figures of issue 5): a server process with only
// the asset routes, and client commands that upload and download through `AssetTransfer`.
// A package of its own so the main package's graph stays as it is:
//   swift build -c release --package-path Benchmarks/assets
import PackageDescription

let package = Package(
    name: "AssetsBench",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Ubiquity", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "assets-bench",
            dependencies: [
                .product(name: "Ubiquity", package: "Ubiquity"),
                .product(name: "UbiquityServer", package: "Ubiquity"),
                .product(name: "UbiquityCore", package: "Ubiquity"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/AssetsBench",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
