// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// The type tag of a record field on the wire (`STRING`, `INT64`, `LOCATION_LIST`, …).
package enum WireFieldType: Sendable, Hashable, CustomStringConvertible {
    /// Scalar types.
    package enum Scalar: String, Sendable, Hashable, CaseIterable {
        case string = "STRING"
        case int64 = "INT64"
        case double = "DOUBLE"
        case timestamp = "TIMESTAMP"
        case bytes = "BYTES"
        case reference = "REFERENCE"
        case asset = "ASSETID"
        case location = "LOCATION"
    }
    /// A single value.
    case scalar(Scalar)
    /// A homogeneous list; nil element type for an empty list of unknown type (`UNKNOWN_LIST`).
    case list(Scalar?)

    /// The tag as written on the wire.
    package var description: String {
        switch self {
        case .scalar(let scalar): return scalar.rawValue
        case .list(let element?): return element.rawValue + "_LIST"
        case .list(nil): return "UNKNOWN_LIST"
        }
    }

    /// Parses a tag, accepting the variants clients send (`ASSET`, `ASSET_LIST`, `LIST`,
    /// `UNKNOWN_LIST`); nil for an unknown tag.
    package init?(tag: String) {
        let upper = tag.uppercased()
        if upper == "LIST" || upper == "UNKNOWN_LIST" { self = .list(nil); return }
        if upper.hasSuffix("_LIST") {
            guard let element = WireFieldType.scalar(named: String(upper.dropLast(5))) else { return nil }
            self = .list(element)
            return
        }
        guard let scalar = WireFieldType.scalar(named: upper) else { return nil }
        self = .scalar(scalar)
    }

    private static func scalar(named name: String) -> Scalar? {
        if name == "ASSET" { return .asset }
        // pyicloud-style payloads tag some bytes as encrypted; they are bytes to this server
        if name == "ENCRYPTED_BYTES" { return .bytes }
        return Scalar(rawValue: name)
    }

    /// Whether this is a list type.
    package var isList: Bool { if case .list = self { return true } else { return false } }
}

/// A reference to another record (`REFERENCE`): its name, its zone, and what happens when the
/// target is deleted.
package struct WireReference: Sendable, Hashable {
    /// The action taken on the source when the target is deleted.
    package enum Action: String, Sendable, Hashable, CaseIterable {
        /// Nothing happens.
        case none = "NONE"
        /// The source is deleted with the target (cascading).
        case deleteSelf = "DELETE_SELF"
        /// The target must exist when the reference is saved, and cannot be deleted while it is referenced.
        case validate = "VALIDATE"
    }
    /// The target's record name.
    package var recordName: String
    /// The target's zone; nil means the source's zone.
    package var zoneID: WireZoneID?
    /// The action (nil inside query filters).
    package var action: Action?

    /// Makes a reference.
    package init(recordName: String, zoneID: WireZoneID? = nil, action: Action? = nil) {
        self.recordName = recordName
        self.zoneID = zoneID
        self.action = action
    }
}

/// A location (`LOCATION`): latitude and longitude in degrees, and the optional CoreLocation extras.
package struct WireLocation: Sendable, Hashable {
    package var latitude: Double
    package var longitude: Double
    package var horizontalAccuracy: Double?
    package var verticalAccuracy: Double?
    package var altitude: Double?
    package var speed: Double?
    package var course: Double?
    /// Milliseconds since 1970.
    package var timestamp: Int64?

    /// Makes a location.
    package init(latitude: Double, longitude: Double, horizontalAccuracy: Double? = nil, verticalAccuracy: Double? = nil,
                altitude: Double? = nil, speed: Double? = nil, course: Double? = nil, timestamp: Int64? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.horizontalAccuracy = horizontalAccuracy
        self.verticalAccuracy = verticalAccuracy
        self.altitude = altitude
        self.speed = speed
        self.course = course
        self.timestamp = timestamp
    }

    /// The great-circle distance to `other` in metres (haversine, mean Earth radius).
    package func distance(to other: WireLocation) -> Double {
        let radius = 6_371_008.8
        let lat1 = latitude * .pi / 180, lat2 = other.latitude * .pi / 180
        let dLat = lat2 - lat1, dLon = (other.longitude - longitude) * .pi / 180
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(lat1) * cos(lat2) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * radius * atan2(a.squareRoot(), (1 - a).squareRoot())
    }
}

/// An asset value (`ASSETID`): the upload receipt and checksums; `downloadURL` on fetch.
package struct WireAsset: Sendable, Hashable {
    package var fileChecksum: String?
    package var size: Int64?
    package var referenceChecksum: String?
    package var wrappingKey: String?
    package var receipt: String?
    package var downloadURL: String?

    /// Makes an asset value.
    package init(fileChecksum: String? = nil, size: Int64? = nil, referenceChecksum: String? = nil,
                wrappingKey: String? = nil, receipt: String? = nil, downloadURL: String? = nil) {
        self.fileChecksum = fileChecksum
        self.size = size
        self.referenceChecksum = referenceChecksum
        self.wrappingKey = wrappingKey
        self.receipt = receipt
        self.downloadURL = downloadURL
    }
}

/// The value of a record field, with its type.
package enum WireFieldValue: Sendable, Hashable {
    case string(String)
    case int64(Int64)
    case double(Double)
    /// Milliseconds since 1970-01-01 UTC, fractions kept as sent (CloudKit keeps them; a whole
    /// number is written as an integer).
    case timestamp(Double)
    case bytes(Data)
    case reference(WireReference)
    case asset(WireAsset)
    case location(WireLocation)
    /// A homogeneous list; `element` is nil only for an empty list of unknown type.
    case list(element: WireFieldType.Scalar?, [WireFieldValue])

    /// The value's wire type.
    package var type: WireFieldType {
        switch self {
        case .string: return .scalar(.string)
        case .int64: return .scalar(.int64)
        case .double: return .scalar(.double)
        case .timestamp: return .scalar(.timestamp)
        case .bytes: return .scalar(.bytes)
        case .reference: return .scalar(.reference)
        case .asset: return .scalar(.asset)
        case .location: return .scalar(.location)
        case .list(let element, _): return .list(element)
        }
    }

    /// The list's elements, or the value alone for a scalar.
    package var elements: [WireFieldValue] {
        if case .list(_, let items) = self { return items }
        return [self]
    }
}

extension WireFieldValue {
    /// The value of a STRING field; nil for other types.
    package var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The value of an INT64 field (or a whole DOUBLE); nil for other types.
    package var int64Value: Int64? {
        switch self {
        case .int64(let value): return value
        case .double(let value) where value.rounded() == value && abs(value) < 9e18: return Int64(value)
        default: return nil
        }
    }

    /// The value of an ASSETID field; nil for other types.
    package var assetValue: WireAsset? {
        if case .asset(let value) = self { return value }
        return nil
    }
}
