// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

/// Parses the NSPredicate format strings `CKQuery` accepts and translates them to CloudKit
/// Web Services filters (`filterBy`). Every error is `invalidArguments` with a message
/// `predicate: column N: …` naming the 1-based column (in Unicode scalars).
///
/// The supported forms (a key is a field name, a system key such as `creationDate`, or `%K`):
///
/// | predicate | filter |
/// |---|---|
/// | `key == v`, `!=`, `<`, `<=`, `>`, `>=` (either side) | `EQUALS`, `NOT_EQUALS`, `LESS_THAN`, … |
/// | `key BEGINSWITH 'p'`, `NOT (key BEGINSWITH 'p')` | `BEGINS_WITH`, `NOT_BEGINS_WITH` |
/// | `key IN {…}` / `%@` list, `NOT (key IN …)` | `IN`, `NOT_IN` |
/// | `list CONTAINS v`, `v IN list`, `ANY list == v`; `NOT …`, `NONE list == v` | `LIST_CONTAINS`, `NOT_LIST_CONTAINS` |
/// | `ANY list IN {…}`, `NOT (ANY list IN {…})` | `LIST_CONTAINS_ANY`, `NOT_LIST_CONTAINS_ANY` |
/// | `ANY list BEGINSWITH 'p'`, `NOT (…)` | `LIST_MEMBER_BEGINS_WITH`, `NOT_LIST_MEMBER_BEGINS_WITH` |
/// | `self CONTAINS 'text'`, `allTokens TOKENMATCHES[cdl] 'a b'`, `key TOKENMATCHES …` | `CONTAINS_ALL_TOKENS` |
/// | `distanceToLocation:fromLocation:(key, %@) < km` | `NEAR` with `distance` in metres |
/// | `key BETWEEN {a, b}` | `GREATER_THAN_OR_EQUALS` a and `LESS_THAN_OR_EQUALS` b |
/// | `p AND q`, `TRUEPREDICATE` | the filters of both; none |
///
/// `OR`, `ENDSWITH`, `LIKE`, `MATCHES`, `ALL`, `nil`, `FALSEPREDICATE` and key-to-key
/// comparisons are errors: CloudKit has no filter for them.
struct CloudKitPredicateParser {
    private let tokens: [PredicateToken]
    private var position = 0
    private let arguments: [any Sendable]
    private var argumentIndex = 0
    private var depth = 0

    private static let keywords: Set<String> = [
        "AND", "OR", "NOT", "ANY", "SOME", "ALL", "NONE", "IN", "BETWEEN", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE",
        "MATCHES", "TOKENMATCHES", "TRUEPREDICATE", "FALSEPREDICATE", "YES", "NO", "TRUE", "FALSE", "NIL", "NULL",
    ]

    /// Tokenises `format` and keeps `arguments` for `%@`, `%K`, `%d` and `%f`.
    init(format: String, arguments: [any Sendable]) throws {
        var lexer = PredicateLexer(format)
        do {
            tokens = try lexer.tokenize()
        } catch {
            throw CloudKitError(.invalidArguments, error.message)
        }
        self.arguments = arguments
    }

    /// The filters (ANDed) of the whole predicate.
    mutating func parse() throws -> [WireFilter] {
        if current.kind == .end { throw error(current.column, "expected a predicate, found end of input (use TRUEPREDICATE to match every record)") }
        let expression = try parseAnd()
        guard current.kind == .end else {
            if isSymbol(current, ")") { throw error(current.column, "unexpected ')' without a matching '('") }
            throw error(current.column, "expected AND or end of input, found \(current.described)")
        }
        if argumentIndex < arguments.count {
            throw error(current.column, "\(arguments.count) arguments given, but the format uses only \(argumentIndex)")
        }
        return try Self.translate(expression)
    }

    // MARK: Syntax tree

