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
        .library(name: "UbiquityStore", targets: ["UbiquityStore"]),
        .library(name: "UbiquityIndex", targets: ["UbiquityIndex"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // Linux system calls that Swift's Glibc module does not expose (xattrs, OFD locks, renameat2).
        .target(name: "CUbiquityShims"),
        .target(
            name: "UbiquityCore",
            dependencies: ["CUbiquityShims", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        // libinotifytools (libinotifytools0-dev): the watcher's one inotify instance per process.
        .systemLibrary(name: "CInotifyTools", providers: [.apt(["libinotifytools0-dev"])]),
        .target(
            name: "UbiquityStore",
            dependencies: [
                "UbiquityCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The watcher (libinotifytools), the tree scanner and the indexer: used by the daemon, and
        // by the library itself when no daemon runs (a metadata query then scans and watches).
        .target(
            name: "UbiquityIndex",
            dependencies: [
                "UbiquityCore", "UbiquityStore", "CInotifyTools", "CUbiquityShims",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Ubiquity",
            dependencies: ["UbiquityCore", "UbiquityIndex", "UbiquityStore", "CUbiquityShims", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "UbiquitySync",
            dependencies: ["Ubiquity", "UbiquityCore", "UbiquityStore", "UbiquityIndex", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "ubiq",
            dependencies: [
                "Ubiquity", "UbiquitySync", "UbiquityCore", "UbiquityIndex", "UbiquityStore",
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
            dependencies: [
                "Ubiquity", "UbiquitySync", "UbiquityCore", "UbiquityStore", "CUbiquityShims",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/UbiquityBench",
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "UbiquityCoreTests", dependencies: ["UbiquityCore"], swiftSettings: swiftSettings),
        .testTarget(
            name: "UbiquityStoreTests",
            dependencies: ["UbiquityStore", "UbiquityCore", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "UbiquityIndexTests",
            dependencies: ["UbiquityIndex", "UbiquityStore", "UbiquityCore", "CInotifyTools"],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "UbiquityTests", dependencies: ["Ubiquity", "UbiquityCore", "UbiquityIndex", "UbiquityStore"], swiftSettings: swiftSettings),
        .testTarget(
            name: "UbiquitySyncTests",
            dependencies: ["UbiquitySync", "Ubiquity", "UbiquityCore", "UbiquityIndex", "UbiquityStore", "ubiq", "MonkeyDocument", "UbiquityBench"],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
