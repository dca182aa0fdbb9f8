// SPDX-License-Identifier: Apache-2.0
import GRDB
import UbiquityCore

/// Web-auth and device tokens, the account changes that end their sessions, and the sign-in
/// guard's counts.
extension SQLiteTransaction {
    /// The columns ``token(_:)`` decodes (the creation time aliased: a join with accounts has its own).
    private static let tokenColumns = """
        web_auth_tokens.digest, web_auth_tokens.account, web_auth_tokens.container, web_auth_tokens.session, web_auth_tokens.device,
        web_auth_tokens.created_at AS token_created_at, web_auth_tokens.expires_at
        """

    private static func token(_ row: Row) -> StoredWebAuthToken {
        StoredWebAuthToken(digest: row["digest"], accountID: row["account"], container: row["container"], session: row["session"],
                           isDevice: row["device"], createdAt: row["token_created_at"], expiresAt: row["expires_at"])
    }

    func addWebAuthToken(_ token: StoredWebAuthToken) throws {
        try db.execute(sql: "INSERT INTO web_auth_tokens (digest, account, container, session, device, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                       arguments: [token.digest, token.accountID, token.container, token.session, token.isDevice, token.createdAt, token.expiresAt])
    }

    /// A live web token (digest, now) with its account: the SELECT of ``webAuthToken(digest:now:)``
    /// and of ``credentials(apiTokenDigest:webTokenDigest:now:)`` (made once: it is the text GRDB's
    /// statement cache is looked up by).
    private static let liveTokenSQL = """
        SELECT accounts.*, \(tokenColumns)
        FROM web_auth_tokens JOIN accounts ON accounts.id = web_auth_tokens.account
        WHERE web_auth_tokens.digest = ? AND web_auth_tokens.expires_at > ? AND accounts.disabled_at IS NULL
        """

    /// The statement of ``credentials(apiTokenDigest:webTokenDigest:now:)``.
    private static let credentialsSQL = """
        SELECT (SELECT container FROM api_tokens WHERE digest = ?) AS api_container, web.*
        FROM (SELECT 1) AS one LEFT JOIN (\(liveTokenSQL)) AS web ON 1
        """

    func webAuthToken(digest: String, now: Int64) throws -> (token: StoredWebAuthToken, account: StoredAccount)? {
        // (the statements of every request are compiled once: `cachedStatement`)
        guard let row = try Row.fetchOne(db.cachedStatement(sql: Self.liveTokenSQL), arguments: [digest, now]),
              let account = account(row) else { return nil }
        return (Self.token(row), account)
    }

    /// One statement: the API token's container, and the live web token with its account, if any
    /// (a row of NULLs else).
    func credentials(apiTokenDigest: String, webTokenDigest: String?, now: Int64) throws
        -> (container: String?, live: (token: StoredWebAuthToken, account: StoredAccount)?) {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: Self.credentialsSQL), arguments: [apiTokenDigest, webTokenDigest, now]) else { return (nil, nil) }
        let container: String? = row["api_container"]
        let tokenDigest: String? = row["digest"]
        guard tokenDigest != nil, let account = account(row) else { return (container, nil) }
        return (container, (Self.token(row), account))
    }

    func webAuthTokens(accountID: Int64, now: Int64) throws -> [StoredWebAuthToken] {
        try Row.fetchAll(db, sql: "SELECT \(Self.tokenColumns) FROM web_auth_tokens WHERE account = ? AND expires_at > ? ORDER BY created_at, digest",
                         arguments: [accountID, now]).map(Self.token)
    }

    func revokeWebAuthSession(_ session: String) throws -> Int {
        try db.execute(sql: "DELETE FROM web_auth_tokens WHERE session = ?", arguments: [session])
        return db.changesCount
    }

    func revokeWebAuthTokens(accountID: Int64) throws -> Int {
        try db.execute(sql: "DELETE FROM web_auth_tokens WHERE account = ?", arguments: [accountID])
        return db.changesCount
    }

    func setPasswordHash(accountID: Int64, _ hash: String?) throws {
        try db.execute(sql: "UPDATE accounts SET password_hash = ? WHERE id = ?", arguments: [hash, accountID])
    }

    func setAccountDisabled(accountID: Int64, at: Int64?) throws {
        try db.execute(sql: "UPDATE accounts SET disabled_at = ? WHERE id = ?", arguments: [at, accountID])
    }

    func signInBackoff(_ key: String, forUpdate: Bool) throws -> SignInBackoff.Entry? {
        // one writer at a time: a write transaction's read is already exclusive
        try Row.fetchOne(db, sql: "SELECT failures, blocked_until, last_failure FROM sign_in_backoffs WHERE key = ?", arguments: [key]).map {
            SignInBackoff.Entry(failures: $0["failures"], blockedUntil: $0["blocked_until"], lastFailure: $0["last_failure"])
        }
    }

    func setSignInBackoff(_ key: String, _ entry: SignInBackoff.Entry?) throws {
        guard let entry else {
            try db.execute(sql: "DELETE FROM sign_in_backoffs WHERE key = ?", arguments: [key])
            return
        }
        try db.execute(sql: """
            INSERT INTO sign_in_backoffs (key, failures, blocked_until, last_failure) VALUES (?, ?, ?, ?)
            ON CONFLICT (key) DO UPDATE SET failures = excluded.failures, blocked_until = excluded.blocked_until, last_failure = excluded.last_failure
            """, arguments: [key, entry.failures, entry.blockedUntil, entry.lastFailure])
    }

    func pruneSignInBackoffs(quietSince: Double, now: Double) throws {
        try db.execute(sql: "DELETE FROM sign_in_backoffs WHERE blocked_until <= ? AND last_failure < ?", arguments: [now, quietSince])
    }
}
