// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension WireFieldValue {
    /// Reads a record field dictionary (`{"value": …, "type": "INT64"}`). The type is optional,
    /// as in CloudKit: without it the type is inferred from the JSON (`string` → STRING,
    /// integer → INT64, fraction → DOUBLE, `{recordName}` → REFERENCE, `{latitude, longitude}`
    /// → LOCATION, `{fileChecksum|receipt}` → ASSETID, arrays → the element's `_LIST`).
    package init(fieldJSON json: JSONValue, path: String) throws {
        try self.init(fieldReader: WireReader(json, path: path))
    }

    /// Reads a record field dictionary from its reader (``init(fieldJSON:path:)``).
    package init(fieldReader reader: WireReader) throws {
        var type: WireFieldType?
        if let tag = try reader.string("type") {
            guard let parsed = WireFieldType(tag: tag) else {
                throw WireReader.invalid(reader.path("type"), "unknown field type \(tag); expected STRING, INT64, DOUBLE, TIMESTAMP, BYTES, REFERENCE, ASSETID, LOCATION or one of their _LIST forms")
            }
            type = parsed
        }
        let shape: WireReader.Shape = switch type {
        case .list?: .array
        case .scalar(.reference)?, .scalar(.asset)?, .scalar(.location)?: .object
        default: .scalar
        }
        guard let value = try reader.member("value", likely: shape) else { throw WireReader.missing(reader.path("value"), "a value") }
        try self.init(value: value, type: type, path: reader.path("value"))
    }

    /// Reads a bare value of the given type (inferred when nil).
    package init(value: JSONValue, type: WireFieldType?, path: String) throws {
        switch type ?? WireFieldValue.inferType(value) {
        case .scalar(let scalar):
            self = try WireFieldValue.scalar(value, scalar, path: path)
        case .list(let element):
            guard let items = value.arrayValue else { throw WireReader.mismatch(path, expected: "an array", got: value) }
            var elementType = element
            var decoded: [WireFieldValue] = []
            decoded.reserveCapacity(items.count)
            for (index, item) in items.enumerated() {
                let itemType = elementType ?? {
                    if case .scalar(let scalar) = WireFieldValue.inferType(item) { return scalar }
                    return .string
                }()
                if case .array = item {
                    throw WireReader.invalid("\(path)[\(index)]", "lists cannot contain lists")
                }
                decoded.append(try WireFieldValue.scalar(item, itemType, path: "\(path)[\(index)]"))
                elementType = itemType
            }
            self = .list(element: elementType, decoded)
        }
    }

    static func inferType(_ value: JSONValue) -> WireFieldType {
        switch value {
        case .string, .null: return .scalar(.string)
        case .integer, .bool: return .scalar(.int64)
        case .number: return .scalar(.double)
        case .object(let members):
            if members["latitude"] != nil || members["longitude"] != nil { return .scalar(.location) }
            if members["fileChecksum"] != nil || members["receipt"] != nil || members["downloadURL"] != nil { return .scalar(.asset) }
            return .scalar(.reference)
        case .array(let items):
            guard let first = items.first, case .scalar(let scalar) = inferType(first) else { return .list(nil) }
            return .list(scalar)
        }
    }

    static func scalar(_ value: JSONValue, _ type: WireFieldType.Scalar, path: String) throws -> WireFieldValue {
        switch type {
        case .string:
            guard let text = value.stringValue else { throw WireReader.mismatch(path, expected: "a string for STRING", got: value) }
            return .string(text)
        case .int64:
            switch value {
            case .integer(let number): return .int64(number)
            case .bool(let flag): return .int64(flag ? 1 : 0)
            case .number(let number) where number == number.rounded() && abs(number) < 9.2e18: return .int64(Int64(number))
            case .string(let text) where Int64(text) != nil: return .int64(Int64(text)!)
            default: throw WireReader.mismatch(path, expected: "an integer for INT64", got: value)
            }
        case .double:
            if let number = value.doubleValue { return .double(number) }
            if let text = value.stringValue, let number = Double(text), number.isFinite { return .double(number) }
            throw WireReader.mismatch(path, expected: "a number for DOUBLE", got: value)
        case .timestamp:
            switch value {
            case .integer(let number): return .timestamp(Double(number))
            case .number(let number) where abs(number) < 9.2e18: return .timestamp(number)
            case .string(let text) where Double(text).map({ $0.isFinite && abs($0) < 9.2e18 }) == true: return .timestamp(Double(text)!)
            default: throw WireReader.mismatch(path, expected: "milliseconds since 1970 for TIMESTAMP", got: value)
            }
        case .bytes:
            guard let text = value.stringValue else { throw WireReader.mismatch(path, expected: "a Base64 string for BYTES", got: value) }
            guard let data = Data(base64Encoded: text) ?? Data(base64Encoded: WireFieldValue.padBase64(text)) else {
                throw WireReader.invalid(path, "expected Base64 for BYTES")
            }
            return .bytes(data)
        case .reference:
            return .reference(try WireReference(json: value, path: path))
        case .location:
            return .location(try WireLocation(json: value, path: path))
        case .asset:
            return .asset(try WireAsset(json: value, path: path))
        }
    }

    /// The value as a value of `type`, for a value read without a type (its type inferred from the
    /// JSON) whose JSON also reads as `type`: an integer as TIMESTAMP or DOUBLE, a fraction as
    /// TIMESTAMP or as INT64 when whole, a string as BYTES (Base64) or as a number sent as a
    /// string, each element of a list as its element type — read as a value sent with `type` is.
    /// Nil when it does not read as `type`; the value itself when it already is one.
    package func retyped(as type: WireFieldType) -> WireFieldValue? {
        if self.type == type { return self }
        switch (self, type) {
        case (.list(_, let items), .list(let element?)):
            var converted: [WireFieldValue] = []
            converted.reserveCapacity(items.count)
            for item in items {
                guard let value = item.retyped(as: .scalar(element)) else { return nil }
                converted.append(value)
            }
            return .list(element: element, converted)
        case (.int64(let number), .scalar(.timestamp)):
            return .timestamp(Double(number))
        case (.int64(let number), .scalar(.double)):
            return .double(Double(number))
        case (.double(let number), .scalar(let scalar)) where [.timestamp, .int64].contains(scalar):
            return try? WireFieldValue.scalar(.number(number), scalar, path: "")
        case (.string(let text), .scalar(let scalar)) where [.bytes, .int64, .double, .timestamp].contains(scalar):
            return try? WireFieldValue.scalar(.string(text), scalar, path: "")
        default:
            return nil
        }
    }

    /// `millis` rounded to a whole millisecond, or nil when it is not a time Int64 can hold.
    package static func wholeMilliseconds(_ millis: Double) -> Int64? {
        millis.isFinite && abs(millis) < 9.2e18 ? Int64(millis.rounded()) : nil
    }

    static func padBase64(_ text: String) -> String {
        var text = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.utf8.count % 4 != 0 { text += "=" }
        return text
    }

    /// The record field dictionary: `{"value": …, "type": "…"}`.
    package func fieldJSON(numbersAsStrings: Bool = false) -> JSONValue {
        .object(["value": valueJSON(numbersAsStrings: numbersAsStrings), "type": .string(type.description)])
    }

    /// The bare value as CloudKit writes it.
    package func valueJSON(numbersAsStrings: Bool = false) -> JSONValue {
        switch self {
        case .string(let text): return .string(text)
        case .int64(let number): return numbersAsStrings ? .string(String(number)) : .integer(number)
        case .double(let number): return numbersAsStrings ? .string(String(number)) : .number(number)
        case .timestamp(let millis):
            // whole milliseconds as an integer (as CloudKit writes them), a fraction as it came
            if millis == millis.rounded(), abs(millis) < 9.2e18 {
                return numbersAsStrings ? .string(String(Int64(millis))) : .integer(Int64(millis))
            }
            return numbersAsStrings ? .string(String(millis)) : .number(millis)
        case .bytes(let data): return .string(data.base64EncodedString())
        case .reference(let reference): return reference.json
        case .location(let location): return location.json
        case .asset(let asset): return asset.json
        case .list(_, let items): return .array(items.map { $0.valueJSON(numbersAsStrings: numbersAsStrings) })
        }
    }
}

