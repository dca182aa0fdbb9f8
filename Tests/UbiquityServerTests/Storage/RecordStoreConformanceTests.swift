// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Foundation
import Testing
import UbiquityServer
import UbiquityWire

/// Every `RecordStore` behaves the same: each test runs on every available store kind
/// (`StoreKind.available`: SQLite always, PostgreSQL when `UBIQUITY_TEST_POSTGRES_URL` is set).
@Suite struct RecordStoreConformanceTests {
    struct Failure: Error {}

    static let key = DatabaseKey(container: "iCloud.com.example.app", environment: .development, scope: .private, owner: "_owner")

    static func stamp(_ timestamp: Int64, _ user: String = "_owner") -> WireRecordStamp {
        WireRecordStamp(timestamp: timestamp, userRecordName: user, deviceID: "device-1")
    }

    static func record(_ zone: Int64, _ name: String, type: String = "Item", sequence: Int64, deleted: Bool = false,
                       fields: [String: WireFieldValue] = [:], parent: String? = nil, created: Int64 = 1_000) -> StoredRecord {
        StoredRecord(zone: zone, recordName: name, recordType: type, changeTag: "tag-\(sequence)", sequence: sequence, deleted: deleted,
                     fields: deleted ? [:] : fields, created: stamp(created), modified: stamp(created + sequence), parent: parent,
                     shortGUID: deleted ? nil : "guid-\(name)")
    }

    /// A locked database and a zone named `name` in it.
    static func makeZone(_ store: any RecordStore, _ name: String = "zone", key: DatabaseKey = key) async throws -> (database: Int64, zone: Int64) {
        try await store.write { tx throws in
            let database = try await tx.lockDatabase(key)
            let zone = try await tx.createZone(database: database.id, name: name, createdAt: 5)
            return (database.id, zone.id)
        }
    }

    /// Writes records, each at its own sequence.
    static func put(_ store: any RecordStore, _ records: [StoredRecord]) async throws {
        try await store.write { tx throws in
            _ = try await tx.lockDatabase(key)
            for record in records { try await tx.putRecord(record) }
        }
    }

    // MARK: Containers and credentials

