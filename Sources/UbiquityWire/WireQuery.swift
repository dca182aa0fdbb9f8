// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// A query filter's comparator. Every spelling CloudKit Web Services, CloudKit JS and CKTool JS
/// use is accepted (`NOT_LIST_CONTAINS` and `LIST_NOT_CONTAINS` are one comparator).
package enum WireComparator: String, Sendable, Hashable, CaseIterable {
    case equals = "EQUALS"
    case notEquals = "NOT_EQUALS"
    case lessThan = "LESS_THAN"
    case lessThanOrEquals = "LESS_THAN_OR_EQUALS"
    case greaterThan = "GREATER_THAN"
    case greaterThanOrEquals = "GREATER_THAN_OR_EQUALS"
    case near = "NEAR"
    case containsAllTokens = "CONTAINS_ALL_TOKENS"
    case containsAnyTokens = "CONTAINS_ANY_TOKENS"
    case `in` = "IN"
    case notIn = "NOT_IN"
    case listContains = "LIST_CONTAINS"
    case notListContains = "NOT_LIST_CONTAINS"
    case listContainsAny = "LIST_CONTAINS_ANY"
    case notListContainsAny = "NOT_LIST_CONTAINS_ANY"
    case listContainsAll = "LIST_CONTAINS_ALL"
    case notListContainsAll = "NOT_LIST_CONTAINS_ALL"
    case beginsWith = "BEGINS_WITH"
    case notBeginsWith = "NOT_BEGINS_WITH"
    case listMemberBeginsWith = "LIST_MEMBER_BEGINS_WITH"
    case notListMemberBeginsWith = "NOT_LIST_MEMBER_BEGINS_WITH"

    /// Parses a comparator name, accepting CKTool's `LIST_NOT_…` spellings and any case.
    package init?(name: String) {
        let upper = name.uppercased()
        switch upper {
        case "LIST_NOT_CONTAINS": self = .notListContains
        case "LIST_NOT_CONTAINS_ANY": self = .notListContainsAny
        case "LIST_NOT_CONTAINS_ALL": self = .notListContainsAll
        default:
            guard let comparator = WireComparator(rawValue: upper) else { return nil }
            self = comparator
        }
    }
}

/// The system fields a query can filter and sort on (`systemFieldName`, or `fieldName` with `___`).
package enum WireSystemField: String, Sendable, Hashable, CaseIterable {
    case recordName
    case share
    case parent
    case createdUserRecordName
    case createdTimestamp
    case modifiedTimestamp
    case modifiedUserRecordName

    /// The `___` index name (`___recordId`, `___createTime`, …).
    package var indexName: String {
        switch self {
        case .recordName: return "___recordId"
        case .share: return "___share"
        case .parent: return "___parent"
        case .createdUserRecordName: return "___createdBy"
        case .createdTimestamp: return "___createTime"
        case .modifiedTimestamp: return "___modTime"
        case .modifiedUserRecordName: return "___modifiedBy"
        }
    }

    /// The system field for a `systemFieldName` or a `___` field name.
    package init?(name: String) {
        if let field = WireSystemField(rawValue: name) { self = field; return }
        // `___recordID` as schema files and native clients spell it, `___recordId` as the Web Services docs do
        guard let field = WireSystemField.allCases.first(where: { $0.indexName.lowercased() == name.lowercased() }) else { return nil }
        self = field
    }
}

