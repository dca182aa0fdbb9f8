// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// Device sign-in (`/auth/device`, `ubiq account login`): device tokens stand in for the API
/// token in any container, are not rotated, and stop working once signed out.
@Suite struct DeviceAuthHTTPTests {
    static func post(_ server: ServerFixture, _ path: String, _ body: String) async throws -> (status: Int, json: [String: JSONValue]) {
        var request = HTTPClientRequest(url: server.url + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let buffer = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), (try? JSONValue.parse(Data(buffer: buffer)))?.objectValue ?? [:])
    }

    @Test(arguments: StoreKind.available)
    func signInUseAnyContainerAndSignOut(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let wrong = try await Self.post(server, "/auth/device", #"{"userName":"mei","password":"wrong","deviceName":"laptop"}"#)
        #expect(wrong.status == 401)
        #expect(wrong.json["serverErrorCode"]?.stringValue == "AUTHENTICATION_FAILED")
        #expect(try await Self.post(server, "/auth/device", #"{"userName":"nobody","password":"x"}"#).status == 401)
        #expect(try await Self.post(server, "/auth/device", "not json").status == 400)
        #expect(try await Self.post(server, "/auth/device", #"{"userName":"mei"}"#).status == 400)

        let signedIn = try await Self.post(server, "/auth/device", #"{"userName":"mei","password":"correct horse","deviceName":"laptop"}"#)
        #expect(signedIn.status == 200)
        let token = try #require(signedIn.json["webAuthToken"]?.stringValue)
        #expect(SecretToken.isDeviceToken(token))
        #expect(signedIn.json["userName"]?.stringValue == "mei")

        // the same user as the password's web token, with no API token and no rotation
        let me = try await server.send(.GET, "public", "users/current", token: server.userToken)
        let viaDevice = try await server.send(.GET, "public", "users/current", token: token, apiToken: "")
        #expect(viaDevice.status == 200)
        #expect(viaDevice.json["userRecordName"] == me.json["userRecordName"])
        #expect(viaDevice.headers["x-apple-cloudkit-web-auth-token"] == nil)

        // a container nobody registered is created on first use, for the signed-in user's data
        let newApp = "iCloud.org.example.NewApp"
        let body: JSONValue = ["operations": [["operationType": "create", "record": ["recordType": "Note", "recordName": "n1", "fields": ["t": ["value": "hi"]]]]]]
        let saved = try await server.send("private", "records/modify", body, token: token, apiToken: "",
                                          rawPath: server.path("private", "records/modify", container: newApp))
        #expect(saved.status == 200)
        #expect(saved.items().first?["recordChangeTag"] != nil)
        #expect(try await server.store.read { tx in try await tx.containerExists(newApp) })

        // an ordinary web-auth token still needs the API token
        #expect(try await server.send(.GET, "public", "users/current", token: server.userToken, apiToken: "").status == 401)

        let verified = try await Self.post(server, "/auth/device/verify", #"{"webAuthToken":"\#(token)"}"#)
        #expect(verified.json["userName"]?.stringValue == "mei")
        #expect(try await Self.post(server, "/auth/device/verify", #"{"webAuthToken":"ubqdev_forged"}"#).status == 401)
        // a live web-auth token is not a device token: refused, saying so
        let webAuth = try await Self.post(server, "/auth/device/verify", #"{"webAuthToken":"\#(server.userToken)"}"#)
        #expect(webAuth.status == 401)
        #expect(webAuth.json["reason"]?.stringValue?.contains("not a device token") == true)

        #expect(try await Self.post(server, "/auth/device/signout", #"{"webAuthToken":"\#(token)"}"#).status == 200)
        let after = try await server.send(.GET, "public", "users/current", token: token, apiToken: "")
        #expect(after.status == 421)
        #expect(try await Self.post(server, "/auth/device/verify", #"{"webAuthToken":"\#(token)"}"#).status == 401)
        // signing out twice is fine
        #expect(try await Self.post(server, "/auth/device/signout", #"{"webAuthToken":"\#(token)"}"#).status == 200)
    }

    /// Wrong passwords are slowed: after five in a row for one account, even the right one waits.
    @Test func passwordGuessingIsSlowed() async throws {
        let server = try await ServerFixture.start(.sqlite)
        defer { Task { await server.stop() } }
        for _ in 0..<6 {
            #expect(try await Self.post(server, "/auth/device", #"{"userName":"mei","password":"guess"}"#).status == 401)
        }
        let blocked = try await Self.post(server, "/auth/device", #"{"userName":"mei","password":"correct horse"}"#)
        #expect(blocked.status == 429)
        #expect(blocked.json["serverErrorCode"]?.stringValue == "THROTTLED")
        #expect((blocked.json["retryAfter"]?.doubleValue ?? 0) >= 1)
        // another account from the same address is not held back by mei's
        #expect(try await Self.post(server, "/auth/device", #"{"userName":"ravi","password":"x"}"#).status == 401)
    }

    @Test func backoffDoublesAndForgets() {
        var backoff = SignInBackoff(freeFailures: 2, maximumDelay: 8, maximumKeys: 3)
        backoff.failed("k", now: 0)
        backoff.failed("k", now: 0)
        #expect(backoff.wait("k", now: 0) == nil)
        backoff.failed("k", now: 0)
        #expect(backoff.wait("k", now: 0) == 1)
        backoff.failed("k", now: 1)
        #expect(backoff.wait("k", now: 1) == 2)
        for _ in 0..<10 { backoff.failed("k", now: 3) }
        #expect(backoff.wait("k", now: 3) == 8)  // at most maximumDelay
        #expect(backoff.wait("k", now: 11) == nil)
        // a quiet spell of maximumDelay starts it afresh
        backoff.failed("k", now: 30)
        #expect(backoff.wait("k", now: 30) == nil)
        backoff.succeeded("k")
        #expect(backoff.count == 0)
        // bounded
        for key in ["a", "b", "c", "d", "e"] { backoff.failed(key, now: 100) }
        #expect(backoff.count <= 3)
    }
}
