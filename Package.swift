// swift-tools-version: 6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "Ubiquity",
    platforms: [.macOS(.v15)],
    // What users of the package link: the app library and the CloudKit client (both re-export
    // UbiquityCore's vocabulary), and the one executable. The other targets are the package's own
    // (their API is `package`).
    products: [
        .executable(name: "ubiq", targets: ["ubiq"]),
        .library(name: "Ubiquity", targets: ["Ubiquity"]),
        .library(name: "UbiquityCloudKit", targets: ["UbiquityCloudKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
    ],
    targets: [
        // Linux system calls that Swift's Glibc module does not expose (xattrs, OFD locks, renameat2).
        .target(name: "CUbiquityShims"),
        .target(
            name: "UbiquityCore",
            dependencies: ["CUbiquityShims", .product(name: "Logging", package: "swift-log"), .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        // libinotifytools (libinotifytools0-dev): the watcher's one inotify instance per process.
        .systemLibrary(name: "CInotifyTools", providers: [.apt(["libinotifytools0-dev"])]),
        .target(
            name: "UbiquityStore",
            dependencies: [
                "UbiquityCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),  // sqlite3_column_* for the status snapshot
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
        // The CloudKit wire model both sides speak: records, zones, queries, errors, requests, JSON
        // values, and assets' chunk lists (FastCDC). The server and the CloudKit client import it.
        .target(
            name: "UbiquityWire",
            dependencies: ["UbiquityCore", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        // The app library: containers, coordination, documents, versions, metadata queries, the
        // key-value store. It does not link the CloudKit client.
        .target(
            name: "Ubiquity",
            dependencies: [
                "UbiquityCore", "UbiquityIndex", "UbiquityStore", "CUbiquityShims",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The CloudKit client (CKContainer, CKDatabase, CKRecord… spelled as Apple does), assets,
        // subscriptions, and the device sign-in: for apps that use records, and for the daemon.
        .target(
            name: "UbiquityCloudKit",
            dependencies: [
                "UbiquityCore", "UbiquityWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            ],
            swiftSettings: swiftSettings
        ),
        // libfuse3 (fuse3, libfuse3-dev): the mounted folder's low-level file system.
        .systemLibrary(name: "CFuse", pkgConfig: "fuse3", providers: [.apt(["libfuse3-dev"])]),
        // `ubiq daemon --mount`: the synced folder served through FUSE, over itself.
        .target(
            name: "UbiquityMount",
            dependencies: ["UbiquityCore", "CFuse", "CUbiquityShims", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "UbiquitySync",
            dependencies: [
                "Ubiquity", "UbiquityCloudKit", "UbiquityWire", "UbiquityCore", "UbiquityStore", "UbiquityIndex", "CUbiquityShims",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // `ubiq serve`: the CloudKit Web Services compatible records server (Hummingbird), its
        // record stores (SQLite through GRDB, PostgreSQL through postgres-nio), auth and admin.
        .target(
            name: "UbiquityServer",
            dependencies: [
                "UbiquityCore", "UbiquityWire", "CUbiquityShims",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Mustache", package: "swift-mustache"),  // the web's pages (Web/)
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),  // the HTTP parts the connection handlers see
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),  // the S3 blob store's client
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "ubiq",
            dependencies: [
                "Ubiquity", "UbiquityCloudKit", "UbiquityWire", "UbiquitySync", "UbiquityCore", "UbiquityIndex", "UbiquityStore",
                "UbiquityServer", "UbiquityMount",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
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
        // Apple's CloudKitAtlas sample as a command-line tour of the CloudKit client against `ubiq serve`.
        .executableTarget(
            name: "CloudKitAtlas",
            dependencies: ["UbiquityCloudKit"],
            path: "Samples/CloudKitAtlas",
            exclude: ["README.md"],
            swiftSettings: swiftSettings
        ),
        // Apple's iCloudKeyValue sample: a key per device, a shared key, every change notification printed.
        .executableTarget(
            name: "KeyValue",
            dependencies: ["Ubiquity"],
            path: "Samples/KeyValue",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "UbiquityBench",
            dependencies: [
                "Ubiquity", "UbiquityCloudKit", "UbiquityWire", "UbiquitySync", "UbiquityCore", "UbiquityStore", "CUbiquityShims",
                "UbiquityServer",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            path: "Benchmarks/UbiquityBench",
            swiftSettings: swiftSettings
        ),
        // The asset transfer benchmark (Benchmarks/assets/README.md): a server with only the asset
        // routes, and client commands that upload and download through AssetTransfer.
        .executableTarget(
            name: "assets-bench",
            dependencies: [
                "UbiquityCloudKit", "UbiquityWire", "UbiquityServer", "UbiquityCore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/assets/Sources/AssetsBench",
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "UbiquityCoreTests", dependencies: ["UbiquityCore", .product(name: "Crypto", package: "swift-crypto")], swiftSettings: swiftSettings),
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
        .testTarget(
            name: "UbiquityTests",
            dependencies: ["Ubiquity", "UbiquityCore", "UbiquityIndex", "UbiquityStore", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "UbiquityWireTests",
            dependencies: ["UbiquityWire", "UbiquityCore", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "UbiquityCloudKitTests",
            dependencies: [
                "UbiquityCloudKit", "UbiquityWire", "UbiquityCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "UbiquityServerTests",
            dependencies: [
                "UbiquityServer", "UbiquityWire", "UbiquityCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ],
            swiftSettings: swiftSettings
        ),
        // What the end-to-end suites share: simulated devices (their own HOME, XDG folders and
        // sockets), `ubiq` as a real process, the sync rig (a server and daemons), hang guards.
        .target(
            name: "UbiquityTestSupport",
            dependencies: [
                "UbiquitySync", "Ubiquity", "UbiquityCloudKit", "UbiquityCore", .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/UbiquityTestSupport",
            swiftSettings: swiftSettings
        ),
        // The sync engine, the key-value store and the hooks, end to end with real daemons.
        .testTarget(
            name: "UbiquitySyncTests",
            dependencies: [
                "UbiquityTestSupport", "UbiquitySync", "Ubiquity", "UbiquityCloudKit", "UbiquityWire", "UbiquityCore",
                "UbiquityIndex", "UbiquityStore", "UbiquityServer", "UbiquityMount", "ubiq", "UbiquityBench", "KeyValue",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // `ubiq`'s commands as real processes, and `ubiq doctor`.
        .testTarget(
            name: "UbiquityCLITests",
            dependencies: [
                "UbiquityTestSupport", "ubiq", "UbiquitySync", "Ubiquity", "UbiquityCloudKit", "UbiquityWire", "UbiquityCore",
                "UbiquityIndex", "UbiquityStore", "UbiquityServer", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // vim, Neovim and Emacs through their hooks, against real daemons.
        .testTarget(
            name: "UbiquityEditorTests",
            dependencies: ["UbiquityTestSupport", "ubiq", "UbiquitySync", "UbiquityCore"],
            swiftSettings: swiftSettings
        ),
        // The Swift CloudKit client against a real server, the samples, and coordination across
        // processes through the daemon.
        .testTarget(
            name: "UbiquityClientServerTests",
            dependencies: [
                "UbiquityTestSupport", "ubiq", "Ubiquity", "UbiquityCloudKit", "UbiquityWire", "UbiquityCore", "UbiquityServer",
                "MonkeyDocument", "CloudKitAtlas", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
