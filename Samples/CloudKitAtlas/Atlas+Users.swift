// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCloudKit

/// User identity and discovery (CloudKitAtlas's "Discoverability" section).
extension Atlas {
    /// `fetchUserRecordID()`: the signed-in user's record ID.
    func fetchUserRecordID() async throws -> String {
        let id = try await container.fetchUserRecordID()
        try check(!id.recordName.isEmpty, "the user record ID is empty")
        userRecordID = id
        return id.recordName
    }

    /// The user's own `Users` record, read from the public database.
    func fetchUserRecord() async throws -> String {
        let id = try need(userRecordID, from: "user-record-id")
        let record = try await container.publicCloudDatabase.record(for: id)
        try check(record.recordType == "Users", "the user record's type is \(record.recordType), expected Users")
        return "\(record.recordType)/\(record.recordID.recordName)"
    }

    /// `users/caller`: the caller's identity, the same user record ID, and the e-mail address
    /// they are looked up by.
    func fetchCallerIdentity() async throws -> String {
        let identity = try await container.callerIdentity()
        if let userRecordID {
            try check(identity.userRecordID == userRecordID,
                      "the caller identity's user record ID \(identity.userRecordID?.recordName ?? "none") is not \(userRecordID.recordName)")
        }
        callerEmail = identity.lookupInfo?.emailAddress
        return "\(identity.userRecordID?.recordName ?? "?")" + (callerEmail.map { " <\($0)>" } ?? " (no e-mail address)")
    }

    /// `requestApplicationPermission(.userDiscoverability)`: opts the user in to discovery.
    func optInToDiscovery() async throws -> String {
        let granted = try await container.requestApplicationPermission(.userDiscoverability)
        try check(granted == .granted, "requestApplicationPermission answered \(granted), expected granted")
        let status = try await container.applicationPermissionStatus(for: .userDiscoverability)
        try check(status == .granted, "applicationPermissionStatus is \(status) after opting in, expected granted")
        return "userDiscoverability granted"
    }

    /// `discoverUserIdentity(withEmailAddress:)`: finds a discoverable user by e-mail address
    /// (--discover-email, else the caller's own), then by user record ID.
    func discoverByEmail() async throws -> String {
        guard let email = discoverEmail ?? callerEmail else {
            throw AtlasFailure("no address to look up: the user has no e-mail address; pass --discover-email")
        }
        guard let found = try await container.discoverUserIdentity(withEmailAddress: email) else {
            throw AtlasFailure("no discoverable user with e-mail address \(email)")
        }
        let foundID = try need(found.userRecordID, from: "discover-email (the identity has no user record ID)")
        if discoverEmail == nil || email.lowercased() == callerEmail?.lowercased(), let userRecordID {
            try check(foundID == userRecordID, "\(email) is \(foundID.recordName), expected the caller \(userRecordID.recordName)")
        }
        let byID = try await container.discoverUserIdentity(withUserRecordID: foundID)
        try check(byID?.userRecordID == foundID, "discovering \(foundID.recordName) by user record ID found nobody")
        var name = ""
        if let components = found.nameComponents {
            name = [components.givenName, components.familyName].compactMap { $0 }.joined(separator: " ")
        }
        return "\(email) is \(foundID.recordName)" + (name.isEmpty ? "" : " (\(name))")
    }
}
