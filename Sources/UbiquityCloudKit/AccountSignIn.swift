// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

/// Signs this device in to and out of a Ubiquity server (`ubiq account login|logout`): the
/// server's `/auth/device` endpoints, which exchange a user name and password (or check a token
/// an administrator issued) for a device token, and revoke it. The account file keeps the result.
public struct AccountSignIn: Sendable {
    /// The server's base URL.
    public let serverURL: URL
    let transport: any CloudKitTransport

    /// Talks to the server at `serverURL` (http or https).
    public init(serverURL: URL, transport: (any CloudKitTransport)? = nil) throws {
        guard serverURL.scheme == "http" || serverURL.scheme == "https", serverURL.host != nil else {
            throw UbiquityError(.invalidArgument, "--server \(serverURL.absoluteString): expected an http(s) URL such as https://ubiquity.example.org")
        }
        self.serverURL = serverURL
        self.transport = transport ?? HTTPClientTransport()
    }

    /// Checks the password and returns the account with a new device token.
    /// - Throws: ``CloudKitError`` `notAuthenticated` for a wrong name or password,
    ///   `networkFailure` when the server cannot be reached.
    public func signIn(user: String, password: String, deviceName: String) async throws -> UbiquityAccountFile.Account {
        let reply = try await post("/auth/device", ["userName": .string(user), "password": .string(password), "deviceName": .string(deviceName)])
        guard let token = reply["webAuthToken"]?.stringValue else {
            throw CloudKitError(.internalError, "the server answered the sign-in without a token")
        }
        return UbiquityAccountFile.Account(server: Self.canonical(serverURL), user: reply["userName"]?.stringValue ?? user, deviceToken: token,
                                           deviceName: deviceName, signedInAt: Int64(Date().timeIntervalSince1970 * 1000))
    }

    /// Checks a token an administrator issued (`ubiq admin user token NAME --device`) and
    /// returns the account it signs in.
    public func signIn(token: String, deviceName: String) async throws -> UbiquityAccountFile.Account {
        let reply = try await post("/auth/device/verify", ["webAuthToken": .string(token)])
        guard let user = reply["userName"]?.stringValue else {
            throw CloudKitError(.internalError, "the server answered the token check without a user name")
        }
        return UbiquityAccountFile.Account(server: Self.canonical(serverURL), user: user, deviceToken: token, deviceName: deviceName,
                                           signedInAt: Int64(Date().timeIntervalSince1970 * 1000))
    }

    /// Revokes the account's device token on the server.
    public func signOut(_ account: UbiquityAccountFile.Account) async throws {
        guard let token = account.deviceToken else { return }
        _ = try await post("/auth/device/signout", ["webAuthToken": .string(token)])
    }

    /// The URL as the account file keeps it: no trailing slash.
    public static func canonical(_ url: URL) -> String {
        var text = url.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }

    private func post(_ path: String, _ body: [String: JSONValue]) async throws -> [String: JSONValue] {
        let prefix = serverURL.path.hasSuffix("/") ? String(serverURL.path.dropLast()) : serverURL.path
        let request = CloudKitHTTPRequest(serverURL: serverURL, method: "POST", path: prefix + path,
                                          headers: ["Content-Type": "application/json; charset=utf-8"], body: JSONValue.object(body).serialized())
        let response: CloudKitHTTPResponse
        do {
            response = try await transport.send(request)
        } catch let error as CloudKitError {
            throw error
        } catch {
            throw CloudKitError(.networkFailure, "cannot reach \(serverURL.absoluteString): \(error)", underlying: error)
        }
        let json = try? JSONValue.parse(response.body)
        guard (200..<300).contains(response.status) else {
            if let json, let wire = WireError(json: json) { throw CloudKitError(wire: wire, httpStatus: response.status) }
            if response.status == 404 {
                throw CloudKitError(.badContainer, "\(serverURL.absoluteString) has no device sign-in (\(path)): is it a Ubiquity server?")
            }
            throw CloudKitError.http(status: response.status, body: response.body)
        }
        guard let object = json?.objectValue else {
            throw CloudKitError(.internalError, "the server's answer to \(path) is not a JSON object")
        }
        return object
    }
}
