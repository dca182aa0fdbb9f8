import Foundation

/// Converts `%@`/`%K`/`%d` arguments and substitution variables into operands.
enum PredicateArguments {
    /// Why an argument does not fit.
    struct Issue: Error { var message: String }

    private static func typeName(_ value: Any) -> String { String(describing: type(of: value)) }

    /// The value inside any number of `Optional`s, or `nil` for an empty one.
    static func unwrap(_ value: Any) -> Any? {
        var current = value
        for _ in 0..<16 {
            let mirror = Mirror(reflecting: current)
            guard mirror.displayStyle == .optional else { return current }
            guard let child = mirror.children.first else { return nil }
            current = child.value
        }
        return current
    }

    /// A `%K` argument: an attribute name or a `MetadataAttribute`.
    static func attribute(from argument: Any) throws(Issue) -> MetadataAttribute {
        guard let value = unwrap(argument) else { throw Issue(message: "expected an attribute name, got nil") }
        if let attribute = value as? MetadataAttribute { return attribute }
        let name: String
        if let s = value as? String { name = s } else if let s = value as? Substring { name = String(s) } else {
            throw Issue(message: "expected an attribute name (String), got \(typeName(value))")
        }
        guard let attribute = MetadataAttribute(name: name) else { throw Issue(message: "unknown attribute '\(name)'") }
        return attribute
    }

    /// A `%d`-style argument.
    static func integer(from argument: Any) throws(Issue) -> MetadataValue {
        guard let value = unwrap(argument) else { throw Issue(message: "expected an integer, got nil") }
        if value is Bool { throw Issue(message: "expected an integer, got Bool") }
        if let number = integerValue(value) { return number }
        throw Issue(message: "expected an integer, got \(typeName(value))")
    }

    /// A `%f`-style argument.
    static func double(from argument: Any) throws(Issue) -> MetadataValue {
        guard let value = unwrap(argument) else { throw Issue(message: "expected a number, got nil") }
        if value is Bool { throw Issue(message: "expected a number, got Bool") }
        if let d = doubleValue(value) {
            guard !d.isNaN else { throw Issue(message: "NaN is not a comparable number") }
            return .double(d)
        }
        if case .integer(let i)? = integerValue(value) { return .double(Double(i)) }
        if case .double(let d)? = integerValue(value) { return .double(d) }
        throw Issue(message: "expected a number, got \(typeName(value))")
    }

    private static func integerValue(_ value: Any) -> MetadataValue? {
        switch value {
        case let v as Int: .integer(Int64(v))
        case let v as Int64: .integer(v)
        case let v as Int32: .integer(Int64(v))
        case let v as Int16: .integer(Int64(v))
        case let v as Int8: .integer(Int64(v))
        case let v as UInt: Int64(exactly: v).map(MetadataValue.integer) ?? .double(Double(v))
        case let v as UInt64: Int64(exactly: v).map(MetadataValue.integer) ?? .double(Double(v))
        case let v as UInt32: .integer(Int64(v))
        case let v as UInt16: .integer(Int64(v))
        case let v as UInt8: .integer(Int64(v))
        default: nil
        }
    }

    private static func doubleValue(_ value: Any) -> Double? {
        switch value {
        case let v as Double: v
        case let v as Float: Double(v)
        case let v as Decimal: NSDecimalNumber(decimal: v).doubleValue
        default: nil
        }
    }

    /// A `%@` argument or a substitution value.
    static func operand(from argument: Any, depth: Int = 0) throws(Issue) -> PredicateOperand {
        guard depth < 32 else { throw Issue(message: "aggregates nested too deeply") }
        guard let value = unwrap(argument) else { return .value(.null) }
        switch value {
        case let v as MetadataValue:
            if case .array(let elements) = v {
                var operands: [PredicateOperand] = []
                for element in elements { operands.append(try operand(from: element, depth: depth + 1)) }
                return .aggregate(operands)
            }
            if case .double(let d) = v, d.isNaN { throw Issue(message: "NaN is not a comparable number") }
            return .value(v)
        case let v as PredicateOperand: return v
        case let v as String: return .value(.string(v))
        case let v as Substring: return .value(.string(String(v)))
        case let v as Character: return .value(.string(String(v)))
        case let v as Bool: return .value(.bool(v))
        case let v as Date: return .value(.date(v))
        case let v as URL: return .value(.string(v.absoluteString))
        case let v as MetadataAttribute: return .value(.string(v.rawValue))
        case is NSNull: return .value(.null)
        default: break
        }
        if let number = integerValue(value) { return .value(number) }
        if let d = doubleValue(value) {
            guard !d.isNaN else { throw Issue(message: "NaN is not a comparable number") }
            return .value(.double(d))
        }
        if let array = value as? [Any] {
            var operands: [PredicateOperand] = []
            for element in array { operands.append(try operand(from: element, depth: depth + 1)) }
            return .aggregate(operands)
        }
        if let set = value as? Set<String> {
            return .aggregate(set.sorted().map { .value(.string($0)) })
        }
        throw Issue(message: "unsupported type \(typeName(value)); use String, a number, Bool, Date, URL, an array of those, or nil")
    }
}

extension QueryPredicate {
    /// The predicate with each `$NAME` in `variables` replaced by its value (converted as a `%@`
    /// argument is). Variables not in the dictionary stay; evaluating or translating a predicate
    /// that still has variables fails. Throws when a value does not fit its comparison.
    public func withSubstitutionVariables(_ variables: [String: any Sendable]) throws -> QueryPredicate {
        var converted: [String: PredicateOperand] = [:]
        for (name, value) in variables {
            do {
                converted[name] = try PredicateArguments.operand(from: value)
            } catch {
                throw UbiquityError(.invalidArgument, "predicate: variable $\(name): \(error.message)")
            }
        }
        func substitute(_ operand: PredicateOperand) -> PredicateOperand {
            switch operand {
            case .variable(let name): converted[name] ?? operand
            case .aggregate(let elements): .aggregate(elements.map(substitute))
            default: operand
            }
        }
        func rewrite(_ expression: PredicateExpression) throws -> PredicateExpression {
            switch expression {
            case .constant: return expression
            case .not(let inner): return .not(try rewrite(inner))
            case .and(let parts): return .and(try parts.map(rewrite))
            case .or(let parts): return .or(try parts.map(rewrite))
            case .comparison(let c):
                var changed = c
                changed.left = substitute(c.left)
                changed.right = substitute(c.right)
                if changed == c { return expression }
                let normalized = PredicateTypeChecker.normalize(changed)
                do {
                    try PredicateTypeChecker.check(normalized)
                } catch {
                    throw UbiquityError(.invalidArgument,
                                        "predicate: after substituting variables in \(PredicateFormatter.format(.comparison(c))): \(error.message)")
                }
                return .comparison(normalized)
            }
        }
        return QueryPredicate(validated: try rewrite(expression))
    }
}
