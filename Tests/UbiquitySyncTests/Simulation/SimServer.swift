// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
import UbiquityServer
import UbiquityStore
import UbiquitySync
import UbiquityCloudKit
import UbiquityTestSupport

/// The simulator's server (and `SyncBatchTests`'): the real `RecordsServer` (records engine,
/// asset store, change feeds) on loopback, its SQLite store and blobs in the given folder, with
/// two users (the devices' own, `mei`, and `ren`, whom a device may switch to); the simulator's
/// devices reach it only through their ``SimNetwork``.
final class SimServer: Sendable {
    let url: URL
    let api: String
    let admin: RecordsAdmin
    let logger: Logger
    private let task: Task<Void, any Error>

    init(directory: URL, logger: Logger) async throws {
        TestVersionStore.isolate()  // the engines' versions in the test process's own store
        self.logger = logger
        let store = try SQLiteRecordStore(directory: directory.appendingPathComponent("server"), logger: logger)
        admin = RecordsAdmin(store: store, passwordHasher: PasswordHasher(cost: 4))
        api = try await admin.addContainer(SyncRecord.defaultContainer)
        for user in Self.users { _ = try await admin.addUser(user, email: nil, password: nil) }  // mei's devices; ren, whom one may switch to
        var configuration = RecordsServerConfiguration(blobsDirectory: directory.appendingPathComponent("blobs").path)
        configuration.rateLimit = 0
        let server = try await RecordsServer.open(store: store, configuration: configuration, logger: logger,
                                                  blobConfiguration: FileBlobStore.Configuration(syncBeforeCommit: false))
        let (stream, continuation) = AsyncStream<String>.makeStream()
        task = Task { try await server.application { continuation.yield($0) }.run() }
        var iterator = stream.makeAsyncIterator()
        url = URL(string: try #require(await iterator.next()))!
    }

    /// A web token of `user` (the simulator's main user by default), for one more device.
    func token(for user: String = "mei") async throws -> String { try await admin.issueToken(forUser: user) }

    /// The users a device may be signed in as.
    static let users = ["mei", "ren"]

    /// Every live item of the documents zone, by path (a direct look, without faults).
    func items(token: String) async throws -> [RemoteItem] {
        try await records(token: token).compactMap(SyncRecord.item(from:)).sorted { $0.path < $1.path }
    }

    /// Every live record of the documents zone (a direct look, without faults).
    func records(token: String) async throws -> [Record] {
        let container = CloudContainer(identifier: SyncRecord.defaultContainer, serverURL: url,
                                       credentials: .apiToken(api, webAuthToken: token), logger: logger)
        return try await SyncRig.liveRecords(container.privateCloudDatabase)
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}
