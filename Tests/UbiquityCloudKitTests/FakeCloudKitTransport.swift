// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
import UbiquityCore
@testable import UbiquityCloudKit
import UbiquityWire

/// A ``CloudKitTransport`` that records every request and answers with a handler (or a queue
/// of canned responses), so tests check the exact JSON the client sends and replay
/// CloudKit-shaped answers.
final class FakeCloudKitTransport: CloudKitTransport {
    typealias Handler = @Sendable (CloudKitHTTPRequest, Int) throws -> CloudKitHTTPResponse

    private let requestsSent = Mutex<[CloudKitHTTPRequest]>([])
    private let handler: Handler

    /// Answers each request with `handler(request, index)`.
    init(_ handler: @escaping Handler) {
        self.handler = handler
    }

    /// Answers the requests in order with `responses` (JSON text, status 200 unless given).
    convenience init(responses: [(Int, String)], headers: [[String: String]] = []) {
        self.init { _, index in
            guard index < responses.count else { throw CloudKitError(.networkFailure, "no canned response for request \(index)") }
            return CloudKitHTTPResponse(status: responses[index].0, headers: index < headers.count ? headers[index] : [:],
                                        body: Data(responses[index].1.utf8))
        }
    }

    /// Answers every request with 200 and `json`.
    convenience init(json: String) {
        self.init(responses: [(200, json)])
    }

    func send(_ request: CloudKitHTTPRequest) async throws -> CloudKitHTTPResponse {
        let index = requestsSent.withLock { requests in
            requests.append(request)
            return requests.count - 1
        }
        return try handler(request, index)
    }

    /// Every request so far.
    var requests: [CloudKitHTTPRequest] { requestsSent.withLock { $0 } }

    /// The body of request `index` as JSON (whole numbers as integers, see
    /// ``JSONValue/wholeNumbersAsIntegers``).
    func body(_ index: Int = 0) throws -> JSONValue {
        try JSONValue.parse(requests[index].body).wholeNumbersAsIntegers
    }
}

enum CloudKitTestSupport {
    static let serverURL = URL(string: "https://ck.example.net")!

    /// A container on the fake transport with an API token and a web-auth token; it does not
    /// retry throttled requests unless given a policy (the canned responses are one per request).
    static func container(_ transport: FakeCloudKitTransport, credentials: CloudContainer.Credentials = .apiToken("api-token", webAuthToken: "web-token"),
                          serverURL: URL = serverURL, retryPolicy: CloudContainer.RetryPolicy = .never) -> CloudContainer {
        CloudContainer(identifier: "iCloud.com.example.notes", serverURL: serverURL, environment: .development,
                       credentials: credentials, transport: transport, retryPolicy: retryPolicy)
    }

    /// Parses JSON text (for expected values), whole numbers as integers.
    static func json(_ text: String) throws -> JSONValue {
        try JSONValue.parse(Data(text.utf8)).wholeNumbersAsIntegers
    }

    /// A response record dictionary as the server writes it.
    static func recordJSON(_ name: String, type: String = "Artist", tag: String = "1e", fields: String = "{}", zone: String = "_defaultZone") -> String {
        """
        {"recordName":"\(name)","recordType":"\(type)","fields":\(fields),"pluginFields":{},"recordChangeTag":"\(tag)",
         "created":{"timestamp":1422312944104,"userRecordName":"_9a065b60313a5937e75e03ed8e8f383d","deviceID":"iCloud"},
         "modified":{"timestamp":1422312944105,"userRecordName":"_9a065b60313a5937e75e03ed8e8f383d","deviceID":"iCloud"},
         "deleted":false,"zoneID":{"zoneName":"\(zone)","ownerRecordName":"_9a065b60313a5937e75e03ed8e8f383d"}}
        """
    }
}

extension JSONValue {
    /// The value with whole-valued doubles as integers, so that comparisons do not depend on
    /// whether the serializer writes `12` or `12.0` for a DOUBLE (the field's `type` says
    /// which it is).
    var wholeNumbersAsIntegers: JSONValue {
        switch self {
        case .number(let value) where value == value.rounded() && abs(value) < 9e15: return .integer(Int64(value))
        case .array(let elements): return .array(elements.map(\.wholeNumbersAsIntegers))
        case .object(let members): return .object(members.mapValues(\.wholeNumbersAsIntegers))
        default: return self
        }
    }

    /// The member at a dotted path with `[n]` indexes (`operations[0].record.fields`).
    subscript(path path: String) -> JSONValue? {
        var current: JSONValue? = self
        for part in path.split(separator: ".") {
            var name = Substring(part)
            var indexes: [Int] = []
            while let open = name.lastIndex(of: "["), name.last == "]" {
                indexes.insert(Int(name[name.index(after: open)..<name.index(before: name.endIndex)])!, at: 0)
                name = name[..<open]
            }
            if !name.isEmpty { current = current?.objectValue?[String(name)] }
            for index in indexes {
                guard let array = current?.arrayValue, index < array.count else { return nil }
                current = array[index]
            }
        }
        return current
    }
}
