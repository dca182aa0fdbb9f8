// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityServer

/// `subscriptions/list|lookup|modify` and `tokens/create|register`: wire shapes, per-item
/// errors, malformed subscriptions, who may subscribe.
@Suite struct SubscriptionsHTTPTests {
    @Test(arguments: StoreKind.available)
    func subscriptionsRoundTripWithCloudKitShapes(kind: StoreKind) async throws {
        let push = try await PushFixture.start(kind)
        defer { Task { await push.stop() } }
        try await push.createZone("Work")
        let saved = try await push.subscribe([
            querySubscription("notes", type: "Note", filters: [filter("priority", "GREATER_THAN", 5)], firesOn: ["create", "update"],
                              info: ["alertBody": "changed", "shouldBadge": true]),
            ["subscriptionID": "work", "subscriptionType": "zone", "zoneID": ["zoneName": "Work"]],
            ["subscriptionID": "everything", "subscriptionType": "database"],
        ])
        #expect(saved.status == 200)
        let items = saved.items("subscriptions")
        #expect(items.count == 3)
        #expect(items[0]["subscriptionType"] == "query")
        #expect(items[0]["zoneWide"] == true)
        #expect(items[0]["firesOn"] == ["create", "update"])
        #expect(items[0]["query"]?["recordType"] == "Note")
        #expect(items[0]["notificationInfo"]?["alertBody"] == "changed")
        // zone subscriptions carry no query, firesOn or firesOnce
        #expect(items[1]["zoneID"]?["zoneName"] == "Work")
        #expect(items[1]["query"] == nil && items[1]["firesOn"] == nil && items[1]["firesOnce"] == nil)
        #expect(items[2]["subscriptionType"] == "database")

        let list = try await push.send("private", "subscriptions/list", token: push.userToken, method: .GET)
        #expect(list.items("subscriptions").compactMap { $0["subscriptionID"]?.stringValue }.sorted() == ["everything", "notes", "work"])
        // another user sees none of them
        let other = try await push.send("private", "subscriptions/list", token: push.otherToken, method: .GET)
        #expect(other.items("subscriptions").isEmpty)

        let lookup = try await push.send("private", "subscriptions/lookup", ["subscriptions": [["subscriptionID": "work"], ["subscriptionID": "nope"]]],
                                         token: push.userToken)
        #expect(lookup.items("subscriptions")[0]["subscriptionID"] == "work")
        #expect(lookup.items("subscriptions")[1]["serverErrorCode"] == "NOT_FOUND")
        #expect(lookup.items("subscriptions")[1]["subscriptionID"] == "nope")

        let modify = try await push.send("private", "subscriptions/modify", ["operations": [
            ["operationType": "delete", "subscription": ["subscriptionID": "work"]],
            ["operationType": "delete", "subscription": ["subscriptionID": "work"]],
            ["operationType": "update", "subscription": ["subscriptionID": "ghost", "subscriptionType": "database"]],
            ["operationType": "update", "subscription": ["subscriptionID": "everything", "subscriptionType": "database", "notificationInfo": ["shouldSendContentAvailable": true]]],
        ]], token: push.userToken)
        let results = modify.items("subscriptions")
        #expect(results[0]["deleted"] == true)
        #expect(results[1]["serverErrorCode"] == "NOT_FOUND")
        #expect(results[2]["serverErrorCode"] == "NOT_FOUND")
        #expect(results[3]["notificationInfo"]?["shouldSendContentAvailable"] == true)
    }

    @Test(arguments: StoreKind.available)
    func malformedSubscriptionsAreBadRequestItemsAndTheRestApply(kind: StoreKind) async throws {
        let push = try await PushFixture.start(kind)
        defer { Task { await push.stop() } }
        let reply = try await push.subscribe([
            querySubscription("bad-comparator", type: "Note", filters: [filter("a", "RESEMBLES", 1)]),
            querySubscription("ok", type: "Note"),
            querySubscription("in-without-list", type: "Note", filters: [filter("a", "IN", 1)]),
            ["subscriptionID": "no-query", "subscriptionType": "query"],
            querySubscription("bad-event", type: "Note", firesOn: ["explode"]),
            querySubscription("no-field", type: "Note", filters: [["comparator": "EQUALS", "fieldValue": ["value": 1]]]),
            querySubscription("near-without-distance", type: "Note", filters: [filter("where", "NEAR", ["latitude": 1, "longitude": 2], type: "LOCATION")]),
            ["subscriptionID": "bad-type", "subscriptionType": "sometimes"],
            ["subscriptionID": "zone-without-zone", "subscriptionType": "zone"],
            ["subscriptionID": "info-not-object", "subscriptionType": "database", "notificationInfo": "loud"],
        ])
        #expect(reply.status == 200)
        let items = reply.items("subscriptions")
        #expect(items.count == 10)
        for (index, item) in items.enumerated() where index != 1 {
            #expect(item["serverErrorCode"] == "BAD_REQUEST", "item \(index): \(item)")
            #expect(item["reason"]?.stringValue?.contains("operations[\(index)]") == true, "item \(index) names its path: \(item)")
        }
        #expect(items[0]["subscriptionID"] == "bad-comparator")
        #expect(items[1]["subscriptionID"] == "ok")
        let list = try await push.send("private", "subscriptions/list", token: push.userToken, method: .GET)
        #expect(list.items("subscriptions").map { $0["subscriptionID"] } == ["ok"])
        // and the server keeps serving: a save still works and notifies
        #expect(try await push.save([("n1", "Note", ["a": 1])]).status == 200)
    }

