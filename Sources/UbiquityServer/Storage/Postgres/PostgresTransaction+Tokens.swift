// SPDX-License-Identifier: Apache-2.0
import PostgresNIO
import UbiquityCore

/// Web-auth and device tokens, the account changes that end their sessions, and the sign-in
/// guard's counts.
extension PostgresTransaction {
    static let tokenColumns = """
        web_auth_tokens.digest, web_auth_tokens.account, web_auth_tokens.container, web_auth_tokens.session, web_auth_tokens.device,
        web_auth_tokens.created_at AS token_created_at, web_auth_tokens.expires_at
        """

    private static func token(_ row: PostgresRandomAccessRow) throws -> StoredWebAuthToken {
        StoredWebAuthToken(digest: try row.value("digest"), accountID: try row.value("account"), container: try row.value("container"),
                           session: try row.value("session"), isDevice: try row.value("device"), createdAt: try row.value("token_created_at"),
                           expiresAt: try row.value("expires_at"))
    }

    func addWebAuthToken(_ token: StoredWebAuthToken) async throws {
        let inserted = try await session.row("""
            INSERT INTO web_auth_tokens (digest, account, container, session, device, created_at, expires_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING RETURNING 1
            """, [.text(token.digest), .int(token.accountID), .text(token.container), .text(token.session), .bool(token.isDevice),
                  .int(token.createdAt), .int(token.expiresAt)])
        if inserted == nil { throw UbiquityError(.alreadyExists, "the web-auth token exists") }
    }

    func webAuthToken(digest: String, now: Int64) async throws -> (token: StoredWebAuthToken, account: StoredAccount)? {
        guard let row = try await session.row("""
            SELECT \(Self.accountColumns), \(Self.tokenColumns)
            FROM web_auth_tokens JOIN accounts ON accounts.id = web_auth_tokens.account
            WHERE web_auth_tokens.digest = $1 AND web_auth_tokens.expires_at > $2 AND accounts.disabled_at IS NULL
            """, [.text(digest), .int(now)]), let account = try account(row) else { return nil }
        return (try Self.token(row), account)
    }

    func credentials(apiTokenDigest: String, webTokenDigest: String?, now: Int64) async throws
        -> (container: String?, live: (token: StoredWebAuthToken, account: StoredAccount)?) {
        // one row whatever matches: the API token's container beside the web token's columns
        guard let row = try await session.row(Credentials.self, [.text(apiTokenDigest), .text(webTokenDigest), .int(now)]) else { return (nil, nil) }
        let container: String? = try row.value("api_container")
        guard try row.value("digest", as: String?.self) != nil, let account = try account(row) else { return (container, nil) }
        return (container, (try Self.token(row), account))
    }

    /// The statement of ``credentials(apiTokenDigest:webTokenDigest:now:)``.
    enum Credentials: PostgresStatement {
        static let name = "credentials"
        static let sql = """
            SELECT (SELECT container FROM api_tokens WHERE digest = $1) AS api_container, web.*
            FROM (VALUES (1)) AS one (x) LEFT JOIN (
                SELECT \(PostgresTransaction.accountColumns), \(PostgresTransaction.tokenColumns)
                FROM web_auth_tokens JOIN accounts ON accounts.id = web_auth_tokens.account
                WHERE web_auth_tokens.digest = $2::TEXT AND web_auth_tokens.expires_at > $3 AND accounts.disabled_at IS NULL
            ) AS web ON true
            """
    }

    func webAuthTokens(accountID: Int64, now: Int64) async throws -> [StoredWebAuthToken] {
        try await session.rows("""
            SELECT \(Self.tokenColumns) FROM web_auth_tokens WHERE account = $1 AND expires_at > $2 ORDER BY created_at, digest
            """, [.int(accountID), .int(now)]).map(Self.token)
    }

    func revokeWebAuthSession(_ session: String) async throws -> Int {
        try await self.session.rows("DELETE FROM web_auth_tokens WHERE session = $1 RETURNING 1", [.text(session)]).count
    }

    func revokeWebAuthTokens(accountID: Int64) async throws -> Int {
        try await session.rows("DELETE FROM web_auth_tokens WHERE account = $1 RETURNING 1", [.int(accountID)]).count
    }

    func setPasswordHash(accountID: Int64, _ hash: String?) async throws {
        try await session.execute("UPDATE accounts SET password_hash = $1 WHERE id = $2", [.text(hash), .int(accountID)])
    }

    func setAccountDisabled(accountID: Int64, at: Int64?) async throws {
        try await session.execute("UPDATE accounts SET disabled_at = $1 WHERE id = $2", [.int(at), .int(accountID)])
    }

    func signInBackoff(_ key: String, forUpdate: Bool) async throws -> SignInBackoff.Entry? {
        if forUpdate {
            // a row to lock even for a key seen the first time: concurrent attempts of one key,
            // from any process, wait for each other here (an all-zero row is no entry)
            try await session.execute("""
                INSERT INTO sign_in_backoffs (key, failures, blocked_until, last_failure) VALUES ($1, 0, 0, 0) ON CONFLICT DO NOTHING
                """, [.text(key)])
        }
        guard let row = try await session.row("SELECT failures, blocked_until, last_failure FROM sign_in_backoffs WHERE key = $1" + (forUpdate ? " FOR UPDATE" : ""),
                                        [.text(key)]) else { return nil }
        let entry = SignInBackoff.Entry(failures: Int(try row.value("failures", as: Int64.self)), blockedUntil: try row.value("blocked_until"),
                                        lastFailure: try row.value("last_failure"))
        return entry.failures == 0 && entry.blockedUntil == 0 ? nil : entry
    }

    func setSignInBackoff(_ key: String, _ entry: SignInBackoff.Entry?) async throws {
        guard let entry else {
            try await session.execute("DELETE FROM sign_in_backoffs WHERE key = $1", [.text(key)])
            return
        }
        try await session.execute("""
            INSERT INTO sign_in_backoffs (key, failures, blocked_until, last_failure) VALUES ($1, $2, $3, $4)
            ON CONFLICT (key) DO UPDATE SET failures = excluded.failures, blocked_until = excluded.blocked_until, last_failure = excluded.last_failure
            """, [.text(key), .int(Int64(entry.failures)), .double(entry.blockedUntil), .double(entry.lastFailure)])
    }

    func pruneSignInBackoffs(quietSince: Double, now: Double) async throws {
        try await session.execute("DELETE FROM sign_in_backoffs WHERE blocked_until <= $1 AND last_failure < $2", [.double(now), .double(quietSince)])
    }
}
