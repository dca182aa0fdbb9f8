// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire

/// A query index of a record type: the fields its keys are made of, in order. A query whose
/// equality filters are the `equal` components and whose sort descriptors are the sorted
/// components (`QueryIndexPlan`) reads its page off a key range, in order: O(log n + k).
///
/// Each live record of the type has one key per index (`key(for:zoneName:)`): the first value of
/// each component's field (`QueryIndexKey`), then the record name, which makes keys unique in a
/// zone and the order total, as `QueryPosition` does. Both stores write exactly these keys.
package struct QueryIndexDefinition: Sendable, Hashable, CustomStringConvertible {
    /// How a component orders keys.
    package enum Role: Character, Sendable, Hashable {
        /// A field an equality filter fixes (ascending; written first).
        case equal = "="
        /// A sort field, ascending.
        case ascending = "+"
        /// A sort field, descending.
        case descending = "-"
    }

    /// One field of the key.
    package struct Component: Sendable, Hashable {
        /// A record field, or a system field (`WireFieldKey`).
        package var key: WireFieldKey
        package var role: Role
        /// Makes a component.
        package init(_ key: WireFieldKey, _ role: Role) {
            self.key = key
            self.role = role
        }
    }

    package var recordType: String
    /// The equality components (sorted by name), then the sort components in sort order.
    package var components: [Component]

    /// Makes a definition; equality components are put first, in name order.
    package init(recordType: String, components: [Component]) {
        self.recordType = recordType
        let equal = components.filter { $0.role == .equal }.sorted { $0.key.indexName < $1.key.indexName }
        self.components = equal + components.filter { $0.role != .equal }
    }

    /// The components as stored: `=cat,+rank` (role, then the field's index name).
    package var text: String {
        components.map { String($0.role.rawValue) + $0.key.indexName }.joined(separator: ",")
    }

    /// The definition `text` spells, or nil.
    package init?(recordType: String, text: String) {
        var components: [Component] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) where !text.isEmpty {
            guard let first = part.first, let role = Role(rawValue: first), part.count > 1 else { return nil }
            let name = String(part.dropFirst())
            components.append(Component(name.hasPrefix("___") ? (WireSystemField(name: name).map(WireFieldKey.system) ?? .field(name)) : .field(name), role))
        }
        self.init(recordType: recordType, components: components)
    }

    /// `Item(=cat,+rank)`.
    package var description: String {
        "\(recordType)(\(text))"
    }

    /// The key of a live record of the type in the zone named `zoneName`.
    package func key(for record: StoredRecord, zoneName: String) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(components.count * 17 + record.recordName.utf8.count + 2)
        for component in components {
            // a field's first value (a scalar's only one), as QueryPosition keys it
            let value = RecordFilter.values(of: component.key, in: record, zoneName: zoneName)?.values.first
            QueryIndexKey.append(value, descending: component.role == .descending, to: &key)
        }
        QueryIndexKey.append(.string(record.recordName), descending: false, to: &key)
        return key
    }
}

/// A query index as stored: its definition in a container's environment, and whether every
/// record has its key yet (an index is built after it is added; queries use it when ready).
package struct StoredQueryIndex: Sendable, Hashable {
    package var id: Int64
    package var container: String
    package var environment: CloudKitEnvironment
    package var definition: QueryIndexDefinition
    /// Every live record of the type has its key (the backfill finished).
    package var ready: Bool

    /// Makes one.
    package init(id: Int64, container: String, environment: CloudKitEnvironment, definition: QueryIndexDefinition, ready: Bool) {
        self.id = id
        self.container = container
        self.environment = environment
        self.definition = definition
        self.ready = ready
    }
}

/// A key of a query index and the record it belongs to, its fields as stored (a scan's result).
package struct QueryIndexHit: Sendable {
    package var key: [UInt8]
    /// The record.
    package var stored: StoredRecordText
    /// Makes one.
    package init(key: [UInt8], stored: StoredRecordText) {
        self.key = key
        self.stored = stored
    }
}

extension WireFieldKey {
    /// The name an index stores: a record field's name, a system field's `___` name.
    package var indexName: String {
        switch self {
        case .field(let name): return name
        case .system(let field): return field.indexName
        }
    }
}
