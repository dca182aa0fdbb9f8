// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

extension StoredRecord {
    /// The distinct assets the record refers to, `fileChecksum` → `size` (scalar and list asset
    /// fields; values without both are ignored; none for a tombstone).
    package var assetReferences: [String: Int64] {
        guard !deleted else { return [:] }
        var references: [String: Int64] = [:]
        for value in fields.values {
            for case .asset(let asset) in value.elements {
                if let checksum = asset.fileChecksum, let size = asset.size { references[checksum] = size }
            }
        }
        return references
    }
}

/// How a batch of record writes changes a database's usage and asset references: what the
/// stores apply to `database_usage` and `database_assets` in the write transaction.
struct AssetUsageDelta {
    /// The change of the live records' stored JSON bytes.
    var recordBytes: Int64 = 0
    /// Per checksum: its size and the change of the number of records referring to it.
    var references: [String: (size: Int64, change: Int64)] = [:]

    /// One record row going from `old` to `new` references.
    mutating func replace(_ old: [String: Int64], with new: [String: Int64]) {
        for (checksum, size) in old where new[checksum] == nil {
            references[checksum, default: (size, 0)].change -= 1
        }
        for (checksum, size) in new where old[checksum] == nil {
            references[checksum, default: (size, 0)].change += 1
        }
    }

    /// The changed references (non-zero changes), sorted by checksum (a stable lock order).
    var changedReferences: [(checksum: String, size: Int64, change: Int64)] {
        references.filter { $0.value.change != 0 }.sorted { $0.key < $1.key }.map { ($0.key, $0.value.size, $0.value.change) }
    }

    /// The asset bytes change when `checksum` (`size` bytes) goes from `old` to `new` references:
    /// its size when it becomes referenced, minus it when it stops being.
    static func assetBytesChange(size: Int64, old: Int64, new: Int64) -> Int64 {
        if old <= 0, new > 0 { return size }
        if old > 0, new <= 0 { return -size }
        return 0
    }
}
