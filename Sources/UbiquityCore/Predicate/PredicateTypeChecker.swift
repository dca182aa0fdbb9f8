/// Normalises comparisons (`VALUE op KEY` → `KEY op' VALUE`, `IN` with a string or an array
/// attribute) and checks that their operand types fit the operator.
enum PredicateTypeChecker {
    /// Which part of a comparison a problem is about (for the column in the error message).
    enum Part { case left, `operator`, right }

    /// A type problem.
    struct Issue: Error {
        var part: Part
        var message: String
    }

    /// The static kind of an operand.
    indirect enum Kind: Equatable {
        case string, number, date, bool, stringArray, null, unknown
        case aggregate([Kind])

        var noun: String {
            switch self {
            case .string: "a string"
            case .number: "a number"
            case .date: "a date"
            case .bool: "a Boolean"
            case .stringArray: "an array of strings"
            case .null: "nil"
            case .unknown: "a variable"
            case .aggregate: "an aggregate"
            }
        }
    }

    static func kind(of operand: PredicateOperand) -> Kind {
        switch operand {
        case .attribute(let attribute):
            switch attribute.valueKind {
            case .string: .string
            case .number: .number
            case .date: .date
            case .bool: .bool
            case .stringArray: .stringArray
            }
        case .anyAttribute: .string
        case .value(let value): kind(of: value)
        case .aggregate(let elements): .aggregate(elements.map(kind(of:)))
        case .variable: .unknown
        case .now, .today: .date
        }
    }

    static func kind(of value: MetadataValue) -> Kind {
        switch value {
        case .null: .null
        case .string: .string
        case .integer, .double: .number
        case .bool: .bool
        case .date: .date
        case .array(let elements): .aggregate(elements.map(kind(of:)))
        }
    }

    static func isKey(_ operand: PredicateOperand) -> Bool {
        switch operand {
        case .attribute, .anyAttribute: true
        default: false
        }
    }

    /// Puts the key on the left where the operator allows it, and rewrites `IN` whose right side
    /// is a string (`'x' IN kMDItemFSName`: substring) or an array attribute (membership).
    static func normalize(_ comparison: PredicateComparison) -> PredicateComparison {
        var c = comparison
        if c.quantifier == nil, !isKey(c.left), isKey(c.right) {
            if c.operator == .in {
                // `v IN key`: the key's value contains v (substring, or element of the tree).
                c = PredicateComparison(left: c.right, operator: .contains, options: c.options, right: c.left)
            } else if let flipped = c.operator.flipped {
                c = PredicateComparison(left: c.right, operator: flipped, options: c.options, right: c.left)
            }
        }
        if c.quantifier == nil, c.operator == .in, case .value(.string) = c.right {
            // `key IN 'abc'`: 'abc' contains the key's value.
            c = PredicateComparison(left: c.right, operator: .contains, options: c.options, right: c.left)
        }
        return c
    }

    private static func describe(_ operand: PredicateOperand) -> String {
        if case .attribute(let attribute) = operand { return "\(attribute.rawValue) (\(kind(of: operand).noun))" }
        if case .anyAttribute = operand { return "'*' (any string attribute)" }
        return kind(of: operand).noun
    }

    private static func comparableForEquality(_ a: Kind, _ b: Kind) -> Bool {
        if a == b || a == .unknown || b == .unknown || a == .null || b == .null { return true }
        let numeric: Set<String> = ["n", "b"]
        func tag(_ k: Kind) -> String { k == .number ? "n" : k == .bool ? "b" : "x" }
        return numeric.contains(tag(a)) && numeric.contains(tag(b))
    }

    private static func orderable(_ k: Kind) -> Bool {
        k == .number || k == .date || k == .string || k == .unknown || k == .null
    }