    @Test(arguments: StoreKind.available)
    func databaseRulesAndWhoMaySubscribe(kind: StoreKind) async throws {
        let push = try await PushFixture.start(kind)
        defer { Task { await push.stop() } }
        // public database: query subscriptions per user; no zone or database subscriptions
        let reply = try await push.subscribe([
            querySubscription("posts", type: "Post"),
            ["subscriptionID": "zone", "subscriptionType": "zone", "zoneID": ["zoneName": "_defaultZone"]],
            ["subscriptionID": "db", "subscriptionType": "database"],
        ], database: "public")
        let items = reply.items("subscriptions")
        #expect(items[0]["subscriptionID"] == "posts")
        #expect(items[1]["serverErrorCode"] == "BAD_REQUEST")
        #expect(items[2]["serverErrorCode"] == "BAD_REQUEST")
        // anonymous callers cannot subscribe: sign in first
        let anonymous = try await push.send("public", "subscriptions/modify", ["operations": [["operationType": "create", "subscription": querySubscription("x", type: "Post")]]], token: nil)
        #expect(anonymous.status == 421)
        #expect(anonymous.json["serverErrorCode"] == "AUTHENTICATION_REQUIRED")
        let anonymousToken = try await push.send("private", "tokens/create", ["apnsEnvironment": "development"], token: nil)
        #expect(anonymousToken.status == 421)
        // too many operations
        let many = try await push.subscribe((0..<201).map { querySubscription("s\($0)", type: "Note") })
        #expect(many.status == 400)
    }

    @Test(arguments: StoreKind.available)
    func tokensCreateAndRegister(kind: StoreKind) async throws {
        let push = try await PushFixture.start(kind)
        defer { Task { await push.stop() } }
        let created = try await push.send("private", "tokens/create", ["apnsEnvironment": "production"], token: push.userToken)
        #expect(created.status == 200)
        let token = try #require(created.json["apnsToken"]?.stringValue)
        #expect(created.json["apnsEnvironment"] == "production")
        #expect(created.json["webcourierURL"]?.stringValue == "\(push.servers[0].url)/push/1/\(token)")
        // the documented path has no database segment
        let bare = try await PushFixture.request("\(push.servers[0].url)/database/1/\(push.container)/development/tokens/create?ckAPIToken=\(PushFixture.encode(push.apiToken))&ckWebAuthToken=\(PushFixture.encode(push.userToken))",
                                                 method: .POST, body: ["apnsEnvironment": "development"])
        #expect(bare.status == 200)
        #expect(try await push.send("private", "tokens/create", ["apnsEnvironment": "sandbox"], token: push.userToken).status == 400)

        // a device token registered by mei works as a delivery URL for mei …
        let device = String(repeating: "ab", count: 32)
        let registered = try await push.send("private", "tokens/register", ["apnsEnvironment": "development", "apnsToken": .string(device)], token: push.userToken)
        #expect(registered.status == 200)
        #expect(try await push.poll(push.deliveryURL(device, on: 0)).status == 200)
        // … and cannot be taken over by ravi
        let stolen = try await push.send("private", "tokens/register", ["apnsEnvironment": "development", "apnsToken": .string(device)], token: push.otherToken)
        #expect(stolen.status == 400)
        #expect(try await push.send("private", "tokens/register", ["apnsEnvironment": "development"], token: push.userToken).status == 400)
        // unknown tokens are refused at the delivery URL
        let unknown = try await push.poll(push.deliveryURL("nope", on: 0))
        #expect(unknown.status == 401)
        #expect(unknown.json["serverErrorCode"] == "AUTHENTICATION_FAILED")
    }
}
