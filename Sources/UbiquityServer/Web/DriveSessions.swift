// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import UbiquityCore
import UbiquityWire

/// The signed-in user of a Drive page: the account, its session token (the cookie) and the
/// CSRF token its forms carry.
struct DriveUser: Sendable {
    /// The account.
    let account: StoredAccount
    /// The stored token behind the cookie.
    let token: StoredWebAuthToken
    /// What every form and request that changes anything must carry (`csrf` field or
    /// `X-CSRF-Token` header): an HMAC of the session's cookie, which a page of another site
    /// cannot read.
    let csrf: String
    /// Where the user's requests go: their private database of the synced folder's container.
    let context: RecordsEngine.Context
}

/// Sessions of the web's Drive: signing in with the account's password (slowed by
/// ``SignInGuard``), the session cookie (`HttpOnly`, `SameSite=Strict`, `Secure` under TLS or
/// behind a proxy that says `X-Forwarded-Proto: https`), CSRF tokens and signing out. A session
/// is a web-auth token bound to the synced folder's container (`iCloud.org.ubiquity.Drive`), so
/// the cookie opens nothing else.
struct DriveSessions: Sendable {
    let admin: RecordsAdmin
    let store: any RecordStore
    let configuration: RecordsServerConfiguration
    let signInGuard: SignInGuard

    /// The cookie's name.
    static let cookieName = "ubiq_drive"
    /// The environment the daemons sync in (the CloudKit client's default).
    static let environment = CloudKitEnvironment.development

    /// The signed-in user of `request`, or nil (no cookie, an expired or revoked session).
    func user(of request: Request) async throws -> DriveUser? {
        guard let cookie = Self.cookie(in: request), !cookie.isEmpty else { return nil }
        let digest = SecretToken.digest(cookie)
        let now = RecordsAuthenticator.now
        guard let live = try await store.readWithoutSnapshot({ tx in try await tx.webAuthToken(digest: digest, now: now) }),
              live.token.container == DocumentItemRecord.container else { return nil }
        let container = DocumentItemRecord.container
        let caller = RecordsCaller(identity: .user(accountID: live.account.id,
                                                   userRecordName: RecordsCaller.userRecordName(accountID: live.account.id, container: container)),
                                   deviceID: "web")
        let context = RecordsEngine.Context(container: container, environment: Self.environment, scope: .private, caller: caller,
                                            baseURL: configuration.baseURL(request: request))
        return DriveUser(account: live.account, token: live.token, csrf: Self.csrf(cookie: cookie), context: context)
    }

    /// Checks a password: the session's cookie value, or nil with why not.
    func signIn(user name: String, password: String, address: String) async throws -> Result<String, DriveRefusal> {
        if let seconds = try await signInGuard.begin(user: name, address: address) {
            return .failure(DriveRefusal(status: .tooManyRequests, message: "Too many wrong passwords: try again in \(seconds) s."))
        }
        do {
            let token = try await admin.signIn(user: name, password: password, lifetime: configuration.longWebAuthTokenLifetime,
                                               container: DocumentItemRecord.container)
            try await signInGuard.finish(user: name, address: address, success: token != nil)
            guard let token else { return .failure(DriveRefusal(status: .unauthorized, message: "The user name or password is wrong.")) }
            return .success(token)
        } catch let error as UbiquityError where error.code == .permissionDenied {
            try await signInGuard.finish(user: name, address: address, success: true)
            return .failure(DriveRefusal(status: .forbidden, message: "This account is disabled: ask the server's administrator."))
        }
    }

    /// Ends the session of `user` (its token is revoked).
    func signOut(_ user: DriveUser) async throws {
        let session = user.token.session
        _ = try await store.write { tx in try await tx.revokeWebAuthSession(session) }
    }

    /// The `Set-Cookie` value that stores `value` (nil: clears the cookie).
    func setCookie(_ value: String?, request: Request) -> String {
        var parts = ["\(Self.cookieName)=\(value ?? "")", "Path=/", "HttpOnly", "SameSite=Strict"]
        parts.append(value == nil ? "Max-Age=0" : "Max-Age=\(configuration.longWebAuthTokenLifetime)")
        if configuration.tlsCertificatePath != nil || request.headers[HTTPField.Name("X-Forwarded-Proto")!] == "https"
            || configuration.publicURL?.hasPrefix("https:") == true {
            parts.append("Secure")
        }
        return parts.joined(separator: "; ")
    }

    /// Refuses a request that changes something without the session's CSRF token.
    func checkCSRF(_ user: DriveUser, given: String?) throws {
        guard let given, SecretToken.constantTimeEquals(given, user.csrf) else {
            throw DriveRefusal(status: .forbidden, message: "This form has expired or did not come from this site: reload the page and try again.")
        }
    }

    /// The session cookie of a request.
    static func cookie(in request: Request) -> String? { cookie(named: cookieName, in: request) }

    /// The cookie `name` of a request.
    static func cookie(named name: String, in request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }

    /// The CSRF token of a session cookie.
    static func csrf(cookie: String) -> String {
        Hex.encode(HMAC<SHA256>.authenticationCode(for: Array("ubiquity drive csrf".utf8), using: SymmetricKey(data: Array(cookie.utf8))))
    }
}

/// A Drive request refused with a page saying why.
struct DriveRefusal: Error, Sendable {
    /// The HTTP status.
    var status: HTTPResponse.Status
    /// What the page says.
    var message: String
}