extension WireReference {
    /// Reads a reference dictionary.
    package init(json: JSONValue, path: String) throws {
        let reader = try WireReader(json, path: path)
        recordName = try reader.requiredString("recordName")
        guard !recordName.isEmpty else { throw WireReader.invalid(reader.path("recordName"), "must not be empty") }
        zoneID = try reader.object("zoneID").map { try WireZoneID(reader: $0) }
        if let actionName = try reader.string("action") {
            guard let parsed = Action(rawValue: actionName.uppercased()) else {
                throw WireReader.invalid(reader.path("action"), "unknown action \(actionName); expected NONE, DELETE_SELF or VALIDATE")
            }
            action = parsed
        }
    }

    /// The reference dictionary.
    package var json: JSONValue {
        var writer = WireWriter()
        writer.set("recordName", recordName)
        writer.set("zoneID", zoneID?.json)
        writer.set("action", action?.rawValue)
        return writer.json
    }
}

extension WireLocation {
    /// The location's `timestamp` in milliseconds: an integer, or a number with a fraction
    /// (MistKit sends a double) rounded as a TIMESTAMP field's is.
    static func milliseconds(_ reader: WireReader, _ key: String) throws -> Int64? {
        guard let number = try reader.double(key) else { return nil }
        guard let millis = WireFieldValue.wholeMilliseconds(number) else { throw WireReader.invalid(reader.path(key), "is not a time in milliseconds") }
        return millis
    }

