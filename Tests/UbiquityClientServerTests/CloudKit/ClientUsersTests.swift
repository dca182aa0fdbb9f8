// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityServer
import UbiquityCloudKit

/// The Swift client's user discovery and its honouring of `retryAfter`, against a real
/// `RecordsServer` on loopback.
@Suite struct ClientUsersTests {
    final class Harness: Sendable {
        let url: URL
        let api: String
        let mei: String
        let ravi: String
        let admin: RecordsAdmin
        let logger: Logger
        let task: Task<Void, any Error>
        let directory: URL

        init(configuration: RecordsServerConfiguration = .init()) async throws {
            directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-users-\(UUID().uuidString.prefix(8))")
            var logger = Logger(label: "test.client-users")
            logger.logLevel = .warning
            self.logger = logger
            let store = try SQLiteRecordStore(directory: directory, logger: logger)
            admin = RecordsAdmin(store: store, passwordHasher: PasswordHasher(cost: 4))
            api = try await admin.addContainer("iCloud.org.example.Users")
            mei = try await admin.addUser("mei", email: "mei@example.org", password: nil)
            ravi = try await admin.addUser("ravi", email: "ravi@example.org", password: nil)
            let server = RecordsServer(store: store, configuration: configuration, logger: logger)
            let (stream, continuation) = AsyncStream<String>.makeStream()
            task = Task { try await server.application { continuation.yield($0) }.run() }
            var iterator = stream.makeAsyncIterator()
            url = URL(string: try #require(await iterator.next()))!
        }

        func container(_ token: String, retryPolicy: CloudContainer.RetryPolicy = .init()) -> CloudContainer {
            CloudContainer(identifier: "iCloud.org.example.Users", serverURL: url, credentials: .apiToken(api, webAuthToken: token),
                           logger: logger, retryPolicy: retryPolicy)
        }

        func stop() async {
            task.cancel()
            _ = try? await task.value
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test func discoveryThroughTheClient() async throws {
        let harness = try await Harness()
        defer { Task { await harness.stop() } }
        try await harness.admin.setUser("mei", .init(givenName: "Mei", familyName: "Chen"))
        let mei = harness.container(harness.mei)
        let ravi = harness.container(harness.ravi)
        let meiID = try await mei.fetchUserRecordID()
        #expect(try await mei.applicationPermissionStatus(for: .userDiscoverability) == .initialState)
        #expect(try await ravi.discoverUserIdentity(withEmailAddress: "mei@example.org") == nil)

        #expect(try await mei.requestApplicationPermission(.userDiscoverability) == .granted)
        #expect(try await mei.applicationPermissionStatus(for: .userDiscoverability) == .granted)
        let found = try #require(try await ravi.discoverUserIdentity(withEmailAddress: "Mei@Example.org"))
        #expect(found.userRecordID?.recordName == meiID.recordName)
        #expect(found.lookupInfo?.emailAddress == "Mei@Example.org")
        #expect(found.nameComponents?.givenName == "Mei")
        #expect(found.nameComponents?.familyName == "Chen")
        #expect(found.hasiCloudAccount)
        let byID = try #require(try await ravi.discoverUserIdentity(withUserRecordID: meiID))
        #expect(byID.nameComponents?.givenName == "Mei")
        #expect(try await ravi.discoverAllIdentities().isEmpty)
        #expect(try await ravi.discoverUserIdentity(withUserRecordID: try await ravi.fetchUserRecordID()) == nil)
        let me = try await mei.callerIdentity()
        #expect(me.userRecordID == meiID)
        #expect(me.nameComponents?.givenName == "Mei")

        // the user record is readable from the public database
        let record = try await ravi.publicCloudDatabase.record(for: meiID)
        #expect(record.recordType == "Users")

        #expect(try await mei.revokeApplicationPermission(.userDiscoverability) == .denied)
        #expect(try await ravi.discoverUserIdentity(withEmailAddress: "mei@example.org") == nil)
        // anonymous callers cannot discover
        let anonymous = CloudContainer(identifier: "iCloud.org.example.Users", serverURL: harness.url, credentials: .apiToken(harness.api), logger: harness.logger)
        await #expect(throws: CloudKitError.self) { try await anonymous.discoverUserIdentity(withEmailAddress: "mei@example.org") }
    }

    @Test func throttledRequestsAreRetriedAfterTheServersDelay() async throws {
        // one token per 20 s: a loaded machine's pause between the first two calls refills nothing
        let harness = try await Harness(configuration: RecordsServerConfiguration(rateLimit: 0.05, rateLimitBurst: 1))
        defer { Task { await harness.stop() } }
        let patient = harness.container(harness.mei)
        let impatient = harness.container(harness.mei, retryPolicy: .never)
        _ = try await patient.fetchUserRecordID()
        // the same user again at once: over the limit
        let error = await #expect(throws: CloudKitError.self) { try await impatient.fetchUserRecordID() }
        #expect(error?.code == .requestRateLimited)
        #expect(error?.serverErrorCode == "THROTTLED")
        #expect(error.flatMap(\.retryAfterSeconds).map { (1...20).contains($0) } == true)
        // the default policy waits (at most 20 s, under its 30 s cap) and gets through
        let id = try await patient.fetchUserRecordID()
        #expect(id.recordName.hasPrefix("_"))
    }
}
