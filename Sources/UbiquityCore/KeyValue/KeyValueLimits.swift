// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The limits of the iCloud key-value store (`NSUbiquitousKeyValueStore`), enforced the same way
/// by the library (before a set is stored) and by the server (before a save is applied).
///
/// A store's size is the sum over its entries of the key's UTF-8 bytes and the encoded value's
/// UTF-8 bytes; removed keys count for nothing.
public enum KeyValueLimits {
    /// The longest key, in UTF-8 bytes (Apple's documented 64-byte rule).
    public static let maximumKeyBytes = 64
    /// The most keys a store may hold.
    public static let maximumKeys = 1024
    /// The most bytes (keys plus encoded values) a store may hold: 1 MB.
    public static let maximumTotalBytes = 1_000_000

    /// The bytes one entry counts for.
    public static func size(key: String, encodedValue: String?) -> Int {
        guard let encodedValue else { return 0 }
        return key.utf8.count + encodedValue.utf8.count
    }

    /// Nil when `key` is a valid key, otherwise why not (for error messages).
    public static func problem(withKey key: String) -> String? {
        if key.isEmpty { return "the key is empty" }
        let bytes = key.utf8.count
        if bytes > maximumKeyBytes {
            return "key '\(key.prefix(80))' is \(bytes) bytes in UTF-8; a key may have at most \(maximumKeyBytes)"
        }
        return nil
    }
}

/// How key-value entries travel as CloudKit records: one record per key, in the reserved zone
/// `_ubiquityKeyValueStore` of the user's private database.
public enum KeyValueRecord {
    /// The reserved zone's name.
    public static let zoneName = "_ubiquityKeyValueStore"
    /// The record type of every entry.
    public static let recordType = "KeyValueEntry"
    /// The field holding the encoded value (STRING); absent on a removed key.
    public static let valueField = "value"
    /// The field holding the writing device's timestamp, in milliseconds since 1970 (INT64).
    public static let modifiedField = "modified"
}
