// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityServer

/// What notifications changes make (counted), and their delivery by long-poll: firesOn,
/// firesOnce, predicates, zone and database subscriptions, the public database, catching up
/// after being offline, pruning and resync, and two servers on one store.
@Suite struct PushDeliveryTests {
    @Test(arguments: StoreKind.available)
    func onlyMatchingChangesNotifyWithTheRightReasons(kind: StoreKind) async throws {
        let push = try await PushFixture.start(kind)
        defer { Task { await push.stop() } }
        _ = try await push.subscribe([
            querySubscription("urgent", type: "Note", filters: [filter("priority", "GREATER_THAN", 5)], firesOn: ["create", "update"],
                              info: ["desiredKeys": ["title"]]),
            querySubscription("deleted-tasks", type: "Task", firesOn: ["delete"]),
        ])
        let (token, url) = try await push.pushToken()
        #expect(!token.isEmpty)
        let start = try await push.head(url)

        _ = try await push.save([("a", "Note", ["priority": 9, "title": "boiler"])])      // create, matches → 1
        _ = try await push.save([("b", "Note", ["priority": 1])])                         // create, no match
        _ = try await push.save([("a", "Note", ["priority": 7, "title": "boiler!"])])     // update, matches → 2
        _ = try await push.save([("a", "Note", ["priority": 2])])                         // update out of the predicate
        _ = try await push.save([("c", "Other", ["priority": 9])])                        // other type
        _ = try await push.delete(["b"])                                                  // delete: not in firesOn
        _ = try await push.save([("t", "Task", [:])])                                     // Task create: not in firesOn
        _ = try await push.delete(["t"])                                                  // Task delete → 3
        _ = try await push.save([("d", "Note", ["priority": 6]), ("e", "Note", ["priority": 4]), ("f", "Note", ["priority": 100])]) // 4, 5

        let (payloads, _) = try await push.collect(url, from: start, count: 5)
        let queries = payloads.compactMap { $0.ck("qry") }
        #expect(queries.count == 5)
        #expect(queries.map { $0["rid"]?.stringValue ?? "" } == ["a", "a", "t", "d", "f"])
        #expect(queries.map { $0["fo"] } == [1, 2, 3, 1, 1])
        #expect(queries.map { $0["sid"]?.stringValue ?? "" } == ["urgent", "urgent", "deleted-tasks", "urgent", "urgent"])
        #expect(queries[0]["dbs"] == 2)
        #expect(queries[0]["zid"] == "_defaultZone")
        #expect(queries[0]["af"]?["title"] == "boiler")
        #expect(Set(payloads.compactMap { $0["ck"]?["nid"]?.stringValue }).count == 5)
        #expect(payloads.allSatisfy { $0["ck"]?["cid"]?.stringValue == push.container && $0["aps"]?["content-available"] == 1 })
        // and nothing more arrives
        let after = try await push.poll(url, position: start + 5, timeout: 0)
        #expect(after.items("notifications").isEmpty)
    }

    @Test(arguments: StoreKind.available)
    func firesOnceFiresOnceAndIsDeleted(kind: StoreKind) async throws {
        let push = try await PushFixture.start(kind)
        defer { Task { await push.stop() } }
        _ = try await push.subscribe([querySubscription("once", type: "Note", firesOnce: true)])
        let (_, url) = try await push.pushToken()
        let start = try await push.head(url)
        _ = try await push.save([("a", "Note", [:]), ("b", "Note", [:])])
        _ = try await push.save([("c", "Note", [:])])
        let (payloads, _) = try await push.collect(url, from: start, count: 2, rounds: 3)
        #expect(payloads.count == 1)
        #expect(payloads.first?.ck("qry")?["rid"] == "a")
        let list = try await push.send("private", "subscriptions/list", token: push.userToken, method: .GET)
        #expect(list.items("subscriptions").isEmpty)
    }

    @Test(arguments: StoreKind.available)
    func zoneAndDatabaseSubscriptionsNotifyOncePerChangedZone(kind: StoreKind) async throws {
        let push = try await PushFixture.start(kind)
        defer { Task { await push.stop() } }
        try await push.createZone("Work")
        try await push.createZone("Home")
        _ = try await push.subscribe([
            ["subscriptionID": "work", "subscriptionType": "zone", "zoneID": ["zoneName": "Work"]],
            ["subscriptionID": "db", "subscriptionType": "database"],
        ])
        let (_, url) = try await push.pushToken()
        let start = try await push.head(url)
        _ = try await push.save([("w1", "Note", [:]), ("w2", "Note", [:]), ("w3", "Note", [:])], zone: "Work") // fet + met
        _ = try await push.save([("h1", "Note", [:])], zone: "Home")                                          // met
        _ = try await push.delete(["w1"], zone: "Work")                                                      // fet + met
        try await push.createZone("Garden")                                                                  // met
        _ = try await push.save([("other", "Note", [:])], zone: "Work", token: push.otherToken)              // ravi's database: nothing (zone missing there)
        let (payloads, _) = try await push.collect(url, from: start, count: 6)
        let zones = payloads.compactMap { $0.ck("fet") }
        let databases = payloads.compactMap { $0.ck("met") }
        #expect(zones.count == 2)
        #expect(databases.count == 4)
        #expect(zones.allSatisfy { $0["zid"] == "Work" && $0["sid"] == "work" && $0["dbs"] == 2 })
        #expect(databases.allSatisfy { $0["sid"] == "db" })
    }