    /// Checks one (normalised) comparison.
    static func check(_ c: PredicateComparison) throws(Issue) {
        let op = c.operator
        let opName = "'\(op.rawValue)'"
        if case .aggregate = c.left {
            throw Issue(part: .left, message: "an aggregate can only be the right side of IN or BETWEEN")
        }
        if case .anyAttribute = c.right {
            throw Issue(part: .right, message: "'*' can only be the left side of a comparison")
        }
        if case .attribute(let attribute) = c.right, attribute.valueKind == .stringArray {
            throw Issue(part: .right, message: "the array attribute \(attribute.rawValue) must be on the left side")
        }
        if case .anyAttribute = c.left {
            guard c.quantifier == nil, op == .equal || op == .notEqual || op.isStringOperator else {
                throw Issue(part: .operator, message: "'*' can only be used with ==, !=, BEGINSWITH, ENDSWITH, CONTAINS, LIKE or MATCHES")
            }
        }
        var left = kind(of: c.left)
        let right = kind(of: c.right)
        var effective = op
        if let quantifier = c.quantifier {
            guard left == .stringArray else {
                throw Issue(part: .left, message: "\(quantifier.rawValue) needs an array attribute such as kMDItemContentTypeTree, found \(describe(c.left))")
            }
        }
        if left == .stringArray {
            if c.quantifier == nil, op == .equal || op == .notEqual, right == .null { return }
            if c.quantifier == nil, op == .contains { effective = .equal }
            left = .string
        }
        let stringy = left == .string || right == .string || left == .unknown || right == .unknown
        if !c.options.isEmpty, !stringy, effective != .in, effective != .between {
            throw Issue(part: .operator, message: "the [\(c.options)] modifier applies only to strings, but \(describe(c.left)) is compared")
        }
        switch effective {
        case .equal, .notEqual:
            if case .aggregate = right {
                throw Issue(part: .right, message: "\(opName) cannot compare with an aggregate; use IN")
            }
            guard comparableForEquality(left, right) else {
                throw Issue(part: .operator, message: "cannot compare \(describe(c.left)) with \(describe(c.right))")
            }
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            if case .aggregate = right {
                throw Issue(part: .right, message: "\(opName) cannot compare with an aggregate")
            }
            guard orderable(left) else {
                throw Issue(part: .operator, message: "\(opName) needs numbers, dates or strings, but \(describe(c.left)) is compared")
            }
            guard orderable(right) else {
                throw Issue(part: .operator, message: "\(opName) needs numbers, dates or strings, but \(describe(c.right)) is compared")
            }
            guard comparableForEquality(left, right) else {
                throw Issue(part: .operator, message: "cannot compare \(describe(c.left)) with \(describe(c.right))")
            }
        case .beginsWith, .endsWith, .contains, .like, .matches:
            for (operand, k, part) in [(c.left, left, Part.left), (c.right, right, Part.right)] {
                guard k == .string || k == .unknown || k == .null else {
                    if case .aggregate = k { throw Issue(part: part, message: "\(op.rawValue) needs strings, found an aggregate") }
                    throw Issue(part: .operator, message: "\(op.rawValue) is a string operator, but \(describe(operand)) is compared")
                }
            }
            if op == .matches, case .value(.string(let pattern)) = c.right {
                do {
                    _ = try PredicateStringMatch.compileRegex(pattern, options: c.options)
                } catch {
                    throw Issue(part: .right, message: "invalid regular expression \(QueryPredicate.quoted(pattern)): \(error)")
                }
            }
        case .in:
            switch right {
            case .aggregate(let elements):
                for element in elements {
                    if case .aggregate = element { throw Issue(part: .right, message: "IN cannot compare with a nested aggregate") }
                    guard comparableForEquality(left, element) else {
                        throw Issue(part: .right, message: "IN: cannot compare \(describe(c.left)) with \(element.noun)")
                    }
                }
            case .unknown:
                break
            case .string where left == .string || left == .unknown || left == .null:
                break  // `a IN b`: b contains a
            default:
                throw Issue(part: .right, message: "IN needs an aggregate such as {'a', 'b'} or a string, found \(right.noun)")
            }
        case .between:
            guard orderable(left) else {
                throw Issue(part: .operator, message: "BETWEEN needs numbers, dates or strings, but \(describe(c.left)) is compared")
            }
            switch right {
            case .aggregate(let elements):
                guard elements.count == 2 else {
                    throw Issue(part: .right, message: "BETWEEN needs an aggregate of two values, such as {1, 10}; found \(elements.count)")
                }
                for element in elements {
                    guard orderable(element), comparableForEquality(left, element) else {
                        throw Issue(part: .right, message: "BETWEEN: cannot compare \(describe(c.left)) with \(element.noun)")
                    }
                }
            case .unknown:
                break
            default:
                throw Issue(part: .right, message: "BETWEEN needs an aggregate of two values, such as {1, 10}; found \(right.noun)")
            }
        }
    }
}
