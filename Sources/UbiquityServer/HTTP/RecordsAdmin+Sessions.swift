// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// Ending what a user is signed in to (issue 24, finding 10): listing and revoking an account's
/// sessions, changing its password, disabling it. Every change here takes effect on the next
/// request: tokens are looked up in the store on each one.
extension RecordsAdmin {
    /// Which of an account's sessions ``revokeTokens(ofUser:_:)`` ends.
    package enum Revocation: Sendable, Equatable {
        /// All of them.
        case all
        /// Those whose ``StoredWebAuthToken/sessionID`` (or a prefix of it, 8 digits or more)
        /// is given.
        case sessions([String])
        /// The session of this token (which must be the account's).
        case token(String)
    }

    /// The account's live tokens, oldest first (rotated web-auth tokens share their session).
    package func tokens(ofUser name: String) async throws -> [StoredWebAuthToken] {
        try await store.read { tx in try await tx.webAuthTokens(accountID: try RecordsAdmin.account(named: name, in: tx).id, now: RecordsAdmin.now) }
    }

    /// Revokes sessions of the account `name`; how many tokens were revoked.
    /// - Throws: `notFound` for an unknown account, or a session or token that is not the
    ///   account's (nothing is revoked then); `invalidArgument` for a session ID shorter than 8.
    @discardableResult
    package func revokeTokens(ofUser name: String, _ which: Revocation) async throws -> Int {
        if case .sessions(let ids) = which, let short = ids.first(where: { $0.count < 8 }) {
            throw UbiquityError(.invalidArgument, "session \(short.debugDescription): expected at least 8 hex digits of an ID `ubiq admin user tokens \(name)` lists")
        }
        return try await store.write { tx in
            let account = try await RecordsAdmin.account(named: name, in: tx)
            switch which {
            case .all:
                return try await tx.revokeWebAuthTokens(accountID: account.id)
            case .token(let token):
                guard let live = try await tx.webAuthToken(digest: SecretToken.digest(token), now: 0), live.account.id == account.id else {
                    throw UbiquityError(.notFound, "the token is not one of \(name)'s (unknown, revoked, or another user's)")
                }
                return try await tx.revokeWebAuthSession(live.token.session)
            case .sessions(let ids):
                let sessions = Set(try await tx.webAuthTokens(accountID: account.id, now: 0).map(\.session))
                var chosen: [String] = []
                for id in ids {
                    let matches = sessions.filter { $0.hasPrefix(id.lowercased()) }
                    guard matches.count == 1, let session = matches.first else {
                        throw UbiquityError(.notFound, matches.isEmpty
                            ? "\(name) has no session \(id); `ubiq admin user tokens \(name)` lists them"
                            : "session \(id) is ambiguous: give more of its digits")
                    }
                    chosen.append(session)
                }
                var revoked = 0
                for session in Set(chosen) { revoked += try await tx.revokeWebAuthSession(session) }
                return revoked
            }
        }
    }

    /// Sets the account's password (nil: none, token sign-in only) and, unless `keepTokens`,
    /// revokes all its tokens (every device and web app signs in again); how many were revoked.
    @discardableResult
    package func setPassword(ofUser name: String, to password: String?, keepTokens: Bool = false) async throws -> Int {
        let hash = try await hashed(password)
        return try await store.write { tx in
            let account = try await RecordsAdmin.account(named: name, in: tx)
            try await tx.setPasswordHash(accountID: account.id, hash)
            return keepTokens ? 0 : try await tx.revokeWebAuthTokens(accountID: account.id)
        }
    }

    /// Disables the account (its tokens are revoked, it cannot sign in, and tokens issued
    /// later are refused) or enables it again; how many tokens were revoked.
    @discardableResult
    package func setDisabled(_ disabled: Bool, user name: String) async throws -> Int {
        try await store.write { tx in
            let account = try await RecordsAdmin.account(named: name, in: tx)
            guard disabled else {
                try await tx.setAccountDisabled(accountID: account.id, at: nil)
                return 0
            }
            try await tx.setAccountDisabled(accountID: account.id, at: account.disabledAt ?? RecordsAdmin.now)
            return try await tx.revokeWebAuthTokens(accountID: account.id)
        }
    }
}
