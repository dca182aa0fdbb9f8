// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// A place in a query's sort order: the sort keys of a record (the first value of each sort
/// field, a distance for a location sort), then its zone and name, which make the order total.
/// A continuation marker holds the position of the last record of its page, and the next page
/// starts after it: records saved or deleted between pages neither repeat nor skip others
/// (issue 24; an offset did both).
struct QueryPosition: Sendable, Hashable {
    /// One value per sort descriptor (nil: the record has no such field; such records sort last).
    var keys: [WireFieldValue?]
    var zoneName: String
    var recordName: String

    /// The position of `item` under `descriptors`.
    init(of item: (record: StoredRecord, zoneName: String), by descriptors: [WireSort]) {
        keys = descriptors.map { descriptor -> WireFieldValue? in
            guard let first = RecordFilter.values(of: descriptor.key, in: item.record, zoneName: item.zoneName)?.values.first else { return nil }
            if let center = descriptor.relativeLocation, case .location(let point) = first { return .double(point.distance(to: center)) }
            return first
        }
        zoneName = item.zoneName
        recordName = item.record.recordName
    }

    init(keys: [WireFieldValue?], zoneName: String, recordName: String) {
        self.keys = keys
        self.zoneName = zoneName
        self.recordName = recordName
    }

    /// Whether this position comes before `other` in the order of `descriptors` (the keys'
    /// order, missing keys last, then zone and record name).
    func precedes(_ other: QueryPosition, by descriptors: [WireSort]) -> Bool {
        for (index, descriptor) in descriptors.enumerated() where index < keys.count && index < other.keys.count {
            switch (keys[index], other.keys[index]) {
            case (nil, nil): continue
            case (nil, _): return false
            case (_, nil): return true
            case (let a?, let b?):
                guard let order = RecordFilter.compare(a, b), order != 0 else { continue }
                return descriptor.ascending ? order < 0 : order > 0
            }
        }
        return (zoneName, recordName) < (other.zoneName, other.recordName)
    }

    // MARK: As text in a marker

    /// The position as base64url JSON (`{"k": [field JSON or null…], "z", "r"}`).
    var encoded: String {
        let json: JSONValue = .object([
            "k": .array(keys.map { $0?.fieldJSON() ?? .null }),
            "z": .string(zoneName),
            "r": .string(recordName),
        ])
        return SyncToken.encode(String(decoding: json.serialized(), as: UTF8.self))
    }

    /// The position `encoded` holds, for a query with `count` sort descriptors; nil when it is
    /// not one.
    init?(encoded: String, count: Int) {
        guard let text = SyncToken.decodeText(encoded), let object = (try? JSONValue.parse(Data(text.utf8)))?.objectValue,
              let keys = object["k"]?.arrayValue, keys.count == count,
              let zoneName = object["z"]?.stringValue, let recordName = object["r"]?.stringValue else { return nil }
        var values: [WireFieldValue?] = []
        for key in keys {
            if case .null = key { values.append(nil); continue }
            guard let value = try? WireFieldValue(fieldJSON: key, path: "continuationMarker") else { return nil }
            values.append(value)
        }
        self.init(keys: values, zoneName: zoneName, recordName: recordName)
    }
}

/// Where a page of a query starts.
enum QueryStart: Sendable, Hashable {
    /// At the first match.
    case first
    /// After a position (a marker of this version).
    case after(QueryPosition)
    /// After this many matches (a marker from before positions; still honoured).
    case offset(Int)
}
