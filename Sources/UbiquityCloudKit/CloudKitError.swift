// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

/// An error from CloudKit (`CKError`): a ``Code`` with CloudKit's raw values, the server's
/// `serverErrorCode` and `reason` when the server sent one, and the keyed extras CloudKit
/// documents: the server's record for ``Code/serverRecordChanged``, the per-item errors of a
/// ``Code/partialFailure``, the wait before retrying for ``Code/requestRateLimited``,
/// ``Code/serviceUnavailable`` and ``Code/zoneBusy``.
///
/// ```swift
/// do { _ = try await database.save(record) }
/// catch let error as CKError where error.code == .serverRecordChanged {
///     var merged = error.serverRecord!   // the server's version, with its change tag
///     …
/// }
/// ```
public struct CloudKitError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// CloudKit's error codes (`CKError.Code`), with Apple's raw values.
    public enum Code: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// A bug or unexpected state in the server or the client.
        case internalError = 1
        /// Some items failed; see ``CloudKitError/partialErrorsByItemID``.
        case partialFailure = 2
        /// The server could not be reached (no route, refused, name not found).
        case networkUnavailable = 3
        /// The connection failed or timed out during the request.
        case networkFailure = 4
        /// The container is unknown or misconfigured.
        case badContainer = 5
        /// The server is temporarily unavailable; retry after ``CloudKitError/retryAfterSeconds``.
        case serviceUnavailable = 6
        /// Too many requests; retry after ``CloudKitError/retryAfterSeconds``.
        case requestRateLimited = 7
        /// The app lacks the entitlement (not used by this client).
        case missingEntitlement = 8
        /// The request needs a signed-in user, or the credentials were rejected.
        case notAuthenticated = 9
        /// The user may not do this.
        case permissionFailure = 10
        /// The record (or other item) does not exist.
        case unknownItem = 11
        /// The request was malformed or had bad values.
        case invalidArguments = 12
        /// Deprecated by CloudKit.
        case resultsTruncated = 13
        /// The record changed on the server since it was fetched (or already exists); see
        /// ``CloudKitError/serverRecord``.
        case serverRecordChanged = 14
        /// The server rejected the request.
        case serverRejectedRequest = 15
        /// An asset file was not found.
        case assetFileNotFound = 16
        /// An asset file changed while being saved.
        case assetFileModified = 17
        /// The client is too old for the server.
        case incompatibleVersion = 18
        /// A unique-field constraint was violated.
        case constraintViolation = 19
        /// The operation was cancelled.
        case operationCancelled = 20
        /// The change token is too old or not from this server; fetch again with no token.
        case changeTokenExpired = 21
        /// The item did not fail itself, but another item of its atomic batch did.
        case batchRequestFailed = 22
        /// The zone is busy; retry after ``CloudKitError/retryAfterSeconds``.
        case zoneBusy = 23
        /// The operation is not allowed in this database.
        case badDatabase = 24
        /// The user's (or the app's) storage quota is used up.
        case quotaExceeded = 25
        /// The zone does not exist.
        case zoneNotFound = 26
        /// The request was too large; this client splits batches in half and retries.
        case limitExceeded = 27
        /// The user deleted the zone.
        case userDeletedZone = 28
        /// A share has too many participants.
        case tooManyParticipants = 29
        /// The record is already shared.
        case alreadyShared = 30
        /// A validating reference's target is missing or still referenced.
        case referenceViolation = 31
        /// The account is managed and restricted.
        case managedAccountRestricted = 32
        /// The participant may need to verify their account.
        case participantMayNeedVerification = 33
        /// The response was lost; the operation may have happened.
        case serverResponseLost = 34
        /// An asset is not available.
        case assetNotAvailable = 35
        /// The account is temporarily unavailable.
        case accountTemporarilyUnavailable = 36
        /// The participant was already invited.
        case participantAlreadyInvited = 37

        /// The code's name (`serverRecordChanged`).
        public var description: String { String(describing: Self.names[rawValue - 1]) }

        private static let names = [
            "internalError", "partialFailure", "networkUnavailable", "networkFailure", "badContainer", "serviceUnavailable",
            "requestRateLimited", "missingEntitlement", "notAuthenticated", "permissionFailure", "unknownItem",
            "invalidArguments", "resultsTruncated", "serverRecordChanged", "serverRejectedRequest", "assetFileNotFound",
            "assetFileModified", "incompatibleVersion", "constraintViolation", "operationCancelled", "changeTokenExpired",
            "batchRequestFailed", "zoneBusy", "badDatabase", "quotaExceeded", "zoneNotFound", "limitExceeded",
            "userDeletedZone", "tooManyParticipants", "alreadyShared", "referenceViolation", "managedAccountRestricted",
            "participantMayNeedVerification", "serverResponseLost", "assetNotAvailable", "accountTemporarilyUnavailable",
            "participantAlreadyInvited",
        ]
    }

    /// An item of a partial failure: a record or a zone.
    public enum ItemID: Sendable, Hashable, CustomStringConvertible {
        /// A record.
        case record(Record.ID)
        /// A zone.
        case zone(RecordZone.ID)

        /// The record or zone.
        public var description: String {
            switch self {
            case .record(let id): return "record \(id)"
            case .zone(let id): return "zone \(id)"
            }
        }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong: the server's `reason`, or the client's explanation.
    public var reason: String
    /// The server's `serverErrorCode` (`CONFLICT`, `NOT_FOUND`, …), when the server sent one.
    public var serverErrorCode: String?
    /// The HTTP status of a whole-request failure.
    public var httpStatus: Int?
    /// Seconds to wait before retrying (`CKErrorRetryAfterKey`).
    public var retryAfterSeconds: Double?
    /// The sign-in page, for `AUTHENTICATION_REQUIRED`.
    public var redirectURL: String?
    /// The server's request UUID, for its logs.
    public var uuid: String?
    /// For ``Code/serverRecordChanged``: the record as the server has it
    /// (`CKRecordChangedErrorServerRecordKey`), when the server sent it.
    public var serverRecord: Record?
    /// For ``Code/serverRecordChanged``: the record the client tried to save
    /// (`CKRecordChangedErrorClientRecordKey`).
    public var clientRecord: Record?
    /// For ``Code/serverRecordChanged``: the common ancestor (`CKRecordChangedErrorAncestorRecordKey`;
    /// CKWS does not send it, so always nil).
    public var ancestorRecord: Record?
    /// For ``Code/partialFailure``: the error of every item that failed.
    public var partialErrors: [ItemID: CloudKitError] = [:]
    /// The error that caused this one (a transport error for the network codes).
    public var underlying: (any Error)?

    /// Makes an error.
    public init(_ code: Code, _ reason: String, serverErrorCode: String? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.reason = reason
        self.serverErrorCode = serverErrorCode
        self.underlying = underlying
    }

    /// ``partialErrors`` keyed as CloudKit does (`CKPartialErrorsByItemIDKey`): by `Record.ID`
    /// or `RecordZone.ID`; nil unless this is a partial failure.
    public var partialErrorsByItemID: [AnyHashable: any Error]? {
        guard code == .partialFailure else { return nil }
        var result: [AnyHashable: any Error] = [:]
        for (item, error) in partialErrors {
            switch item {
            case .record(let id): result[AnyHashable(id)] = error
            case .zone(let id): result[AnyHashable(id)] = error
            }
        }
        return result
    }

    /// The per-record errors of a partial failure.
    public var partialErrorsByRecordID: [Record.ID: CloudKitError] {
        var result: [Record.ID: CloudKitError] = [:]
        for case (.record(let id), let error) in partialErrors { result[id] = error }
        return result
    }

    /// The per-zone errors of a partial failure.
    public var partialErrorsByZoneID: [RecordZone.ID: CloudKitError] {
        var result: [RecordZone.ID: CloudKitError] = [:]
        for case (.zone(let id), let error) in partialErrors { result[id] = error }
        return result
    }

    /// Whether retrying later may succeed (the network codes, rate limits, busy or
    /// unavailable service, and anything with a retry delay).
    public var isRetryable: Bool {
        retryAfterSeconds != nil || [.networkFailure, .networkUnavailable, .serviceUnavailable, .requestRateLimited, .zoneBusy, .serverResponseLost].contains(code)
    }

    /// `code: reason [SERVER_CODE]`, with the items of a partial failure.
    public var description: String {
        var text = "\(code): \(reason)"
        if let serverErrorCode { text += " [\(serverErrorCode)]" }
        if let retryAfterSeconds { text += " (retry after \(retryAfterSeconds.formatted()) s)" }
        if code == .partialFailure, !partialErrors.isEmpty {
            let items = partialErrors.sorted { $0.key.description < $1.key.description }.prefix(5)
            text += "; " + items.map { "\($0.key): \($0.value.code): \($0.value.reason)" }.joined(separator: "; ")
            if partialErrors.count > 5 { text += "; and \(partialErrors.count - 5) more" }
        }
        return text
    }

    /// ``description``.
    public var errorDescription: String? { description }
}