    indirect enum Expression {
        case constant(Bool, column: Int)
        case not(Expression, column: Int)
        case and([Expression])
        case comparison(Comparison)
    }

    enum Quantifier: String { case any = "ANY", all = "ALL", noElement = "NONE" }

    enum Operator: String {
        case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
        case beginsWith = "BEGINSWITH", endsWith = "ENDSWITH", contains = "CONTAINS", like = "LIKE", matches = "MATCHES"
        case `in` = "IN", between = "BETWEEN", tokenMatches = "TOKENMATCHES"

        var flipped: Operator? {
            switch self {
            case .equal, .notEqual: return self
            case .less: return .greater
            case .lessOrEqual: return .greaterOrEqual
            case .greater: return .less
            case .greaterOrEqual: return .lessOrEqual
            default: return nil
            }
        }
    }

    enum Operand {
        case key(String, column: Int)
        case value(RecordValue, column: Int)
        case null(column: Int)
        case distance(key: String, location: Location, column: Int)

        var column: Int {
            switch self {
            case .key(_, let column), .value(_, let column), .null(let column), .distance(_, _, let column): return column
            }
        }
    }

    struct Comparison {
        var quantifier: Quantifier?
        var quantifierColumn: Int
        var left: Operand
        var op: Operator
        var opColumn: Int
        var options: String
        var right: Operand
    }

    // MARK: Parsing

    private var current: PredicateToken { tokens[min(position, tokens.count - 1)] }
    private mutating func advance() { if position < tokens.count - 1 { position += 1 } }

    private func error(_ column: Int, _ message: String) -> CloudKitError { Self.error(column, message) }
    private static func error(_ column: Int, _ message: String) -> CloudKitError {
        CloudKitError(.invalidArguments, "predicate: column \(column): \(message)")
    }

    private func keyword(_ token: PredicateToken) -> String? {
        guard case .identifier(let name) = token.kind else { return nil }
        let upper = name.uppercased()
        return Self.keywords.contains(upper) ? upper : nil
    }

    private func isSymbol(_ token: PredicateToken, _ symbol: String) -> Bool { token.kind == .symbol(symbol) }

    private mutating func expectSymbol(_ symbol: String, _ what: String) throws {
        guard isSymbol(current, symbol) else { throw error(current.column, "expected \(what), found \(current.described)") }
        advance()
    }

    private mutating func enter() throws {
        depth += 1
        if depth > 64 { throw error(current.column, "nesting deeper than 64 levels") }
    }

    private func orError(_ token: PredicateToken) -> CloudKitError {
        error(token.column, "CloudKit queries cannot OR conditions (found \(token.described)); run one query per alternative, or use IN {…} for several values of one field")
    }

    private mutating func parseAnd() throws -> Expression {
        var parts = [try parseNot()]
        while true {
            if keyword(current) == "AND" || isSymbol(current, "&&") {
                advance()
                parts.append(try parseNot())
            } else if keyword(current) == "OR" || isSymbol(current, "||") {
                throw orError(current)
            } else {
                break
            }
        }
        if parts.count == 1 { return parts[0] }
        return .and(parts.flatMap { part -> [Expression] in
            if case .and(let inner) = part { return inner }
            return [part]
        })
    }

