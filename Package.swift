// swift-tools-version: 6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "Ubiquity",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ubiq", targets: ["ubiq"]),
        .library(name: "Ubiquity", targets: ["Ubiquity"]),
        .library(name: "UbiquityCore", targets: ["UbiquityCore"]),
        .library(name: "UbiquitySync", targets: ["UbiquitySync"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // Linux system calls that Swift's Glibc module does not expose (xattrs, OFD locks, renameat2).
        .target(name: "CUbiquityShims"),
        .target(
            name: "UbiquityCore",
            dependencies: ["CUbiquityShims", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Ubiquity",
            dependencies: ["UbiquityCore", "CUbiquityShims", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "UbiquitySync",
            dependencies: ["Ubiquity", "UbiquityCore", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "ubiq",
            dependencies: [
                "Ubiquity", "UbiquitySync", "UbiquityCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "MonkeyDocument",
            dependencies: ["Ubiquity"],
            path: "Samples/MonkeyDocument",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "UbiquityBench",
            dependencies: ["Ubiquity", "UbiquitySync", "UbiquityCore", "CUbiquityShims"],
            path: "Benchmarks/UbiquityBench",
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "UbiquityCoreTests", dependencies: ["UbiquityCore"], swiftSettings: swiftSettings),
        .testTarget(name: "UbiquityTests", dependencies: ["Ubiquity", "UbiquityCore"], swiftSettings: swiftSettings),
        .testTarget(
            name: "UbiquitySyncTests",
            dependencies: ["UbiquitySync", "Ubiquity", "UbiquityCore", "ubiq", "MonkeyDocument", "UbiquityBench"],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
