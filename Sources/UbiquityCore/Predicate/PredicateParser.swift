import Foundation

/// A recursive-descent parser for the predicate format-string language.
///
/// Precedence, loosest first: `OR` (`||`), `AND` (`&&`), `NOT` (`!`), comparisons. Nesting
/// (parentheses, `NOT`, aggregates) is capped at ``maxDepth`` so no input can exhaust the stack.
struct PredicateParser {
    /// The deepest nesting accepted.
    static let maxDepth = 256

    private let tokens: [PredicateToken]
    private var position = 0
    private let arguments: [any Sendable]
    private var argumentIndex = 0
    private var depth = 0

    private static let keywords: Set<String> = [
        "AND", "OR", "NOT", "ANY", "SOME", "ALL", "NONE", "IN", "BETWEEN", "BEGINSWITH", "ENDSWITH",
        "CONTAINS", "LIKE", "MATCHES", "TRUEPREDICATE", "FALSEPREDICATE", "YES", "NO", "TRUE", "FALSE",
        "NIL", "NULL", "CAST",
    ]

    init(format: String, arguments: [any Sendable]) throws(UbiquityError) {
        var lexer = PredicateLexer(format)
        tokens = try lexer.tokenize()
        self.arguments = arguments
    }

    // MARK: Helpers

    private var current: PredicateToken { tokens[min(position, tokens.count - 1)] }
    private var previous: PredicateToken? { position > 0 ? tokens[min(position - 1, tokens.count - 1)] : nil }

    private mutating func advance() { if position < tokens.count - 1 { position += 1 } }

    private func error(_ column: Int, _ message: String) -> UbiquityError {
        UbiquityError(.invalidArgument, "predicate: column \(column): \(message)")
    }

    /// The keyword spelled by the current token (upper-cased), if it is one.
    private func keyword(_ token: PredicateToken) -> String? {
        guard case .identifier(let name) = token.kind else { return nil }
        let upper = name.uppercased()
        return Self.keywords.contains(upper) ? upper : nil
    }

    private func isSymbol(_ token: PredicateToken, _ symbol: String) -> Bool {
        token.kind == .symbol(symbol)
    }

    private mutating func expectSymbol(_ symbol: String, _ what: String) throws(UbiquityError) {
        guard isSymbol(current, symbol) else {
            throw error(current.column, "expected \(what), found \(current.described)")
        }
        advance()
    }

    private mutating func enter(_ token: PredicateToken) throws(UbiquityError) {
        depth += 1
        if depth > Self.maxDepth {
            throw error(token.column, "nesting deeper than \(Self.maxDepth) levels")
        }
    }

    // MARK: Grammar

    mutating func parse() throws(UbiquityError) -> PredicateExpression {
        if current.kind == .end { throw error(current.column, "expected a predicate, found end of input") }
        let expression = try parseOr()
        guard current.kind == .end else {
            if isSymbol(current, ")") { throw error(current.column, "unexpected ')' without a matching '('") }
            throw error(current.column, "expected AND, OR or end of input, found \(current.described)")
        }
        if argumentIndex < arguments.count {
            throw error(current.column, "\(arguments.count) arguments given, but the format uses only \(argumentIndex)")
        }
        return expression
    }

    private mutating func parseOr() throws(UbiquityError) -> PredicateExpression {
        var parts = [try parseAnd()]
        while keyword(current) == "OR" || isSymbol(current, "||") {
            advance()
            parts.append(try parseAnd())
        }
        return Self.combine(parts, or: true)
    }

    private mutating func parseAnd() throws(UbiquityError) -> PredicateExpression {
        var parts = [try parseNot()]
        while keyword(current) == "AND" || isSymbol(current, "&&") {
            advance()
            parts.append(try parseNot())
        }
        return Self.combine(parts, or: false)
    }

    /// Builds a flattened n-ary `AND`/`OR`.
    static func combine(_ parts: [PredicateExpression], or: Bool) -> PredicateExpression {
        if parts.count == 1 { return parts[0] }
        var flat: [PredicateExpression] = []
        for part in parts {
            switch (part, or) {
            case (.or(let inner), true), (.and(let inner), false): flat.append(contentsOf: inner)
            default: flat.append(part)
            }
        }
        return or ? .or(flat) : .and(flat)
    }

