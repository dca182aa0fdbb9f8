// SPDX-License-Identifier: Apache-2.0
import Crypto

extension SHA256 {
    /// The lower-case hex SHA-256 of `bytes` in one call: fingerprints of version contents and
    /// opaque identifiers such as the identity token.
    package static func hexHash(_ bytes: some Sequence<UInt8>) -> String {
        hash(data: Array(bytes)).hex
    }
}

extension SHA256.Digest {
    /// The digest as lower-case hex.
    package var hex: String { Hex.encode(self) }
}
