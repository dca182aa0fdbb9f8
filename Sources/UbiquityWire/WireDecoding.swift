// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// Reads a JSON object member by member, naming the path of every mistake
/// (`operations[2].record.recordType: expected a string, got a number`).
///
/// It reads either a ``JSONValue`` tree (``init(_:path:)``) or, for a `Decodable` request type, a
/// `Decoder` straight from the body (``init(from:path:)``): one reading function per wire type
/// serves both. From a decoder, a member is decoded only when asked for, scalars and nested
/// objects without any tree; ``value(_:)`` decodes the member's subtree (a field value).
package struct WireReader {
    private enum Source {
        case tree([String: JSONValue])
        case decoder(KeyedDecodingContainer<WireCodingKey>)
    }
    private let source: Source
    /// Where the object is in the request, for messages (`""` at the top).
    package let path: String

    /// Wraps an object; anything else is an `invalidArgument` error naming `path`.
    package init(_ value: JSONValue, path: String) throws {
        guard let members = value.objectValue else {
            throw WireReader.mismatch(path, expected: "an object", got: value)
        }
        source = .tree(members)
        self.path = path
    }

    /// Reads the object `decoder` holds; anything else is an `invalidArgument` error naming `path`.
    package init(from decoder: any Decoder, path: String = "") throws {
        do {
            source = .decoder(try decoder.container(keyedBy: WireCodingKey.self))
        } catch DecodingError.typeMismatch {
            throw WireReader.mismatch(path, expected: "an object", got: try JSONValue(from: decoder))
        }
        self.path = path
    }

    /// The path of a member.
    package func path(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The names of the object's members.
    package var keys: [String] {
        switch source {
        case .tree(let members): Array(members.keys)
        case .decoder(let container): container.allKeys.map(\.stringValue)
        }
    }

    /// The member's value as sent (JSON `null` included), or nil when absent.
    package func member(_ key: String) throws -> JSONValue? {
        switch source {
        case .tree(let members): return members[key]
        case .decoder(let container):
            let codingKey = WireCodingKey(key)
            guard container.contains(codingKey) else { return nil }
            return try container.decode(JSONValue.self, forKey: codingKey)
        }
    }

    /// What a member's value probably is, for ``member(_:likely:)``.
    package enum Shape: Sendable {
        case object, array, scalar
    }

    /// ``member(_:)``, decoded first as the `likely` shape (from a decoder, each wrong guess of a
    /// value's JSON type costs a thrown error; a field's `type` tells its value's shape).
    package func member(_ key: String, likely: Shape) throws -> JSONValue? {
        if case .decoder(let container) = source {
            let codingKey = WireCodingKey(key)
            switch likely {
            case .object: if let members = try? container.decodeIfPresent([String: JSONValue].self, forKey: codingKey) { return .object(members) }
            case .array: if let elements = try? container.decodeIfPresent([JSONValue].self, forKey: codingKey) { return .array(elements) }
            case .scalar: break
            }
        }
        return try member(key)
    }

    /// Whether the member is absent or JSON `null` (told without decoding it).
    package func isNull(_ key: String) throws -> Bool {
        switch source {
        case .tree(let members): return members[key]?.isNull ?? true
        case .decoder(let container):
            let codingKey = WireCodingKey(key)
            return try !container.contains(codingKey) || container.decodeNil(forKey: codingKey)
        }
    }

    /// The member's value, with JSON `null` treated as absent.
    package func value(_ key: String) throws -> JSONValue? {
        guard let value = try member(key), !value.isNull else { return nil }
        return value
    }

    /// From a decoder: the member decoded as `T` when it is present, not null and a `T`; nil
    /// otherwise (the caller then reads the value to say what is wrong). Nil from a tree.
    private func decoded<T: Decodable>(_ type: T.Type, _ key: String) -> T? {
        guard case .decoder(let container) = source else { return nil }
        return try? container.decodeIfPresent(T.self, forKey: WireCodingKey(key))
    }

    /// A string member, or nil when absent.
    package func string(_ key: String) throws -> String? {
        if let text = decoded(String.self, key) { return text }
        guard let value = try value(key) else { return nil }
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
        if let flag = decoded(Bool.self, key) { return flag }
        guard let value = try value(key) else { return nil }
        guard let flag = value.boolValue else { throw WireReader.mismatch(path(key), expected: "true or false", got: value) }
        return flag
    }

    /// An integer member (also accepted as a string of digits), or nil when absent.
    package func integer(_ key: String) throws -> Int64? {
        if let number = decoded(Int64.self, key) { return number }
        guard let value = try value(key) else { return nil }
        switch value {
        case .integer(let number): return number
        case .number(let number) where number == number.rounded() && abs(number) < 9.2e18: return Int64(number)
        case .string(let text) where Int64(text) != nil: return Int64(text)
        default: throw WireReader.mismatch(path(key), expected: "an integer", got: value)
        }
    }

    /// A number member (also accepted as a numeric string), or nil when absent.
    package func double(_ key: String) throws -> Double? {
        if let number = decoded(Double.self, key) { return number }
        guard let value = try value(key) else { return nil }
        if let number = value.doubleValue { return number }
        if let text = value.stringValue, let number = Double(text), number.isFinite { return number }
        throw WireReader.mismatch(path(key), expected: "a number", got: value)
    }

    /// An object member, or nil when absent.
    package func object(_ key: String) throws -> WireReader? {
        switch source {
        case .tree:
            guard let value = try value(key) else { return nil }
            return try WireReader(value, path: path(key))
        case .decoder(let container):
            let codingKey = WireCodingKey(key)
            guard container.contains(codingKey), try !container.decodeNil(forKey: codingKey) else { return nil }
            return try WireReader(from: container.superDecoder(forKey: codingKey), path: path(key))
        }
    }

    /// A required object member.
    package func requiredObject(_ key: String, _ expected: String) throws -> WireReader {
        guard let object = try object(key) else { throw WireReader.missing(path(key), expected) }
        return object
    }

    /// An array member, or nil when absent.
    package func array(_ key: String) throws -> [JSONValue]? {
        guard let value = try value(key) else { return nil }
        guard let elements = value.arrayValue else { throw WireReader.mismatch(path(key), expected: "an array", got: value) }
        return elements
    }

    /// A required array member.
    package func requiredArray(_ key: String) throws -> [JSONValue] {
        guard let elements = try array(key) else { throw WireReader.missing(path(key), "an array") }
        return elements
    }

    /// An array of objects, each read by `read` with its reader (its path `key[i]`), or nil when
    /// absent. `read` sees each element, so it may keep reading past one that fails.
    package func objects<Element>(_ key: String, _ read: (_ index: Int, _ element: Result<WireReader, any Error>) throws -> Element) throws -> [Element]? {
        switch source {
        case .tree:
            return try array(key)?.enumerated().map { index, element in
                try read(index, Result { try WireReader(element, path: "\(path(key))[\(index)]") })
            }
        case .decoder(let container):
            let codingKey = WireCodingKey(key)
            guard container.contains(codingKey), try !container.decodeNil(forKey: codingKey) else { return nil }
            var elements: any UnkeyedDecodingContainer
            do {
                elements = try container.nestedUnkeyedContainer(forKey: codingKey)
            } catch DecodingError.typeMismatch {
                throw WireReader.mismatch(path(key), expected: "an array", got: try container.decode(JSONValue.self, forKey: codingKey))
            }
            var elementsRead: [Element] = []
            while !elements.isAtEnd {
                let index = elements.currentIndex
                let element = try elements.superDecoder()
                elementsRead.append(try read(index, Result { try WireReader(from: element, path: "\(path(key))[\(index)]") }))
            }
            return elementsRead
        }
    }

    /// A required array of objects (see ``objects(_:_:)``), each read by `read`.
    package func requiredObjects<Element>(_ key: String, _ read: (_ element: WireReader) throws -> Element) throws -> [Element] {
        guard let elements = try objects(key, { try read($1.get()) }) else { throw WireReader.missing(path(key), "an array") }
        return elements
    }

    /// An array of strings, or nil when absent.
    package func strings(_ key: String) throws -> [String]? {
        if let texts = decoded([String].self, key) { return texts }
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

/// A wire dictionary read with ``WireReader``: decodable straight from a request body with any
/// `Decoder` (``init(from:)``), and readable from a ``JSONValue`` tree (``init(json:path:)``),
/// by one reading function, ``init(reader:)``.
package protocol WireReadable: Decodable {
    /// Reads the value from `reader`.
    init(reader: WireReader) throws
}

extension WireReadable {
    /// Decodes the value straight from `decoder` (a request body).
    package init(from decoder: any Decoder) throws {
        try self.init(reader: WireReader(from: decoder))
    }

    /// Reads the value from a JSON tree; `path` names where it is in its request, for messages.
    package init(json: JSONValue, path: String = "") throws {
        try self.init(reader: WireReader(json, path: path))
    }
}

/// A member name of a wire dictionary, as a `CodingKey`.
package struct WireCodingKey: CodingKey, Sendable {
    package let stringValue: String
    package var intValue: Int? { nil }
    /// The key `name`.
    package init(_ name: String) { stringValue = name }
    /// The key `stringValue`.
    package init(stringValue: String) { self.stringValue = stringValue }
    /// Array indices are not member names.
    package init?(intValue: Int) { nil }
}

/// Builds JSON objects for responses, leaving out absent optionals.
package struct WireWriter: Sendable, WireMemberWriter {
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
    /// Sets a member to JSON text, read (text that does not read is left out: callers pass their
    /// own JSON).
    package mutating func set(_ key: String, rawJSON text: String) {
        if let value = try? JSONValue.parse(Data(text.utf8)) { members[key] = value }
    }
    /// Sets a member to a nested object whose members `body` writes.
    package mutating func set(_ key: String, object body: (inout WireWriter) -> Void) {
        var nested = WireWriter()
        body(&nested)
        members[key] = nested.json
    }
    /// The object.
    package var json: JSONValue { .object(members) }
}