    private mutating func parseNot() throws(UbiquityError) -> PredicateExpression {
        let token = current
        if keyword(token) == "NOT" || isSymbol(token, "!") {
            try enter(token)
            advance()
            let inner = try parseNot()
            depth -= 1
            return .not(inner)
        }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws(UbiquityError) -> PredicateExpression {
        let token = current
        if isSymbol(token, "(") {
            try enter(token)
            advance()
            if current.kind == .end || isSymbol(current, ")") {
                throw error(current.column, "expected a predicate after '(', found \(current.described)")
            }
            let inner = try parseOr()
            guard isSymbol(current, ")") else {
                throw error(current.column, "expected ')' to close the '(' at column \(token.column), found \(current.described)")
            }
            advance()
            depth -= 1
            return inner
        }
        switch keyword(token) {
        case "TRUEPREDICATE": advance(); return .constant(true)
        case "FALSEPREDICATE": advance(); return .constant(false)
        default: return try parseComparison()
        }
    }

    private mutating func parseComparison() throws(UbiquityError) -> PredicateExpression {
        var quantifier: PredicateComparison.Quantifier?
        let quantifierToken = current
        switch keyword(current) {
        case "ANY", "SOME": quantifier = .anyElement; advance()
        case "ALL": quantifier = .everyElement; advance()
        case "NONE": quantifier = .noElement; advance()
        default: break
        }
        let leftToken = current
        if leftToken.kind == .end {
            let after = quantifier != nil ? "after \(quantifierToken.text.uppercased())" : "at the start of a comparison"
            throw error(leftToken.column, "expected an attribute or a value \(after), found end of input")
        }
        let left = try parseOperand(context: quantifier != nil ? "after \(quantifierToken.text.uppercased())" : "at the start of a comparison")
        let operatorToken = current
        guard let op = parseOperator() else {
            let after = previous.map { " after \($0.described)" } ?? ""
            throw error(operatorToken.column, "expected an operator such as '==', '<', CONTAINS, LIKE or IN\(after), found \(operatorToken.described)")
        }
        var options: PredicateStringMatch.Options = []
        if isSymbol(current, "[") {
            let open = current
            advance()
            guard case .identifier(let letters) = current.kind, let parsed = PredicateStringMatch.Options(letters: letters) else {
                throw error(current.column, "expected the modifier c, d or cd after '[', found \(current.described)")
            }
            options = parsed
            advance()
            guard isSymbol(current, "]") else {
                throw error(current.column, "expected ']' to close the modifier at column \(open.column), found \(current.described)")
            }
            advance()
        }
        let rightToken = current
        let opText = operatorToken.text.count <= 2 ? operatorToken.text : operatorToken.text.uppercased()
        if rightToken.kind == .end {
            throw error(rightToken.column, "expected a value after '\(opText)', found end of input")
        }
        let right = try parseOperand(context: "after '\(opText)'")
        let comparison = PredicateTypeChecker.normalize(
            PredicateComparison(quantifier: quantifier, left: left, operator: op, options: options, right: right))
        do {
            try PredicateTypeChecker.check(comparison)
        } catch {
            let column: Int
            switch error.part {
            case .left: column = quantifier != nil ? quantifierToken.column : leftToken.column
            case .operator: column = operatorToken.column
            case .right: column = rightToken.column
            }
            throw self.error(column, error.message)
        }
        return .comparison(comparison)
    }

    private mutating func parseOperator() -> PredicateOperator? {
        let token = current
        var op: PredicateOperator?
        switch token.kind {
        case .symbol(let s):
            op = [
                "==": .equal, "!=": .notEqual, "<": .less, "<=": .lessOrEqual, ">": .greater, ">=": .greaterOrEqual,
            ][s]
        case .identifier:
            switch keyword(token) {
            case "BEGINSWITH": op = .beginsWith
            case "ENDSWITH": op = .endsWith
            case "CONTAINS": op = .contains
            case "LIKE": op = .like
            case "MATCHES": op = .matches
            case "IN": op = .in
            case "BETWEEN": op = .between
            default: op = nil
            }
        default: op = nil
        }
        if op != nil { advance() }
        return op
    }

    // MARK: Operands

    private mutating func parseOperand(context: String) throws(UbiquityError) -> PredicateOperand {
        let token = current
        func unexpected() -> UbiquityError {
            error(token.column, "expected an attribute or a value \(context), found \(token.described)")
        }
        switch token.kind {
        case .end, .timeArgument, .function:
            throw unexpected()
        case .string(let s):
            advance()
            return .value(.string(s))
        case .integer(let i):
            advance()
            return .value(.integer(i))
        case .double(let d):
            advance()
            return .value(.double(d))
        case .variable(let name):
            advance()
            if name.lowercased().hasPrefix("time.") { return try timeFunction(name, token: token) }
            if name.contains(".") { throw error(token.column, "'$\(name)' is not a variable name") }
            return .variable(name)
        case .format(let letters):
            advance()
            return try formatArgument(letters, token: token)
        case .escapedIdentifier(let name):
            advance()
            return try attribute(named: name, token: token)
        case .symbol("{"):
            try enter(token)
            advance()
            var elements: [PredicateOperand] = []
            if !isSymbol(current, "}") {
                while true {
                    if current.kind == .end { throw error(current.column, "expected a value or '}' in the aggregate at column \(token.column), found end of input") }
                    elements.append(try parseOperand(context: "in the aggregate at column \(token.column)"))
                    if isSymbol(current, ",") { advance(); continue }
                    guard isSymbol(current, "}") else {
                        throw error(current.column, "expected ',' or '}' in the aggregate at column \(token.column), found \(current.described)")
                    }
                    break
                }
            }
            advance()
            depth -= 1
            return .aggregate(elements)
        case .symbol("*"):
            advance()
            return .anyAttribute
        case .symbol:
            throw unexpected()
        case .identifier(let name):
            switch keyword(token) {
            case "YES", "TRUE": advance(); return .value(.bool(true))
            case "NO", "FALSE": advance(); return .value(.bool(false))
            case "NIL", "NULL": advance(); return .value(.null)
            case "CAST": advance(); return try cast(token)
            case .some: throw unexpected()
            case nil: break
            }
            advance()
            if name.lowercased() == "now", isSymbol(current, "(") {
                advance()
                try expectSymbol(")", "')' after 'now('")
                return .now(offset: 0)
            }
            return try attribute(named: name, token: token)
        }
    }

    private func attribute(named name: String, token: PredicateToken) throws(UbiquityError) -> PredicateOperand {
        guard let attribute = MetadataAttribute(name: name) else {
            throw error(token.column, "unknown attribute '\(name)'")
        }
        return .attribute(attribute)
    }

    /// `CAST(<number of seconds since 2001-01-01> | '<ISO 8601>', 'NSDate')`.
    private mutating func cast(_ castToken: PredicateToken) throws(UbiquityError) -> PredicateOperand {
        try expectSymbol("(", "'(' after CAST")
        let valueToken = current
        let date: Date
        switch valueToken.kind {
        case .integer(let i): date = Date(timeIntervalSinceReferenceDate: Double(i))
        case .double(let d) where d.isFinite: date = Date(timeIntervalSinceReferenceDate: d)
        case .string(let s):
            if let seconds = Double(s), seconds.isFinite {
                date = Date(timeIntervalSinceReferenceDate: seconds)
            } else if let parsed = PredicateDates.parseISO8601(s) {
                date = parsed
            } else {
                throw error(valueToken.column, "bad date \(QueryPredicate.quoted(s)); expected ISO 8601 such as '2024-05-01T12:00:00Z' or seconds since 2001-01-01")
            }
        case .format(let letters):
            let operand = try formatArgument(letters, token: valueToken)
            switch operand {
            case .value(.integer(let i)): date = Date(timeIntervalSinceReferenceDate: Double(i))
            case .value(.double(let d)) where d.isFinite: date = Date(timeIntervalSinceReferenceDate: d)
            case .value(.date(let d)): date = d
            case .value(.string(let s)):
                guard let parsed = PredicateDates.parseISO8601(s) else {
                    throw error(valueToken.column, "bad date \(QueryPredicate.quoted(s)); expected ISO 8601 such as '2024-05-01T12:00:00Z'")
                }
                date = parsed
            default:
                throw error(valueToken.column, "CAST needs a number, a date or an ISO 8601 string")
            }
        default:
            throw error(valueToken.column, "expected a number or an ISO 8601 string after 'CAST(', found \(valueToken.described)")
        }
        advance()
        try expectSymbol(",", "',' after the value of CAST")
        guard case .string(let type) = current.kind, type.caseInsensitiveCompare("NSDate") == .orderedSame else {
            throw error(current.column, "expected 'NSDate' (the only supported CAST type), found \(current.described)")
        }
        advance()
        try expectSymbol(")", "')' to close the CAST at column \(castToken.column)")
        return .value(.date(date))
    }

    /// `$time.now`, `$time.now(±seconds)`, `$time.today`, `$time.today(±days)`, `$time.iso(date)`.
    private mutating func timeFunction(_ name: String, token: PredicateToken) throws(UbiquityError) -> PredicateOperand {
        let function = String(name.dropFirst("time.".count)).lowercased()
        func offset() throws(UbiquityError) -> Double? {
            guard isSymbol(current, "(") else { return nil }
            advance()
            let valueToken = current
            let value: Double
            switch valueToken.kind {
            case .integer(let i): value = Double(i)
            case .double(let d): value = d
            default: throw error(valueToken.column, "expected a number in '$time.\(function)(…)', found \(valueToken.described)")
            }
            guard value.isFinite, abs(value) <= 1e12 else {
                throw error(valueToken.column, "the offset in '$time.\(function)(…)' is out of range")
            }
            advance()
            try expectSymbol(")", "')' after the offset")
            return value
        }
        switch function {
        case "now":
            return .now(offset: try offset() ?? 0)
        case "today":
            let days = try offset() ?? 0
            guard days == days.rounded(), abs(days) <= 1_000_000 else {
                throw error(token.column, "'$time.today(…)' needs a whole number of days within ±1000000")
            }
            return .today(offsetDays: Int(days))
        case "iso":
            guard case .timeArgument(let text) = current.kind else {
                throw error(current.column, "expected '(' and an ISO 8601 date after '$time.iso'")
            }
            advance()
            guard let date = PredicateDates.parseISO8601(text) else {
                throw error(token.column, "bad date \(QueryPredicate.quoted(text)) in '$time.iso(…)'; expected ISO 8601 such as 2024-05-01T12:00:00Z")
            }
            return .value(.date(date))
        default:
            throw error(token.column, "unsupported '$\(name)'; expected $time.now, $time.today or $time.iso(…)")
        }
    }

    // MARK: Arguments

    private mutating func nextArgument(_ token: PredicateToken) throws(UbiquityError) -> any Sendable {
        guard argumentIndex < arguments.count else {
            throw error(token.column, "'\(token.text)' needs argument \(argumentIndex + 1), but \(arguments.count == 1 ? "only 1 was" : "\(arguments.count) were") given")
        }
        defer { argumentIndex += 1 }
        return arguments[argumentIndex]
    }

    private mutating func formatArgument(_ letters: String, token: PredicateToken) throws(UbiquityError) -> PredicateOperand {
        let argument = try nextArgument(token)
        let number = argumentIndex
        do {
            switch letters {
            case "K":
                return .attribute(try PredicateArguments.attribute(from: argument))
            case "@":
                return try PredicateArguments.operand(from: argument)
            case "f", "lf":
                return .value(try PredicateArguments.double(from: argument))
            default:
                return .value(try PredicateArguments.integer(from: argument))
            }
        } catch {
            throw self.error(token.column, "argument \(number) for '\(token.text)': \(error.message)")
        }
    }
}
