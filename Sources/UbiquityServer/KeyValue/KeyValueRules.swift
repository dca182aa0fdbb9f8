// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// The server's rules for the key-value store's zone (`_ubiquityKeyValueStore` of a private
/// database): one record of type `KeyValueEntry` per key (record name = key) with the fields
/// `value` (STRING or BYTES: the encoded value; absent for a removed key) and `modified` (INT64
/// or TIMESTAMP: the writing device's timestamp, ms since 1970).
///
/// Last writer wins by timestamp, the server deciding: a save older than the stored entry is not
/// applied and is answered with the stored record (so the device adopts it). The limits of
/// ``KeyValueLimits`` hold per user per container: a longer key is `BAD_REQUEST`, a save that
/// would take the store over 1024 keys or 1 MB is `QUOTA_EXCEEDED`.
enum KeyValueRules {
    /// A save's entry after validation.
    struct Entry {
        var modified: Int64
        /// The bytes it counts for (0 for a removed key).
        var size: Int
    }

    /// The zone's usage: keys holding a value, and their bytes.
    struct Usage {
        var keys = 0
        var bytes = 0

        mutating func add(_ size: Int) {
            guard size > 0 else { return }
            keys += 1
            bytes += size
        }

        mutating func remove(_ size: Int) {
            guard size > 0 else { return }
            keys -= 1
            bytes -= size
        }
    }

    /// Validates a save of `record` (type, key, fields).
    static func entry(of record: WireRecord, existingType: String?, path: String) throws -> Entry {
        if let problem = KeyValueLimits.problem(withKey: record.recordName) {
            throw WireError(.badRequest, "\(path).record.recordName: \(problem)")
        }
        let type = record.recordType ?? existingType
        guard type == KeyValueRecord.recordType else {
            throw WireError(.badRequest, "\(path).record.recordType: the key-value store's zone holds only records of type \(KeyValueRecord.recordType), not \(type ?? "none")")
        }
        let fields = record.fields ?? [:]
        for name in fields.keys where name != KeyValueRecord.valueField && name != KeyValueRecord.modifiedField {
            throw WireError(.badRequest, "\(path).record.fields.\(name): a \(KeyValueRecord.recordType) has only the fields \(KeyValueRecord.valueField) and \(KeyValueRecord.modifiedField)")
        }
        guard let modified = fields[KeyValueRecord.modifiedField].flatMap(timestamp) else {
            throw WireError(.badRequest, "\(path).record.fields.\(KeyValueRecord.modifiedField): required, an INT64 or TIMESTAMP (the writing device's time in milliseconds)")
        }
        let valueSize: Int?
        switch fields[KeyValueRecord.valueField] {
        case nil: valueSize = nil
        case .string(let value)?: valueSize = value.utf8.count
        case .bytes(let value)?: valueSize = value.count
        case let other?:
            throw WireError(.badRequest, "\(path).record.fields.\(KeyValueRecord.valueField): expected STRING or BYTES, not \(other.type)")
        }
        return Entry(modified: modified, size: valueSize.map { $0 + record.recordName.utf8.count } ?? 0)
    }

    /// The `modified` timestamp of stored fields.
    static func modified(_ fields: [String: WireFieldValue]) -> Int64? {
        fields[KeyValueRecord.modifiedField].flatMap(timestamp)
    }

    /// The bytes a stored record counts for.
    static func size(_ record: StoredRecord) -> Int {
        switch record.fields[KeyValueRecord.valueField] {
        case .string(let value)?: return record.recordName.utf8.count + value.utf8.count
        case .bytes(let value)?: return record.recordName.utf8.count + value.count
        default: return 0
        }
    }

    static func timestamp(_ value: WireFieldValue) -> Int64? {
        switch value {
        case .int64(let value): return value
        case .timestamp(let value): return WireFieldValue.wholeMilliseconds(value)
        default: return nil
        }
    }

    /// Checks that replacing an entry of `oldSize` bytes by one of `newSize` keeps `usage` within
    /// the limits, and returns the usage after.
    static func charge(_ usage: Usage, oldSize: Int, newSize: Int, key: String) throws -> Usage {
        var after = usage
        after.remove(oldSize)
        after.add(newSize)
        if newSize > 0, after.keys > KeyValueLimits.maximumKeys, after.keys > usage.keys {
            throw WireError(.quotaExceeded, "key \(key): the key-value store would hold \(after.keys) keys; it may hold at most \(KeyValueLimits.maximumKeys)")
        }
        if after.bytes > KeyValueLimits.maximumTotalBytes, after.bytes > usage.bytes {
            throw WireError(.quotaExceeded, "key \(key): the key-value store would hold \(after.bytes) bytes; it may hold at most \(KeyValueLimits.maximumTotalBytes) (keys plus values)")
        }
        return after
    }
}

extension ModifyBatch {
    /// Whether the batch writes the key-value store's zone.
    var isKeyValueZone: Bool {
        database.key.scope == .private && zone.name == RecordsEngine.ReservedZone.keyValueStore
    }

    /// Applies an operation in the key-value store's zone by ``KeyValueRules``: saves become
    /// `forceReplace` when their timestamp is not older than the stored one, and answer the
    /// stored record otherwise.
    mutating func applyKeyValue(_ operation: WireRecordOperation, index: Int, path: String) async throws -> RecordsEngine.ItemResult {
        var operation = operation
        let name = operation.record.recordName
        let existing = known[name].flatMap { $0.deleted ? nil : $0 }
        if operation.operationType == .delete || operation.operationType == .forceDelete {
            let result = try await applyRecord(operation, index: index, path: path)
            if let existing, var usage = keyValueUsage {
                usage.remove(KeyValueRules.size(existing))
                keyValueUsage = usage
            }
            return result
        }
        let entry = try KeyValueRules.entry(of: operation.record, existingType: existing?.recordType, path: path)
        if let existing, let stored = KeyValueRules.modified(existing.fields), stored > entry.modified {
            return .saved(written[name] ?? existing)
        }
        let usage: KeyValueRules.Usage
        if let keyValueUsage {
            usage = keyValueUsage
        } else {
            usage = try await loadKeyValueUsage()
        }
        let after = try KeyValueRules.charge(usage, oldSize: existing.map(KeyValueRules.size) ?? 0, newSize: entry.size, key: name)
        operation.operationType = .forceReplace
        operation.record.recordChangeTag = nil
        operation.record.recordType = KeyValueRecord.recordType
        let result = try await applyRecord(operation, index: index, path: path)
        keyValueUsage = after
        return result
    }

    /// Reads the zone's usage (after writing the batch's pending saves).
    mutating func loadKeyValueUsage() async throws -> KeyValueRules.Usage {
        try await flush()
        var usage = KeyValueRules.Usage()
        var after: Int64 = 0
        while true {
            let page = try await tx.changes(zone: zone.id, after: after, limit: 1000, recordTypes: nil)
            for record in page where !record.deleted { usage.add(KeyValueRules.size(record)) }
            guard page.count == 1000, let last = page.last else { break }
            after = last.sequence
        }
        return usage
    }
}
