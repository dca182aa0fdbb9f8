// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

/// The value of a record field (what `CKRecordValue` stands for). Each case has a CloudKit
/// field type: `string` → STRING, `int64` → INT64 (`Bool` and `Int` are stored so), `double` →
/// DOUBLE, `date` → TIMESTAMP (millisecond precision), `bytes` → BYTES, `reference` →
/// REFERENCE, `location` → LOCATION, `asset` → ASSETID, and `list` of one of them → its
/// `_LIST` type (lists are homogeneous and never nested; an empty list keeps the element type
/// it had when fetched, and is sent as `UNKNOWN_LIST` otherwise).
///
/// Literals work: `record["name"] = "Mei"`, `record["age"] = 30`, `record["tags"] = ["a", "b"]`.
///
/// The large cases (`reference`, `location`, `asset`) are boxed (`indirect`), so a value takes
/// at most 17 bytes rather than the 100 or more of its largest payload: a record's field
/// dictionary is a fraction of the size, which counts when a sync fetch holds 100,000 records.
public enum RecordValue: Sendable, Hashable, CustomStringConvertible {
    /// STRING.
    case string(String)
    /// INT64 (also Booleans: 0 and 1).
    case int64(Int64)
    /// DOUBLE.
    case double(Double)
    /// TIMESTAMP, kept to the millisecond by the server.
    case date(Date)
    /// BYTES.
    case bytes(Data)
    /// REFERENCE.
    indirect case reference(Reference)
    /// LOCATION.
    indirect case location(Location)
    /// ASSETID (read from the server; see ``Asset``).
    indirect case asset(Asset)
    /// A `_LIST` of values of one type.
    case list([RecordValue])

    /// Wraps any value type a field can hold.
    public init(_ value: some RecordValueProtocol) { self = value.recordValue }

    /// The string of a STRING value.
    public var stringValue: String? { if case .string(let value) = self { return value } else { return nil } }
    /// The number of an INT64 value.
    public var int64Value: Int64? { if case .int64(let value) = self { return value } else { return nil } }
    /// The number of an INT64 value, as `Int`.
    public var intValue: Int? { int64Value.flatMap { Int(exactly: $0) } }
    /// The number of a DOUBLE value (or of an INT64 one, converted).
    public var doubleValue: Double? {
        switch self {
        case .double(let value): return value
        case .int64(let value): return Double(value)
        default: return nil
        }
    }
    /// An INT64 value as a Boolean (non-zero is true).
    public var boolValue: Bool? { int64Value.map { $0 != 0 } }
    /// The date of a TIMESTAMP value.
    public var dateValue: Date? { if case .date(let value) = self { return value } else { return nil } }
    /// The bytes of a BYTES value.
    public var dataValue: Data? { if case .bytes(let value) = self { return value } else { return nil } }
    /// The reference of a REFERENCE value.
    public var referenceValue: Reference? { if case .reference(let value) = self { return value } else { return nil } }
    /// The location of a LOCATION value.
    public var locationValue: Location? { if case .location(let value) = self { return value } else { return nil } }
    /// The asset of an ASSETID value.
    public var assetValue: Asset? { if case .asset(let value) = self { return value } else { return nil } }
    /// The elements of a list.
    public var listValue: [RecordValue]? { if case .list(let value) = self { return value } else { return nil } }

    /// The CloudKit type name (`STRING`, `INT64_LIST`…); `UNKNOWN_LIST` for an empty list.
    public var typeName: String {
        switch self {
        case .string: return "STRING"
        case .int64: return "INT64"
        case .double: return "DOUBLE"
        case .date: return "TIMESTAMP"
        case .bytes: return "BYTES"
        case .reference: return "REFERENCE"
        case .location: return "LOCATION"
        case .asset: return "ASSETID"
        case .list(let items): return items.first.map { $0.typeName + "_LIST" } ?? "UNKNOWN_LIST"
        }
    }

    /// The value, readably (`"Mei"`, `30`, `2024-05-01T12:00:00Z`, `→name`, `[…]`).
    public var description: String {
        switch self {
        case .string(let value): return "\"\(value)\""
        case .int64(let value): return String(value)
        case .double(let value): return String(value)
        case .date(let value): return value.formatted(.iso8601)
        case .bytes(let value): return "<\(value.count) bytes>"
        case .reference(let value): return value.description
        case .location(let value): return value.description
        case .asset(let value): return "<asset \(value.size.map { "\($0) bytes" } ?? value.fileChecksum ?? "")>"
        case .list(let items): return "[" + items.map(\.description).joined(separator: ", ") + "]"
        }
    }

