// SPDX-License-Identifier: Apache-2.0
import Foundation

extension KeyValueStore {
    /// The value of `key` as Foundation gives it (`String`, `Data`, `[Any]`, `[String: Any]`,
    /// `Int`, `Double`, `Bool`), nil when the key has none.
    public func object(forKey key: String) -> Any? { value(forKey: key)?.anyValue }

    /// The string of `key`, nil when it has none or holds another type.
    public func string(forKey key: String) -> String? {
        if case .string(let value)? = value(forKey: key) { return value }
        return nil
    }

    /// The array of `key`, nil when it has none or holds another type.
    public func array(forKey key: String) -> [Any]? {
        if case .array(let values)? = value(forKey: key) { return values.map(\.anyValue) }
        return nil
    }

    /// The dictionary of `key`, nil when it has none or holds another type.
    public func dictionary(forKey key: String) -> [String: Any]? {
        if case .dictionary(let values)? = value(forKey: key) { return values.mapValues(\.anyValue) }
        return nil
    }

    /// The data of `key`, nil when it has none or holds another type.
    public func data(forKey key: String) -> Data? {
        if case .data(let value)? = value(forKey: key) { return value }
        return nil
    }

    /// The integer of `key` (a double truncated, a boolean as 0 or 1); 0 when it has none.
    public func longLong(forKey key: String) -> Int64 {
        switch value(forKey: key) {
        case .integer(let value)?: return value
        case .double(let value)?: return Int64(exactly: value.rounded(.towardZero)) ?? 0
        case .bool(let value)?: return value ? 1 : 0
        default: return 0
        }
    }

    /// The double of `key` (an integer converted, a boolean as 0 or 1); 0 when it has none.
    public func double(forKey key: String) -> Double {
        switch value(forKey: key) {
        case .double(let value)?: return value
        case .integer(let value)?: return Double(value)
        case .bool(let value)?: return value ? 1 : 0
        default: return 0
        }
    }

    /// The boolean of `key` (a number is true when not 0); false when it has none.
    public func bool(forKey key: String) -> Bool {
        switch value(forKey: key) {
        case .bool(let value)?: return value
        case .integer(let value)?: return value != 0
        case .double(let value)?: return value != 0
        default: return false
        }
    }

    /// Sets a string (nil removes the key). False when the set failed (the error is logged).
    @discardableResult
    public func set(_ value: String?, forKey key: String) -> Bool { setLogging(value.map(Value.string), forKey: key) }

    /// Sets data (nil removes the key). False when the set failed.
    @discardableResult
    public func set(_ value: Data?, forKey key: String) -> Bool { setLogging(value.map(Value.data), forKey: key) }

    /// Sets an array of property-list values (nil removes the key). False when the set failed or
    /// an element is not a property-list value.
    @discardableResult
    public func set(_ value: [Any]?, forKey key: String) -> Bool { set(value as Any?, forKey: key) }

    /// Sets a dictionary of property-list values (nil removes the key). False when the set
    /// failed or a value is not a property-list value.
    @discardableResult
    public func set(_ value: [String: Any]?, forKey key: String) -> Bool { set(value as Any?, forKey: key) }

    /// Sets an integer (`setLongLong`). False when the set failed.
    @discardableResult
    public func set(_ value: Int64, forKey key: String) -> Bool { setLogging(.integer(value), forKey: key) }

    /// Sets an integer. False when the set failed.
    @discardableResult
    public func set(_ value: Int, forKey key: String) -> Bool { setLogging(.integer(Int64(value)), forKey: key) }

    /// Sets a double (it must be finite). False when the set failed.
    @discardableResult
    public func set(_ value: Double, forKey key: String) -> Bool { setLogging(.double(value), forKey: key) }

    /// Sets a boolean. False when the set failed.
    @discardableResult
    public func set(_ value: Bool, forKey key: String) -> Bool { setLogging(.bool(value), forKey: key) }

    /// Apple's `set(_:forKey:)` taking any property-list value (nil removes the key): strings,
    /// data, numbers, booleans, arrays and string-keyed dictionaries of those. Anything else is
    /// refused (logged, false), as Apple's store ignores non-property-list objects.
    @discardableResult
    public func set(_ value: Any?, forKey key: String) -> Bool {
        guard let value else { return setLogging(nil, forKey: key) }
        guard let converted = Value(any: value) else {
            logger.error("key-value store: not a property-list value; nothing stored",
                         metadata: ["key": "\(key)", "type": "\(type(of: value))"])
            return false
        }
        return setLogging(converted, forKey: key)
    }
}