    @Test(arguments: StoreKind.available)
    func containersAndAPITokens(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            try await store.write { tx throws in
                try await tx.addContainer("iCloud.b", createdAt: 1)
                try await tx.addContainer("iCloud.a", createdAt: 2)
                try await tx.addContainer("iCloud.b", createdAt: 3) // exists: no error
                try await tx.addContainer("iCloud.B", createdAt: 4)
                try await tx.addAPIToken(container: "iCloud.a", digest: "digest-a", createdAt: 5)
            }
            try await StoreFixture.read(store) { tx, check throws in
                check.expect(try await tx.containerExists("iCloud.a"))
                await check.expect(try !tx.containerExists("iCloud.c"))
                check.equal(try await tx.containers(), ["iCloud.B", "iCloud.a", "iCloud.b"]) // byte order
                check.equal(try await tx.container(forAPITokenDigest: "digest-a"), "iCloud.a")
                check.equal(try await tx.container(forAPITokenDigest: "digest-b"), nil)
            }
            await #expect(throws: (any Error).self) {
                try await store.write { tx throws in try await tx.addAPIToken(container: "iCloud.b", digest: "digest-a", createdAt: 6) }
            }
            #expect(try await store.read { tx throws in try await tx.container(forAPITokenDigest: "digest-a") } == "iCloud.a")
        }
    }

    /// A lookup's read: the zone and its records by name at once (PostgreSQL: one statement).
    @Test(arguments: StoreKind.available)
    func zoneAndRecordTextsByName(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let (_, zone) = try await Self.makeZone(store, "Z")
            try await Self.put(store, [Self.record(zone, "a", sequence: 1, fields: ["n": .int64(1)]), Self.record(zone, "b", sequence: 2, deleted: true)])
            let (found, missing, empty, none) = try await store.readWithoutSnapshot { tx in
                (try await tx.recordTexts(key: Self.key, zoneName: "Z", names: ["a", "b", "c"]),
                 try await tx.recordTexts(key: Self.key, zoneName: "Y", names: ["a"]),
                 try await tx.recordTexts(key: Self.key, zoneName: "Z", names: ["c"]),
                 try await tx.recordTexts(key: Self.key, zoneName: "Z", names: []))
            }
            #expect(found.zone?.id == zone && found.zone?.name == "Z")
            #expect(found.records.keys.sorted() == ["a", "b"])
            #expect(found.records["a"]?.record.recordType == "Item" && found.records["a"]?.fieldsText.contains("\"n\"") == true)
            #expect(found.records["b"]?.record.deleted == true)
            #expect(missing.zone == nil && missing.records.isEmpty)
            #expect(empty.zone?.id == zone && empty.records.isEmpty)
            #expect(none.zone?.id == zone && none.records.isEmpty)
        }
    }

    /// A query's reads before its page: the type with the user's roles, the zones and the type's
    /// indexes at once (PostgreSQL: one statement), equal to each read alone.
    @Test(arguments: StoreKind.available)
    func queryTargetIsItsPartsReadAlone(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let (database, zone) = try await Self.makeZone(store, "Z")
            _ = try await Self.makeZone(store, "A")
            let gone = try await Self.makeZone(store, "Gone").zone
            let container = Self.key.container
            try await store.write { tx throws in
                try await tx.deleteZone(id: gone)
                let schemas = try tx.schemas()
                try await schemas.addToSchema(RecordTypeSchema(name: "Item", fields: ["cat": .justInTime(name: "cat", type: "STRING")],
                                                               permissions: [SecurityRole.world: [.read]]), container: container, environment: .development)
                try await schemas.setRoleMember(true, container: container, role: "Editor", userRecordName: "_a")
                let indexes = try tx.queryIndexStore()
                for type in ["Item", "Other"] {
                    _ = try await indexes.addQueryIndex(container: container, environment: .development,
                                                        definition: QueryIndexDefinition(recordType: type, components: [.init(.field("cat"), .equal)]))
                }
            }
            let other = DatabaseKey(container: container, environment: .development, scope: .private, owner: "_nobody")
            let (named, every, missing, noDatabase, untyped) = try await store.readWithoutSnapshot { tx in
                (try await tx.queryTarget(key: Self.key, zoneName: "Z", recordType: "Item", rolesOf: "_a"),
                 try await tx.queryTarget(key: Self.key, zoneName: nil, recordType: "Item", rolesOf: nil),
                 try await tx.queryTarget(key: Self.key, zoneName: "Y", recordType: "Item", rolesOf: "_nobody"),
                 try await tx.queryTarget(key: other, zoneName: nil, recordType: "Item", rolesOf: nil),
                 try await tx.queryTarget(key: Self.key, zoneName: "Z", recordType: "Missing", rolesOf: nil))
            }
            let (type, zones, indexes) = try await store.read { tx in
                (try await tx.schemas().recordType(container: container, environment: .development, name: "Item"),
                 try await tx.zones(database: database),
                 try await tx.queryIndexStore().queryIndexes(container: container, environment: .development).filter { $0.definition.recordType == "Item" })
            }
            #expect(type?.fields["cat"]?.type == "STRING" && type?.permissions[SecurityRole.world] == [.read])
            #expect(zones.map(\.name) == ["A", "Z"] && indexes.count == 1 && indexes[0].ready == false)
            #expect(named.type == type && named.roles == ["Editor"] && named.zones == zones.filter { $0.id == zone } && named.indexes == indexes)
            #expect(every.type == type && every.roles == nil && every.zones == zones && every.indexes == indexes)
            #expect(missing.type == type && missing.roles == [] && missing.zones.isEmpty && missing.indexes == indexes)
            #expect(noDatabase.zones.isEmpty && noDatabase.type == type)
            #expect(untyped.type == nil && untyped.indexes.isEmpty && untyped.zones.map(\.id) == [zone])
        }
    }

    @Test(arguments: StoreKind.available)
    func accounts(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let (alice, bob, carol) = try await store.write { tx throws in
                let alice = try await tx.addAccount(name: "alice", email: "alice@example.com", passwordHash: "$scrypt$x", createdAt: 10)
                let bob = try await tx.addAccount(name: "bob", email: nil, passwordHash: nil, createdAt: 11)
                let carol = try await tx.addAccount(name: "carol", email: nil, passwordHash: nil, createdAt: 12) // two nil e-mails are fine
                return (alice, bob, carol)
            }
            #expect(alice.id != bob.id && bob.id != carol.id)
            #expect(alice == StoredAccount(id: alice.id, name: "alice", email: "alice@example.com", passwordHash: "$scrypt$x", createdAt: 10))
            for (name, email) in [("alice", "other@example.com"), ("dave", "alice@example.com")] as [(String, String?)] {
                await #expect {
                    try await store.write { tx throws in _ = try await tx.addAccount(name: name, email: email, passwordHash: nil, createdAt: 13) }
                } throws: { error in
                    (error as? UbiquityError)?.code == .alreadyExists
                }
            }
            try await StoreFixture.read(store) { tx, check throws in
                check.equal(try await tx.account(named: "alice"), alice)
                check.equal(try await tx.account(named: "bob"), bob)
                check.equal(try await tx.account(named: "dave"), nil)
                check.equal(try await tx.account(id: carol.id), carol)
                check.equal(try await tx.account(id: carol.id + 1000), nil)
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func webAuthTokensExpire(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let token = StoredWebAuthToken(digest: "token", accountID: 0, container: "iCloud.a", isDevice: false, createdAt: 100, expiresAt: 1_000)
            let (account, stored) = try await store.write { tx throws in
                let account = try await tx.addAccount(name: "alice", email: nil, passwordHash: nil, createdAt: 1)
                var stored = token
                stored.accountID = account.id
                try await tx.addWebAuthToken(stored)
                return (account, stored)
            }
            #expect(stored.session == "token")  // a token issued alone starts its session
            try await StoreFixture.read(store) { tx, check throws in
                check.equal(try await tx.webAuthToken(digest: "token", now: 100)?.account, account)
                check.equal(try await tx.webAuthToken(digest: "token", now: 999)?.token, stored)
                check.equal(try await tx.webAuthToken(digest: "token", now: 1_000)?.account, nil)
                check.equal(try await tx.webAuthToken(digest: "other", now: 100)?.account, nil)
            }
            // both tokens of a request in one statement, whichever of them matches
            try await store.write { tx throws in
                try await tx.addContainer("iCloud.a", createdAt: 1)
                try await tx.addAPIToken(container: "iCloud.a", digest: "api", createdAt: 1)
            }
            for (api, web, now, container, live) in [("api", "token", 100, "iCloud.a", true), ("api", nil, 100, "iCloud.a", false),
                                                      ("api", "token", 1_000, "iCloud.a", false), ("other", "token", 100, nil, true),
                                                      ("other", "other", 100, nil, false)] as [(String, String?, Int64, String?, Bool)] {
                let found = try await store.readWithoutSnapshot { tx in try await tx.credentials(apiTokenDigest: api, webTokenDigest: web, now: now) }
                #expect(found.container == container, "\(api) \(web ?? "-") \(now)")
                #expect(found.live?.token == (live ? stored : nil), "\(api) \(web ?? "-") \(now)")
                #expect(found.live?.account == (live ? account : nil), "\(api) \(web ?? "-") \(now)")
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func webAuthSessionsRevokeAndDisabledAccounts(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let (alice, bob) = try await store.write { tx throws in
                let alice = try await tx.addAccount(name: "alice", email: nil, passwordHash: "$scrypt$old", createdAt: 1)
                let bob = try await tx.addAccount(name: "bob", email: nil, passwordHash: nil, createdAt: 1)
                try await tx.addWebAuthToken(StoredWebAuthToken(digest: "a1", accountID: alice.id, container: "iCloud.a", isDevice: false, createdAt: 10, expiresAt: 1_000))
                try await tx.addWebAuthToken(StoredWebAuthToken(digest: "a1-rotated", accountID: alice.id, container: "iCloud.a", session: "a1",
                                                          isDevice: false, createdAt: 20, expiresAt: 1_000))
                try await tx.addWebAuthToken(StoredWebAuthToken(digest: "a2", accountID: alice.id, container: nil, isDevice: true, createdAt: 30, expiresAt: 5_000))
                try await tx.addWebAuthToken(StoredWebAuthToken(digest: "b1", accountID: bob.id, container: nil, isDevice: false, createdAt: 40, expiresAt: 1_000))
                return (alice, bob)
            }
            try await StoreFixture.read(store) { tx, check throws in
                check.equal(try await tx.webAuthTokens(accountID: alice.id, now: 15).map(\.digest), ["a1", "a1-rotated", "a2"])
                check.equal(try await tx.webAuthTokens(accountID: alice.id, now: 2_000).map(\.digest), ["a2"])
                check.equal(try await tx.webAuthToken(digest: "a2", now: 50)?.token.isDevice, true)
                check.equal(try await tx.webAuthToken(digest: "a1-rotated", now: 50)?.token.session, "a1")
            }
            // revoking a session takes its rotations with it, and nothing else
            #expect(try await store.write { tx throws in try await tx.revokeWebAuthSession("a1") } == 2)
            try await StoreFixture.read(store) { tx, check throws in
                check.equal(try await tx.webAuthTokens(accountID: alice.id, now: 0).map(\.digest), ["a2"])
                check.equal(try await tx.webAuthToken(digest: "b1", now: 50)?.account, bob)
            }
            // a disabled account's tokens are refused; enabling it again brings them back
            try await store.write { tx throws in
                try await tx.setAccountDisabled(accountID: alice.id, at: 77)
                try await tx.setPasswordHash(accountID: alice.id, "$scrypt$new")
            }
            try await StoreFixture.read(store) { tx, check throws in
                check.equal(try await tx.webAuthToken(digest: "a2", now: 50)?.account, nil)
                check.equal(try await tx.account(id: alice.id)?.disabledAt, 77)
                check.equal(try await tx.account(id: alice.id)?.passwordHash, "$scrypt$new")
            }
            try await store.write { tx throws in try await tx.setAccountDisabled(accountID: alice.id, at: nil) }
            #expect(try await store.read { tx throws in try await tx.webAuthToken(digest: "a2", now: 50)?.account.disabledAt } == .some(nil))
            #expect(try await store.write { tx throws in try await tx.revokeWebAuthTokens(accountID: alice.id) } == 1)
            #expect(try await store.read { tx throws in try await tx.webAuthTokens(accountID: bob.id, now: 0).count } == 1)
        }
    }

    @Test(arguments: StoreKind.available)
    func serverKeys(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let pem = "-----BEGIN PUBLIC KEY-----\nMFkw…\n-----END PUBLIC KEY-----\n"
            try await store.write { tx throws in
                try await tx.addContainer("iCloud.a", createdAt: 1)
                try await tx.addContainer("iCloud.b", createdAt: 1)
                try await tx.addServerKey(container: "iCloud.a", keyID: "key-1", publicKeyPEM: pem, createdAt: 2)
            }
            try await StoreFixture.read(store) { tx, check throws in
                check.equal(try await tx.serverKey(container: "iCloud.a", keyID: "key-1"), pem)
                check.equal(try await tx.serverKey(container: "iCloud.b", keyID: "key-1"), nil)
                check.equal(try await tx.serverKey(container: "iCloud.a", keyID: "key-2"), nil)
            }
            await #expect(throws: (any Error).self) {
                try await store.write { tx throws in try await tx.addServerKey(container: "iCloud.a", keyID: "key-1", publicKeyPEM: "other", createdAt: 3) }
            }
        }
    }

    // MARK: Databases and zones

    @Test(arguments: StoreKind.available)
    func lockDatabaseCreatesOnce(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            #expect(try await store.read { tx throws in try await tx.database(Self.key) } == nil)
            let first = try await store.write { tx throws in try await tx.lockDatabase(Self.key) }
            let second = try await store.write { tx throws in try await tx.lockDatabase(Self.key) }
            #expect(first == StoredDatabase(id: first.id, key: Self.key, sequence: 0))
            #expect(second == first)
            #expect(try await store.read { tx throws in try await tx.database(Self.key) } == first)

            let otherOwner = DatabaseKey(container: Self.key.container, environment: .development, scope: .private, owner: "_other")
            let production = DatabaseKey(container: Self.key.container, environment: .production, scope: .private, owner: "_owner")
            let publicKey = DatabaseKey(container: Self.key.container, environment: .development, scope: .public, owner: "ignored")
            let ids = try await store.write { tx throws in
                [try await tx.lockDatabase(otherOwner).id, try await tx.lockDatabase(production).id, try await tx.lockDatabase(publicKey).id]
            }
            #expect(Set(ids + [first.id]).count == 4)
            let publicAgain = DatabaseKey(container: Self.key.container, environment: .development, scope: .public, owner: "")
            #expect(try await store.read { tx throws in try await tx.database(publicAgain)?.id } == ids[2])
        }
    }

    @Test(arguments: StoreKind.available)
    func zonesCreateDeleteRecreate(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let (database, zoneA) = try await Self.makeZone(store, "a")
            let zoneB = try await store.write { tx throws in
                _ = try await tx.lockDatabase(Self.key)
                return try await tx.createZone(database: database, name: "B", createdAt: 7)
            }
            #expect(zoneB == StoredZone(id: zoneB.id, database: database, name: "B", sequence: 0, purgedThrough: 0, deleted: false, createdAt: 7))
            try await StoreFixture.read(store) { tx, check throws in
                check.equal(try await tx.zones(database: database).map(\.name), ["B", "a"])
                check.equal(try await tx.zone(database: database, name: "a")?.id, zoneA)
                check.equal(try await tx.zone(database: database, name: "c"), nil)
                check.equal(try await tx.zone(id: zoneB.id), zoneB)
            }
            // A second live zone with the name is refused.
            await #expect(throws: (any Error).self) {
                try await store.write { tx throws in
                    _ = try await tx.lockDatabase(Self.key)
                    _ = try await tx.createZone(database: database, name: "a", createdAt: 8)
                }
            }

            try await Self.put(store, [Self.record(zoneA, "r1", sequence: 1, fields: ["n": .int64(1)])])
            try await store.write { tx throws in
                _ = try await tx.lockDatabase(Self.key)
                try await tx.deleteZone(id: zoneA)
            }
            let recreated = try await store.write { tx throws in
                _ = try await tx.lockDatabase(Self.key)
                return try await tx.createZone(database: database, name: "a", createdAt: 9)
            }
            #expect(recreated.id != zoneA)
            #expect(recreated.sequence == 0 && !recreated.deleted)
            try await StoreFixture.read(store) { tx, check throws in
                let deleted = try check.require(try await tx.zone(id: zoneA))
                check.expect(deleted.deleted && deleted.name == "a")
                check.equal(try await tx.zone(database: database, name: "a")?.id, recreated.id)
                check.equal(try await tx.zones(database: database).map(\.id), [zoneB.id, recreated.id])
                check.equal(try await tx.record(zone: zoneA, name: "r1"), nil) // deleted with its zone
                check.expect(try await tx.changes(zone: zoneA, after: 0, limit: 10, recordTypes: nil).isEmpty)
                check.expect(try await tx.candidates(zones: [zoneA], recordType: "Item", conditions: []).isEmpty)
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func zoneChangesEachZoneOnceAtItsLatestChange(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let (database, a) = try await Self.makeZone(store, "a")
            let (_, b) = try await Self.makeZone(store, "b")
            let (_, c) = try await Self.makeZone(store, "c")
            let sequences = try await store.write { tx throws in
                _ = try await tx.lockDatabase(Self.key)
                return [
                    try await tx.noteZoneChanged(database: database, zone: a),
                    try await tx.noteZoneChanged(database: database, zone: b),
                    try await tx.noteZoneChanged(database: database, zone: c),
                    try await tx.noteZoneChanged(database: database, zone: a),
                ]
            }
            #expect(sequences == [1, 2, 3, 4])
            try await StoreFixture.write(store) { tx, check throws in
                _ = try await tx.lockDatabase(Self.key)
                try await tx.deleteZone(id: b)
                check.equal(try await tx.noteZoneChanged(database: database, zone: b), 5)
            }
            try await StoreFixture.read(store) { tx, check throws in
                check.equal(try await tx.database(Self.key)?.sequence, 5)
                let all = try await tx.zoneChanges(database: database, after: 0, limit: 100)
                check.equal(all.map(\.zone.id), [c, a, b])
                check.equal(all.map(\.sequence), [3, 4, 5])
                check.equal(all.map(\.zone.deleted), [false, false, true])
                check.equal(try await tx.zoneChanges(database: database, after: 3, limit: 100).map(\.zone.id), [a, b])
                check.equal(try await tx.zoneChanges(database: database, after: 0, limit: 2).map(\.zone.id), [c, a])
                check.expect(try await tx.zoneChanges(database: database, after: 5, limit: 100).isEmpty)
                check.expect(try await tx.zoneChanges(database: database + 1000, after: 0, limit: 100).isEmpty)
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func nextZoneSequenceCountsPerZone(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let (_, a) = try await Self.makeZone(store, "a")
            let (_, b) = try await Self.makeZone(store, "b")
            let values = try await store.write { tx throws in
                _ = try await tx.lockDatabase(Self.key)
                return [try await tx.nextZoneSequence(zone: a), try await tx.nextZoneSequence(zone: a), try await tx.nextZoneSequence(zone: b),
                        try await tx.nextZoneSequence(zone: a)]
            }
            #expect(values == [1, 2, 1, 3])
            try await StoreFixture.read(store) { tx, check throws in
                check.equal(try await tx.zone(id: a)?.sequence, 3)
                check.equal(try await tx.zone(id: b)?.sequence, 1)
            }
        }
    }

    // MARK: Records

    @Test(arguments: StoreKind.available)
    func putRecordUpsertsAndKeepsTombstones(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let (_, zone) = try await Self.makeZone(store)
            let fields: [String: WireFieldValue] = [
                "title": .string("Hello, wörld"),
                "count": .int64(-42),
                "ratio": .double(0.125),
                "when": .timestamp(1_700_000_000_123),
                "blob": .bytes(Data([0, 1, 2, 255])),
                "link": .reference(WireReference(recordName: "other", zoneID: WireZoneID(zoneName: "z2"), action: .deleteSelf)),
                "place": .location(WireLocation(latitude: 48.85, longitude: 2.35)),
                "tags": .list(element: .string, [.string("a"), .string("b")]),
            ]
            let first = Self.record(zone, "r1", sequence: 1, fields: fields, parent: "folder")
            try await Self.put(store, [first])
            #expect(try await store.read { tx throws in try await tx.record(zone: zone, name: "r1") } == first)

            let second = Self.record(zone, "r1", type: "Other", sequence: 2, fields: ["count": .int64(7)])
            try await Self.put(store, [second])
            try await StoreFixture.read(store) { tx, check throws in
                check.equal(try await tx.record(zone: zone, name: "r1"), second)
                check.equal(try await tx.changes(zone: zone, after: 0, limit: 10, recordTypes: nil), [second]) // replaced, not added
                check.expect(try await tx.candidates(zones: [zone], recordType: "Item", conditions: []).isEmpty)
                check.equal(try await tx.candidates(zones: [zone], recordType: "Other", conditions: [.compare(field: "count", .equal, .number(7))]), [second])
                check.expect(try await tx.candidates(zones: [zone], recordType: "Other", conditions: [.compare(field: "count", .equal, .number(-42))]).isEmpty)
            }

            let tombstone = Self.record(zone, "r1", type: "Other", sequence: 3, deleted: true)
            try await Self.put(store, [tombstone])
            try await StoreFixture.read(store) { tx, check throws in
                let stored = try check.require(try await tx.record(zone: zone, name: "r1"))
                check.expect(stored.deleted && stored.fields.isEmpty && stored.sequence == 3)
                check.equal(stored, tombstone)
                check.expect(try await tx.candidates(zones: [zone], recordType: "Other", conditions: []).isEmpty)
                check.equal(try await tx.changes(zone: zone, after: 0, limit: 10, recordTypes: nil), [tombstone])
                check.equal(try await tx.record(zone: zone, name: "r2"), nil)
            }

            // A tombstone comes back to life when the name is saved again.
            let revived = Self.record(zone, "r1", sequence: 4, fields: ["count": .int64(8)])
            try await Self.put(store, [revived])
            #expect(try await store.read { tx throws in try await tx.candidates(zones: [zone], recordType: "Item", conditions: []) } == [revived])
        }
    }

    @Test(arguments: StoreKind.available)
    func changesInOrderWithLimitAndTypes(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let (_, zone) = try await Self.makeZone(store)
            let (_, other) = try await Self.makeZone(store, "other")
            let records = [
                Self.record(zone, "c", type: "A", sequence: 3),
                Self.record(zone, "a", type: "B", sequence: 1),
                Self.record(zone, "d", type: "B", sequence: 5, deleted: true),
                Self.record(zone, "b", type: "A", sequence: 2, deleted: true),
                Self.record(zone, "e", type: "C", sequence: 4),
                Self.record(other, "x", type: "A", sequence: 6),
            ]
            try await Self.put(store, records)
            try await StoreFixture.read(store) { tx, check throws in
                let names = { (changes: [StoredRecord]) in changes.map(\.recordName) }
                check.equal(names(try await tx.changes(zone: zone, after: 0, limit: 100, recordTypes: nil)), ["a", "b", "c", "e", "d"])
                check.equal(names(try await tx.changes(zone: zone, after: 2, limit: 100, recordTypes: nil)), ["c", "e", "d"])
                check.equal(names(try await tx.changes(zone: zone, after: 0, limit: 2, recordTypes: nil)), ["a", "b"])
                check.equal(names(try await tx.changes(zone: zone, after: 5, limit: 100, recordTypes: nil)), [])
                // Tombstones are always included, whatever their type.
                check.equal(names(try await tx.changes(zone: zone, after: 0, limit: 100, recordTypes: ["A"])), ["b", "c", "d"])
                check.equal(names(try await tx.changes(zone: zone, after: 0, limit: 100, recordTypes: ["A", "C"])), ["b", "c", "e", "d"])
                check.equal(names(try await tx.changes(zone: zone, after: 0, limit: 100, recordTypes: [])), ["b", "d"])
                check.equal(names(try await tx.changes(zone: zone, after: 0, limit: 1, recordTypes: ["C"])), ["b"])
                check.equal(try await tx.changes(zone: zone, after: 0, limit: 100, recordTypes: nil).map(\.sequence), [1, 2, 3, 4, 5])
            }
        }
    }

    /// The candidates test data: `n` numbers, `s` texts (byte order: "100%_done" < "Banana" <
    /// "Zürich" < "apple" < "été"), `place` locations, `m` mixed types, `tags` lists.
    static func candidateRecords(zone: Int64) -> [StoredRecord] {
        [
            record(zone, "r1", sequence: 1, fields: [
                "n": .int64(1), "s": .string("apple"), "place": .location(WireLocation(latitude: 10, longitude: 170)),
                "m": .string("one"), "tags": .list(element: .string, [.string("red"), .string("green")]),
            ], created: 100),
            record(zone, "r2", sequence: 2, fields: [
                "n": .double(2.5), "s": .string("Banana"), "place": .location(WireLocation(latitude: 10, longitude: -170)),
                "m": .int64(2), "tags": .list(element: .string, [.string("blue")]),
            ], created: 200),
            record(zone, "r3", sequence: 3, fields: [
                "n": .int64(3), "s": .string("été"), "place": .location(WireLocation(latitude: 50, longitude: 0)), "m": .string("2"),
            ], created: 300),
            record(zone, "r4", sequence: 4, fields: [
                "n": .timestamp(-1), "s": .string("Zürich"), "place": .location(WireLocation(latitude: -30, longitude: 20)),
            ], created: 400),
            record(zone, "r5", sequence: 5, fields: [
                "n": .int64(100), "s": .string("100%_done"), "place": .location(WireLocation(latitude: -80, longitude: 179.9)),
            ], created: 500),
        ]
    }

    @Test(arguments: StoreKind.available)
    func candidatesCompare(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let (_, zone) = try await Self.makeZone(store)
            try await Self.put(store, Self.candidateRecords(zone: zone))
            let numberCases: [(IndexComparison, [String])] = [
                (.equal, ["r2"]), (.notEqual, ["r1", "r3", "r4", "r5"]), (.less, ["r1", "r4"]),
                (.lessOrEqual, ["r1", "r2", "r4"]), (.greater, ["r3", "r5"]), (.greaterOrEqual, ["r2", "r3", "r5"]),
            ]
            let textCases: [(IndexComparison, [String])] = [
                (.equal, ["r1"]), (.notEqual, ["r2", "r3", "r4", "r5"]), (.less, ["r2", "r4", "r5"]),
                (.lessOrEqual, ["r1", "r2", "r4", "r5"]), (.greater, ["r3"]), (.greaterOrEqual, ["r1", "r3"]),
            ]
            try await StoreFixture.read(store) { tx, check throws in
                func names(_ conditions: [IndexCondition], type: String = "Item") async throws -> [String] {
                    try await tx.candidates(zones: [zone], recordType: type, conditions: conditions).map(\.recordName)
                }
                await check.equal(try names([]), ["r1", "r2", "r3", "r4", "r5"])
                await check.expect(try names([], type: "Other").isEmpty)
                for (comparison, expected) in numberCases {
                    await check.equal(try names([.compare(field: "n", comparison, .number(2.5))]), expected, "n \(comparison.rawValue) 2.5")
                }
                for (comparison, expected) in textCases {
                    await check.equal(try names([.compare(field: "s", comparison, .text("apple"))]), expected, "s \(comparison.rawValue) apple")
                }
                // Byte-wise, not by a locale: "é" (C3 A9) sorts after "z".
                await check.equal(try names([.compare(field: "s", .greater, .text("zzz"))]), ["r3"])
                await check.equal(try names([.compare(field: "s", .less, .text("a"))]), ["r2", "r4", "r5"])
                // A list matches when some element does.
                await check.equal(try names([.compare(field: "tags", .equal, .text("green"))]), ["r1"])
                await check.equal(try names([.compare(field: "tags", .notEqual, .text("red"))]), ["r1", "r2"])
                // A condition on a field no record has.
                await check.expect(try names([.compare(field: "missing", .notEqual, .number(0))]).isEmpty)
                // Numbers and texts are different columns.
                await check.equal(try names([.compare(field: "m", .equal, .number(2))]), ["r2"])
                await check.equal(try names([.compare(field: "m", .equal, .text("2"))]), ["r3"])
                // Conditions combine with AND.
                await check.equal(try names([.compare(field: "n", .greaterOrEqual, .number(1)), .compare(field: "s", .greater, .text("B"))]), ["r1", "r2", "r3"])
                await check.equal(try names([.compare(field: "n", .greater, .number(2)), .compare(field: "s", .less, .text("a"))]), ["r2", "r5"])
                // System fields.
                await check.equal(try names([.compare(field: WireSystemField.recordName.indexName, .equal, .text("r3"))]), ["r3"])
                await check.equal(try names([.compare(field: WireSystemField.createdTimestamp.indexName, .greater, .number(300))]), ["r4", "r5"])
                await check.equal(try names([.compare(field: WireSystemField.createdUserRecordName.indexName, .equal, .text("_owner"))]).count, 5)
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func candidatesAnyOfPrefixAndBox(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let (_, zone) = try await Self.makeZone(store)
            let (_, other) = try await Self.makeZone(store, "other")
            try await Self.put(store, Self.candidateRecords(zone: zone) + [
                Self.record(other, "o1", sequence: 6, fields: ["n": .int64(1), "s": .string("apple")]),
                Self.record(zone, "t1", type: "Other", sequence: 7, fields: ["n": .int64(1), "s": .string("apple")]),
            ])
            try await StoreFixture.read(store) { tx, check throws in
                func names(_ conditions: [IndexCondition], zones: [Int64]? = nil) async throws -> [String] {
                    try await tx.candidates(zones: zones ?? [zone], recordType: "Item", conditions: conditions).map(\.recordName)
                }
                // anyOf: numbers and texts mixed, each against its own column.
                await check.equal(try names([.anyOf(field: "n", [.number(1), .number(3), .text("x")])]), ["r1", "r3"])
                await check.equal(try names([.anyOf(field: "m", [.text("one"), .number(2), .number(99)])]), ["r1", "r2"])
                await check.equal(try names([.anyOf(field: "s", [.text("Banana"), .text("été")])]), ["r2", "r3"])
                await check.expect(try names([.anyOf(field: "n", [])]).isEmpty)
                await check.equal(try names([.anyOf(field: "tags", [.text("blue"), .text("red")])]), ["r1", "r2"])

                // prefix: case-sensitive, byte-wise, non-ASCII, no LIKE wildcards.
                await check.equal(try names([.prefix(field: "s", "a")]), ["r1"])
                await check.expect(try names([.prefix(field: "s", "A")]).isEmpty)
                await check.expect(try names([.prefix(field: "s", "b")]).isEmpty)
                await check.equal(try names([.prefix(field: "s", "ét")]), ["r3"])
                await check.equal(try names([.prefix(field: "s", "é")]), ["r3"])
                await check.expect(try names([.prefix(field: "s", "e")]).isEmpty)
                await check.equal(try names([.prefix(field: "s", "Zü")]), ["r4"])
                await check.expect(try names([.prefix(field: "s", "Zu")]).isEmpty)
                await check.equal(try names([.prefix(field: "s", "100%_")]), ["r5"])
                await check.expect(try names([.prefix(field: "s", "10_%")]).isEmpty)
                await check.equal(try names([.prefix(field: "s", "apple")]), ["r1"])
                await check.expect(try names([.prefix(field: "s", "apples")]).isEmpty)
                await check.equal(try names([.prefix(field: "s", "")]), ["r1", "r2", "r3", "r4", "r5"])
                await check.equal(try names([.prefix(field: "tags", "gr")]), ["r1"])

                // box: plain, whole world, across the antimeridian.
                await check.equal(try names([.box(field: "place", minLatitude: 40, maxLatitude: 60, minLongitude: -10, maxLongitude: 10)]), ["r3"])
                await check.equal(try names([.box(field: "place", minLatitude: 0, maxLatitude: 20, minLongitude: 165, maxLongitude: 175)]), ["r1"])
                await check.equal(try names([.box(field: "place", minLatitude: 0, maxLatitude: 20, minLongitude: -180, maxLongitude: 180)]), ["r1", "r2"])
                await check.equal(try names([.box(field: "place", minLatitude: 0, maxLatitude: 20, minLongitude: 160, maxLongitude: -160)]), ["r1", "r2"])
                await check.equal(try names([.box(field: "place", minLatitude: -90, maxLatitude: 90, minLongitude: 175, maxLongitude: -175)]), ["r5"])
                await check.equal(try names([.box(field: "place", minLatitude: -90, maxLatitude: 90, minLongitude: 179, maxLongitude: -179)]), ["r5"])
                await check.equal(try names([.box(field: "place", minLatitude: -90, maxLatitude: 90, minLongitude: -180, maxLongitude: 180)]).count, 5)
                await check.expect(try names([.box(field: "place", minLatitude: 11, maxLatitude: 49, minLongitude: -180, maxLongitude: 180)]).isEmpty)
                await check.expect(try names([.box(field: "n", minLatitude: -90, maxLatitude: 90, minLongitude: -180, maxLongitude: 180)]).isEmpty)

                // Zones and record types filter.
                await check.equal(try names([.compare(field: "s", .equal, .text("apple"))], zones: [zone, other]), ["r1", "o1"])
                await check.equal(try names([.compare(field: "s", .equal, .text("apple"))], zones: [other]), ["o1"])
                await check.expect(try names([], zones: []).isEmpty)
            }
            // The spatial index follows the records: a moved record is found where it went only, a
            // deleted one nowhere, a deleted zone's nowhere.
            try await Self.put(store, [
                Self.record(zone, "r3", sequence: 8, fields: ["place": .location(WireLocation(latitude: -45, longitude: 100))]),
                Self.record(zone, "r1", sequence: 9, deleted: true),
            ])
            try await StoreFixture.read(store) { tx, check throws in
                func near(_ minLatitude: Double, _ maxLatitude: Double, _ minLongitude: Double, _ maxLongitude: Double) async throws -> [String] {
                    try await tx.candidates(zones: [zone], recordType: "Item", conditions: [
                        .box(field: "place", minLatitude: minLatitude, maxLatitude: maxLatitude, minLongitude: minLongitude, maxLongitude: maxLongitude),
                    ]).map(\.recordName)
                }
                await check.expect(try near(40, 60, -10, 10).isEmpty)
                await check.equal(try near(-50, -40, 95, 105), ["r3"])
                await check.equal(try near(0, 20, 160, -160), ["r2"])
                await check.equal(try near(-90, 90, -180, 180), ["r2", "r3", "r4", "r5"])
            }
            try await store.write { tx throws in
                _ = try await tx.lockDatabase(Self.key)
                try await tx.deleteZone(id: zone)
            }
            try await StoreFixture.read(store) { tx, check throws in
                check.expect(try await tx.candidates(zones: [zone], recordType: "Item", conditions: [
                    .box(field: "place", minLatitude: -90, maxLatitude: 90, minLongitude: -180, maxLongitude: 180),
                ]).isEmpty)
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func referencingFindsReferenceFields(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let (_, z) = try await Self.makeZone(store, "Z")
            let (_, y) = try await Self.makeZone(store, "Y")
            let target = WireReference(recordName: "target")
            try await Self.put(store, [
                Self.record(z, "target", sequence: 1),
                Self.record(z, "a", sequence: 2, fields: ["owner": .reference(target)]),
                Self.record(y, "b", type: "Other", sequence: 3, fields: ["owner": .reference(WireReference(recordName: "target", zoneID: WireZoneID(zoneName: "Z")))]),
                Self.record(y, "y-local", sequence: 4, fields: ["owner": .reference(target)]), // Y␟target: another zone's record
                Self.record(z, "child", sequence: 5, parent: "target"), // a parent is not a reference field
                Self.record(z, "list", sequence: 6, fields: ["refs": .list(element: .reference, [.reference(WireReference(recordName: "x")), .reference(target)])]),
                Self.record(z, "gone", sequence: 7, deleted: true),
                Self.record(z, "elsewhere", sequence: 8, fields: ["owner": .reference(WireReference(recordName: "target2"))]),
            ])
            try await StoreFixture.read(store) { tx, check throws in
                check.equal(try await tx.referencing(zones: [z], targetZone: "Z", targetName: "target").map(\.recordName), ["a", "list"])
                check.equal(try await tx.referencing(zones: [z, y], targetZone: "Z", targetName: "target").map(\.recordName), ["a", "b", "list"])
                check.equal(try await tx.referencing(zones: [y], targetZone: "Y", targetName: "target").map(\.recordName), ["y-local"])
                check.expect(try await tx.referencing(zones: [z, y], targetZone: "Z", targetName: "nothing").isEmpty)
                check.expect(try await tx.referencing(zones: [], targetZone: "Z", targetName: "target").isEmpty)
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func purgeTombstonesForgetsUpToSequence(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let (_, zone) = try await Self.makeZone(store)
            try await Self.put(store, [
                Self.record(zone, "t1", sequence: 1, deleted: true),
                Self.record(zone, "live", sequence: 2),
                Self.record(zone, "t3", sequence: 3, deleted: true),
                Self.record(zone, "t5", sequence: 5, deleted: true),
            ])
            try await store.write { tx throws in
                _ = try await tx.lockDatabase(Self.key)
                try await tx.purgeTombstones(zone: zone, through: 3)
            }
            try await StoreFixture.read(store) { tx, check throws in
                check.equal(try await tx.changes(zone: zone, after: 0, limit: 100, recordTypes: nil).map(\.recordName), ["live", "t5"])
                check.equal(try await tx.record(zone: zone, name: "t3"), nil)
                check.equal(try await tx.zone(id: zone)?.purgedThrough, 3)
            }
            // purgedThrough never goes back.
            try await store.write { tx throws in
                _ = try await tx.lockDatabase(Self.key)
                try await tx.purgeTombstones(zone: zone, through: 1)
            }
            try await StoreFixture.read(store) { tx, check throws in
                check.equal(try await tx.zone(id: zone)?.purgedThrough, 3)
                check.equal(try await tx.record(zone: zone, name: "t5")?.deleted, true)
            }
        }
    }

    // MARK: Schema

    @Test(arguments: StoreKind.available)
    func fieldTypesKeepExistingEntries(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            try await store.write { tx throws in
                try await tx.addFieldTypes(container: "iCloud.a", environment: .development, recordType: "Item", types: ["title": "STRING", "n": "INT64"])
                try await tx.addFieldTypes(container: "iCloud.a", environment: .development, recordType: "Item", types: ["title": "BYTES", "when": "TIMESTAMP"])
                try await tx.addFieldTypes(container: "iCloud.a", environment: .production, recordType: "Item", types: ["title": "DOUBLE"])
                try await tx.addFieldTypes(container: "iCloud.a", environment: .development, recordType: "Note", types: [:])
            }
            try await StoreFixture.read(store) { tx, check throws in
                check.equal(try await tx.fieldTypes(container: "iCloud.a", environment: .development, recordType: "Item"), ["title": "STRING", "n": "INT64", "when": "TIMESTAMP"])
                check.equal(try await tx.fieldTypes(container: "iCloud.a", environment: .production, recordType: "Item"), ["title": "DOUBLE"])
                check.expect(try await tx.fieldTypes(container: "iCloud.a", environment: .development, recordType: "Note").isEmpty)
                check.expect(try await tx.fieldTypes(container: "iCloud.b", environment: .development, recordType: "Item").isEmpty)
            }
        }
    }

    // MARK: Transactions

    @Test(arguments: StoreKind.available)
    func aThrowingWriteRollsBackEverything(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            let (database, zone) = try await Self.makeZone(store)
            await #expect(throws: Failure.self) {
                try await store.write { tx throws in
                    try await tx.addContainer("iCloud.rolled-back", createdAt: 1)
                    _ = try await tx.addAccount(name: "ghost", email: nil, passwordHash: nil, createdAt: 1)
                    _ = try await tx.lockDatabase(Self.key)
                    _ = try await tx.lockDatabase(DatabaseKey(container: "iCloud.rolled-back", environment: .production, scope: .public, owner: ""))
                    _ = try await tx.createZone(database: database, name: "new", createdAt: 1)
                    _ = try await tx.nextZoneSequence(zone: zone)
                    _ = try await tx.noteZoneChanged(database: database, zone: zone)
                    try await tx.putRecord(Self.record(zone, "r", sequence: 1))
                    try await tx.addFieldTypes(container: "iCloud.a", environment: .development, recordType: "Item", types: ["x": "STRING"])
                    throw Failure()
                }
            }
            try await StoreFixture.read(store) { tx, check throws in
                await check.expect(try !tx.containerExists("iCloud.rolled-back"))
                check.equal(try await tx.account(named: "ghost"), nil)
                check.equal(try await tx.database(DatabaseKey(container: "iCloud.rolled-back", environment: .production, scope: .public, owner: "")), nil)
                check.equal(try await tx.database(Self.key)?.sequence, 0)
                check.equal(try await tx.zones(database: database).map(\.name), ["zone"])
                check.equal(try await tx.zone(id: zone)?.sequence, 0)
                check.equal(try await tx.record(zone: zone, name: "r"), nil)
                check.expect(try await tx.candidates(zones: [zone], recordType: "Item", conditions: []).isEmpty)
                check.expect(try await tx.fieldTypes(container: "iCloud.a", environment: .development, recordType: "Item").isEmpty)
            }
            // The store is still usable.
            try await store.write { tx throws in try await tx.addContainer("iCloud.after", createdAt: 2) }
            #expect(try await store.read { tx throws in try await tx.containers() } == ["iCloud.after"])
        }
    }

    @Test(arguments: StoreKind.available)
    func readTransactionsCannotWrite(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            await #expect(throws: (any Error).self) {
                try await store.read { tx throws in try await tx.addContainer("iCloud.a", createdAt: 1) }
            }
            #expect(try await store.read { tx throws in try await tx.containers() }.isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func aReadSeesOneSnapshot(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store async throws in
            try await store.write { tx throws in try await tx.addContainer("iCloud.a", createdAt: 1) }
            let started = DispatchSemaphore(value: 0)
            let written = DispatchSemaphore(value: 0)
            async let snapshot = store.read { tx throws in
                let before = try await tx.containers()
                started.signal()
                _ = written.wait(timeout: .now() + 60)
                return (before, try await tx.containers())
            }
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    started.wait()
                    continuation.resume()
                }
            }
            try await store.write { tx throws in try await tx.addContainer("iCloud.b", createdAt: 2) }
            written.signal()
            let (before, after) = try await snapshot
            #expect(before == ["iCloud.a"])
            #expect(after == ["iCloud.a"])
            #expect(try await store.read { tx throws in try await tx.containers() } == ["iCloud.a", "iCloud.b"])
        }
    }

    /// Two store instances on the same data, each running many concurrent read-modify-write
    /// transactions on one counter after `lockDatabase`: no increment is lost.
    @Test(arguments: StoreKind.available)
    func concurrentWritersAcrossInstancesLoseNoUpdate(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        do {
            let first = try await fixture.open()
            let second = try await fixture.open()
            let (database, zone) = try await Self.makeZone(first, "counter")
            try await Self.put(first, [Self.record(zone, "c", sequence: 0, fields: ["count": .int64(0)])])
            let perStore = 30
            try await withThrowingTaskGroup(of: Void.self) { group in
                for store in [first, second] {
                    for _ in 0..<perStore {
                        group.addTask {
                            try await StoreFixture.write(store) { tx, check throws in
                                let locked = try await tx.lockDatabase(Self.key)
                                check.equal(locked.id, database)
                                var record = try check.require(try await tx.record(zone: zone, name: "c"))
                                guard case .int64(let count) = record.fields["count"] else { throw Failure() }
                                record.fields["count"] = .int64(count + 1)
                                record.sequence = try await tx.nextZoneSequence(zone: zone)
                                try await tx.putRecord(record)
                                _ = try await tx.noteZoneChanged(database: database, zone: zone)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            for store in [first, second] {
                try await StoreFixture.read(store) { tx, check throws in
                    let record = try check.require(try await tx.record(zone: zone, name: "c"))
                    check.equal(record.fields["count"], .int64(Int64(2 * perStore)))
                    check.equal(record.sequence, Int64(2 * perStore))
                    check.equal(try await tx.zone(id: zone)?.sequence, Int64(2 * perStore))
                    check.equal(try await tx.database(Self.key)?.sequence, Int64(2 * perStore))
                    check.equal(try await tx.candidates(zones: [zone], recordType: "Item", conditions: [.compare(field: "count", .equal, .number(Double(2 * perStore)))]).count, 1)
                }
            }
            try await fixture.destroy()
        } catch {
            try? await fixture.destroy()
            throw error
        }
    }
}
