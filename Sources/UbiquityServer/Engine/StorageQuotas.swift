// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// How much each database may hold: its live records' stored JSON plus the distinct assets they
/// refer to (each counted once per database). nil is unlimited.
package struct StorageQuotas: Sendable, Hashable {
    /// Per user: each private database.
    package var privateBytes: Int64?
    /// Per container and environment: the public database.
    package var publicBytes: Int64?

    /// Makes quotas (unlimited by default).
    package init(privateBytes: Int64? = nil, publicBytes: Int64? = nil) {
        self.privateBytes = privateBytes
        self.publicBytes = publicBytes
    }

    /// The quota of a database.
    package func limit(for key: DatabaseKey) -> Int64? {
        key.scope == .public ? publicBytes : privateBytes
    }

    /// Reads a byte count with an optional K/M/G/T suffix (``ByteSize``: powers of 1024; `B`,
    /// `iB` accepted: `5G`, `5GiB`, `100 MB`, `1.5G`).
    /// - Throws: `UbiquityError.invalidArgument` naming `argument` and what was expected.
    package static func parseBytes(_ text: String, argument: String) throws -> Int64 {
        guard let bytes = ByteSize.parse(text) else {
            throw UbiquityError(.invalidArgument, "\(argument) \(text): expected a number of bytes, optionally with K, M, G or T (e.g. 5G)")
        }
        return bytes
    }
}
