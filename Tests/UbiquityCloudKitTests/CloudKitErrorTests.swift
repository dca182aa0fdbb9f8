// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityCloudKit
import UbiquityWire

@Suite("CloudKit errors")
struct CloudKitErrorTests {
    typealias Support = CloudKitTestSupport

    @Test("CKError codes have CloudKit's raw values")
    func rawValues() {
        #expect(CloudKitError.Code.internalError.rawValue == 1)
        #expect(CloudKitError.Code.partialFailure.rawValue == 2)
        #expect(CloudKitError.Code.serverRecordChanged.rawValue == 14)
        #expect(CloudKitError.Code.changeTokenExpired.rawValue == 21)
        #expect(CloudKitError.Code.limitExceeded.rawValue == 27)
        #expect(CloudKitError.Code.referenceViolation.rawValue == 31)
        #expect(CloudKitError.Code.participantAlreadyInvited.rawValue == 37)
        #expect(CloudKitError.Code.allCases.map(\.rawValue) == Array(1...37))
        #expect(CloudKitError.Code.zoneNotFound.description == "zoneNotFound")
    }

    static let mappings: [(status: Int, body: String, code: CloudKitError.Code)] = [
        (403, #"{"serverErrorCode":"ACCESS_DENIED","reason":"no"}"#, .permissionFailure),
        (400, #"{"serverErrorCode":"ATOMIC_ERROR","reason":"batch"}"#, .batchRequestFailed),
        (401, #"{"serverErrorCode":"AUTHENTICATION_FAILED","reason":"Authentication failed"}"#, .notAuthenticated),
        (421, #"{"serverErrorCode":"AUTHENTICATION_REQUIRED","reason":"request needs authorization","redirectURL":"https://sign.in/x"}"#, .notAuthenticated),
        (400, #"{"serverErrorCode":"BAD_REQUEST","reason":"operations[0].record: required"}"#, .invalidArguments),
        (400, #"{"serverErrorCode":"BAD_REQUEST","reason":"limit exceeded: 201 operations"}"#, .limitExceeded),
        (409, #"{"serverErrorCode":"CONFLICT","reason":"tag"}"#, .serverRecordChanged),
        (409, #"{"serverErrorCode":"EXISTS","reason":"exists"}"#, .serverRecordChanged),
        (500, #"{"serverErrorCode":"INTERNAL_ERROR","reason":"oops"}"#, .internalError),
        (404, #"{"serverErrorCode":"NOT_FOUND","reason":"none"}"#, .unknownItem),
        (413, #"{"serverErrorCode":"QUOTA_EXCEEDED","reason":"full"}"#, .quotaExceeded),
        (429, #"{"serverErrorCode":"THROTTLED","reason":"slow down","retryAfter":7}"#, .requestRateLimited),
        (503, #"{"serverErrorCode":"TRY_AGAIN_LATER","reason":"busy","retryAfter":3}"#, .serviceUnavailable),
        (412, #"{"serverErrorCode":"VALIDATING_REFERENCE_ERROR","reason":"ref"}"#, .referenceViolation),
        (404, #"{"serverErrorCode":"ZONE_NOT_FOUND","reason":"zone"}"#, .zoneNotFound),
        (409, #"{"serverErrorCode":"UNIQUE_FIELD_ERROR","reason":"unique"}"#, .constraintViolation),
        (410, #"{"serverErrorCode":"CHANGE_TOKEN_EXPIRED","reason":"expired"}"#, .changeTokenExpired),
        (400, #"{"serverErrorCode":"SOMETHING_NEW","reason":"?"}"#, .serverRejectedRequest),
        (502, "<html>Bad Gateway</html>", .serviceUnavailable),
        (404, "not here", .badContainer),
        (500, "", .internalError),
    ]

    @Test("whole-request errors map to CKError codes", arguments: mappings)
    func wholeRequest(_ mapping: (status: Int, body: String, code: CloudKitError.Code)) async throws {
        let fake = FakeCloudKitTransport(responses: [(mapping.status, mapping.body)])
        let error = await #expect(throws: CloudKitError.self) {
            try await Support.container(fake).privateCloudDatabase.record(for: Record.ID(recordName: "a"))
        }
        #expect(error?.code == mapping.code, "\(mapping.body)")
        #expect(error?.httpStatus == mapping.status)
        if let wire = WireError(json: (try? Support.json(mapping.body)) ?? .null) {
            #expect(error?.serverErrorCode == wire.unknownCode ?? wire.code.rawValue)
            #expect(error?.reason == wire.reason)
        }
    }

    @Test("retry delays, redirect URL and the description are kept")
    func extras() async throws {
        let throttled = FakeCloudKitTransport(responses: [(429, #"{"serverErrorCode":"THROTTLED","reason":"slow down","retryAfter":7,"uuid":"u"}"#)])
        let error = await #expect(throws: CloudKitError.self) {
            try await Support.container(throttled).privateCloudDatabase.record(for: Record.ID(recordName: "a"))
        }
        #expect(error?.retryAfterSeconds == 7)
        #expect(error?.uuid == "u")
        #expect(error?.isRetryable == true)
        #expect(error?.description == "requestRateLimited: slow down [THROTTLED] (retry after 7 s)")
        let auth = FakeCloudKitTransport(responses: [(421, #"{"serverErrorCode":"AUTHENTICATION_REQUIRED","reason":"sign in","redirectURL":"https://sign.in/x"}"#)])
        let authError = await #expect(throws: CloudKitError.self) { try await Support.container(auth).userRecordID() }
        #expect(authError?.redirectURL == "https://sign.in/x")
        #expect(authError?.isRetryable == false)
    }

    @Test("per-item errors map like whole-request ones")
    func perItem() async throws {
        for mapping in Self.mappings where mapping.body.hasPrefix("{") {
            let item = mapping.body.replacingOccurrences(of: "{", with: #"{"recordName":"a","#, options: [], range: mapping.body.startIndex..<mapping.body.index(after: mapping.body.startIndex))
            let fake = FakeCloudKitTransport(json: #"{"records":[\#(item)]}"#)
            let results = try await Support.container(fake).privateCloudDatabase.records(for: [Record.ID(recordName: "a")])
            #expect((results[Record.ID(recordName: "a")]?.error as? CloudKitError)?.code == mapping.code, "\(item)")
        }
    }

    @Test("transport failures are network errors; a server answer that is not JSON is internalError")
    func transport() async throws {
        let failing = FakeCloudKitTransport { _, _ in throw URLError(.networkConnectionLost) }
        let error = await #expect(throws: CloudKitError.self) {
            try await Support.container(failing).privateCloudDatabase.record(for: Record.ID(recordName: "a"))
        }
        #expect(error?.code == .networkFailure)
        let unreachable = FakeCloudKitTransport { _, _ in throw CloudKitError(.networkUnavailable, "refused") }
        let unavailable = await #expect(throws: CloudKitError.self) {
            try await Support.container(unreachable).privateCloudDatabase.record(for: Record.ID(recordName: "a"))
        }
        #expect(unavailable?.code == .networkUnavailable)
        let garbage = FakeCloudKitTransport(json: "<html>")
        let bad = await #expect(throws: CloudKitError.self) {
            try await Support.container(garbage).privateCloudDatabase.record(for: Record.ID(recordName: "a"))
        }
        #expect(bad?.code == .internalError)
    }

    @Test("the real transport reports a refused connection as networkUnavailable")
    func refused() async throws {
        // Port 1 on localhost: nothing listens there.
        let container = CloudContainer(identifier: "iCloud.test", serverURL: URL(string: "http://127.0.0.1:1")!,
                                       credentials: .apiToken("t"))
        let error = await #expect(throws: CloudKitError.self) { try await container.publicCloudDatabase.allRecordZones() }
        #expect(error?.code == .networkUnavailable, "\(String(describing: error))")
    }
}
