import Foundation

extension QueryPredicate {
    /// Whether `item` satisfies the predicate. `now()` and `$time.…` are the current time.
    /// A comparison that still has an unsubstituted `$VARIABLE` is false.
    public func evaluate(with item: some MetadataAttributeProvider) -> Bool {
        evaluate(with: item, now: Date())
    }

    /// Whether `item` satisfies the predicate, with `now()` and `$time.…` taken as `now`.
    public func evaluate(with item: some MetadataAttributeProvider, now: Date) -> Bool {
        PredicateEvaluator(item: item, now: now).evaluate(expression)
    }
}

/// The evaluator: the reference semantics that the SQL translation reproduces.
struct PredicateEvaluator<Item: MetadataAttributeProvider> {
    let item: Item
    let now: Date

    func evaluate(_ expression: PredicateExpression) -> Bool {
        switch expression {
        case .constant(let value): return value
        case .not(let inner): return !evaluate(inner)
        case .and(let parts): return parts.allSatisfy(evaluate)
        case .or(let parts): return parts.contains(where: evaluate)
        case .comparison(let c):
            if case .anyAttribute = c.left {
                return QueryPredicate.anyAttributeExpansion.contains { attribute in
                    var single = c
                    single.left = .attribute(attribute)
                    return evaluate(.comparison(single))
                }
            }
            guard let left = resolve(c.left), let right = resolve(c.right) else { return false }
            return PredicateKernel.compare(quantifier: c.quantifier, left, c.operator, c.options, right)
        }
    }

    /// The operand's value; `nil` when it is an unsubstituted variable.
    func resolve(_ operand: PredicateOperand) -> PredicateKernel.Operand? {
        switch operand {
        case .attribute(let attribute):
            let value = item.metadataValue(for: attribute)
            return .value(value == .null ? nil : value)
        case .anyAttribute: return nil
        case .value(let value): return .value(value == .null ? nil : value)
        case .aggregate(let elements):
            var values: [MetadataValue?] = []
            for element in elements {
                guard case .value(let v)? = resolve(element) else { return nil }
                values.append(v)
            }
            return .list(values)
        case .variable: return nil
        case .now, .today:
            return .value(PredicateKernel.date(of: operand, now: now).map(MetadataValue.date))
        }
    }
}

