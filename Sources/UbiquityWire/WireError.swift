// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// CloudKit Web Services' `serverErrorCode` values and their HTTP statuses (Apple's error table),
/// plus the one extension this server adds (`CHANGE_TOKEN_EXPIRED`, for an expired sync token).
package enum WireServerErrorCode: String, Sendable, Hashable, CaseIterable {
    case accessDenied = "ACCESS_DENIED"
    case atomicError = "ATOMIC_ERROR"
    case authenticationFailed = "AUTHENTICATION_FAILED"
    case authenticationRequired = "AUTHENTICATION_REQUIRED"
    case badRequest = "BAD_REQUEST"
    case conflict = "CONFLICT"
    case exists = "EXISTS"
    case internalError = "INTERNAL_ERROR"
    case notFound = "NOT_FOUND"
    case quotaExceeded = "QUOTA_EXCEEDED"
    case throttled = "THROTTLED"
    case tryAgainLater = "TRY_AGAIN_LATER"
    case validatingReferenceError = "VALIDATING_REFERENCE_ERROR"
    case zoneNotFound = "ZONE_NOT_FOUND"
    case uniqueFieldError = "UNIQUE_FIELD_ERROR"
    /// Not in Apple's table (which has no code for it): a sync token too old or from elsewhere.
    /// Sent with HTTP 410; clients that do not know it see a 4xx and start over from no token.
    case changeTokenExpired = "CHANGE_TOKEN_EXPIRED"

    /// The HTTP status CloudKit uses for the code.
    package var httpStatus: Int {
        switch self {
        case .accessDenied: return 403
        case .atomicError: return 400
        case .authenticationFailed: return 401
        case .authenticationRequired: return 421
        case .badRequest: return 400
        case .conflict: return 409
        case .exists: return 409
        case .internalError: return 500
        case .notFound: return 404
        case .quotaExceeded: return 413
        case .throttled: return 429
        case .tryAgainLater: return 503
        case .validatingReferenceError: return 412
        case .zoneNotFound: return 404
        case .uniqueFieldError: return 409
        case .changeTokenExpired: return 410
        }
    }
}

/// An error, whole-request or per item: `{"serverErrorCode", "reason", "uuid", "retryAfter",
/// "redirectURL"}` plus the item's `recordName`, `zoneID` or `subscriptionID`.
package struct WireError: Error, Sendable, Hashable, CustomStringConvertible {
    package var code: WireServerErrorCode
    package var reason: String
    /// Seconds to wait before retrying, for THROTTLED and TRY_AGAIN_LATER.
    package var retryAfter: Int?
    /// The sign-in page, for AUTHENTICATION_REQUIRED.
    package var redirectURL: String?
    package var uuid: String?
    /// The item the error is about.
    package var recordName: String?
    package var zoneID: WireZoneID?
    package var subscriptionID: String?
    /// For CONFLICT and EXISTS: the record as the server has it (an extension CloudKit's native
    /// `serverRecordChanged` has; clients that do not know the key ignore it).
    package var serverRecord: WireRecord?
    /// The code string as received, when it is not one this build knows.
    package var unknownCode: String?

    /// Makes an error.
    package init(_ code: WireServerErrorCode, _ reason: String, retryAfter: Int? = nil, redirectURL: String? = nil) {
        self.code = code
        self.reason = reason
        self.retryAfter = retryAfter
        self.redirectURL = redirectURL
    }

    /// `"CODE: reason"`.
    package var description: String { "\(unknownCode ?? code.rawValue): \(reason)" }

    /// The error dictionary.
    package func json(numbersAsStrings: Bool = false) -> JSONValue {
        var writer = WireWriter()
        writer.set("recordName", recordName)
        writer.set("zoneID", zoneID?.json)
        writer.set("subscriptionID", subscriptionID)
        writer.set("serverErrorCode", unknownCode ?? code.rawValue)
        writer.set("reason", reason)
        writer.set("uuid", uuid)
        writer.set("retryAfter", retryAfter.map { Int64($0) })
        writer.set("redirectURL", redirectURL)
        writer.set("serverRecord", serverRecord?.json(numbersAsStrings: numbersAsStrings))
        return writer.json
    }

    /// Reads an error dictionary; nil when `json` has no `serverErrorCode`.
    package init?(json: JSONValue) {
        guard let members = json.objectValue, let codeName = members["serverErrorCode"]?.stringValue else { return nil }
        if let known = WireServerErrorCode(rawValue: codeName) {
            code = known
        } else {
            code = .internalError
            unknownCode = codeName
        }
        reason = members["reason"]?.stringValue ?? ""
        retryAfter = members["retryAfter"]?.doubleValue.map { Int($0) }
        redirectURL = members["redirectURL"]?.stringValue
        uuid = members["uuid"]?.stringValue
        recordName = members["recordName"]?.stringValue
        zoneID = members["zoneID"].flatMap { try? WireZoneID(json: $0, path: "zoneID") }
        subscriptionID = members["subscriptionID"]?.stringValue
        serverRecord = members["serverRecord"].flatMap { try? WireRecord(json: $0, path: "serverRecord") }
    }

    /// BAD_REQUEST from a decoding or validation error (`invalidArgument` messages name the path).
    package static func badRequest(_ error: any Error) -> WireError {
        if let wire = error as? WireError { return wire }
        if let ubiquity = error as? UbiquityError { return WireError(.badRequest, ubiquity.message) }
        return WireError(.badRequest, "\(error)")
    }
}
