// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire

/// The byte encoding of query-index keys: byte strings whose order (`memcmp`, then length: a
/// SQLite BLOB's and a PostgreSQL `bytea`'s) is the query order of `QueryPosition.precedes`.
///
/// Each component is self-delimiting (no encoding is a prefix of another), so a key is the
/// concatenation of its components and orders component by component:
/// - a number (INT64, DOUBLE, TIMESTAMP): `0x20`, the value as an ordered double (8 bytes), then
///   as an ordered integer (8 bytes), so integers past 2⁵³ keep their exact order;
/// - a string (and a reference, by its record name, as `RecordFilter.compare` orders them):
///   `0x30`, the NFC UTF-8 bytes with `0x00` written `0x00 0xFF`, then `0x00 0x00`;
/// - a missing value (or one that does not compare: bytes, location, asset): `0xF0`, after every
///   value in either direction (`QueryPosition`: such records sort last);
/// - a descending component: the bytes of a present value complemented, which reverses its order.
package enum QueryIndexKey {
    static let numberTag: UInt8 = 0x20
    static let stringTag: UInt8 = 0x30
    /// The tag of a missing value: after every present value, ascending or descending.
    package static let missingTag: UInt8 = 0xF0
    /// A byte after every tag: `prefix + [after]` follows every key that starts with `prefix`.
    package static let after: UInt8 = 0xFF

    /// Appends the encoding of `value` (nil: missing).
    package static func append(_ value: WireFieldValue?, descending: Bool, to key: inout [UInt8]) {
        let start = key.count
        switch value {
        case .int64(let number)?:
            appendNumber(Double(number), exact: number, to: &key)
        case .double(let number)?:
            appendNumber(number, exact: clampedInteger(number), to: &key)
        case .timestamp(let number)?:
            appendNumber(number, exact: clampedInteger(number), to: &key)
        case .string(let text)?:
            appendString(text, to: &key)
        case .reference(let reference)?:
            appendString(reference.recordName, to: &key)
        default:
            key.append(missingTag)
            return
        }
        if descending {
            for index in start..<key.count { key[index] = ~key[index] }
        }
    }

    /// The encoding of one value.
    package static func encoded(_ value: WireFieldValue?, descending: Bool = false) -> [UInt8] {
        var key: [UInt8] = []
        append(value, descending: descending, to: &key)
        return key
    }

    static func clampedInteger(_ number: Double) -> Int64 {
        Int64(exactly: number.rounded(.down)) ?? (number < 0 ? .min : .max)
    }

    static func appendNumber(_ number: Double, exact: Int64, to key: inout [UInt8]) {
        key.append(numberTag)
        let value = number == 0 ? 0 : number // -0.0 and 0.0 compare equal
        let bits = value.bitPattern
        let ordered = value.sign == .minus ? ~bits : bits | (1 << 63)
        appendBigEndian(ordered, to: &key)
        appendBigEndian(UInt64(bitPattern: exact) ^ (1 << 63), to: &key)
    }

    static func appendBigEndian(_ value: UInt64, to key: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { key.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    static func appendString(_ text: String, to key: inout [UInt8]) {
        key.append(stringTag)
        // Swift orders strings by their NFC scalars, which is the order of their NFC UTF-8 bytes.
        let normalized = text.utf8.allSatisfy { $0 < 0x80 } ? text : text.precomposedStringWithCanonicalMapping
        for byte in normalized.utf8 {
            key.append(byte)
            if byte == 0 { key.append(0xFF) }
        }
        key += [0, 0]
    }
}
