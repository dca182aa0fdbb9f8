// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// A container's allowed origins: the web origins its sign-in page may hand a new web-auth token
/// to by `postMessage` (CloudKit's "Allowed Origins" of an API token), so a CloudKit JS app
/// served from another origin than the server's receives it.
extension RecordsAdmin {
    /// The origin `text` names, as browsers write it (`https://app.example.org`, a port only when
    /// not the scheme's default), or an error saying what was expected.
    package static func origin(_ text: String) throws -> String {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = components.host?.lowercased(), !host.isEmpty, components.path.isEmpty || components.path == "/",
              components.query == nil, components.fragment == nil, components.user == nil else {
            throw UbiquityError(.invalidArgument, "origin \(text.debugDescription): expected a web origin, scheme and host only (like https://app.example.org)")
        }
        let port = components.port.flatMap { ($0 == 80 && scheme == "http") || ($0 == 443 && scheme == "https") ? nil : $0 }
        return "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "")
    }

    /// The container's allowed origins, after adding `add` and removing `remove`.
    package func allowedOrigins(container: String, add: [String] = [], remove: [String] = []) async throws -> [String] {
        let added = try add.map(Self.origin)
        let removed = try remove.map(Self.origin)
        return try await store.write { tx in
            guard try await tx.containerExists(container) else {
                throw UbiquityError(.notFound, "container \(container) does not exist; add it with `ubiq admin container add`")
            }
            for origin in added { try await tx.setAllowedOrigin(true, container: container, origin: origin) }
            for origin in removed { try await tx.setAllowedOrigin(false, container: container, origin: origin) }
            return try await tx.allowedOrigins(container: container)
        }
    }
}