    /// Milliseconds since 1970 for a date (rounded to the nearest millisecond).
    static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded()
        guard value.isFinite else { return 0 }
        return Int64(max(min(value, 9.2e18), -9.2e18))
    }

    /// The date for milliseconds since 1970.
    static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// The date for milliseconds since 1970 with a fraction (as other clients may save), kept.
    static func date(milliseconds: Double) -> Date {
        Date(timeIntervalSince1970: milliseconds / 1000)
    }
}

extension RecordValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral
{
    /// A STRING.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An INT64.
    public init(integerLiteral value: Int64) { self = .int64(value) }
    /// A DOUBLE.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// An INT64 0 or 1.
    public init(booleanLiteral value: Bool) { self = .int64(value ? 1 : 0) }
    /// A list.
    public init(arrayLiteral elements: RecordValue...) { self = .list(elements) }
}

/// A Swift type that a record field can hold (`CKRecordValueProtocol`): `String`, the integer
/// types, `Double`, `Float`, `Bool`, `Date`, `Data`, ``Reference``, ``Location``, ``Asset``,
/// ``RecordValue`` and arrays of them.
public protocol RecordValueProtocol: Sendable {
    /// The field value.
    var recordValue: RecordValue { get }
    /// The Swift value of a field value of the matching type, or nil.
    init?(recordValue: RecordValue)
}

extension RecordValue: RecordValueProtocol {
    /// Itself.
    public var recordValue: RecordValue { self }
    /// Itself.
    public init?(recordValue: RecordValue) { self = recordValue }
}

extension String: RecordValueProtocol {
    /// STRING.
    public var recordValue: RecordValue { .string(self) }
    /// From STRING.
    public init?(recordValue: RecordValue) {
        guard case .string(let value) = recordValue else { return nil }
        self = value
    }
}

extension Int64: RecordValueProtocol {
    /// INT64.
    public var recordValue: RecordValue { .int64(self) }
    /// From INT64.
    public init?(recordValue: RecordValue) {
        guard case .int64(let value) = recordValue else { return nil }
        self = value
    }
}

extension Int: RecordValueProtocol {
    /// INT64.
    public var recordValue: RecordValue { .int64(Int64(self)) }
    /// From INT64 (nil when it does not fit).
    public init?(recordValue: RecordValue) {
        guard case .int64(let value) = recordValue, let fitting = Int(exactly: value) else { return nil }
        self = fitting
    }
}

extension Int32: RecordValueProtocol {
    /// INT64.
    public var recordValue: RecordValue { .int64(Int64(self)) }
    /// From INT64 (nil when it does not fit).
    public init?(recordValue: RecordValue) {
        guard case .int64(let value) = recordValue, let fitting = Int32(exactly: value) else { return nil }
        self = fitting
    }
}

extension Bool: RecordValueProtocol {
    /// INT64 0 or 1 (CloudKit has no Boolean type).
    public var recordValue: RecordValue { .int64(self ? 1 : 0) }
    /// From INT64: non-zero is true.
    public init?(recordValue: RecordValue) {
        guard case .int64(let value) = recordValue else { return nil }
        self = value != 0
    }
}

extension Double: RecordValueProtocol {
    /// DOUBLE.
    public var recordValue: RecordValue { .double(self) }
    /// From DOUBLE (or INT64, converted).
    public init?(recordValue: RecordValue) {
        guard let value = recordValue.doubleValue else { return nil }
        self = value
    }
}

extension Float: RecordValueProtocol {
    /// DOUBLE.
    public var recordValue: RecordValue { .double(Double(self)) }
    /// From DOUBLE (or INT64, converted).
    public init?(recordValue: RecordValue) {
        guard let value = recordValue.doubleValue else { return nil }
        self = Float(value)
    }
}

extension Date: RecordValueProtocol {
    /// TIMESTAMP.
    public var recordValue: RecordValue { .date(self) }
    /// From TIMESTAMP.
    public init?(recordValue: RecordValue) {
        guard case .date(let value) = recordValue else { return nil }
        self = value
    }
}

extension Data: RecordValueProtocol {
    /// BYTES.
    public var recordValue: RecordValue { .bytes(self) }
    /// From BYTES.
    public init?(recordValue: RecordValue) {
        guard case .bytes(let value) = recordValue else { return nil }
        self = value
    }
}