extension CloudKitError {
    /// The error for a server error dictionary (whole-request or per item), mapped as the
    /// CKWS reference suggests (§5.4).
    init(wire: WireError, httpStatus: Int? = nil, zone: RecordZone.ID? = nil) {
        let serverCode = wire.unknownCode ?? wire.code.rawValue
        self.init(CloudKitError.code(for: wire), wire.reason, serverErrorCode: serverCode)
        self.httpStatus = httpStatus
        retryAfterSeconds = wire.retryAfter.map(Double.init)
        redirectURL = wire.redirectURL
        uuid = wire.uuid
        if let record = wire.serverRecord { serverRecord = Record(wire: record, zone: zone) }
    }

    static func code(for wire: WireError) -> Code {
        if wire.unknownCode != nil { return .serverRejectedRequest }
        switch wire.code {
        case .accessDenied: return .permissionFailure
        case .atomicError: return .batchRequestFailed
        case .authenticationFailed, .authenticationRequired: return .notAuthenticated
        case .badRequest:
            return wire.reason.lowercased().hasPrefix("limit exceeded") ? .limitExceeded : .invalidArguments
        case .conflict, .exists: return .serverRecordChanged
        case .internalError: return .internalError
        case .notFound: return .unknownItem
        case .quotaExceeded: return .quotaExceeded
        case .throttled: return .requestRateLimited
        case .tryAgainLater: return .serviceUnavailable
        case .validatingReferenceError: return .referenceViolation
        case .zoneNotFound: return .zoneNotFound
        case .uniqueFieldError: return .constraintViolation
        case .changeTokenExpired: return .changeTokenExpired
        }
    }

