// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

extension UserDirectory {
    /// The signed-in caller, or 421 with the sign-in page (403 for a server-to-server key, which
    /// is no person).
    static func signedInUser(_ context: RecordsEngine.Context, operation: String) throws -> (accountID: Int64, userRecordName: String) {
        switch context.caller.identity {
        case .user(let accountID, let name):
            return (accountID, name)
        case .anonymous:
            throw WireError(.authenticationRequired, "request needs authorization: \(operation) needs a signed-in user")
        case .serverKey:
            throw WireError(.accessDenied, "\(operation) needs a signed-in user; a server-to-server key is not one")
        }
    }

    /// A UserIdentity dictionary: `userRecordName`, `lookupInfo`, and `nameComponents` only for a
    /// discoverable user.
    static func identityJSON(_ identity: StoredUserIdentity, lookupInfo: JSONValue) -> JSONValue {
        var members: [String: JSONValue] = [
            "userRecordName": .string(identity.userRecordName),
            "lookupInfo": lookupInfo,
            "hasiCloudAccount": .bool(true),
        ]
        if identity.discoverable {
            var components: [String: JSONValue] = [:]
            for part in identity.nameComponents.parts { if let value = part.value { components[part.key] = .string(value) } }
            members["nameComponents"] = .object(components)
        }
        return .object(members)
    }

    /// A User dictionary: `userRecordName`, `firstName`, `lastName` (null unless discoverable),
    /// and `emailAddress` when given.
    static func userJSON(_ identity: StoredUserIdentity, emailAddress: String? = nil) -> JSONValue {
        let names = identity.discoverable ? identity.nameComponents : StoredNameComponents()
        var members: [String: JSONValue] = [
            "userRecordName": .string(identity.userRecordName),
            "firstName": names.givenName.map(JSONValue.string) ?? .null,
            "lastName": names.familyName.map(JSONValue.string) ?? .null,
        ]
        if let emailAddress { members["emailAddress"] = .string(emailAddress) }
        return .object(members)
    }

    /// The caller's identity in the context's container (noted on their first request).
    func callerIdentity(accountID: Int64, userRecordName: String, container: String) async throws -> StoredUserIdentity {
        if let known = try await store.read({ tx in try await tx.users().userIdentity(container: container, accountID: accountID) }) { return known }
        let now = UserDirectory.now
        return try await store.write { tx in
            try await tx.users().noteUserIdentity(accountID: accountID, container: container, userRecordName: userRecordName, createdAt: now)
        }
    }

    /// `users/current`: `{userRecordName, firstName, lastName}`, names only when the caller opted
    /// in to discovery in this container (as CloudKit).
    func current(context: RecordsEngine.Context) async throws -> JSONValue {
        guard let name = context.caller.userRecordName else {
            throw WireError(.authenticationRequired, "request needs authorization")
        }
        guard case .user(let accountID, _) = context.caller.identity else {
            return .object(["userRecordName": .string(name), "firstName": .null, "lastName": .null])
        }
        return UserDirectory.userJSON(try await callerIdentity(accountID: accountID, userRecordName: name, container: context.container))
    }

    /// `users/caller`: `{users: [UserIdentity]}`, the caller's own identity.
    func caller(context: RecordsEngine.Context) async throws -> JSONValue {
        guard let name = context.caller.userRecordName else {
            throw WireError(.authenticationRequired, "request needs authorization")
        }
        guard case .user(let accountID, _) = context.caller.identity else {
            return .object(["users": .array([.object(["userRecordName": .string(name), "lookupInfo": .object(["userRecordName": .string(name)])])])])
        }
        let identity = try await callerIdentity(accountID: accountID, userRecordName: name, container: context.container)
        let lookupInfo: JSONValue = identity.account.email.map { .object(["emailAddress": .string($0)]) } ?? .object(["userRecordName": .string(name)])
        return .object(["users": .array([UserDirectory.identityJSON(identity, lookupInfo: lookupInfo)])])
    }

    /// `users/discoverability` (an extension; CloudKit JS's `requestApplicationPermission`
    /// `userDiscoverability` maps to it): `{"discoverable": true|false}` opts the caller in or out
    /// of discovery in this container; without it, reports the current setting. Answers
    /// `{userRecordName, discoverable}`.
    func discoverability(_ body: JSONValue, context: RecordsEngine.Context) async throws -> JSONValue {
        let (accountID, name) = try UserDirectory.signedInUser(context, operation: "users/discoverability")
        let requested = try WireReader(body, path: "").bool("discoverable")
        let container = context.container
        let now = UserDirectory.now
        let identity = try await store.write { tx in
            let users = try tx.users()
            if let requested {
                try await users.setDiscoverable(requested, accountID: accountID, container: container, userRecordName: name, createdAt: now)
            }
            return try await users.noteUserIdentity(accountID: accountID, container: container, userRecordName: name, createdAt: now)
        }
        return .object(["userRecordName": .string(name), "discoverable": .bool(identity.discoverable)])
    }

