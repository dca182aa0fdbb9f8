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
    /// A continuation marker: the position of a page's last record in its query's sort order
    /// (``QueryPosition``). (`q1` markers, offsets, are still read: ``decode(_:kind:)``.)
    static func marker(fingerprint: String, after position: QueryPosition) -> String { encode("q2:\(fingerprint):\(position.encoded)") }

    /// The fingerprint and position of a `q2` marker; nil when malformed or of another kind.
    static func decodeMarker(_ marker: String) -> (fingerprint: String, position: String)? {
        guard let plain = decodeText(marker) else { return nil }
        let parts = plain.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "q2" else { return nil }
        return (String(parts[1]), String(parts[2]))
    }

    /// Decodes a token of the given kind (`z1`, `d1`, `q1`) into its two parts; nil when malformed
    /// or of another kind.
    static func decode(_ token: String, kind: String) -> (String, Int64)? {
        guard let plain = decodeText(token) else { return nil }
        let parts = plain.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == kind, let number = Int64(parts[2]), number >= 0 else { return nil }
        return (String(parts[1]), number)
    }

    /// The text of a base64url token; nil when it is not base64url UTF-8.
    static func decodeText(_ token: String) -> String? {
        guard let bytes = Base64URL.decode(token) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    static func encode(_ text: String) -> String {
        Base64URL.encode(text.utf8)
    }
}
