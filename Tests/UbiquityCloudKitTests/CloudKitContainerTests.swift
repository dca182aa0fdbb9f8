// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Synchronization
import Testing
import UbiquityCore
@testable import UbiquityCloudKit

@Suite("CloudKit container, authentication and zones")
struct CloudKitContainerTests {
    typealias Support = CloudKitTestSupport

    @Test("paths follow the CKWS layout, with the server URL's path as a prefix")
    func paths() async throws {
        let fake = FakeCloudKitTransport(json: #"{"zones":[]}"#)
        let container = Support.container(fake, serverURL: URL(string: "https://host.example:8443/ck/")!)
        #expect(container.path(.shared, "zones/list") == "/ck/database/1/iCloud.com.example.notes/development/shared/zones/list")
        _ = try await container.sharedCloudDatabase.allRecordZones()
        let request = fake.requests[0]
        #expect(request.method == "GET")
        #expect(request.body.isEmpty)
        #expect(request.url.absoluteString == "https://host.example:8443/ck/database/1/iCloud.com.example.notes/development/shared/zones/list?ckAPIToken=api-token&ckWebAuthToken=web-token")
        let production = CloudContainer(identifier: "iCloud.x", serverURL: Support.serverURL, environment: .production, credentials: .apiToken("t"), transport: fake)
        #expect(production.path(.public, "records/query") == "/database/1/iCloud.x/production/public/records/query")
        #expect(production.database(with: .private).scope == .private)
    }

    @Test("the web-auth token is URL-encoded, and the newest rotated token is sent next")
    func tokenRotation() async throws {
        let fake = FakeCloudKitTransport(
            responses: [(200, #"{"zones":[]}"#), (200, #"{"zones":[]}"#), (421, #"{"serverErrorCode":"AUTHENTICATION_REQUIRED","reason":"expired"}"#)],
            headers: [["X-Apple-CloudKit-Web-Auth-Token": "new+tok/en=="], [:], ["x-apple-cloudkit-web-auth-token": "third"]])
        let container = Support.container(fake, credentials: .apiToken("api+key", webAuthToken: "old/token="))
        #expect(container.currentWebAuthToken == "old/token=")
        let database = container.privateCloudDatabase
        _ = try await database.allRecordZones()
        #expect(container.currentWebAuthToken == "new+tok/en==")
        _ = try await database.allRecordZones()
        _ = try? await database.allRecordZones()
        #expect(container.currentWebAuthToken == "third")
        #expect(fake.requests[0].queryString == "ckAPIToken=api%2Bkey&ckWebAuthToken=old%2Ftoken%3D")
        #expect(fake.requests[1].queryString == "ckAPIToken=api%2Bkey&ckWebAuthToken=new%2Btok%2Fen%3D%3D")
        #expect(fake.requests[1].url.absoluteString.hasSuffix("?ckAPIToken=api%2Bkey&ckWebAuthToken=new%2Btok%2Fen%3D%3D"))
        #expect(fake.requests[1].headers["X-Apple-CloudKit-Request-KeyID"] == nil)
    }

    @Test("server-to-server requests carry a signature that verifies with the public key")
    func signing() async throws {
        let key = P256.Signing.PrivateKey()
        // openssl's output: EC PARAMETERS before the key.
        let pem = "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n" + key.pemRepresentation
        let fake = FakeCloudKitTransport(json: #"{"records":[]}"#)
        let fixed = Date(timeIntervalSince1970: 1_453_760_143)
        let container = CloudContainer(identifier: "iCloud.com.example.notes", serverURL: Support.serverURL, environment: .development,
                                       credentials: .serverToServer(keyID: "key-1", privateKeyPEM: pem), transport: fake,
                                       logger: .init(label: "test"), now: { fixed })
        _ = try await container.publicCloudDatabase.records(matching: Query(recordType: "Items", predicate: .true))
        let request = fake.requests[0]
        #expect(request.query.isEmpty)
        #expect(request.headers["X-Apple-CloudKit-Request-KeyID"] == "key-1")
        let date = try #require(request.headers["X-Apple-CloudKit-Request-ISO8601Date"])
        #expect(date == "2016-01-25T22:15:43Z")
        let signatureText = try #require(request.headers["X-Apple-CloudKit-Request-SignatureV1"])
        let signature = try P256.Signing.ECDSASignature(derRepresentation: try #require(Data(base64Encoded: signatureText)))
        let bodyHash = Data(SHA256.hash(data: request.body)).base64EncodedString()
        let message = "\(date):\(bodyHash):/database/1/iCloud.com.example.notes/development/public/records/query"
        #expect(key.publicKey.isValidSignature(signature, for: Data(message.utf8)))
        #expect(!key.publicKey.isValidSignature(signature, for: Data((message + "x").utf8)))
        // The known SHA-256 of "test" (OpenCloudKit's vector), as the message builder writes it.
        #expect(ServerToServerSigner.message(date: "d", body: Data("test".utf8), path: "/p") == "d:n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=:/p")
        // A PKCS #8 key works too; a bad key fails every request with notAuthenticated.
        #expect(throws: Never.self) { try ServerToServerSigner(keyID: "k", privateKeyPEM: key.pemRepresentation) }
        let broken = CloudContainer(identifier: "iCloud.x", serverURL: Support.serverURL, credentials: .serverToServer(keyID: "k", privateKeyPEM: "nope"), transport: fake)
        let error = await #expect(throws: CloudKitError.self) { try await broken.publicCloudDatabase.allRecordZones() }
        #expect(error?.code == .notAuthenticated)
        #expect(error?.reason.contains("openssl ecparam") == true)
    }

    @Test("userRecordID reads users/current")
    func currentUser() async throws {
        let fake = FakeCloudKitTransport(json: #"{"userRecordName":"_9a065b60313a5937e75e03ed8e8f383d","firstName":null,"lastName":null}"#)
        let container = Support.container(fake)
        let id = try await container.userRecordID()
        #expect(id == Record.ID(recordName: "_9a065b60313a5937e75e03ed8e8f383d"))
        #expect(fake.requests[0].method == "GET")
        #expect(fake.requests[0].path == "/database/1/iCloud.com.example.notes/development/public/users/current")
        let got = Mutex<Record.ID?>(nil)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Support.container(FakeCloudKitTransport(json: #"{"userRecordName":"_u2"}"#)).fetchUserRecordID { id, _ in
                got.withLock { $0 = id }
                done.resume()
            }
        }
        #expect(got.withLock { $0 }?.recordName == "_u2")
    }

    @Test("zones: list, lookup, create and delete")
    func zones() async throws {
        let fake = FakeCloudKitTransport(responses: [
            (200, #"{"zones":[{"zoneID":{"zoneName":"_defaultZone","ownerRecordName":"_u1","zoneType":"DEFAULT_ZONE"},"syncToken":"s0","atomic":false},{"zoneID":{"zoneName":"Notes","ownerRecordName":"_u1"},"syncToken":"s1","atomic":true}]}"#),
            (200, #"{"zones":[{"zoneID":{"zoneName":"Notes"},"syncToken":"s1","atomic":true},{"zoneID":{"zoneName":"Nope"},"serverErrorCode":"ZONE_NOT_FOUND","reason":"no zone"}]}"#),
            (200, #"{"zones":[{"zoneID":{"zoneName":"Music"},"syncToken":"s2","atomic":true},{"zoneID":{"zoneName":"Old"},"deleted":true}]}"#),
        ])
        let database = Support.container(fake).privateCloudDatabase
        let all = try await database.allRecordZones()
        #expect(all.map(\.zoneID.zoneName) == ["_defaultZone", "Notes"])
        #expect(all[1].capabilities.contains(.atomic))
        #expect(all[1].currentServerChangeToken?.rawValue == "s1")
        #expect(!all[0].capabilities.contains(.atomic))

        let found = try await database.recordZones(for: [RecordZone.ID(zoneName: "Notes"), RecordZone.ID(zoneName: "Nope")])
        #expect(try found[RecordZone.ID(zoneName: "Notes")]?.get().zoneID == RecordZone.ID(zoneName: "Notes"))
        #expect((found[RecordZone.ID(zoneName: "Nope")]?.error as? CloudKitError)?.code == .zoneNotFound)
        #expect(try fake.body(1) == (try Support.json(#"{"zones":[{"zoneName":"Notes","zoneType":"REGULAR_CUSTOM_ZONE"},{"zoneName":"Nope","zoneType":"REGULAR_CUSTOM_ZONE"}]}"#)))

        let (saved, deleted) = try await database.modifyRecordZones(saving: [RecordZone(zoneName: "Music")], deleting: [RecordZone.ID(zoneName: "Old")])
        #expect(try saved[RecordZone.ID(zoneName: "Music")]?.get().currentServerChangeToken?.rawValue == "s2")
        #expect(throws: Never.self) { try deleted[RecordZone.ID(zoneName: "Old")]?.get() }
        #expect(try fake.body(2) == (try Support.json("""
            {"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Music","zoneType":"REGULAR_CUSTOM_ZONE"}}},
                           {"operationType":"delete","zone":{"zoneID":{"zoneName":"Old","zoneType":"REGULAR_CUSTOM_ZONE"}}}]}
            """)))
        #expect(fake.requests[2].path.hasSuffix("/private/zones/modify"))
    }

    @Test("zone operations report through their blocks")
    func zoneOperations() async throws {
        let fake = FakeCloudKitTransport(responses: [
            (200, #"{"zones":[{"zoneID":{"zoneName":"A"},"serverErrorCode":"QUOTA_EXCEEDED","reason":"full"}]}"#),
            (200, #"{"zones":[{"zoneID":{"zoneName":"A"}},{"zoneID":{"zoneName":"B"}}]}"#),
        ])
        let database = Support.container(fake).privateCloudDatabase
        let modify = ModifyRecordZonesOperation(recordZonesToSave: [RecordZone(zoneName: "A")], recordZoneIDsToDelete: nil)
        let outcome = Mutex<String>("")
        modify.perRecordZoneSaveBlock = { id, result in outcome.withLock { $0 += "\(id.zoneName):\((result.error as? CloudKitError)?.code.description ?? "ok") " } }
        modify.modifyRecordZonesResultBlock = { result in outcome.withLock { $0 += (result.error as? CloudKitError)?.code.description ?? "ok" } }
        database.add(modify)
        await modify.waitUntilFinished()
        #expect(outcome.withLock { $0 } == "A:quotaExceeded partialFailure")

        let fetch = FetchRecordZonesOperation.fetchAllRecordZonesOperation()
        let names = Mutex<[String]>([])
        fetch.perRecordZoneResultBlock = { id, _ in names.withLock { $0.append(id.zoneName) } }
        fetch.database = database
        try await fetch.run()
        #expect(names.withLock { $0 } == ["A", "B"])
    }

    @Test("an operation without a database fails with a message saying how to run it")
    func noDatabase() async throws {
        let operation = ModifyRecordsOperation()
        let error = await #expect(throws: CloudKitError.self) { try await operation.run() }
        #expect(error?.reason.contains("database.add") == true)
    }
}
