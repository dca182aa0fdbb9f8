// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// Reads a JSON object member by member, naming the path of every mistake
/// (`operations[2].record.recordType: expected a string, got a number`).
package struct WireReader: Sendable {
    /// The object's members.
    package let members: [String: JSONValue]
    /// Where the object is in the request, for messages (`""` at the top).
    package let path: String

    /// Wraps an object; anything else is an `invalidArgument` error naming `path`.
    package init(_ value: JSONValue, path: String) throws {
        guard let members = value.objectValue else {
            throw WireReader.mismatch(path, expected: "an object", got: value)
        }
        self.members = members
        self.path = path
    }

    /// The path of a member.
    package func path(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The member's value, with JSON `null` treated as absent.
    package func value(_ key: String) -> JSONValue? {
        guard let value = members[key], !value.isNull else { return nil }
        return value
    }

    /// A string member, or nil when absent.
    package func string(_ key: String) throws -> String? {
        guard let value = value(key) else { return nil }
        guard let text = value.stringValue else { throw WireReader.mismatch(path(key), expected: "a string", got: value) }
        return text
    }

    /// A required string member.
    package func requiredString(_ key: String) throws -> String {
        guard let text = try string(key) else { throw WireReader.missing(path(key), "a string") }
        return text
    }

    /// A boolean member (`true`, `false`, 0, 1), or nil when absent.
    package func bool(_ key: String) throws -> Bool? {
        guard let value = value(key) else { return nil }
        guard let flag = value.boolValue else { throw WireReader.mismatch(path(key), expected: "true or false", got: value) }
        return flag
    }

    /// An integer member (also accepted as a string of digits), or nil when absent.
    package func integer(_ key: String) throws -> Int64? {
        guard let value = value(key) else { return nil }
        switch value {
        case .integer(let number): return number
        case .number(let number) where number == number.rounded() && abs(number) < 9.2e18: return Int64(number)
        case .string(let text) where Int64(text) != nil: return Int64(text)
        default: throw WireReader.mismatch(path(key), expected: "an integer", got: value)
        }
    }

    /// A number member (also accepted as a numeric string), or nil when absent.
    package func double(_ key: String) throws -> Double? {
        guard let value = value(key) else { return nil }
        if let number = value.doubleValue { return number }
        if let text = value.stringValue, let number = Double(text), number.isFinite { return number }
        throw WireReader.mismatch(path(key), expected: "a number", got: value)
    }

    /// An object member, or nil when absent.
    package func object(_ key: String) throws -> WireReader? {
        guard let value = value(key) else { return nil }
        return try WireReader(value, path: path(key))
    }

    /// An array member, or nil when absent.
    package func array(_ key: String) throws -> [JSONValue]? {
        guard let value = value(key) else { return nil }
        guard let elements = value.arrayValue else { throw WireReader.mismatch(path(key), expected: "an array", got: value) }
        return elements
    }

    /// A required array member.
    package func requiredArray(_ key: String) throws -> [JSONValue] {
        guard let elements = try array(key) else { throw WireReader.missing(path(key), "an array") }
        return elements
    }

    /// An array of strings, or nil when absent.
    package func strings(_ key: String) throws -> [String]? {
        guard let elements = try array(key) else { return nil }
        return try elements.enumerated().map { index, element in
            guard let text = element.stringValue else {
                throw WireReader.mismatch("\(path(key))[\(index)]", expected: "a string", got: element)
            }
            return text
        }
    }

    /// The error for a value of the wrong JSON type.
    package static func mismatch(_ path: String, expected: String, got value: JSONValue) -> UbiquityError {
        UbiquityError(.invalidArgument, "\(path.isEmpty ? "request body" : path): expected \(expected), got \(value.kindName)")
    }

    /// The error for a required member that is absent.
    package static func missing(_ path: String, _ expected: String) -> UbiquityError {
        UbiquityError(.invalidArgument, "\(path): required, expected \(expected)")
    }

    /// An error about the value at `path`.
    package static func invalid(_ path: String, _ message: String) -> UbiquityError {
        UbiquityError(.invalidArgument, "\(path): \(message)")
    }
}

/// Builds JSON objects for responses, leaving out absent optionals.
package struct WireWriter: Sendable {
    /// The members written so far.
    package var members: [String: JSONValue] = [:]
    /// An empty object.
    package init() {}
    /// Sets a member unless `value` is nil.
    package mutating func set(_ key: String, _ value: JSONValue?) {
        if let value { members[key] = value }
    }
    /// Sets a string member unless nil.
    package mutating func set(_ key: String, _ value: String?) {
        if let value { members[key] = .string(value) }
    }
    /// Sets a boolean member unless nil.
    package mutating func set(_ key: String, _ value: Bool?) {
        if let value { members[key] = .bool(value) }
    }
    /// Sets an integer member unless nil.
    package mutating func set(_ key: String, _ value: Int64?) {
        if let value { members[key] = .integer(value) }
    }
    /// The object.
    package var json: JSONValue { .object(members) }
}