    /// The error for a non-2xx response whose body is not a CKWS error dictionary.
    static func http(status: Int, body: Data) -> CloudKitError {
        let snippet = String(decoding: body.prefix(200), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let reason = "HTTP \(status)" + (snippet.isEmpty ? "" : ": \(snippet)")
        var error: CloudKitError
        switch status {
        case 401, 421: error = CloudKitError(.notAuthenticated, reason)
        case 403: error = CloudKitError(.permissionFailure, reason)
        case 404: error = CloudKitError(.badContainer, reason + " (is the server URL right? it should be the address the Ubiquity server listens on)")
        case 409: error = CloudKitError(.serverRecordChanged, reason)
        case 410: error = CloudKitError(.changeTokenExpired, reason)
        case 412: error = CloudKitError(.referenceViolation, reason)
        case 413: error = CloudKitError(.limitExceeded, reason)
        case 429: error = CloudKitError(.requestRateLimited, reason)
        case 502, 503, 504: error = CloudKitError(.serviceUnavailable, reason)
        case 400..<500: error = CloudKitError(.invalidArguments, reason)
        default: error = CloudKitError(.internalError, reason)
        }
        error.httpStatus = status
        return error
    }

    /// `operationCancelled`.
    static var cancelled: CloudKitError { CloudKitError(.operationCancelled, "the operation was cancelled") }

    /// Wraps any error as a CloudKit error (cancellation → operationCancelled, transport
    /// failures → networkFailure).
    static func wrap(_ error: any Error) -> CloudKitError {
        if let error = error as? CloudKitError { return error }
        if error is CancellationError { return .cancelled }
        if let error = error as? UbiquityError, error.code == .invalidArgument {
            return CloudKitError(.invalidArguments, error.message, underlying: error)
        }
        return CloudKitError(.networkFailure, "\(error)", underlying: error)
    }
}