    private mutating func parseNot() throws -> Expression {
        let token = current
        if keyword(token) == "NOT" || isSymbol(token, "!") {
            try enter()
            advance()
            let inner = try parseNot()
            depth -= 1
            return .not(inner, column: token.column)
        }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws -> Expression {
        let token = current
        if isSymbol(token, "(") {
            try enter()
            advance()
            if current.kind == .end || isSymbol(current, ")") {
                throw error(current.column, "expected a predicate after '(', found \(current.described)")
            }
            let inner = try parseAnd()
            guard isSymbol(current, ")") else {
                throw error(current.column, "expected ')' to close the '(' at column \(token.column), found \(current.described)")
            }
            advance()
            depth -= 1
            return inner
        }
        switch keyword(token) {
        case "TRUEPREDICATE": advance(); return .constant(true, column: token.column)
        case "FALSEPREDICATE": advance(); return .constant(false, column: token.column)
        default: return try parseComparison()
        }
    }

    private mutating func parseComparison() throws -> Expression {
        var quantifier: Quantifier?
        let quantifierToken = current
        switch keyword(current) {
        case "ANY", "SOME": quantifier = .any; advance()
        case "ALL": quantifier = .all; advance()
        case "NONE": quantifier = .noElement; advance()
        default: break
        }
        let context = quantifier.map { "after \($0.rawValue)" } ?? "at the start of a comparison"
        let left = try parseOperand(context: context)
        let opToken = current
        guard let op = parseOperator() else {
            if case .identifier(let name) = opToken.kind, keyword(opToken) == nil {
                throw error(opToken.column, "unknown operator '\(name)'; CloudKit queries support ==, !=, <, <=, >, >=, BEGINSWITH, IN, CONTAINS, TOKENMATCHES and BETWEEN")
            }
            throw error(opToken.column, "expected an operator such as '==', '<', BEGINSWITH, IN or CONTAINS after \(tokens[max(position - 1, 0)].described), found \(opToken.described)")
        }
        var options = ""
        if isSymbol(current, "[") {
            let open = current
            advance()
            guard case .identifier(let letters) = current.kind, !letters.isEmpty, letters.lowercased().allSatisfy({ "cdln".contains($0) }) else {
                throw error(current.column, "expected the modifier c, d, l or a combination such as cdl after '[', found \(current.described)")
            }
            options = letters.lowercased()
            advance()
            guard isSymbol(current, "]") else {
                throw error(current.column, "expected ']' to close the modifier at column \(open.column), found \(current.described)")
            }
            advance()
        }
        let opText = opToken.text.count <= 2 ? opToken.text : opToken.text.uppercased()
        let right = try parseOperand(context: "after '\(opText)'")
        return .comparison(Comparison(quantifier: quantifier, quantifierColumn: quantifierToken.column, left: left, op: op,
                                      opColumn: opToken.column, options: options, right: right))
    }

    private mutating func parseOperator() -> Operator? {
        let token = current
        var op: Operator?
        switch token.kind {
        case .symbol(let s): op = Operator(rawValue: s)
        case .identifier: op = keyword(token).flatMap { Operator(rawValue: $0) }
        default: op = nil
        }
        if op != nil { advance() }
        return op
    }

    private mutating func parseOperand(context: String) throws -> Operand {
        let token = current
        func unexpected() -> CloudKitError {
            error(token.column, "expected a field name or a value \(context), found \(token.described)")
        }
        switch token.kind {
        case .end, .timeArgument:
            throw unexpected()
        case .variable:
            throw error(token.column, "substitution variables ($NAME) are not supported in CloudKit queries; pass the value as an argument (%@)")
        case .string(let s):
            advance()
            return .value(.string(s), column: token.column)
        case .integer(let i):
            advance()
            return .value(.int64(i), column: token.column)
        case .double(let d):
            advance()
            return .value(.double(d), column: token.column)
        case .format(let letters):
            advance()
            return try formatArgument(letters, token: token)
        case .escapedIdentifier(let name):
            advance()
            return .key(name, column: token.column)
        case .function(let name):
            advance()
            return try function(name, token: token)
        case .symbol("{"):
            try enter()
            advance()
            var elements: [RecordValue] = []
            if !isSymbol(current, "}") {
                while true {
                    let elementToken = current
                    switch try parseOperand(context: "in the list at column \(token.column)") {
                    case .value(let value, _):
                        if case .list = value { throw error(elementToken.column, "lists cannot contain lists") }
                        elements.append(value)
                    default:
                        throw error(elementToken.column, "a list {…} holds values, not field names or nil")
                    }
                    if isSymbol(current, ",") { advance(); continue }
                    guard isSymbol(current, "}") else {
                        throw error(current.column, "expected ',' or '}' in the list at column \(token.column), found \(current.described)")
                    }
                    break
                }
            }
            advance()
            depth -= 1
            return .value(.list(elements), column: token.column)
        case .symbol:
            throw unexpected()
        case .identifier(let name):
            switch keyword(token) {
            case "YES", "TRUE": advance(); return .value(.int64(1), column: token.column)
            case "NO", "FALSE": advance(); return .value(.int64(0), column: token.column)
            case "NIL", "NULL": advance(); return .null(column: token.column)
            case .some: throw unexpected()
            case nil: break
            }
            advance()
            return .key(name, column: token.column)
        }
    }

    /// `distanceToLocation:fromLocation:(key, %@)`.
    private mutating func function(_ name: String, token: PredicateToken) throws -> Operand {
        guard name == "distanceToLocation:fromLocation:" else {
            throw error(token.column, "unsupported function '\(name)'; CloudKit queries support distanceToLocation:fromLocation:(key, location)")
        }
        try expectSymbol("(", "'(' after \(name)")
        let keyToken = current
        guard case .key(let key, _) = try parseOperand(context: "as the first argument of \(name)") else {
            throw error(keyToken.column, "the first argument of \(name) must be a LOCATION field name")
        }
        try expectSymbol(",", "',' after the field name")
        let locationToken = current
        guard case .value(.location(let location), _) = try parseOperand(context: "as the second argument of \(name)") else {
            throw error(locationToken.column, "the second argument of \(name) must be a Location (pass it as %@)")
        }
        try expectSymbol(")", "')' to close \(name)")
        return .distance(key: key, location: location, column: token.column)
    }

    // MARK: Arguments

    private mutating func formatArgument(_ letters: String, token: PredicateToken) throws -> Operand {
        guard argumentIndex < arguments.count else {
            throw error(token.column, "'\(token.text)' needs argument \(argumentIndex + 1), but \(arguments.count == 1 ? "only 1 was" : "\(arguments.count) were") given")
        }
        let argument = arguments[argumentIndex]
        argumentIndex += 1
        let number = argumentIndex
        func fail(_ message: String) -> CloudKitError { error(token.column, "argument \(number) for '\(token.text)': \(message)") }
        guard let value = Self.unwrap(argument) else {
            if letters == "@" { return .null(column: token.column) }
            throw fail("expected a value, got nil")
        }
        switch letters.last {
        case "K":
            guard let key = value as? String else { throw fail("expected a field name (String), got \(type(of: value))") }
            return .key(key, column: token.column)
        case "@":
            guard let converted = Self.recordValue(value) else {
                throw fail("unsupported type \(type(of: value)); use String, a number, Bool, Date, Data, Reference, Record.ID, Location or an array of those")
            }
            return .value(converted, column: token.column)
        case "f":
            if let number = Self.recordValue(value)?.doubleValue { return .value(.double(number), column: token.column) }
            throw fail("expected a number, got \(type(of: value))")
        default:
            if value is Bool { throw fail("expected an integer, got Bool") }
            if let integer = Self.recordValue(value)?.int64Value { return .value(.int64(integer), column: token.column) }
            throw fail("expected an integer, got \(type(of: value))")
        }
    }

    /// The value inside any number of `Optional`s, or nil for an empty one.
    static func unwrap(_ value: Any) -> Any? {
        var current = value
        for _ in 0..<8 {
            let mirror = Mirror(reflecting: current)
            guard mirror.displayStyle == .optional else { return current }
            guard let child = mirror.children.first else { return nil }
            current = child.value
        }
        return current
    }

    /// A `%@` argument as a field value.
    static func recordValue(_ value: Any) -> RecordValue? {
        switch value {
        case let id as Record.ID: return .reference(Reference(recordID: id, action: .none))
        case let record as Record: return .reference(Reference(recordID: record.recordID, action: .none))
        case let convertible as any RecordValueProtocol: return convertible.recordValue
        case let integer as any BinaryInteger: return Int64(exactly: integer).map(RecordValue.int64)
        case let number as any BinaryFloatingPoint: return .double(Double(number))
        case let ids as [Record.ID]: return .list(ids.map { .reference(Reference(recordID: $0, action: .none)) })
        case let items as [Any]:
            var values: [RecordValue] = []
            for item in items {
                guard let unwrapped = unwrap(item), let element = recordValue(unwrapped) else { return nil }
                values.append(element)
            }
            return .list(values)
        default: return nil
        }
    }

    // MARK: Translation

    /// The filters of an expression (an AND of comparisons, possibly negated).
    static func translate(_ expression: Expression) throws -> [WireFilter] {
        switch expression {
        case .constant(true, _): return []
        case .constant(false, let column):
            throw error(column, "FALSEPREDICATE matches nothing, and CloudKit has no filter for it")
        case .and(let parts): return try parts.flatMap(translate)
        case .comparison(let comparison): return try translate(comparison, negated: false)
        case .not(let inner, let column):
            switch inner {
            case .not(let twice, _): return try translate(twice)
            case .comparison(let comparison): return try translate(comparison, negated: true, notColumn: column)
            case .and:
                throw error(column, "NOT (p AND q) would need OR, which CloudKit queries cannot do; negate each condition instead")
            case .constant:
                throw error(column, "NOT TRUEPREDICATE matches nothing, and CloudKit has no filter for it")
            }
        }
    }

    /// The CloudKit key for a predicate key: system keys (`recordName`, `creationDate`, …) map
    /// to system fields; `self` and `allTokens` to the all-tokens field.
    static func fieldKey(_ name: String, column: Int) throws -> WireFieldKey {
        switch name {
        case "recordName", "recordID": return .system(.recordName)
        case "creationDate", "createdTimestamp": return .system(.createdTimestamp)
        case "modificationDate", "modifiedTimestamp": return .system(.modifiedTimestamp)
        case "creatorUserRecordID", "createdUserRecordName": return .system(.createdUserRecordName)
        case "lastModifiedUserRecordID", "modifiedUserRecordName": return .system(.modifiedUserRecordName)
        case "parent": return .system(.parent)
        case "share": return .system(.share)
        case "self", "allTokens": return .field("allTokens")
        default: break
        }
        if name.hasPrefix("___") {
            guard let system = WireSystemField(name: name) else { throw error(column, "unknown system field '\(name)'") }
            return .system(system)
        }
        do {
            try WireRecord.validate(fieldName: name, path: name)
        } catch {
            throw Self.error(column, "'\(name)' is not a field name: a field name is letters, digits and '_', starting with a letter (key paths are not supported)")
        }
        return .field(name)
    }

    /// A value as a filter's field value; values compared with record-name and user system
    /// fields become references.
    static func fieldValue(_ value: RecordValue, for key: WireFieldKey, column: Int) throws -> WireFieldValue {
        var value = value
        if case .system(let system) = key, [.recordName, .createdUserRecordName, .modifiedUserRecordName, .parent, .share].contains(system) {
            func asReference(_ item: RecordValue) -> RecordValue {
                if case .string(let name) = item { return .reference(Reference(recordID: Record.ID(recordName: name), action: .none)) }
                return item
            }
            if case .list(let items) = value { value = .list(items.map(asReference)) } else { value = asReference(value) }
        }
        do {
            var wire = try value.wire(in: .default, key: key.description)
            // References in filters carry no action.
            func strip(_ item: WireFieldValue) -> WireFieldValue {
                if case .reference(var reference) = item {
                    reference.action = nil
                    return .reference(reference)
                }
                return item
            }
            if case .list(let element, let items) = wire { wire = .list(element: element, items.map(strip)) } else { wire = strip(wire) }
            return wire
        } catch let error as CloudKitError {
            throw Self.error(column, error.reason)
        }
    }

    static func translate(_ c: Comparison, negated: Bool, notColumn: Int = 0) throws -> [WireFilter] {
        var c = c
        // Put the key on the left where the operator allows it.
        if c.quantifier == nil, case .value = c.left, case .key = c.right {
            if c.op == .in {
                // `v IN list` ≡ `list CONTAINS v`.
                swap(&c.left, &c.right)
                c.op = .contains
            } else if let flipped = c.op.flipped {
                swap(&c.left, &c.right)
                c.op = flipped
            }
        }
        // `ANY {a, b} == key` ≡ `key IN {a, b}`.
        if c.quantifier == .any, case .value(.list, _) = c.left, case .key = c.right, c.op == .equal {
            swap(&c.left, &c.right)
            c.quantifier = nil
            c.op = .in
        }
        if case .null(let column) = c.left { throw error(column, "CloudKit queries cannot compare with nil") }
        if case .null(let column) = c.right { throw error(column, "CloudKit queries cannot compare with nil") }
        if [.endsWith, .like, .matches].contains(c.op) {
            throw error(c.opColumn, "CloudKit queries do not support \(c.op.rawValue); supported: ==, !=, <, <=, >, >=, BEGINSWITH, IN, CONTAINS, TOKENMATCHES, BETWEEN")
        }
        if c.quantifier == .all {
            throw error(c.quantifierColumn, "CloudKit queries do not support ALL; use ANY or NONE")
        }

        // distanceToLocation:fromLocation:(key, location) < km
        if case .distance(let name, let location, let column) = c.left {
            guard c.quantifier == nil, c.op == .less || c.op == .lessOrEqual else {
                throw error(c.opColumn, "a distance can only be compared with '<' or '<=' (CloudKit's NEAR finds locations within a radius)")
            }
            guard !negated else { throw error(notColumn, "NOT cannot negate a distance comparison (CloudKit has no 'not near')") }
            guard case .value(let radius, let radiusColumn) = c.right, let kilometres = radius.doubleValue, kilometres >= 0 else {
                throw error(c.right.column, "expected a radius in kilometres (a number ≥ 0)")
            }
            _ = radiusColumn
            let key = try fieldKey(name, column: column)
            return [WireFilter(comparator: .near, key: key, fieldValue: .location(location.wire), distance: kilometres * 1000)]
        }
        if case .distance(_, _, let column) = c.right {
            throw error(column, "put distanceToLocation:fromLocation:(…) on the left: distanceToLocation:fromLocation:(key, %@) < radius")
        }

        guard case .key(let name, let keyColumn) = c.left else {
            if case .key = c.right {
                throw error(c.opColumn, "\(c.op.rawValue) needs the field name on the left (write key \(c.op.rawValue) value)")
            }
            throw error(c.left.column, "a comparison needs a field name on one side (found two values)")
        }
        guard case .value(let value, let valueColumn) = c.right else {
            throw error(c.right.column, "CloudKit queries compare a field with a value, not with another field")
        }
        let key = try fieldKey(name, column: keyColumn)
        let isTokens = c.op == .tokenMatches || (c.op == .contains && key == .field("allTokens"))
        if !c.options.isEmpty, !isTokens {
            throw error(c.opColumn, "CloudKit compares strings exactly: remove the [\(c.options)] modifier (only TOKENMATCHES and self CONTAINS take one)")
        }
        func filter(_ comparator: WireComparator, _ value: RecordValue, column: Int) throws -> WireFilter {
            WireFilter(comparator: comparator, key: key, fieldValue: try fieldValue(value, for: key, column: column))
        }
        func scalar(_ what: String) throws -> RecordValue {
            if case .list = value { throw error(valueColumn, "\(what) needs a single value, not a list") }
            return value
        }
        func list(_ what: String) throws -> RecordValue {
            guard case .list = value else { throw error(valueColumn, "\(what) needs a list: {a, b} or an array argument") }
            return value
        }
        func notSupported(_ what: String) -> CloudKitError {
            error(notColumn, "CloudKit has no negated form of \(what)")
        }

        if isTokens {
            guard c.quantifier == nil else { throw error(c.quantifierColumn, "\(c.op.rawValue) cannot take a quantifier") }
            guard !negated else { throw notSupported("a token match") }
            guard case .string = value else { throw error(valueColumn, "a token match needs a string of words") }
            return [try filter(.containsAllTokens, value, column: valueColumn)]
        }

        switch (c.quantifier, c.op) {
        case (nil, .equal), (nil, .notEqual):
            var comparator = c.op == .equal ? WireComparator.equals : .notEquals
            if negated { comparator = comparator == .equals ? .notEquals : .equals }
            return [try filter(comparator, value, column: valueColumn)]
        case (nil, .less), (nil, .lessOrEqual), (nil, .greater), (nil, .greaterOrEqual):
            guard !negated else {
                throw error(notColumn, "NOT before '\(c.op.rawValue)' is not supported (records without the field would differ); write the opposite comparison")
            }
            let comparator: WireComparator = [.less: .lessThan, .lessOrEqual: .lessThanOrEquals, .greater: .greaterThan,
                                              .greaterOrEqual: .greaterThanOrEquals][c.op]!
            return [try filter(comparator, try scalar("'\(c.op.rawValue)'"), column: valueColumn)]
        case (nil, .beginsWith):
            guard case .string = value else { throw error(valueColumn, "BEGINSWITH needs a string") }
            return [try filter(negated ? .notBeginsWith : .beginsWith, value, column: valueColumn)]
        case (nil, .in):
            return [try filter(negated ? .notIn : .in, try list("IN"), column: valueColumn)]
        case (nil, .contains), (.any, .equal):
            return [try filter(negated ? .notListContains : .listContains, try scalar("CONTAINS"), column: valueColumn)]
        case (.noElement, .equal):
            guard !negated else { throw notSupported("NONE") }
            return [try filter(.notListContains, try scalar("NONE … =="), column: valueColumn)]
        case (.any, .in):
            return [try filter(negated ? .notListContainsAny : .listContainsAny, try list("ANY … IN"), column: valueColumn)]
        case (.noElement, .in):
            guard !negated else { throw notSupported("NONE") }
            return [try filter(.notListContainsAny, try list("NONE … IN"), column: valueColumn)]
        case (.any, .beginsWith):
            guard case .string = value else { throw error(valueColumn, "BEGINSWITH needs a string") }
            return [try filter(negated ? .notListMemberBeginsWith : .listMemberBeginsWith, value, column: valueColumn)]
        case (.noElement, .beginsWith):
            guard !negated else { throw notSupported("NONE") }
            guard case .string = value else { throw error(valueColumn, "BEGINSWITH needs a string") }
            return [try filter(.notListMemberBeginsWith, value, column: valueColumn)]
        case (nil, .between):
            guard !negated else { throw notSupported("BETWEEN (it would need OR)") }
            guard case .list(let bounds) = value, bounds.count == 2 else {
                throw error(valueColumn, "BETWEEN needs a list of two values: {low, high}")
            }
            return [try filter(.greaterThanOrEquals, bounds[0], column: valueColumn),
                    try filter(.lessThanOrEquals, bounds[1], column: valueColumn)]
        default:
            let quantifier = c.quantifier.map { "\($0.rawValue) " } ?? ""
            throw error(c.quantifier != nil ? c.quantifierColumn : c.opColumn,
                        "CloudKit queries do not support '\(quantifier)key \(c.op.rawValue) value'")
        }
    }
}
