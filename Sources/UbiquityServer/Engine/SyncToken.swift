// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// The opaque tokens of the change APIs and query paging. Each names what it belongs to (a zone
/// id, a database id, a query's fingerprint) so a token used elsewhere is recognised as foreign.
/// The encoding is base64url text; clients must not interpret it.
enum SyncToken {
    /// A zone change token: the zone's id and a change sequence.
    static func zone(id: Int64, sequence: Int64) -> String { encode("z1:\(id):\(sequence)") }
    /// A database change token.
    static func database(id: Int64, sequence: Int64) -> String { encode("d1:\(id):\(sequence)") }
    /// A continuation marker: an offset into a query's results.
    static func marker(fingerprint: String, offset: Int) -> String { encode("q1:\(fingerprint):\(offset)") }

    /// Decodes a token of the given kind (`z1`, `d1`, `q1`) into its two parts; nil when malformed
    /// or of another kind.
    static func decode(_ token: String, kind: String) -> (String, Int64)? {
        var text = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.utf8.count % 4 != 0 { text += "=" }
        guard let data = Data(base64Encoded: text), let plain = String(data: data, encoding: .utf8) else { return nil }
        let parts = plain.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == kind, let number = Int64(parts[2]), number >= 0 else { return nil }
        return (String(parts[1]), number)
    }

    static func encode(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