/// What a filter or sort descriptor applies to: a record field or a system field.
package enum WireFieldKey: Sendable, Hashable, CustomStringConvertible {
    case field(String)
    case system(WireSystemField)

    /// The name as written.
    package var description: String {
        switch self {
        case .field(let name): return name
        case .system(let field): return field.rawValue
        }
    }

    static func read(_ reader: WireReader) throws -> WireFieldKey {
        if let system = try reader.string("systemFieldName") {
            guard let field = WireSystemField(name: system) else {
                throw WireReader.invalid(reader.path("systemFieldName"), "unknown system field \(system); expected one of \(WireSystemField.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return .system(field)
        }
        guard let name = try reader.string("fieldName") else { throw WireReader.missing(reader.path("fieldName"), "a field name (or systemFieldName)") }
        if name.hasPrefix("___") {
            guard let field = WireSystemField(name: name) else { throw WireReader.invalid(reader.path("fieldName"), "unknown system field \(name)") }
            return .system(field)
        }
        try WireRecord.validate(fieldName: name, path: reader.path("fieldName"))
        return .field(name)
    }

    func write(to writer: inout WireWriter) {
        switch self {
        case .field(let name): writer.set("fieldName", name)
        case .system(let field): writer.set("systemFieldName", field.rawValue)
        }
    }
}

/// A query filter: `{"comparator", "fieldName" | "systemFieldName", "fieldValue", "distance"}`.
package struct WireFilter: Sendable, Hashable, WireReadable {
    package var comparator: WireComparator
    package var key: WireFieldKey
    package var fieldValue: WireFieldValue
    /// Metres, for `NEAR`.
    package var distance: Double?

    /// Makes a filter.
    package init(comparator: WireComparator, key: WireFieldKey, fieldValue: WireFieldValue, distance: Double? = nil) {
        self.comparator = comparator
        self.key = key
        self.fieldValue = fieldValue
        self.distance = distance
    }

    /// Reads a filter dictionary.
    package init(reader: WireReader) throws {
        let name = try reader.requiredString("comparator")
        guard let comparator = WireComparator(name: name) else {
            throw WireReader.invalid(reader.path("comparator"), "unknown comparator \(name); expected one of \(WireComparator.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self.comparator = comparator
        key = try WireFieldKey.read(reader)
        guard let value = try reader.value("fieldValue") else { throw WireReader.missing(reader.path("fieldValue"), "a field value dictionary") }
        fieldValue = try WireFieldValue(fieldJSON: value, path: reader.path("fieldValue"))
        distance = try reader.double("distance")
        if comparator == .near {
            guard case .location = fieldValue else { throw WireReader.invalid(reader.path("fieldValue"), "NEAR needs a LOCATION value") }
            guard let distance, distance >= 0 else { throw WireReader.missing(reader.path("distance"), "a distance in metres for NEAR") }
        }
    }

    /// The dictionary.
    package var json: JSONValue {
        var writer = WireWriter()
        writer.set("comparator", comparator.rawValue)
        key.write(to: &writer)
        writer.set("fieldValue", fieldValue.fieldJSON())
        if let distance { writer.set("distance", .number(distance)) }
        return writer.json
    }
}

/// A sort descriptor: `{"fieldName" | "systemFieldName", "ascending", "relativeLocation"}`.
package struct WireSort: Sendable, Hashable, WireReadable {
    package var key: WireFieldKey
    package var ascending: Bool
    /// For a location field: sort by distance from here.
    package var relativeLocation: WireLocation?

    /// Makes a sort descriptor.
    package init(key: WireFieldKey, ascending: Bool = true, relativeLocation: WireLocation? = nil) {
        self.key = key
        self.ascending = ascending
        self.relativeLocation = relativeLocation
    }

    /// Reads a sort descriptor.
    package init(reader: WireReader) throws {
        key = try WireFieldKey.read(reader)
        ascending = try reader.bool("ascending") ?? true
        if let relative = try reader.value("relativeLocation") {
            var location = try? WireFieldValue(fieldJSON: relative, path: reader.path("relativeLocation"))
            if location == nil {
                location = try WireFieldValue(value: relative, type: .scalar(.location), path: reader.path("relativeLocation"))
            }
            guard case .location(let point) = location else {
                throw WireReader.invalid(reader.path("relativeLocation"), "expected a LOCATION value")
            }
            relativeLocation = point
        }
    }

    /// The dictionary.
    package var json: JSONValue {
        var writer = WireWriter()
        key.write(to: &writer)
        writer.set("ascending", ascending)
        writer.set("relativeLocation", relativeLocation.map { WireFieldValue.location($0).fieldJSON() })
        return writer.json
    }
}

/// A query dictionary: a record type, filters (ANDed) and sort descriptors.
package struct WireQuery: Sendable, Hashable, WireReadable {
    package var recordType: String
    package var filterBy: [WireFilter]
    package var sortBy: [WireSort]

    /// Makes a query.
    package init(recordType: String, filterBy: [WireFilter] = [], sortBy: [WireSort] = []) {
        self.recordType = recordType
        self.filterBy = filterBy
        self.sortBy = sortBy
    }

    /// Reads a query dictionary.
    package init(reader: WireReader) throws {
        recordType = try reader.requiredString("recordType")
        filterBy = try reader.objects("filterBy") { try WireFilter(reader: $1.get()) } ?? []
        sortBy = try reader.objects("sortBy") { try WireSort(reader: $1.get()) } ?? []
    }

    /// The dictionary.
    package var json: JSONValue {
        .object(["recordType": .string(recordType), "filterBy": .array(filterBy.map(\.json)), "sortBy": .array(sortBy.map(\.json))])
    }
}