    /// `users/discover`: with `lookupInfos` (each `{emailAddress}`, `{userRecordName}` or
    /// `{phoneNumber}`), the identities of the discoverable users matching, in request order
    /// (unknown and undiscoverable ones are left out); without (GET), the discoverable users in
    /// the caller's address book — there is none on this server, so `[]`.
    func discover(_ body: JSONValue, context: RecordsEngine.Context) async throws -> JSONValue {
        _ = try UserDirectory.signedInUser(context, operation: "users/discover")
        let reader = try WireReader(body, path: "")
        // `lookupInfos` as Apple's docs name it; `users` as MistKit sends it
        guard let infos = try reader.array("lookupInfos") ?? reader.array("users") else { return .object(["users": .array([])]) }
        guard infos.count <= WireLimits.recordsPerResponse else {
            throw WireError(.badRequest, "limit exceeded: \(infos.count) lookupInfos; a request may have at most \(WireLimits.recordsPerResponse)")
        }
        enum Key { case email(String), name(String), phone }
        let keys: [Key] = try infos.enumerated().map { index, info in
            let item = try WireReader(info, path: "lookupInfos[\(index)]")
            if let email = try item.string("emailAddress") { return .email(email) }
            if let name = try item.string("userRecordName") { return .name(name) }
            if try item.string("phoneNumber") != nil { return .phone }
            throw WireError(.badRequest, "lookupInfos[\(index)]: expected an object with emailAddress, userRecordName or phoneNumber")
        }
        let emails = keys.compactMap { key -> String? in
            if case .email(let value) = key { return value }
            return nil
        }
        let names = keys.compactMap { key -> String? in
            if case .name(let value) = key { return value }
            return nil
        }
        let (byEmail, byName) = try await lookUp(emails: emails, names: names, container: context.container)
        var users: [JSONValue] = []
        for (key, info) in zip(keys, infos) {
            let found: StoredUserIdentity?
            switch key {
            case .email(let email): found = byEmail[email.lowercased()]
            case .name(let name): found = byName[name]
            case .phone: found = nil // no phone numbers are kept
            }
            if let found { users.append(UserDirectory.identityJSON(found, lookupInfo: info)) }
        }
        return .object(["users": .array(users)])
    }

    /// `users/lookup/email`: `{"users": [{"emailAddress"}]}` → the discoverable users with those
    /// addresses, as User dictionaries with `emailAddress`.
    func lookupEmail(_ body: JSONValue, context: RecordsEngine.Context) async throws -> JSONValue {
        _ = try UserDirectory.signedInUser(context, operation: "users/lookup/email")
        let emails = try UserDirectory.requestedUsers(body, key: "emailAddress")
        let (byEmail, _) = try await lookUp(emails: emails, names: [], container: context.container)
        return .object(["users": .array(emails.compactMap { email in byEmail[email.lowercased()].map { UserDirectory.userJSON($0, emailAddress: email) } })])
    }

    /// `users/lookup/id`: `{"users": [{"userRecordName"}]}` → the discoverable users with those
    /// record names, as User dictionaries.
    func lookupID(_ body: JSONValue, context: RecordsEngine.Context) async throws -> JSONValue {
        _ = try UserDirectory.signedInUser(context, operation: "users/lookup/id")
        let names = try UserDirectory.requestedUsers(body, key: "userRecordName")
        let (_, byName) = try await lookUp(emails: [], names: names, container: context.container)
        return .object(["users": .array(names.compactMap { name in byName[name].map { UserDirectory.userJSON($0) } })])
    }

    /// `users/lookup/contacts`: the discoverable users of the caller's address book; this server
    /// keeps none, so `{"users": []}`.
    func lookupContacts(context: RecordsEngine.Context) async throws -> JSONValue {
        _ = try UserDirectory.signedInUser(context, operation: "users/lookup/contacts")
        return .object(["users": .array([])])
    }

    /// The `users` array of a lookup request: each element's `key` string.
    static func requestedUsers(_ body: JSONValue, key: String) throws -> [String] {
        let items = try WireReader(body, path: "").requiredArray("users")
        guard items.count <= WireLimits.recordsPerResponse else {
            throw WireError(.badRequest, "limit exceeded: \(items.count) users; a request may have at most \(WireLimits.recordsPerResponse)")
        }
        return try items.enumerated().map { index, item in try WireReader(item, path: "users[\(index)]").requiredString(key) }
    }

    /// The discoverable users of the container with these e-mails (by lower-cased address) and
    /// user record names.
    func lookUp(emails: [String], names: [String], container: String) async throws -> (byEmail: [String: StoredUserIdentity], byName: [String: StoredUserIdentity]) {
        let found = try await store.read { tx in
            let users = try tx.users()
            return (try await users.userIdentities(container: container, emails: emails), try await users.userIdentities(container: container, userRecordNames: names))
        }
        var byEmail: [String: StoredUserIdentity] = [:]
        for identity in found.0 where identity.discoverable {
            if let email = identity.account.email?.lowercased() { byEmail[email] = identity }
        }
        var byName: [String: StoredUserIdentity] = [:]
        for identity in found.1 where identity.discoverable { byName[identity.userRecordName] = identity }
        return (byEmail, byName)
    }
}
