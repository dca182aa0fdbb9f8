// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// Issue 24, finding 2: error answers never show, or confirm the existence of, a record the
/// caller may not read (the public database, a type `_world` cannot read): a create of its name
/// carries no `serverRecord`, an update with a wrong change tag answers as `records/lookup` does
/// (NOT_FOUND), and a VALIDATE reference to it is refused as a missing record is.
@Suite struct UnreadableRecordsHTTPTests {
    @Test(arguments: StoreKind.available)
    func errorAnswersDoNotLeakUnreadableRecords(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let admin = RecordsAdmin(store: server.store)
        let mei = server.userToken, ravi = server.otherToken
        func save(_ operations: [JSONValue], token: String) async throws -> [JSONValue] {
            let reply = try await server.send("public", "records/modify", ["operations": .array(operations)], token: token)
            #expect(reply.status == 200, "\(reply.body)")
            return reply.items()
        }
        let created = try await save([operation("create", "pp1", recordType: "Private", fields: ["secret": "mei's secret"])], token: mei)
        let tag = try #require(created.first?["recordChangeTag"]?.stringValue)
        _ = try await save([operation("create", "open1", fields: ["title": "readable"])], token: mei)
        // only its creator reads a Private record
        try await admin.setPermissions([], container: server.container, environment: .development, recordType: "Private", role: SecurityRole.world)
        try await admin.setPermissions([.create], container: server.container, environment: .development, recordType: "Private", role: SecurityRole.icloud)
        let lookup = try await server.send("public", "records/lookup", ["records": [["recordName": "pp1"]]], token: ravi).items().first
        #expect(lookup?["serverErrorCode"] == "NOT_FOUND")

        // a create of its name: refused, with nothing of the record
        let create = try #require(try await save([operation("create", "pp1", recordType: "Private", fields: ["secret": "ravi's"])], token: ravi).first)
        #expect(create["serverErrorCode"] == "EXISTS", "\(create)")
        #expect(create["serverRecord"] == nil, "no serverRecord for a record the caller may not read: \(create)")
        #expect(!"\(create)".contains("mei's secret"))

        // an update with a wrong change tag: as a lookup answers
        let update = try #require(try await save([operation("update", "pp1", recordType: "Private", tag: "wrong", fields: ["secret": "x"])], token: ravi).first)
        #expect(update["serverErrorCode"] == "NOT_FOUND", "\(update)")
        #expect(update["serverRecord"] == nil && !"\(update)".contains("mei's secret"), "\(update)")
        let right = try #require(try await save([operation("update", "pp1", recordType: "Private", tag: tag, fields: ["secret": "x"])], token: ravi).first)
        #expect(right["serverErrorCode"] == "NOT_FOUND", "the right tag tells nothing more: \(right)")

        // a VALIDATE reference to it is refused exactly as one to a missing record
        func reference(to name: String) -> JSONValue {
            ["value": ["recordName": .string(name), "action": "VALIDATE"], "type": "REFERENCE"]
        }
        let toHidden = try #require(try await save([operation("create", "ref1", fields: ["target": reference(to: "pp1")])], token: ravi).first)
        let toMissing = try #require(try await save([operation("create", "ref2", fields: ["target": reference(to: "nothing-here")])], token: ravi).first)
        #expect(toMissing["serverErrorCode"] == "VALIDATING_REFERENCE_ERROR", "\(toMissing)")
        #expect(toHidden["serverErrorCode"] == toMissing["serverErrorCode"], "\(toHidden)")
        let toReadable = try #require(try await save([operation("create", "ref3", fields: ["target": reference(to: "open1")])], token: ravi).first)
        #expect(toReadable["serverErrorCode"] == nil, "\(toReadable)")

        // its creator still gets the usual answers
        let own = try #require(try await save([operation("update", "pp1", recordType: "Private", tag: "wrong", fields: ["secret": "y"])], token: mei).first)
        #expect(own["serverErrorCode"] == "CONFLICT" && own["serverRecord"]?["fields"]?["secret"]?["value"] == "mei's secret", "\(own)")
        let ownReference = try #require(try await save([operation("create", "ref4", fields: ["target": reference(to: "pp1")])], token: mei).first)
        #expect(ownReference["serverErrorCode"] == nil, "\(ownReference)")
    }
}
