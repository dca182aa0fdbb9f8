// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation

/// Who may read `/metrics` (issue 24's review: the metrics told anyone the server's traffic).
/// With a token configured, a request must carry `Authorization: Bearer TOKEN`; without one,
/// only clients on this machine (loopback addresses) are answered. A reverse proxy on the same
/// machine connects from loopback: keep it from forwarding `/metrics`, or set a token.
package struct MetricsAccess: Sendable {
    /// The token a request must present (nil: loopback clients only).
    package let token: String?

    /// Access with `token` (nil or empty: loopback clients only).
    package init(token: String?) {
        self.token = token.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Whether a request from `address` (an IP address, nil when unknown) with the
    /// `authorization` header may read the metrics.
    package func allows(address: String?, authorization: String?) -> Bool {
        if let token {
            guard let authorization, authorization.hasPrefix("Bearer ") else { return false }
            let presented = Array(authorization.dropFirst("Bearer ".count).utf8)
            // compared as digests: the same time whatever the presented token
            return SHA256.hash(data: presented) == SHA256.hash(data: Array(token.utf8))
        }
        guard let address else { return false }
        return Self.isLoopback(address)
    }

    /// Whether `address` is a loopback address: 127.0.0.0/8, ::1, or IPv4 loopback mapped into IPv6.
    static func isLoopback(_ address: String) -> Bool {
        let lowered = address.lowercased()
        if lowered == "::1" { return true }
        let v4 = lowered.hasPrefix("::ffff:") ? String(lowered.dropFirst("::ffff:".count)) : lowered
        let parts = v4.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}
