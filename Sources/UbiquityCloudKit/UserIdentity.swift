// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

/// A user as discovery reports them (`CKUserIdentity`): their user record ID, how they were
/// looked up, and their name — only users who opted in to discovery are ever returned.
public struct UserIdentity: Sendable, Hashable {
    /// How to find a user (`CKUserIdentity.LookupInfo`): by e-mail address, phone number or user
    /// record ID.
    public struct LookupInfo: Sendable, Hashable {
        /// The e-mail address (compared case-insensitively by the server).
        public let emailAddress: String?
        /// The phone number (this server keeps none, so it finds nobody by phone).
        public let phoneNumber: String?
        /// The user record ID.
        public let userRecordID: Record.ID?

        /// Looks up by e-mail address.
        public init(emailAddress: String) {
            self.emailAddress = emailAddress
            phoneNumber = nil
            userRecordID = nil
        }

        /// Looks up by phone number.
        public init(phoneNumber: String) {
            emailAddress = nil
            self.phoneNumber = phoneNumber
            userRecordID = nil
        }

        /// Looks up by user record ID.
        public init(userRecordID: Record.ID) {
            emailAddress = nil
            phoneNumber = nil
            self.userRecordID = userRecordID
        }

        /// Lookup infos for e-mail addresses (`lookupInfos(withEmails:)`).
        public static func lookupInfos(withEmails emails: [String]) -> [LookupInfo] { emails.map(LookupInfo.init(emailAddress:)) }
        /// Lookup infos for user record IDs (`lookupInfos(with:)`).
        public static func lookupInfos(with recordIDs: [Record.ID]) -> [LookupInfo] { recordIDs.map(LookupInfo.init(userRecordID:)) }

        init?(json: JSONValue?) {
            guard let members = json?.objectValue else { return nil }
            emailAddress = members["emailAddress"]?.stringValue
            phoneNumber = members["phoneNumber"]?.stringValue
            userRecordID = members["userRecordName"]?.stringValue.map { Record.ID(recordName: $0) }
            if emailAddress == nil, phoneNumber == nil, userRecordID == nil { return nil }
        }

        /// The wire dictionary: `{emailAddress}`, `{phoneNumber}` or `{userRecordName}`.
        var json: JSONValue {
            if let emailAddress { return .object(["emailAddress": .string(emailAddress)]) }
            if let phoneNumber { return .object(["phoneNumber": .string(phoneNumber)]) }
            return .object(["userRecordName": .string(userRecordID?.recordName ?? "")])
        }
    }

    /// The user's record ID (the name of their `Users` record in the public database).
    public let userRecordID: Record.ID?
    /// How the user was found.
    public let lookupInfo: LookupInfo?
    /// The user's name, when they share it (they opted in to discovery).
    public let nameComponents: PersonNameComponents?
    /// Whether the user has an account (always true for identities the server returns).
    public let hasiCloudAccount: Bool
    /// Contacts of the device's address book matching the user (none: there is no address book).
    public var contactIdentifiers: [String] { [] }

    /// Reads a UserIdentity dictionary.
    init(json: JSONValue) throws {
        guard let members = json.objectValue else {
            throw CloudKitError(.internalError, "unexpected answer: a user identity is not a JSON object")
        }
        userRecordID = members["userRecordName"]?.stringValue.map { Record.ID(recordName: $0) }
        lookupInfo = LookupInfo(json: members["lookupInfo"])
        hasiCloudAccount = members["hasiCloudAccount"]?.boolValue ?? (userRecordID != nil)
        if let parts = members["nameComponents"]?.objectValue {
            var components = PersonNameComponents()
            components.namePrefix = parts["namePrefix"]?.stringValue
            components.givenName = parts["givenName"]?.stringValue
            components.middleName = parts["middleName"]?.stringValue
            components.familyName = parts["familyName"]?.stringValue
            components.nameSuffix = parts["nameSuffix"]?.stringValue
            components.nickname = parts["nickname"]?.stringValue
            nameComponents = components
        } else {
            nameComponents = nil
        }
    }
}
