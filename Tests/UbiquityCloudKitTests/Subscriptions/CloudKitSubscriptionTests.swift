// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
@testable import UbiquityCloudKit
import UbiquityCore
import UbiquityWire

/// The client's subscriptions and notifications against a fake transport: the JSON it sends,
/// the answers it reads, the payloads it parses, and the long-poll loop (resume position,
/// a refused token replaced).
@Suite struct CloudKitSubscriptionTests {
    @Test func savingAQuerySubscriptionSendsCloudKitsShape() async throws {
        let transport = FakeCloudKitTransport { request, _ in
            let body = try JSONValue.parse(request.body)
            let subscription = body.objectValue?["operations"]?.arrayValue?.first?.objectValue?["subscription"] ?? .null
            return CloudKitHTTPResponse(status: 200, body: JSONValue.object(["subscriptions": .array([subscription])]).serialized())
        }
        let database = CloudKitTestSupport.container(transport).privateCloudDatabase
        var subscription = QuerySubscription(recordType: "Note", predicate: try Query.Predicate(format: "priority > 5 AND tags CONTAINS 'home'"),
                                             subscriptionID: "urgent", options: [.firesOnRecordCreation, .firesOnRecordDeletion, .firesOnce])
        subscription.notificationInfo = NotificationInfo(alertBody: "hi", shouldSendContentAvailable: true, desiredKeys: ["title"])
        subscription.zoneID = RecordZone.ID(zoneName: "Notes")
        let saved = try await database.save(subscription)
        let request = transport.requests[0]
        #expect(request.path.hasSuffix("/private/subscriptions/modify"))
        let sent = try transport.body().objectValue?["operations"]?.arrayValue?.first?.objectValue
        #expect(sent?["operationType"] == "create")
        let body = try #require(sent?["subscription"]?.objectValue)
        #expect(body["subscriptionType"] == "query")
        #expect(body["firesOn"] == ["create", "delete"])
        #expect(body["firesOnce"] == true)
        #expect(body["zoneWide"] == false)
        #expect(body["zoneID"]?.objectValue?["zoneName"] == "Notes")
        #expect(body["notificationInfo"]?.objectValue?["desiredKeys"] == ["title"])
        let filters = body["query"]?.objectValue?["filterBy"]?.arrayValue ?? []
        #expect(filters.map { $0.objectValue?["comparator"] } == ["GREATER_THAN", "LIST_CONTAINS"])
        let roundTrip = try #require(saved as? QuerySubscription)
        #expect(roundTrip.subscriptionID == "urgent")
        #expect(roundTrip.querySubscriptionOptions == [.firesOnRecordCreation, .firesOnRecordDeletion, .firesOnce])
        #expect(roundTrip.zoneID?.zoneName == "Notes")
        #expect(roundTrip.notificationInfo?.alertBody == "hi")
    }

