// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// Any JSON value, decoded without a schema: the CloudKit wire model reads request bodies into
/// this first so that every variant clients send can be accepted and every mistake named by its
/// path (`operations[3].record.fields.width.value`).
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number written without a fraction or exponent that fits in 64 bits.
    case integer(Int64)
    /// Any other number.
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The members of an object, or nil.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }
    /// The elements of an array, or nil.
    public var arrayValue: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }
    /// The string, or nil.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }
    /// A number as a double (integers converted), or nil.
    public var doubleValue: Double? {
        switch self {
        case .integer(let value): return Double(value)
        case .number(let value): return value
        default: return nil
        }
    }
    /// A boolean (JSON `true`/`false`, or the numbers 0 and 1), or nil.
    public var boolValue: Bool? {
        switch self {
        case .bool(let value): return value
        case .integer(0): return false
        case .integer(1): return true
        case .string(let text) where text == "true" || text == "false": return text == "true"
        default: return nil
        }
    }
    /// Whether this is JSON `null`.
    public var isNull: Bool { if case .null = self { return true } else { return false } }

    /// A short name of the value's JSON type, for error messages.
    public var kindName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .integer, .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// Parses JSON text. Invalid UTF-8, malformed JSON and nesting deeper than `maximumDepth`
    /// are `invalidArgument` errors that say where.
    public static func parse(_ data: Data, maximumDepth: Int = 64) throws -> JSONValue {
        var parser = JSONValueParser(bytes: [UInt8](data), maximumDepth: maximumDepth)
        return try parser.parseDocument()
    }

    /// Whether `bytes` hold only JSON whitespace (an empty body, which CloudKit reads as `{}`).
    public static func isBlank(_ bytes: some Sequence<UInt8>) -> Bool {
        bytes.allSatisfy { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
    }

    /// Serializes the value as compact JSON.
    public func serialized() -> Data {
        Data(serializedBytes())
    }

    /// ``serialized()`` as bytes.
    public func serializedBytes() -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(256)
        write(to: &out)
        return out
    }

    /// Appends the compact JSON text of the value to `out`.
    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .integer(let value): out.append(contentsOf: String(value).utf8)
        case .number(let value):
            if value.isFinite {
                // Integral doubles keep a fraction ("10.0") so that they read back as numbers, not integers.
                if value == value.rounded(.towardZero), abs(value) < 1e15 {
                    out.append(contentsOf: Array("\(Int64(value)).0".utf8))
                } else {
                    out.append(contentsOf: Array("\(value)".utf8))
                }
            } else {
                out.append(contentsOf: Array("null".utf8))
            }
        case .string(let text): JSONValue.writeString(text, to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func writeString(_ text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { writeString(utf8: $0, to: &out) }
    }

    /// Appends `bytes` (UTF-8) as a JSON string: runs of bytes that need no escape are copied
    /// at once.
    static func writeString(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var start = 0
        for index in 0..<bytes.count {
            let byte = bytes[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            if start < index { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index])) }
            start = index + 1
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            default:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 15)]])
            }
        }
        if start < bytes.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<bytes.count])) }
        out.append(UInt8(ascii: "\""))
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByFloatLiteral, ExpressibleByNilLiteral
{
    /// A string value.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An integer value.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// A boolean value.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An array value.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    /// A number value.
    public init(floatLiteral value: Double) { self = .number(value) }
    /// JSON `null`.
    public init(nilLiteral: ()) { self = .null }
}

/// A strict RFC 8259 parser over bytes with a depth limit; errors name the byte offset.
struct JSONValueParser {
    let bytes: [UInt8]
    let maximumDepth: Int
    var index = 0
    var depth = 0
    /// The members of the objects being parsed, innermost last: each object's members are
    /// gathered here and made into a dictionary of their exact size once it closes (no
    /// dictionary grown and rehashed member by member, for every record and field object).
    var pendingMembers: [(String, JSONValue)] = []

