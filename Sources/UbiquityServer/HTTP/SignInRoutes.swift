// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import UbiquityCore

/// The sign-in page that replaces Apple's: `GET /auth/signin?ckAPIToken=…` shows a form;
/// `POST /auth/signin` checks the password and hands the new `ckWebAuthToken` to the opener
/// window by `postMessage` (or by redirect to a callback URL on the server's own host), as
/// CloudKit JS expects.
/// Wrong passwords are slowed by ``SignInGuard`` (429 with a message saying how long to wait).
struct SignInRoutes: Sendable {
    let admin: RecordsAdmin
    let store: any RecordStore
    let configuration: RecordsServerConfiguration
    let signInGuard: SignInGuard
    /// The server-wide limit on collected request bodies (the form is read before any check).
    let bodyBudget: RequestBodyBudget

    func register<Context: RequestContext>(on router: Router<Context>) {
        let routes = self
        router.get("/auth/signin") { request, _ -> Response in
            let query = request.uri.queryParameters
            let container = query["container"].map(String.init) ?? ""
            let token = query["ckAPIToken"].map(String.init) ?? ""
            let callback = query["callback"].map(String.init).flatMap { SignInPage.isAcceptableCallbackURL($0) ? $0 : nil }
            let origin = query["origin"].map(String.init).flatMap { try? RecordsAdmin.origin($0) }
            return SignInRoutes.html(SignInPage.form(container: container, apiToken: token, callbackURL: callback, message: nil, origin: origin),
                                     status: .ok)
        }
        router.post("/auth/signin") { request, context -> Response in
            let form = try await routes.bodyBudget.collect(request, upTo: 64 * 1024, tooLarge: { HTTPError(.contentTooLarge) }) { buffer in
                SignInRoutes.parseForm(String(buffer: buffer))
            }
            let address = (context as? any RemoteAddressRequestContext)?.remoteAddress?.ipAddress ?? "?"
            return try await routes.signIn(form: form, request: request, address: address)
        }
    }

    func signIn(form: [String: String], request: Request, address: String = "?") async throws -> Response {
        let container = form[SignInPage.Field.container] ?? ""
        let apiToken = form[SignInPage.Field.apiToken] ?? form["ckAPIToken"] ?? ""
        let callback = form[SignInPage.Field.callbackURL].flatMap { $0.isEmpty ? nil : $0 }
        let appOrigin = form[SignInPage.Field.origin].flatMap { try? RecordsAdmin.origin($0) }
        let digest = SecretToken.digest(apiToken)
        let (tokenContainer, allowed) = try await store.read { tx -> (String?, [String]) in
            let container = try await tx.container(forAPITokenDigest: digest)
            guard let container else { return (nil, []) }
            return (container, try await tx.allowedOrigins(container: container))
        }
        guard let tokenContainer, container.isEmpty || tokenContainer == container else {
            return SignInRoutes.html(SignInPage.form(container: container, apiToken: apiToken, callbackURL: callback,
                                                     message: "This sign-in link is not valid: its API token is unknown.", origin: appOrigin), status: .unauthorized)
        }
        let lifetime = form[SignInPage.Field.keepSignedIn] != nil ? configuration.longWebAuthTokenLifetime : configuration.webAuthTokenLifetime
        let user = form[SignInPage.Field.userName] ?? ""
        if let seconds = try await signInGuard.begin(user: user, address: address) {
            var response = SignInRoutes.html(SignInPage.form(container: container, apiToken: apiToken, callbackURL: callback,
                                                             message: "Too many wrong passwords: try again in \(seconds) s.", userName: user, origin: appOrigin),
                                             status: .tooManyRequests)
            response.headers[.retryAfter] = "\(seconds)"
            return response
        }
        var token: String?
        var refusal = "The user name or password is wrong."
        if let password = form[SignInPage.Field.password] {
            do {
                // the token opens the API token's container only (issue 24, finding 9)
                token = try await admin.signIn(user: user, password: password, lifetime: lifetime, container: tokenContainer)
                try await signInGuard.finish(user: user, address: address, success: token != nil)
            } catch let error as UbiquityError where error.code == .permissionDenied {
                try await signInGuard.finish(user: user, address: address, success: true)  // the password was right
                refusal = "This account is disabled: ask the server's administrator."
            } catch {
                try await signInGuard.finish(user: user, address: address, success: false)
                throw error
            }
        }
        guard let token else {
            return SignInRoutes.html(SignInPage.form(container: container, apiToken: apiToken, callbackURL: callback,
                                                     message: refusal, userName: user, origin: appOrigin), status: .unauthorized)
        }
        if let callback, let url = URL(string: callback), SignInRoutes.sameHost(url, request: request),
           let location = SignInPage.callbackRedirect(callbackURL: callback, token: token) {
            return Response(status: .found, headers: [.location: location])
        }
        // the app's window when its origin is one the container allows, else a window of this
        // page's own origin (the form's POST says which); never any other
        let origin = appOrigin.flatMap { allowed.contains($0) ? $0 : nil } ?? request.headers[.origin]
        return SignInRoutes.html(SignInPage.success(webAuthToken: token, callbackURL: nil, targetOrigin: origin), status: .ok)
    }

    /// A callback may only lead back to the host the page was served from (no open redirect).
    static func sameHost(_ url: URL, request: Request) -> Bool {
        guard let host = url.host else { return false }
        let served = (request.head.authority ?? "").split(separator: ":").first.map(String.init) ?? ""
        return host == served || host == "localhost" || host == "127.0.0.1"
    }

    static func parseForm(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode: (Substring) -> String = { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            result[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return result
    }

    static func html(_ page: String, status: HTTPResponse.Status) -> Response {
        Response(status: status, headers: [.contentType: "text/html; charset=utf-8", .init("Cache-Control")!: "no-store",
                                           .init("X-Frame-Options")!: "DENY",
                                           .init("Content-Security-Policy")!: SignInPage.contentSecurityPolicy],
                 body: .init(byteBuffer: ByteBuffer(string: page)))
    }
}
