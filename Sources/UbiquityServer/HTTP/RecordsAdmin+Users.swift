// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension RecordsAdmin {
    /// Changes to an account (`ubiq admin user set`): nil leaves a value as it is, `""` clears it.
    package struct UserUpdate: Sendable, Hashable {
        /// The given (first) name.
        package var givenName: String?
        /// The family (last) name.
        package var familyName: String?
        /// The middle name.
        package var middleName: String?
        /// The nickname.
        package var nickname: String?
        /// A prefix (Dr.).
        package var namePrefix: String?
        /// A suffix (Jr.).
        package var nameSuffix: String?
        /// The e-mail address (unique among accounts, case-insensitively).
        package var email: String?
        /// Containers to make the user discoverable in (true) or not (false).
        package var discoverable: [String: Bool]

        /// Makes an update.
        package init(givenName: String? = nil, familyName: String? = nil, middleName: String? = nil, nickname: String? = nil,
                    namePrefix: String? = nil, nameSuffix: String? = nil, email: String? = nil, discoverable: [String: Bool] = [:]) {
            self.givenName = givenName
            self.familyName = familyName
            self.middleName = middleName
            self.nickname = nickname
            self.namePrefix = namePrefix
            self.nameSuffix = nameSuffix
            self.email = email
            self.discoverable = discoverable
        }
    }

    /// Checks an e-mail address: an `@`, no white space, at most 254 bytes.
    static func validate(email: String) throws {
        guard email.contains("@"), email.utf8.count <= 254, !email.contains(where: \.isWhitespace) else {
            throw UbiquityError(.invalidArgument, "e-mail \(email.debugDescription) is not an e-mail address")
        }
    }

    /// Applies an update to the account `name`, all of it or nothing. Returns the account's
    /// identity in each container of `update.discoverable`.
    @discardableResult
    package func setUser(_ name: String, _ update: UserUpdate) async throws -> [StoredUserIdentity] {
        if let email = update.email, !email.isEmpty { try RecordsAdmin.validate(email: email) }
        for (field, value) in [("given name", update.givenName), ("family name", update.familyName), ("middle name", update.middleName),
                               ("nickname", update.nickname), ("name prefix", update.namePrefix), ("name suffix", update.nameSuffix)] {
            if let value, value.utf8.count > 256 || value.unicodeScalars.contains(where: { $0.value < 0x20 }) {
                throw UbiquityError(.invalidArgument, "\(field) \(value.debugDescription): expected at most 256 bytes without control characters")
            }
        }
        for container in update.discoverable.keys { try RecordsAdmin.validate(container: container) }
        let now = RecordsAdmin.now
        return try await store.write { tx in
            let account = try await RecordsAdmin.account(named: name, in: tx)
            let users = try tx.users()
            func merged(_ old: String?, _ new: String?) -> String? {
                guard let new else { return old }
                return new.isEmpty ? nil : new
            }
            var components = try await users.nameComponents(accountID: account.id)
            components.givenName = merged(components.givenName, update.givenName)
            components.familyName = merged(components.familyName, update.familyName)
            components.middleName = merged(components.middleName, update.middleName)
            components.nickname = merged(components.nickname, update.nickname)
            components.namePrefix = merged(components.namePrefix, update.namePrefix)
            components.nameSuffix = merged(components.nameSuffix, update.nameSuffix)
            try await users.setNameComponents(components, accountID: account.id)
            if let email = update.email { try await users.setEmail(email.isEmpty ? nil : email, accountID: account.id) }
            var identities: [StoredUserIdentity] = []
            for (container, flag) in update.discoverable.sorted(by: { $0.key < $1.key }) {
                guard try await tx.containerExists(container) else {
                    throw UbiquityError(.notFound, "no container \(container); add it with `ubiq admin container add \(container)`")
                }
                let recordName = RecordsCaller.userRecordName(accountID: account.id, container: container)
                try await users.setDiscoverable(flag, accountID: account.id, container: container, userRecordName: recordName, createdAt: now)
                if let identity = try await users.userIdentity(container: container, accountID: account.id) { identities.append(identity) }
            }
            return identities
        }
    }
}
