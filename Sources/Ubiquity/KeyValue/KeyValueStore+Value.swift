// SPDX-License-Identifier: Apache-2.0
import Foundation

extension KeyValueStore {
    /// A value of the key-value store: the property-list types Apple's store takes.
    ///
    /// Stored JSON-encoded with its type (`{"string":"…"}`, `{"integer":42}`, `{"data":"<base64>"}`,
    /// …), so a value reads back with the type it was set with.
    public enum Value: Sendable, Hashable, Codable, CustomStringConvertible {
        /// A string.
        case string(String)
        /// Bytes.
        case data(Data)
        /// An array of values.
        case array([Value])
        /// A dictionary of values by string key.
        case dictionary([String: Value])
        /// A 64-bit integer (`longLong`).
        case integer(Int64)
        /// A double (must be finite).
        case double(Double)
        /// A boolean.
        case bool(Bool)

        private enum CodingKeys: String, CodingKey {
            case string, data, array, dictionary, integer, double, bool
        }

        /// Decodes the typed form.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            guard let key = container.allKeys.first, container.allKeys.count == 1 else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                        debugDescription: "expected one of string, data, array, dictionary, integer, double, bool"))
            }
            switch key {
            case .string: self = .string(try container.decode(String.self, forKey: key))
            case .data: self = .data(try container.decode(Data.self, forKey: key))
            case .array: self = .array(try container.decode([Value].self, forKey: key))
            case .dictionary: self = .dictionary(try container.decode([String: Value].self, forKey: key))
            case .integer: self = .integer(try container.decode(Int64.self, forKey: key))
            case .double: self = .double(try container.decode(Double.self, forKey: key))
            case .bool: self = .bool(try container.decode(Bool.self, forKey: key))
            }
        }

        /// Encodes the typed form.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case .string(let value): try container.encode(value, forKey: .string)
            case .data(let value): try container.encode(value, forKey: .data)
            case .array(let value): try container.encode(value, forKey: .array)
            case .dictionary(let value): try container.encode(value, forKey: .dictionary)
            case .integer(let value): try container.encode(value, forKey: .integer)
            case .double(let value): try container.encode(value, forKey: .double)
            case .bool(let value): try container.encode(value, forKey: .bool)
            }
        }

        /// The stored form: typed JSON with sorted keys (equal values encode equally).
        public func encoded() throws -> String {
            if let problem = problem { throw UbiquityError(.invalidArgument, "key-value store: \(problem)") }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            encoder.dataEncodingStrategy = .base64
            do {
                return String(decoding: try encoder.encode(self), as: UTF8.self)
            } catch {
                throw UbiquityError(.invalidArgument, "key-value store: the value cannot be encoded", underlying: error)
            }
        }

        /// Decodes the stored form; nil when it is not one.
        public static func decoded(_ encoded: String) -> Value? {
            try? JSONDecoder().decode(Value.self, from: Data(encoded.utf8))
        }

        /// Why the value cannot be stored (a non-finite double anywhere in it), nil when it can.
        var problem: String? {
            switch self {
            case .double(let value) where !value.isFinite: return "\(value) is not a finite number; JSON cannot hold it"
            case .array(let values): return values.lazy.compactMap(\.problem).first
            case .dictionary(let values): return values.values.lazy.compactMap(\.problem).first
            default: return nil
            }
        }

        /// The value as Foundation would give it: `String`, `Data`, `[Any]`, `[String: Any]`,
        /// `Int` (`Int64` beyond `Int`'s range), `Double` or `Bool`.
        public var anyValue: Any {
            switch self {
            case .string(let value): return value
            case .data(let value): return value
            case .array(let values): return values.map(\.anyValue)
            case .dictionary(let values): return values.mapValues(\.anyValue)
            case .integer(let value): return Int(exactly: value).map { $0 as Any } ?? value
            case .double(let value): return value
            case .bool(let value): return value
            }
        }

        /// The value for a Foundation value that maps cleanly: strings, data, booleans, integers
        /// (those that fit `Int64`), floating-point numbers, `NSNumber`, and arrays and
        /// string-keyed dictionaries of those. Nil for anything else (dates, URLs, custom types).
        public init?(any value: Any) {
            if let value = value as? Value {
                self = value
                return
            }
            if type(of: value) is NSNumber.Type, let number = value as? NSNumber {
                let double = number.doubleValue
                if String(cString: number.objCType) == "c" || String(cString: number.objCType) == "B" {
                    self = .bool(number.boolValue)
                } else if double.rounded() == double, let integer = Int64(exactly: double), number.int64Value == integer {
                    self = .integer(number.int64Value)
                } else {
                    self = .double(double)
                }
                return
            }
            switch value {
            case let value as String: self = .string(value)
            case let value as Substring: self = .string(String(value))
            case let value as Bool: self = .bool(value)
            case let value as Int: self = .integer(Int64(value))
            case let value as Int64: self = .integer(value)
            case let value as Int32: self = .integer(Int64(value))
            case let value as Int16: self = .integer(Int64(value))
            case let value as Int8: self = .integer(Int64(value))
            case let value as UInt: guard let v = Int64(exactly: value) else { return nil }; self = .integer(v)
            case let value as UInt64: guard let v = Int64(exactly: value) else { return nil }; self = .integer(v)
            case let value as UInt32: self = .integer(Int64(value))
            case let value as UInt16: self = .integer(Int64(value))
            case let value as UInt8: self = .integer(Int64(value))
            case let value as Double: self = .double(value)
            case let value as Float: self = .double(Double(value))
            case let value as Data: self = .data(value)
            case let value as [Any]:
                var values: [Value] = []
                for element in value {
                    guard let element = Value(any: element) else { return nil }
                    values.append(element)
                }
                self = .array(values)
            case let value as [String: Any]:
                var values: [String: Value] = [:]
                for (key, element) in value {
                    guard let element = Value(any: element) else { return nil }
                    values[key] = element
                }
                self = .dictionary(values)
            default:
                return nil
            }
        }

        /// The value in a readable form (JSON-like).
        public var description: String {
            switch self {
            case .string(let value): return "\"\(value)\""
            case .data(let value): return "<\(value.count) bytes>"
            case .array(let values): return "[" + values.map(\.description).joined(separator: ", ") + "]"
            case .dictionary(let values):
                return "{" + values.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ") + "}"
            case .integer(let value): return String(value)
            case .double(let value): return String(value)
            case .bool(let value): return value ? "true" : "false"
            }
        }
    }
}
