// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import UbiquityCore
import UbiquityWire

/// Users of a container, as CloudKit has them: every account has a user record name per
/// container, a user record (type `Users`, named by it) in the container's public database, and
/// is found by others (`users/discover`, `users/lookup/*`) only after opting in per container.
///
/// The first request of a signed-in user in a container (per environment and process) notes the
/// identity and creates the user record; a `records/lookup` of a user record name that belongs to
/// a user of the container creates it too.
final class UserDirectory: Sendable {
    /// The record type of user records.
    static let recordType = "Users"

    let store: any RecordStore
    let engine: RecordsEngine
    let logger: Logger
    /// `container/environment/userRecordName` of the user records known to exist.
    let ensured = Mutex<Set<String>>([])
    /// Forget everything past this many entries (it is a cache of facts that stay true).
    static let ensuredLimit = 100_000

    init(store: any RecordStore, engine: RecordsEngine, logger: Logger) {
        self.store = store
        self.engine = engine
        self.logger = logger
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// Whether a name has the form of user record names: `_` and 32 lower-case hex digits.
    static func isUserRecordName(_ name: String) -> Bool {
        let utf8 = name.utf8
        return utf8.count == 33 && utf8.first == UInt8(ascii: "_")
            && utf8.dropFirst().allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    private static func cacheKey(container: String, environment: CloudKitEnvironment, name: String) -> String {
        "\(container)/\(environment.rawValue)/\(name)"
    }

    private func isEnsured(_ key: String) -> Bool { ensured.withLock { $0.contains(key) } }

    private func noteEnsured(_ key: String) {
        ensured.withLock { set in
            if set.count >= UserDirectory.ensuredLimit { set.removeAll() }
            set.insert(key)
        }
    }

    /// For every request: a signed-in caller's identity in the container is noted and their user
    /// record created, once per process.
    func ensure(caller: RecordsCaller, container: String, environment: CloudKitEnvironment) async throws {
        guard case .user(let accountID, let name) = caller.identity else { return }
        let key = UserDirectory.cacheKey(container: container, environment: environment, name: name)
        if isEnsured(key) { return }
        let now = UserDirectory.now
        _ = try await store.write { tx in
            try await tx.users().noteUserIdentity(accountID: accountID, container: container, userRecordName: name, createdAt: now)
        }
        try await ensureUserRecord(accountID: accountID, userRecordName: name, container: container, environment: environment)
        noteEnsured(key)
    }

    /// Creates the user records among `names` that belong to users of the container and do not
    /// exist yet (before a `records/lookup` of the public database).
    func ensureUserRecords(named names: [String], container: String, environment: CloudKitEnvironment) async throws {
        let candidates = Array(Set(names.filter { UserDirectory.isUserRecordName($0) }
            .filter { !isEnsured(UserDirectory.cacheKey(container: container, environment: environment, name: $0)) }))
        guard !candidates.isEmpty else { return }
        let identities = try await store.read { tx in try await tx.users().userIdentities(container: container, userRecordNames: candidates) }
        for identity in identities {
            try await ensureUserRecord(accountID: identity.account.id, userRecordName: identity.userRecordName, container: container, environment: environment)
            noteEnsured(UserDirectory.cacheKey(container: container, environment: environment, name: identity.userRecordName))
        }
    }

    /// Creates the user record in the environment's public database when it does not exist, as
    /// its user (so it is the creator, and only they may change it).
    func ensureUserRecord(accountID: Int64, userRecordName: String, container: String, environment: CloudKitEnvironment) async throws {
        let key = DatabaseKey(container: container, environment: environment, scope: .public, owner: "")
        let exists = try await store.read { tx -> Bool in
            guard let database = try await tx.database(key), let zone = try await tx.zone(database: database.id, name: WireZoneID.defaultZoneName) else { return false }
            return try await tx.record(zone: zone.id, name: userRecordName) != nil
        }
        if exists { return }
        let context = RecordsEngine.Context(container: container, environment: environment, scope: .public,
                                            caller: RecordsCaller(identity: .user(accountID: accountID, userRecordName: userRecordName)))
        let request = try WireModifyRecordsRequest(json: [
            "operations": [["operationType": "create", "record": ["recordName": .string(userRecordName), "recordType": .string(UserDirectory.recordType)]]],
        ])
        let result = try await engine.modifyRecords(request, context: context)
        if let item = result.objectValue?["records"]?.arrayValue?.first, let error = WireError(json: item), error.code != .exists {
            throw UbiquityError(.io, "cannot create the user record \(userRecordName) of container \(container): \(error)")
        }
    }
}