extension Reference: RecordValueProtocol {
    /// REFERENCE.
    public var recordValue: RecordValue { .reference(self) }
    /// From REFERENCE.
    public init?(recordValue: RecordValue) {
        guard case .reference(let value) = recordValue else { return nil }
        self = value
    }
}

extension Location: RecordValueProtocol {
    /// LOCATION.
    public var recordValue: RecordValue { .location(self) }
    /// From LOCATION.
    public init?(recordValue: RecordValue) {
        guard case .location(let value) = recordValue else { return nil }
        self = value
    }
}

extension Asset: RecordValueProtocol {
    /// ASSETID.
    public var recordValue: RecordValue { .asset(self) }
    /// From ASSETID.
    public init?(recordValue: RecordValue) {
        guard case .asset(let value) = recordValue else { return nil }
        self = value
    }
}

extension Array: RecordValueProtocol where Element: RecordValueProtocol {
    /// A `_LIST`.
    public var recordValue: RecordValue { .list(map(\.recordValue)) }
    /// From a list whose every element converts.
    public init?(recordValue: RecordValue) {
        guard case .list(let items) = recordValue else { return nil }
        var result: [Element] = []
        result.reserveCapacity(items.count)
        for item in items {
            guard let element = Element(recordValue: item) else { return nil }
            result.append(element)
        }
        self = result
    }
}

// MARK: Wire conversion

extension RecordValue {
    /// The wire value. References into `zone` are written without a zone (the holder's zone);
    /// lists must be homogeneous and flat. `listType` is the element type of an empty list.
    func wire(in zone: RecordZone.ID, key: String, listType: WireFieldType.Scalar? = nil) throws -> WireFieldValue {
        switch self {
        case .list(let items):
            var element: WireFieldType.Scalar? = listType
            var converted: [WireFieldValue] = []
            converted.reserveCapacity(items.count)
            for (index, item) in items.enumerated() {
                if case .list = item {
                    throw CloudKitError(.invalidArguments, "field '\(key)': lists cannot contain lists (element \(index))")
                }
                let value = try item.wire(in: zone, key: key)
                guard case .scalar(let scalar) = value.type else { continue }
                if index == 0 {
                    element = scalar
                } else if scalar != element {
                    throw CloudKitError(.invalidArguments,
                                        "field '\(key)': a list holds values of one type; element 0 is \(element?.rawValue ?? "?") but element \(index) is \(scalar.rawValue)")
                }
                converted.append(value)
            }
            return .list(element: element, converted)
        case .string(let value): return .string(value)
        case .int64(let value): return .int64(value)
        case .double(let value):
            guard value.isFinite else { throw CloudKitError(.invalidArguments, "field '\(key)': \(value) cannot be stored (JSON has no NaN or infinity)") }
            return .double(value)
        case .date(let value): return .timestamp(Double(RecordValue.milliseconds(value)))
        case .bytes(let value): return .bytes(value)
        case .reference(let reference): return .reference(reference.wire(in: zone))
        case .location(let location):
            guard (-90...90).contains(location.latitude), (-180...180).contains(location.longitude) else {
                throw CloudKitError(.invalidArguments, "field '\(key)': latitude must be in -90…90 and longitude in -180…180 (got \(location))")
            }
            return .location(location.wire)
        case .asset(let asset): return .asset(asset.wire)
        }
    }

    /// The value of a wire value; references without a zone are in `zone`.
    init(wire: WireFieldValue, zone: RecordZone.ID) {
        switch wire {
        case .string(let value): self = .string(value)
        case .int64(let value): self = .int64(value)
        case .double(let value): self = .double(value)
        case .timestamp(let value): self = .date(RecordValue.date(milliseconds: value))
        case .bytes(let value): self = .bytes(value)
        case .reference(let reference): self = .reference(Reference(wire: reference, zone: zone))
        case .asset(let asset): self = .asset(Asset(wire: asset))
        case .location(let location): self = .location(Location(wire: location))
        case .list(_, let items): self = .list(items.map { RecordValue(wire: $0, zone: zone) })
        }
    }
}

extension Reference {
    func wire(in zone: RecordZone.ID?, includeAction: Bool = true) -> WireReference {
        WireReference(recordName: recordID.recordName, zoneID: recordID.zoneID == zone ? nil : recordID.zoneID.wire,
                      action: includeAction ? action.wire : nil)
    }

    init(wire: WireReference, zone: RecordZone.ID) {
        self.init(recordID: Record.ID(recordName: wire.recordName, zoneID: zone.matching(wire.zoneID)), action: Action(wire: wire.action))
    }
}
