import Foundation

/// Prints a predicate tree as a canonical format string that parses back to the same tree.
enum PredicateFormatter {
    static func format(_ expression: PredicateExpression) -> String {
        switch expression {
        case .constant(let value): return value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .not(let inner): return "NOT " + operandOfNot(inner)
        case .and(let parts): return parts.map { part in
                if case .or = part { return "(\(format(part)))" }
                if case .and = part { return "(\(format(part)))" }
                return format(part)
            }.joined(separator: " AND ")
        case .or(let parts): return parts.map { part in
                if case .or = part { return "(\(format(part)))" }
                return format(part)
            }.joined(separator: " OR ")
        case .comparison(let c): return format(c)
        }
    }

    private static func operandOfNot(_ expression: PredicateExpression) -> String {
        switch expression {
        case .and, .or: "(\(format(expression)))"
        default: format(expression)
        }
    }

    static func format(_ c: PredicateComparison) -> String {
        var text = ""
        if let quantifier = c.quantifier { text += quantifier.rawValue + " " }
        text += format(c.left) + " " + c.operator.rawValue
        if !c.options.isEmpty { text += "[\(c.options)]" }
        return text + " " + format(c.right)
    }

    static func format(_ operand: PredicateOperand) -> String {
        switch operand {
        case .attribute(let attribute): return attribute.rawValue
        case .anyAttribute: return "*"
        case .value(let value): return format(value)
        case .aggregate(let elements): return "{" + elements.map(format).joined(separator: ", ") + "}"
        case .variable(let name): return "$" + name
        case .now(let offset): return offset == 0 ? "now()" : "$time.now(\(number(offset)))"
        case .today(let days): return days == 0 ? "$time.today" : "$time.today(\(days))"
        }
    }

    static func format(_ value: MetadataValue) -> String {
        switch value {
        case .null: return "nil"
        case .string(let s): return QueryPredicate.quoted(s)
        case .integer(let i): return String(i)
        case .double(let d): return number(d)
        case .bool(let b): return b ? "YES" : "NO"
        case .date(let date): return "CAST(\(number(date.timeIntervalSinceReferenceDate, forceDouble: false)), \"NSDate\")"
        case .array(let elements): return "{" + elements.map(format).joined(separator: ", ") + "}"
        }
    }

    /// A double that lexes back to the same double (never as an integer literal).
    static func number(_ d: Double, forceDouble: Bool = true) -> String {
        if d.isInfinite { return d < 0 ? "-1e999" : "1e999" }
        var text = "\(d)"
        if forceDouble, !text.contains("."), !text.contains("e") { text += ".0" }
        return text
    }
}