    init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    mutating func parseDocument() throws -> JSONValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw failure("unexpected text after the JSON value") }
        return value
    }

    func failure(_ what: String) -> UbiquityError {
        UbiquityError(.invalidArgument, "malformed JSON at byte \(index): \(what)")
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws -> JSONValue {
        guard index < bytes.count else { throw failure("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw failure("expected a value")
        }
    }

    mutating func expectLiteral(_ literal: String) throws {
        let literalBytes = Array(literal.utf8)
        guard index + literalBytes.count <= bytes.count, Array(bytes[index..<index + literalBytes.count]) == literalBytes else {
            throw failure("expected \(literal)")
        }
        index += literalBytes.count
    }

    mutating func enter() throws {
        depth += 1
        if depth > maximumDepth { throw failure("nested deeper than \(maximumDepth) levels") }
    }

    mutating func parseObject() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object([:]) }
        let start = pendingMembers.count
        defer { pendingMembers.removeSubrange(start...) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a member name in quotes") }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':' after a member name") }
            index += 1
            skipWhitespace()
            pendingMembers.append((key, try parseValue()))
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of input in an object") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                // a repeated name: the last one wins
                return .object(Dictionary(pendingMembers[start...], uniquingKeysWith: { _, last in last }))
            }
            throw failure("expected ',' or '}' in an object")
        }
    }

    mutating func parseArray() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of input in an array") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
            throw failure("expected ',' or ']' in an array")
        }
    }

    mutating func parseNumber() throws -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        func digits(_ parser: inout JSONValueParser) -> Int {
            let begin = parser.index
            while parser.index < parser.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(parser.bytes[parser.index]) { parser.index += 1 }
            return parser.index - begin
        }
        guard digits(&self) > 0 else { throw failure("expected digits") }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard digits(&self) > 0 else { throw failure("expected digits after '.'") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits(&self) > 0 else { throw failure("expected digits in the exponent") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let value = Int64(text) { return .integer(value) }
        guard let value = Double(text), value.isFinite else { throw failure("number out of range") }
        return .number(value)
    }

    mutating func parseString() throws -> String {
        index += 1
        // the common case, no escape: the bytes up to the closing quote make the string
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                guard let text = String(validating: bytes[start..<index - 1], as: UTF8.self) else { throw failure("a string is not valid UTF-8") }
                return text
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            index += 1
        }
        var out = Array(bytes[start..<index])
        while true {
            guard index < bytes.count else { throw failure("unterminated string") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { index += 1; break }
            if byte < 0x20 { throw failure("control character in a string") }
            if byte == UInt8(ascii: "\\") {
                index += 1
                guard index < bytes.count else { throw failure("unterminated escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw failure("unpaired surrogate in a string")
                        }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw failure("unpaired surrogate in a string") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        throw failure("unpaired surrogate in a string")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw failure("invalid \\u escape") }
                    // NUL cannot be stored by every database (PostgreSQL refuses it in text).
                    guard scalar != 0 else { throw failure("\\u0000 (NUL) is not allowed in strings") }
                    out.append(contentsOf: Array(String(Character(unicode)).utf8))
                default: throw failure("invalid escape")
                }
                continue
            }
            out.append(byte)
            index += 1
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw failure("a string is not valid UTF-8") }
        return text
    }

    mutating func parseHex4() throws -> UInt32 {
        guard index + 4 <= bytes.count, let value = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
            throw failure("expected four hex digits after \\u")
        }
        index += 4
        return value
    }
}

extension JSONValue: Decodable {
    /// Decodes any JSON value from a `Decoder` (a request member whose shape only its reader
    /// knows, such as a field value). Through Foundation's `JSONDecoder`, an integral number is
    /// an ``integer(_:)`` however it is written (`2.0` too: the decoder does not tell them apart).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // the likeliest first: each wrong guess costs a thrown error
        if container.decodeNil() {
            self = .null
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let number = try? container.decode(Int64.self) {
            self = .integer(number)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let elements = try? container.decode([JSONValue].self) {
            self = .array(elements)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }
}