    /// Reads a location dictionary; latitude must be in [-90, 90] and longitude in [-180, 180].
    package init(json: JSONValue, path: String) throws {
        let reader = try WireReader(json, path: path)
        guard let latitude = try reader.double("latitude") else { throw WireReader.missing(reader.path("latitude"), "a number") }
        guard let longitude = try reader.double("longitude") else { throw WireReader.missing(reader.path("longitude"), "a number") }
        guard (-90...90).contains(latitude) else { throw WireReader.invalid(reader.path("latitude"), "must be between -90 and 90") }
        guard (-180...180).contains(longitude) else { throw WireReader.invalid(reader.path("longitude"), "must be between -180 and 180") }
        self.init(latitude: latitude, longitude: longitude,
                  horizontalAccuracy: try reader.double("horizontalAccuracy"), verticalAccuracy: try reader.double("verticalAccuracy"),
                  altitude: try reader.double("altitude"), speed: try reader.double("speed"), course: try reader.double("course"),
                  timestamp: try Self.milliseconds(reader, "timestamp"))
    }

    /// The location dictionary.
    package var json: JSONValue {
        var members: [String: JSONValue] = ["latitude": .number(latitude), "longitude": .number(longitude)]
        if let horizontalAccuracy { members["horizontalAccuracy"] = .number(horizontalAccuracy) }
        if let verticalAccuracy { members["verticalAccuracy"] = .number(verticalAccuracy) }
        if let altitude { members["altitude"] = .number(altitude) }
        if let speed { members["speed"] = .number(speed) }
        if let course { members["course"] = .number(course) }
        if let timestamp { members["timestamp"] = .integer(timestamp) }
        return .object(members)
    }
}

extension WireAsset {
    /// Reads an asset dictionary.
    package init(json: JSONValue, path: String) throws {
        let reader = try WireReader(json, path: path)
        self.init(fileChecksum: try reader.string("fileChecksum"), size: try reader.integer("size"),
                  referenceChecksum: try reader.string("referenceChecksum"), wrappingKey: try reader.string("wrappingKey"),
                  receipt: try reader.string("receipt"), downloadURL: try reader.string("downloadURL"))
    }

    /// The asset dictionary.
    package var json: JSONValue {
        var writer = WireWriter()
        writer.set("fileChecksum", fileChecksum)
        writer.set("size", size)
        writer.set("referenceChecksum", referenceChecksum)
        writer.set("wrappingKey", wrappingKey)
        writer.set("receipt", receipt)
        writer.set("downloadURL", downloadURL)
        return writer.json
    }
}