    @Test(arguments: StoreKind.available)
    func publicDatabaseSubscribersHearOtherUsersSaves(kind: StoreKind) async throws {
        let push = try await PushFixture.start(kind)
        defer { Task { await push.stop() } }
        _ = try await push.subscribe([querySubscription("posts", type: "Post", filters: [filter("topic", "EQUALS", "swift")])], database: "public")
        let (_, url) = try await push.pushToken()
        let start = try await push.head(url)
        _ = try await push.save([("p1", "Post", ["topic": "swift"]), ("p2", "Post", ["topic": "rust"])], database: "public", token: push.otherToken)
        let (payloads, _) = try await push.collect(url, from: start, count: 1)
        #expect(payloads.count == 1)
        #expect(payloads.first?.ck("qry")?["dbs"] == 1)
        #expect(payloads.first?.ck("qry")?["zoid"] == "_defaultOwner")
        // ravi subscribed to nothing: his log is empty
        let (_, otherURL) = try await push.pushToken(token: push.otherToken)
        #expect(try await push.poll(otherURL, position: 0).items("notifications").isEmpty)
    }

    @Test(arguments: StoreKind.available)
    func anOfflineClientCatchesUpFromTheLog(kind: StoreKind) async throws {
        let push = try await PushFixture.start(kind)
        defer { Task { await push.stop() } }
        _ = try await push.subscribe([querySubscription("all", type: "Note")])
        let (_, url) = try await push.pushToken()
        let start = try await push.head(url)
        for index in 0..<5 { _ = try await push.save([("n\(index)", "Note", ["i": .integer(Int64(index))])]) }
        // back online: everything since the last position, at once, in order
        let caughtUp = try await push.poll(url, position: start, timeout: 5)
        let names = caughtUp.items("notifications").compactMap { $0.ck("qry")?["rid"]?.stringValue }
        #expect(names == ["n0", "n1", "n2", "n3", "n4"])
        #expect(caughtUp.json["position"] == .integer(start + 5))
        // resuming by notification ID gives what came after it
        let second = try #require(caughtUp.items("notifications")[1]["ck"]?["nid"]?.stringValue)
        let resumed = try await push.poll(url, since: second, timeout: 5)
        #expect(resumed.items("notifications").compactMap { $0.ck("qry")?["rid"]?.stringValue } == ["n2", "n3", "n4"])
        // an unknown resume point says: resync with change tokens
        let unknown = try await push.poll(url, since: "00000000-0000-0000-0000-000000000000", timeout: 5)
        #expect(unknown.json["resync"] == true)
        #expect(unknown.items("notifications").isEmpty)
    }

    @Test(arguments: StoreKind.available)
    func aClientBehindThePrunedLogIsToldToResync(kind: StoreKind) async throws {
        let push = try await PushFixture.start(kind, push: PushConfiguration(retainPerUser: 3))
        defer { Task { await push.stop() } }
        _ = try await push.subscribe([querySubscription("all", type: "Note")])
        let (_, url) = try await push.pushToken()
        let start = try await push.head(url)
        for index in 0..<6 { _ = try await push.save([("n\(index)", "Note", [:])]) }
        let behind = try await push.poll(url, position: start, timeout: 5)
        #expect(behind.json["resync"] == true)
        #expect(behind.json["position"] == .integer(start + 3))
        // from there on, what the log still has
        let rest = try await push.poll(url, position: start + 3, timeout: 5)
        #expect(rest.items("notifications").compactMap { $0.ck("qry")?["rid"]?.stringValue } == ["n3", "n4", "n5"])
    }

    @Test(arguments: StoreKind.available)
    func aLongPollWaitsForTheNextSave(kind: StoreKind) async throws {
        let push = try await PushFixture.start(kind)
        defer { Task { await push.stop() } }
        _ = try await push.subscribe([querySubscription("all", type: "Note")])
        let (_, url) = try await push.pushToken()
        let start = try await push.head(url)
        async let waiting = push.poll(url, position: start, timeout: 20)
        try await Task.sleep(for: .milliseconds(200))
        _ = try await push.save([("late", "Note", [:])])
        let reply = try await waiting
        #expect(reply.items("notifications").first?.ck("qry")?["rid"] == "late")
    }

    /// Two servers with stores of their own on one location (as two processes): a save through
    /// one reaches a subscriber waiting on the other (PostgreSQL NOTIFY; SQLite datagrams).
    @Test(arguments: StoreKind.available)
    func aSaveOnOneServerReachesASubscriberOnAnother(kind: StoreKind) async throws {
        let push = try await PushFixture.start(kind, servers: 2, push: PushConfiguration(sweepInterval: 3600))
        defer { Task { await push.stop() } }
        _ = try await push.subscribe([querySubscription("all", type: "Note")], on: 0)
        let (token, _) = try await push.pushToken(on: 0)
        let url = push.deliveryURL(token, on: 1)
        let start = try await push.head(url)
        async let waiting = push.poll(url, position: start, timeout: 30)
        try await Task.sleep(for: .milliseconds(300))
        _ = try await push.save([("x", "Note", [:])], on: 0)
        let reply = try await waiting
        #expect(reply.items("notifications").first?.ck("qry")?["rid"] == "x")
    }
}
