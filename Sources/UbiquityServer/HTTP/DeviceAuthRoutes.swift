// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import UbiquityCore
import UbiquityWire

/// Device sign-in for `ubiq account login` (JSON; not part of CloudKit Web Services, whose
/// clients sign in through `/auth/signin`):
///
/// - `POST /auth/device` `{"userName", "password", "deviceName"}` → `{"webAuthToken", "userName",
///   "deviceName"}`: a device token (``SecretToken/generateDeviceToken()``), or 401
///   `AUTHENTICATION_FAILED`.
/// - `POST /auth/device/verify` `{"webAuthToken"}` → `{"userName"}` (`ubiq account login --token`),
///   or 401.
/// - `POST /auth/device/signout` `{"webAuthToken"}` → `{}`: the token is revoked.
///
/// Wrong passwords are slowed by ``SignInGuard`` (429 `THROTTLED` with `retryAfter`).
struct DeviceAuthRoutes: Sendable {
    let admin: RecordsAdmin
    let signInGuard: SignInGuard
    /// The server-wide limit on collected request bodies (the JSON is read before any check).
    let bodyBudget: RequestBodyBudget

    func register<Context: RequestContext>(on router: Router<Context>) {
        let admin = self.admin, signInGuard = self.signInGuard, budget = self.bodyBudget
        router.post("/auth/device") { request, context -> Response in
            guard let body = try await Self.body(request, budget: budget) else { return Self.malformed() }
            guard let user = body["userName"]?.stringValue, !user.isEmpty, let password = body["password"]?.stringValue else {
                return PushRoutes.error(WireError(.badRequest, "expected JSON {\"userName\": …, \"password\": …, \"deviceName\": …}"), status: .badRequest)
            }
            let device = body["deviceName"]?.stringValue ?? ""
            guard device.utf8.count <= 255, !device.contains(where: \.isNewline) else {
                return PushRoutes.error(WireError(.badRequest, "deviceName: expected one line of at most 255 bytes"), status: .badRequest)
            }
            let address = (context as? any RemoteAddressRequestContext)?.remoteAddress?.ipAddress ?? "?"
            if let seconds = try await signInGuard.begin(user: user, address: address) {
                return PushRoutes.error(WireError(.throttled, "too many wrong passwords: try again in \(seconds) s", retryAfter: seconds),
                                        status: .tooManyRequests)
            }
            let token: String?
            do {
                token = try await admin.signInDevice(user: user, password: password)
                try await signInGuard.finish(user: user, address: address, success: token != nil)
            } catch let error as UbiquityError where error.code == .permissionDenied {
                try await signInGuard.finish(user: user, address: address, success: true)  // the password was right
                return PushRoutes.error(WireError(.authenticationFailed, error.message), status: .unauthorized)
            } catch {
                try await signInGuard.finish(user: user, address: address, success: false)
                throw error
            }
            guard let token else {
                return PushRoutes.error(WireError(.authenticationFailed, "the user name or password is wrong"), status: .unauthorized)
            }
            return PushRoutes.json(.object(["webAuthToken": .string(token), "userName": .string(user), "deviceName": .string(device)]), status: .ok)
        }
        router.post("/auth/device/verify") { request, _ -> Response in
            guard let body = try await Self.body(request, budget: budget), let token = body["webAuthToken"]?.stringValue else { return Self.malformed() }
            // a web-auth token opens one container and only with its API token: it cannot sync a
            // device, so a sign-in with it must fail here, not at every sync pass after it
            guard SecretToken.isDeviceToken(token) else {
                return PushRoutes.error(WireError(.authenticationFailed, "not a device token: a web-auth token signs a web app in to one container (with its API token); a device signs in with a password or a device token"),
                                        status: .unauthorized)
            }
            guard let account = try await admin.account(forToken: token) else {
                return PushRoutes.error(WireError(.authenticationFailed, "the token is not valid (expired, revoked or unknown)"), status: .unauthorized)
            }
            return PushRoutes.json(.object(["userName": .string(account.name)]), status: .ok)
        }
        router.post("/auth/device/signout") { request, _ -> Response in
            guard let body = try await Self.body(request, budget: budget), let token = body["webAuthToken"]?.stringValue else { return Self.malformed() }
            try await admin.revokeToken(token)
            return PushRoutes.json(.object([:]), status: .ok)
        }
    }

    /// The request's JSON object, or nil when the body is not one (at most 64 KiB, within `budget`).
    static func body(_ request: Request, budget: RequestBodyBudget) async throws -> [String: JSONValue]? {
        try await budget.collect(request, upTo: 64 * 1024, tooLarge: { HTTPError(.contentTooLarge) }) { buffer in
            (try? JSONValue.parse(Data(buffer: buffer)))?.objectValue
        }
    }

    static func malformed() -> Response {
        PushRoutes.error(WireError(.badRequest, "expected a JSON object in the request body"), status: .badRequest)
    }
}
