// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
import Synchronization
import UbiquityServer

/// A kind of record store the tests run against.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// `SQLiteRecordStore` in a temporary folder: always.
    case sqlite
    /// `PostgresRecordStore` in a fresh schema of the server at `UBIQUITY_TEST_POSTGRES_URL`:
    /// only when that is set (`scripts/test` starts a throw-away server and sets it).
    case postgres

    /// The kinds that can run here: SQLite, and PostgreSQL when a test server is configured.
    static var available: [StoreKind] {
        StoreFixture.postgresURL == nil ? [.sqlite] : [.sqlite, .postgres]
    }

    var testDescription: String { rawValue }
}

/// Where a test's store lives — a temporary SQLite folder or a PostgreSQL schema `t_<random>` —
/// so tests run in parallel and leave nothing behind. Open as many store instances on it as a
/// test needs (they share the data), then `destroy()` it.
///
/// For a test that needs one store: `try await StoreFixture.withStore(kind) { store in … }`, or
/// `let (store, cleanup) = try await StoreFixture.make(kind)` and `try await cleanup()` at the end.
struct StoreFixture: Sendable {
    /// The PostgreSQL server for tests, from `UBIQUITY_TEST_POSTGRES_URL`.
    static var postgresURL: String? {
        guard let url = ProcessInfo.processInfo.environment["UBIQUITY_TEST_POSTGRES_URL"], !url.isEmpty else { return nil }
        return url
    }

    /// A quiet logger for stores under test.
    static var logger: Logger {
        var logger = Logger(label: "ubiquity.test.store")
        logger.logLevel = .warning
        return logger
    }

    let kind: StoreKind
    /// The SQLite folder, or the PostgreSQL schema.
    let location: String
    private let opened = OpenedStores()

    /// A fresh, empty location for a store of `kind`.
    init(_ kind: StoreKind) throws {
        self.kind = kind
        switch kind {
        case .sqlite:
            location = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-store-\(UUID().uuidString)").path
        case .postgres:
            guard Self.postgresURL != nil else {
                throw UbiquityError(.unsupported, "UBIQUITY_TEST_POSTGRES_URL is not set: no PostgreSQL server for tests")
            }
            location = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        }
    }

    /// Opens a store instance on the location (another instance on the same data each call).
    func open(maximumConnections: Int = 4) async throws -> any RecordStore {
        let store: any RecordStore
        switch kind {
        case .sqlite:
            store = try SQLiteRecordStore(directory: URL(fileURLWithPath: location), logger: Self.logger)
        case .postgres:
            store = try await PostgresRecordStore(url: Self.postgresURL!, schema: location, maximumConnections: maximumConnections,
                                                  logger: Self.logger)
        }
        opened.append(store)
        return store
    }

    /// Closes every store opened here and deletes the data (the folder, or the schema).
    func destroy() async throws {
        for store in opened.takeAll() { try? await store.close() }
        switch kind {
        case .sqlite:
            try? FileManager.default.removeItem(atPath: location)
        case .postgres:
            try await PostgresRecordStore.dropSchema(location, url: Self.postgresURL!, logger: Self.logger)
        }
    }

    /// A fresh store of `kind` and the closure that closes it and deletes its data.
    static func make(_ kind: StoreKind) async throws -> (store: any RecordStore, cleanup: @Sendable () async throws -> Void) {
        let fixture = try StoreFixture(kind)
        do {
            let store = try await fixture.open()
            return (store, { try await fixture.destroy() })
        } catch {
            try? await fixture.destroy()
            throw error
        }
    }

    /// Runs `body` with a fresh store of `kind`, cleaning up whether it succeeds or throws.
    static func withStore<T>(_ kind: StoreKind, _ body: (any RecordStore) async throws -> T) async throws -> T {
        let fixture = try StoreFixture(kind)
        do {
            let result = try await body(try await fixture.open())
            try await fixture.destroy()
            return result
        } catch {
            try? await fixture.destroy()
            throw error
        }
    }
}

/// The stores a fixture opened, to close them at the end.
private final class OpenedStores: Sendable {
    private let stores = Mutex<[any RecordStore]>([])

    func append(_ store: any RecordStore) {
        stores.withLock { $0.append(store) }
    }

    func takeAll() -> [any RecordStore] {
        stores.withLock { stores in
            defer { stores = [] }
            return stores
        }
    }
}
