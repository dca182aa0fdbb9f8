// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityServer

/// Query subscriptions of the public database notify only of records the subscriber's security
/// roles let it read.
@Suite struct PublicSubscriptionRolesTests {
    @Test(arguments: StoreKind.available)
    func subscribersHearOnlyOfRecordsTheyMayRead(kind: StoreKind) async throws {
        let push = try await PushFixture.start(kind)
        defer { Task { await push.stop() } }
        let ravi = push.otherToken
        let subscribed = try await push.subscribe([querySubscription("notes", type: "Note")], database: "public", token: ravi)
        #expect(subscribed.items("subscriptions").first?["serverErrorCode"] == nil)
        let (_, url) = try await push.pushToken(token: ravi)
        let start = try await push.head(url)

        _ = try await push.save([("a", "Note", ["title": "Mei's, world-readable"])], database: "public")
        let first = try await push.collect(url, from: start, count: 1)
        #expect(first.payloads.compactMap { $0.ck("qry")?["rid"]?.stringValue } == ["a"])

        let admin = RecordsAdmin(store: push.servers[0].server.store)
        try await admin.setPermissions([], container: push.container, environment: .development, recordType: "Note", role: SecurityRole.world)
        _ = try await push.save([("b", "Note", ["title": "Mei's, hidden"])], database: "public")
        _ = try await push.save([("c", "Note", ["title": "Ravi's own"])], database: "public", token: ravi)
        let second = try await push.collect(url, from: first.position, count: 2, rounds: 3)
        #expect(second.payloads.compactMap { $0.ck("qry")?["rid"]?.stringValue } == ["c"])
    }
}