    @Test func itemErrorsAndKindsAreRead() async throws {
        let transport = FakeCloudKitTransport { request, _ in
            if request.path.hasSuffix("subscriptions/list") {
                return CloudKitHTTPResponse(status: 200, body: Data(#"""
                    {"subscriptions":[{"subscriptionID":"z","subscriptionType":"zone","zoneID":{"zoneName":"Work"}},
                                      {"subscriptionID":"d","subscriptionType":"database"},
                                      {"subscriptionID":"q","subscriptionType":"query","query":{"recordType":"Post","filterBy":[]},"firesOn":["update"],"zoneWide":true}]}
                    """#.utf8))
            }
            return CloudKitHTTPResponse(status: 200, body: Data(#"{"subscriptions":[{"subscriptionID":"bad","serverErrorCode":"BAD_REQUEST","reason":"operations[0].subscription.query: required"}]}"#.utf8))
        }
        let database = CloudKitTestSupport.container(transport).privateCloudDatabase
        let all = try await database.allSubscriptions()
        #expect(transport.requests[0].method == "GET")
        #expect(all.map(\.subscriptionType) == [.recordZone, .database, .query])
        #expect((all[0] as? RecordZoneSubscription)?.zoneID.zoneName == "Work")
        #expect((all[2] as? QuerySubscription)?.querySubscriptionOptions == [.firesOnRecordUpdate])
        await #expect(throws: CloudKitError.self) {
            try await database.save(DatabaseSubscription(subscriptionID: "bad"))
        }
        do {
            try await database.save(DatabaseSubscription(subscriptionID: "bad"))
        } catch let error as CloudKitError {
            #expect(error.code == .invalidArguments)
        }
        // an untranslatable predicate fails before anything is sent
        let before = transport.requests.count
        let (results, _) = try await database.modifySubscriptions(saving: [QuerySubscription(query: Query(recordType: "Note", predicate: "a == 1 OR b == 2"), subscriptionID: "or")], deleting: [])
        #expect(transport.requests.count == before)
        #expect(throws: CloudKitError.self) { try results["or"]?.get() }
    }

    @Test func payloadsBecomeApplesNotificationClasses() throws {
        let query = CloudKitNotification.from(payload: try JSONValue.parse(Data(#"""
            {"aps":{"alert":{"body":"hello"},"badge":1},"ck":{"ce":2,"cid":"iCloud.c","ckuserid":"_u","nid":"N1",
             "qry":{"dbs":1,"fo":3,"rid":"r1","sid":"s1","zid":"_defaultZone","zoid":"_defaultOwner","af":{"title":"t"}}}}
            """#.utf8)), position: 7)
        let notification = try #require(query as? QueryNotification)
        #expect(notification.notificationType == .query)
        #expect(notification.queryNotificationReason == .recordDeleted)
        #expect(notification.recordID?.recordName == "r1")
        #expect(notification.databaseScope == .public)
        #expect(notification.recordFields?["title"] == "t")
        #expect(notification.alertBody == "hello")
        #expect(notification.badge == 1)
        #expect(notification.notificationID == "N1")
        #expect(notification.position == 7)
        #expect(notification.subscriptionOwnerUserRecordID?.recordName == "_u")
        let zone = CloudKitNotification.from(payload: try JSONValue.parse(Data(#"{"ck":{"nid":"N2","fet":{"dbs":2,"sid":"s","zid":"Work","zoid":"_u"}}}"#.utf8)))
        #expect((zone as? RecordZoneNotification)?.recordZoneID?.zoneName == "Work")
        let database = CloudKitNotification.from(payload: try JSONValue.parse(Data(#"{"ck":{"nid":"N3","met":{"dbs":3,"sid":"d"}}}"#.utf8)))
        #expect((database as? DatabaseNotification)?.databaseScope == .shared)
        #expect(CloudKitNotification.from(payload: .object(["aps": .object([:])])) == nil)
    }

    @Test func longPollResumesFromTheLastPositionAndReplacesARefusedToken() async throws {
        let polls = Mutex<[String]>([])
        let transport = FakeCloudKitTransport { request, _ in
            if request.path.hasSuffix("tokens/create") {
                let count = polls.withLock { $0.filter { $0 == "token" }.count }
                polls.withLock { $0.append("token") }
                let token = "tok\(count)"
                return CloudKitHTTPResponse(status: 200, body: Data(#"{"apnsEnvironment":"development","apnsToken":"\#(token)","webcourierURL":"https://ck.example.net/push/1/\#(token)"}"#.utf8))
            }
            let position = request.query.first { $0.name == "position" }?.value ?? "-"
            polls.withLock { $0.append("\(request.path)@\(position)") }
            let n = polls.withLock { $0.count }
            switch n {
            case 2: // first poll: two notifications, ending at position 12
                return CloudKitHTTPResponse(status: 200, body: Data(#"{"notifications":[{"ck":{"nid":"a","qry":{"fo":1,"rid":"r1","sid":"s"}}},{"ck":{"nid":"b","qry":{"fo":2,"rid":"r2","sid":"s"}}}],"position":12,"resync":false}"#.utf8))
            case 3: // the token was revoked
                return CloudKitHTTPResponse(status: 401, body: Data(#"{"serverErrorCode":"AUTHENTICATION_FAILED","reason":"unknown token"}"#.utf8))
            case 5:
                return CloudKitHTTPResponse(status: 200, body: Data(#"{"notifications":[],"position":20,"resync":true}"#.utf8))
            default:
                return CloudKitHTTPResponse(status: 200, body: Data(#"{"notifications":[{"ck":{"nid":"c","met":{"dbs":2,"sid":"d"}}}],"position":21,"resync":false}"#.utf8))
            }
        }
        let container = CloudKitTestSupport.container(transport)
        var received: [CloudKitNotification] = []
        let connections = Mutex(0)
        for try await notification in container.notifications(since: .init(position: 10), transport: .longPoll,
                                                               onConnect: { connections.withLock { $0 += 1 } }) {
            received.append(notification)
            if received.count == 4 { break }
        }
        #expect(received.map(\.notificationID) == ["a", "b", nil, "c"])
        #expect(received.map(\.position) == [11, 12, 20, 21])
        #expect(received[2].notificationType == .resyncRequired)
        let log = polls.withLock { $0 }
        #expect(log[0] == "token")
        #expect(log[1] == "/push/1/tok0@10")
        #expect(log[2] == "/push/1/tok0@12")
        #expect(log[3] == "token")
        #expect(log[4] == "/push/1/tok1@12")
        #expect(log[5] == "/push/1/tok1@20")
        // connected twice: at the first poll, and again with the new token
        #expect(connections.withLock { $0 } == 2)
    }
}
