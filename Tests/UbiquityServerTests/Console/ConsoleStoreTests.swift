// SPDX-License-Identifier: Apache-2.0
import Testing
import UbiquityCore
@testable import UbiquityServer
import UbiquityWire

/// The Console's rows behave the same on both stores: developers per container, a zone's
/// latest records newest first (by type, before a sequence), a container's users.
@Suite struct ConsoleStoreTests {
    @Test(arguments: StoreKind.available)
    func developersRecordsAndUsersAreListed(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store in
            let admin = RecordsAdmin(store: store, passwordHasher: PasswordHasher(cost: 4))
            _ = try await admin.addContainer("iCloud.a")
            _ = try await admin.addContainer("iCloud.b")
            _ = try await admin.addUser("mei", email: nil, password: nil)
            _ = try await admin.addUser("ravi", email: nil, password: nil)
            #expect(try await admin.developers(container: "iCloud.a", add: ["ravi", "mei"]) == ["mei", "ravi"])
            #expect(try await admin.developers(container: "iCloud.b", add: ["mei"]) == ["mei"])
            #expect(try await admin.developers(container: "iCloud.a", add: ["mei"], remove: ["ravi"]) == ["mei"])
            await #expect(throws: UbiquityError.self) { try await admin.developers(container: "iCloud.a", add: ["nobody"]) }
            await #expect(throws: UbiquityError.self) { try await admin.developers(container: "iCloud.missing", add: ["mei"]) }
            let mei = try #require(try await store.read { tx in try await tx.account(named: "mei") })
            #expect(try await store.read { tx in try await tx.consoleStore().developerContainers(accountID: mei.id) } == ["iCloud.a", "iCloud.b"])

            let key = DatabaseKey(container: "iCloud.a", environment: .development, scope: .public, owner: "")
            let stamp = WireRecordStamp(timestamp: 1, userRecordName: "_u")
            let (zone, latest, notes, older) = try await store.write { tx in
                let database = try await tx.lockDatabase(key)
                var found = try await tx.zone(database: database.id, name: "_defaultZone")
                if found == nil { found = try await tx.createZone(database: database.id, name: "_defaultZone", createdAt: 0) }
                let zone = found!
                for (index, type) in ["Note", "Tag", "Note", "Note"].enumerated() {
                    try await tx.putRecord(StoredRecord(zone: zone.id, recordName: "r\(index)", recordType: type, changeTag: "t", sequence: Int64(index + 1),
                                                        deleted: false, fields: ["n": .int64(Int64(index))], created: stamp, modified: stamp))
                }
                try await tx.putRecord(StoredRecord(zone: zone.id, recordName: "gone", recordType: "Note", changeTag: "t", sequence: 9, deleted: true,
                                                    fields: [:], created: stamp, modified: stamp))
                let console = try tx.consoleStore()
                return (zone.id, try await console.latestRecords(zone: zone.id, before: nil, recordType: nil, limit: 3),
                        try await console.latestRecords(zone: zone.id, before: nil, recordType: "Note", limit: 10),
                        try await console.latestRecords(zone: zone.id, before: 3, recordType: nil, limit: 10))
            }
            #expect(zone > 0)
            #expect(latest.map(\.recordName) == ["r3", "r2", "r1"])
            #expect(notes.map(\.recordName) == ["r3", "r2", "r0"])
            #expect(older.map(\.recordName) == ["r1", "r0"])

            try await store.write { tx in
                _ = try await tx.users().noteUserIdentity(accountID: mei.id, container: "iCloud.a", userRecordName: "_mei", createdAt: 10)
            }
            let users = try await store.read { tx in try await tx.consoleStore().userIdentities(container: "iCloud.a", offset: 0, limit: 10) }
            #expect(users.map(\.userRecordName) == ["_mei"])
            #expect(try await store.read { tx in try await tx.consoleStore().userIdentities(container: "iCloud.a", offset: 1, limit: 10) }.isEmpty)
        }
    }
}