/// The comparison semantics shared by the evaluator and the SQL functions.
package enum PredicateKernel {
    /// A resolved operand: one value (nil when missing) or an aggregate.
    package enum Operand: Hashable, Sendable {
        /// One value.
        case value(MetadataValue?)
        /// An aggregate.
        case list([MetadataValue?])
    }

    /// The date of `now()`/`$time.…` at `now`.
    package static func date(of operand: PredicateOperand, now: Date) -> Date? {
        switch operand {
        case .now(let offset): now.addingTimeInterval(offset)
        case .today(let days): PredicateDates.today(offsetDays: days, now: now)
        default: nil
        }
    }

    /// `[quantifier] left op[options] right`.
    package static func compare(quantifier: PredicateComparison.Quantifier?, _ left: Operand,
                                _ op: PredicateOperator, _ options: PredicateStringMatch.Options,
                                _ right: Operand) -> Bool {
        guard case .value(let lhs) = left else { return false }
        if case .array(let elements)? = lhs {
            return compareArray(quantifier: quantifier, elements, op, options, right)
        }
        if quantifier != nil {
            // ANY/ALL/NONE on a missing array: no element satisfies anything.
            return quantifier == PredicateComparison.Quantifier.noElement
        }
        return compareScalar(lhs, op, options, right)
    }

    /// A comparison whose left side is an array (the content type tree).
    package static func compareArray(quantifier: PredicateComparison.Quantifier?, _ elements: [MetadataValue],
                                     _ op: PredicateOperator, _ options: PredicateStringMatch.Options,
                                     _ right: Operand) -> Bool {
        var op = op
        if quantifier == nil {
            if case .value(nil) = right, op == .equal || op == .notEqual { return op == .notEqual }
            if op == .contains { op = .equal }
        }
        let test = { (element: MetadataValue) in compareScalar(element, op, options, right) }
        switch quantifier {
        case nil, .anyElement?: return elements.contains(where: test)
        case .everyElement?: return elements.allSatisfy(test)
        case .noElement?: return !elements.contains(where: test)
        }
    }

    /// A comparison of one value.
    package static func compareScalar(_ lhs: MetadataValue?, _ op: PredicateOperator,
                                      _ options: PredicateStringMatch.Options, _ right: Operand) -> Bool {
        switch (op, right) {
        case (.in, .list(let values)):
            return values.contains { equal(lhs, $0, options) }
        case (.in, .value(let rhs)):
            // `x IN 'string'`: the string contains x.
            guard case .string(let needle)? = lhs, case .string(let haystack)? = rhs else { return false }
            return PredicateStringMatch.matches(.contains, options: options, value: haystack, pattern: needle)
        case (.between, .list(let bounds)):
            guard bounds.count == 2 else { return false }
            return order(lhs, bounds[0], options).map { $0 >= 0 } == true
                && order(lhs, bounds[1], options).map { $0 <= 0 } == true
        case (_, .list), (.between, _):
            return false
        case (.equal, .value(let rhs)): return equal(lhs, rhs, options)
        case (.notEqual, .value(let rhs)): return !equal(lhs, rhs, options)
        case (.less, .value(let rhs)): return order(lhs, rhs, options).map { $0 < 0 } ?? false
        case (.lessOrEqual, .value(let rhs)): return order(lhs, rhs, options).map { $0 <= 0 } ?? false
        case (.greater, .value(let rhs)): return order(lhs, rhs, options).map { $0 > 0 } ?? false
        case (.greaterOrEqual, .value(let rhs)): return order(lhs, rhs, options).map { $0 >= 0 } ?? false
        case (.beginsWith, .value(let rhs)), (.endsWith, .value(let rhs)), (.contains, .value(let rhs)),
             (.like, .value(let rhs)), (.matches, .value(let rhs)):
            guard case .string(let value)? = lhs, case .string(let pattern)? = rhs else { return false }
            return PredicateStringMatch.matches(op, options: options, value: value, pattern: pattern)
        }
    }

    /// Equality: nil equals only nil; numbers (and Booleans as 0/1) numerically; dates by time;
    /// strings scalar for scalar after folding.
    package static func equal(_ a: MetadataValue?, _ b: MetadataValue?, _ options: PredicateStringMatch.Options) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (nil, _), (_, nil): return false
        case let (.string(x)?, .string(y)?): return PredicateStringMatch.equal(x, y, options: options)
        case let (.date(x)?, .date(y)?): return x.timeIntervalSince1970 == y.timeIntervalSince1970
        case let (.array(x)?, .array(y)?):
            return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1, options) }
        default:
            guard let x = a.flatMap(numeric), let y = b.flatMap(numeric) else { return false }
            return compareNumbers(x, y) == 0
        }
    }

    /// Ordering: negative, zero or positive; `nil` when the values cannot be ordered (a missing
    /// value, different kinds).
    package static func order(_ a: MetadataValue?, _ b: MetadataValue?, _ options: PredicateStringMatch.Options) -> Int? {
        switch (a, b) {
        case (nil, _), (_, nil): return nil
        case let (.string(x)?, .string(y)?): return PredicateStringMatch.compare(x, y, options: options)
        case let (.date(x)?, .date(y)?):
            let p = x.timeIntervalSince1970, q = y.timeIntervalSince1970
            return p < q ? -1 : p > q ? 1 : 0
        default:
            guard let x = a.flatMap(numeric), let y = b.flatMap(numeric) else { return nil }
            return compareNumbers(x, y)
        }
    }

    /// A number as SQLite stores it: an integer or a double.
    package enum Number { case integer(Int64), double(Double) }

    package static func numeric(_ value: MetadataValue) -> Number? {
        switch value {
        case .integer(let i): .integer(i)
        case .double(let d): .double(d)
        case .bool(let b): .integer(b ? 1 : 0)
        default: nil
        }
    }

    /// Exact comparison across integers and doubles (as SQLite does).
    package static func compareNumbers(_ a: Number, _ b: Number) -> Int {
        switch (a, b) {
        case let (.integer(x), .integer(y)): return x < y ? -1 : x > y ? 1 : 0
        case let (.double(x), .double(y)): return x < y ? -1 : x > y ? 1 : 0
        case let (.integer(x), .double(y)): return -compareIntegerToDouble(y, x)
        case let (.double(x), .integer(y)): return compareIntegerToDouble(x, y)
        }
    }

    /// Compares double `d` with integer `i` exactly.
    private static func compareIntegerToDouble(_ d: Double, _ i: Int64) -> Int {
        if d.isNaN { return -1 }
        if d < -9.223372036854775808e18 { return -1 }
        if d >= 9.223372036854775808e18 { return 1 }
        let truncated = Int64(d.rounded(.towardZero))
        if truncated != i { return truncated < i ? -1 : 1 }
        let fraction = d - d.rounded(.towardZero)
        return fraction < 0 ? -1 : fraction > 0 ? 1 : 0
    }
}
