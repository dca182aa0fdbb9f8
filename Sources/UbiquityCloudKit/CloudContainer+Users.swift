// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

extension CloudContainer {
    /// Permissions an app asks the user for (`CKContainer.ApplicationPermissions`).
    public struct ApplicationPermissions: OptionSet, Sendable, Hashable {
        public let rawValue: UInt
        /// Makes a set.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Others may find the user by e-mail address or user record ID, and see their name.
        public static let userDiscoverability = ApplicationPermissions(rawValue: 1)
    }

    /// Where a permission stands (`CKContainer.ApplicationPermissionStatus`, Apple's raw values).
    public enum ApplicationPermissionStatus: Int, Sendable, Hashable {
        /// Not granted (this server does not tell apart "not asked yet" and "denied").
        case initialState = 0
        /// The status could not be found out.
        case couldNotComplete = 1
        /// The user refused.
        case denied = 2
        /// The user granted it.
        case granted = 3
    }

    /// Opts the signed-in user in to the permission in this container (`users/discoverability`
    /// with `discoverable: true`, this server's counterpart of CloudKit JS's
    /// `requestApplicationPermission("userDiscoverability")`). Returns `.granted`.
    @discardableResult
    public func requestApplicationPermission(_ permission: ApplicationPermissions) async throws -> ApplicationPermissionStatus {
        try await setUserDiscoverable(true, for: permission)
    }

    /// Whether the signed-in user granted the permission in this container.
    public func applicationPermissionStatus(for permission: ApplicationPermissions) async throws -> ApplicationPermissionStatus {
        try Self.check(permission)
        let response = try await send(.public, "users/discoverability", body: .object([:]))
        return Self.unexpectedStatus(response) ? .couldNotComplete : (response.objectValue?["discoverable"]?.boolValue == true ? .granted : .initialState)
    }

    /// Opts the signed-in user out of discovery in this container (no CloudKit counterpart: on
    /// Apple's platforms the user does it in Settings). Returns `.denied`.
    @discardableResult
    public func revokeApplicationPermission(_ permission: ApplicationPermissions) async throws -> ApplicationPermissionStatus {
        try await setUserDiscoverable(false, for: permission)
    }

    private func setUserDiscoverable(_ discoverable: Bool, for permission: ApplicationPermissions) async throws -> ApplicationPermissionStatus {
        try Self.check(permission)
        let response = try await send(.public, "users/discoverability", body: .object(["discoverable": .bool(discoverable)]))
        guard let now = response.objectValue?["discoverable"]?.boolValue else { return .couldNotComplete }
        return now ? .granted : .denied
    }

    private static func check(_ permission: ApplicationPermissions) throws {
        guard permission == .userDiscoverability else {
            throw CloudKitError(.invalidArguments, "the only application permission is userDiscoverability")
        }
    }

    private static func unexpectedStatus(_ response: JSONValue) -> Bool { response.objectValue?["discoverable"]?.boolValue == nil }

    /// The discoverable user with this e-mail address, or nil (`discoverUserIdentity(withEmailAddress:)`).
    public func discoverUserIdentity(withEmailAddress emailAddress: String) async throws -> UserIdentity? {
        try await discoverUserIdentities([UserIdentity.LookupInfo(emailAddress: emailAddress)]).first
    }

    /// The discoverable user with this phone number, or nil (this server keeps no phone numbers).
    public func discoverUserIdentity(withPhoneNumber phoneNumber: String) async throws -> UserIdentity? {
        try await discoverUserIdentities([UserIdentity.LookupInfo(phoneNumber: phoneNumber)]).first
    }

    /// The discoverable user with this user record ID, or nil (`discoverUserIdentity(withUserRecordID:)`).
    public func discoverUserIdentity(withUserRecordID userRecordID: Record.ID) async throws -> UserIdentity? {
        try await discoverUserIdentities([UserIdentity.LookupInfo(userRecordID: userRecordID)]).first
    }

    /// The discoverable users matching the lookup infos, in their order; users not found or not
    /// discoverable are left out (`CKDiscoverUserIdentitiesOperation`).
    public func discoverUserIdentities(_ lookupInfos: [UserIdentity.LookupInfo]) async throws -> [UserIdentity] {
        guard !lookupInfos.isEmpty else { return [] }
        var found: [UserIdentity] = []
        var start = 0
        while start < lookupInfos.count {
            let chunk = lookupInfos[start..<min(start + WireLimits.recordsPerResponse, lookupInfos.count)]
            let response = try await send(.public, "users/discover", body: .object(["lookupInfos": .array(chunk.map(\.json))]))
            found += try Self.identities(response)
            start += chunk.count
        }
        return found
    }

    /// The discoverable users of the user's address book (`discoverAllIdentities`): always empty
    /// on this server, which keeps no address books.
    public func discoverAllIdentities() async throws -> [UserIdentity] {
        try Self.identities(try await send(.public, "users/discover", method: "GET", body: nil))
    }

    /// The signed-in user's own identity (`users/caller`): their record ID, lookup info, and name
    /// when they opted in to discovery.
    public func callerIdentity() async throws -> UserIdentity {
        guard let identity = try Self.identities(try await send(.public, "users/caller", method: "GET", body: nil)).first else {
            throw CloudKitError(.internalError, "the server's users/caller answer has no identity")
        }
        return identity
    }

    /// ``userRecordID()`` (`fetchUserRecordID()`).
    public func fetchUserRecordID() async throws -> Record.ID {
        try await userRecordID()
    }

    static func identities(_ response: JSONValue) throws -> [UserIdentity] {
        guard let users = response.objectValue?["users"]?.arrayValue else {
            throw CloudKitError(.internalError, "unexpected answer: no users array")
        }
        return try users.map(UserIdentity.init(json:))
    }
}
