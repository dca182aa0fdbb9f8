import Foundation

extension QueryPredicate {
    /// The predicate as a boolean SQL expression for a `WHERE` clause, selecting exactly the rows
    /// ``evaluate(with:)`` accepts (NULL counts as false). `now()` and `$time.…` are bound to the
    /// current time.
    ///
    /// Throws `invalidArgument` when a `$VARIABLE` has not been substituted and `unsupported`
    /// when `schema` has no column for an attribute the predicate uses.
    public func sql(using schema: some PredicateSQLSchema) throws -> SQLFragment {
        try sql(using: schema, now: Date())
    }

    /// The predicate as SQL, with `now()` and `$time.…` taken as `now`.
    public func sql(using schema: some PredicateSQLSchema, now: Date) throws -> SQLFragment {
        let translator = PredicateSQLTranslator(schema: schema, now: now)
        let piece = try translator.translate(expression)
        return SQLFragment(sql: piece.sql, arguments: piece.arguments)
    }
}

/// Translates a predicate tree into SQL that agrees with ``PredicateEvaluator``.
///
/// Every piece records whether it can be NULL (a comparison with a missing column value); `NOT`
/// wraps such pieces in `IFNULL(…, 0)` so that the result stays two-valued, as the evaluator is.
/// `AND` and `OR` need no wrapping: with NULL read as false at the top they already agree.
struct PredicateSQLTranslator<Schema: PredicateSQLSchema> {
    let schema: Schema
    let now: Date

    /// A translated piece.
    struct Piece {
        var sql: String
        var arguments: [SQLValue] = []
        var nullable: Bool

        static var isTrue: Piece { Piece(sql: "1", nullable: false) }
        static var isFalse: Piece { Piece(sql: "0", nullable: false) }
    }

    /// A resolved operand.
    enum Operand {
        case column(String, MetadataAttribute)
        case constant(MetadataValue?)
        case list([MetadataValue?])

        var isColumn: Bool { if case .column = self { true } else { false } }
        var isNilConstant: Bool { if case .constant(nil) = self { true } else { false } }
    }

    func translate(_ expression: PredicateExpression) throws -> Piece {
        switch expression {
        case .constant(let value): return value ? .isTrue : .isFalse
        case .not(let inner): return Self.negate(try translate(inner))
        case .and(let parts): return Self.join(try parts.map(translate), with: "AND")
        case .or(let parts): return Self.join(try parts.map(translate), with: "OR")
        case .comparison(let c): return try translate(c)
        }
    }

    static func negate(_ piece: Piece) -> Piece {
        if piece.sql == "1" { return .isFalse }
        if piece.sql == "0" { return .isTrue }
        let inner = piece.nullable ? "IFNULL(\(piece.sql), 0)" : piece.sql
        return Piece(sql: "(NOT \(inner))", arguments: piece.arguments, nullable: false)
    }

    static func join(_ pieces: [Piece], with keyword: String) -> Piece {
        if pieces.isEmpty { return keyword == "AND" ? .isTrue : .isFalse }
        if pieces.count == 1 { return pieces[0] }
        return Piece(sql: "(" + pieces.map(\.sql).joined(separator: " \(keyword) ") + ")",
                     arguments: pieces.flatMap(\.arguments), nullable: pieces.contains { $0.nullable })
    }

    // MARK: Operands

    func resolve(_ operand: PredicateOperand) throws -> Operand {
        switch operand {
        case .attribute(let attribute):
            guard let column = schema.column(for: attribute) else {
                throw UbiquityError(.unsupported, "predicate: the attribute \(attribute.rawValue) is not stored in the index, so it cannot be queried")
            }
            return .column(column, attribute)
        case .anyAttribute:
            throw UbiquityError(.invalidArgument, "predicate: '*' can only be the left side of a comparison")
        case .value(let value): return .constant(value == .null ? nil : value)
        case .aggregate(let elements):
            var values: [MetadataValue?] = []
            for element in elements {
                guard case .constant(let value) = try resolve(element) else {
                    throw UbiquityError(.unsupported, "predicate: an aggregate can hold only constant values")
                }
                values.append(value)
            }
            return .list(values)
        case .variable(let name):
            throw UbiquityError(.invalidArgument, "predicate: the variable $\(name) has no value; substitute it with withSubstitutionVariables(_:) first")
        case .now, .today:
            return .constant(PredicateKernel.date(of: operand, now: now).map(MetadataValue.date))
        }
    }

    static func sqlValue(_ value: MetadataValue?) -> SQLValue {
        switch value {
        case nil, .null?: .null
        case .string(let s)?: .text(s)
        case .integer(let i)?: .integer(i)
        case .double(let d)?: .real(d)
        case .bool(let b)?: .integer(b ? 1 : 0)
        case .date(let date)?: .real(date.timeIntervalSince1970)
        case .array?: .null
        }
    }

    /// The SQL of a column or a single constant (bound).
    static func piece(_ operand: Operand) -> Piece {
        switch operand {
        case .column(let sql, _): Piece(sql: sql, nullable: true)
        case .constant(let value): Piece(sql: "?", arguments: [sqlValue(value)], nullable: value == nil)
        case .list: Piece(sql: "NULL", nullable: true)
        }
    }

    static func quotedLiteral(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "''") + "'" }

    // MARK: Comparisons

    func translate(_ c: PredicateComparison) throws -> Piece {
        if case .anyAttribute = c.left {
            var pieces: [Piece] = []
            for attribute in QueryPredicate.anyAttributeExpansion {
                var single = c
                single.left = .attribute(attribute)
                pieces.append(try translate(single))
            }
            return Self.join(pieces, with: "OR")
        }
        let left = try resolve(c.left)
        let right = try resolve(c.right)
        if !left.isColumn, !right.isColumn {
            // Constants only: decide now.
            let l: PredicateKernel.Operand, r: PredicateKernel.Operand
            switch left { case .constant(let v): l = .value(v); case .list(let vs): l = .list(vs); case .column: l = .value(nil) }
            switch right { case .constant(let v): r = .value(v); case .list(let vs): r = .list(vs); case .column: r = .value(nil) }
            return PredicateKernel.compare(quantifier: c.quantifier, l, c.operator, c.options, r) ? .isTrue : .isFalse
        }
        if case .column(let column, let attribute) = left, attribute.valueKind == .stringArray {
            return try tree(c, column: column, right: right)
        }
        return try scalar(c.operator, c.options, left, right)
    }

    private static func isString(_ operand: Operand) -> Bool {
        switch operand {
        case .column(_, let attribute): attribute.valueKind == .string
        case .constant(.string?): true
        default: false
        }
    }

    func scalar(_ op: PredicateOperator, _ options: PredicateStringMatch.Options, _ left: Operand, _ right: Operand) throws -> Piece {
        let stringOptions = !options.isEmpty && (Self.isString(left) || Self.isString(right))
        switch op {
        case .equal:
            return equal(options: stringOptions ? options : [], left, right)
        case .notEqual:
            if !stringOptions, !left.isNilConstant, !right.isNilConstant {
                let l = Self.piece(left), r = Self.piece(right)
                return Piece(sql: "(\(l.sql) IS NOT \(r.sql))", arguments: l.arguments + r.arguments, nullable: false)
            }
            return Self.negate(equal(options: stringOptions ? options : [], left, right))
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            return ordering(op.rawValue, options: stringOptions ? options : [], left, right)
        case .between:
            guard case .list(let bounds) = right, bounds.count == 2, let low = bounds[0], let high = bounds[1] else {
                return .isFalse
            }
            return Self.join([
                ordering(">=", options: stringOptions ? options : [], left, .constant(low)),
                ordering("<=", options: stringOptions ? options : [], left, .constant(high)),
            ], with: "AND")
        case .in:
            guard case .list(let values) = right else {
                // `a IN b` with a string b: b contains a.
                return stringMatch(.contains, options, right, left)
            }
            var pieces: [Piece] = []
            var plain: [SQLValue] = []
            for value in values {
                if value == nil || stringOptions {
                    pieces.append(equal(options: stringOptions ? options : [], left, .constant(value)))
                } else {
                    plain.append(Self.sqlValue(value))
                }
            }
            if !plain.isEmpty {
                let l = Self.piece(left)
                let marks = Array(repeating: "?", count: plain.count).joined(separator: ", ")
                pieces.insert(Piece(sql: "(\(l.sql) IN (\(marks)))", arguments: l.arguments + plain, nullable: true), at: 0)
            }
            return Self.join(pieces, with: "OR")
        case .beginsWith, .endsWith, .contains, .like, .matches:
            return stringMatch(op, options, left, right)
        }
    }

    func equal(options: PredicateStringMatch.Options, _ left: Operand, _ right: Operand) -> Piece {
        if left.isNilConstant || right.isNilConstant {
            let other = left.isNilConstant ? right : left
            if other.isNilConstant { return .isTrue }
            let o = Self.piece(other)
            return Piece(sql: "(\(o.sql) IS NULL)", arguments: o.arguments, nullable: false)
        }
        if !options.isEmpty { return stringMatch(.equal, options, left, right) }
        let l = Self.piece(left), r = Self.piece(right)
        if left.isColumn, right.isColumn {
            return Piece(sql: "(\(l.sql) IS \(r.sql))", arguments: l.arguments + r.arguments, nullable: false)
        }
        return Piece(sql: "(\(l.sql) = \(r.sql))", arguments: l.arguments + r.arguments, nullable: true)
    }

    func ordering(_ op: String, options: PredicateStringMatch.Options, _ left: Operand, _ right: Operand) -> Piece {
        if left.isNilConstant || right.isNilConstant { return .isFalse }
        func side(_ operand: Operand) -> Piece {
            if options.isEmpty { return Self.piece(operand) }
            if case .constant(.string(let s)?) = operand {
                return Piece(sql: "?", arguments: [.text(PredicateStringMatch.fold(s, options: options))], nullable: false)
            }
            let p = Self.piece(operand)
            return Piece(sql: "ubq_fold('\(options)', \(p.sql))", arguments: p.arguments, nullable: true)
        }
        let l = side(left), r = side(right)
        return Piece(sql: "(\(l.sql) \(op) \(r.sql))", arguments: l.arguments + r.arguments, nullable: true)
    }

    /// `ubq_match(op, options, value, pattern)`, behind the schema's substring prefilter when it
    /// has one for a long enough literal.
    func stringMatch(_ op: PredicateOperator, _ options: PredicateStringMatch.Options, _ left: Operand, _ right: Operand) -> Piece {
        if left.isNilConstant || right.isNilConstant { return .isFalse }
        let l = Self.piece(left), r = Self.piece(right)
        let match = Piece(sql: "ubq_match('\(op.rawValue)', '\(options)', \(l.sql), \(r.sql))",
                          arguments: l.arguments + r.arguments, nullable: false)
        guard case .column(_, let attribute) = left, case .constant(.string(let literal)?) = right else { return match }
        let needle: String
        switch op {
        case .beginsWith, .endsWith, .contains, .equal: needle = literal
        case .like: needle = PredicateStringMatch.longestLikeLiteral(literal)
        default: return match
        }
        let folded = PredicateStringMatch.fold(needle)
        guard folded.unicodeScalars.count >= 3,
              let prefilter = schema.substringPrefilter(for: attribute, foldedNeedle: folded) else { return match }
        return Piece(sql: "(\(prefilter.sql) AND \(match.sql))", arguments: prefilter.arguments + match.arguments,
                     nullable: true)
    }

    // MARK: The content type tree

    func tree(_ c: PredicateComparison, column: String, right: Operand) throws -> Piece {
        if c.quantifier == nil, c.operator == .equal || c.operator == .notEqual, right.isNilConstant {
            return Piece(sql: "(\(column) IS \(c.operator == .equal ? "" : "NOT ")NULL)", nullable: false)
        }
        let anyEqual = c.options.isEmpty
            && ((c.quantifier == nil && (c.operator == .equal || c.operator == .contains))
                || (c.quantifier == .anyElement && c.operator == .equal))
        if anyEqual, case .constant(.string(let identifier)?) = right {
            return Self.treeContains(column: column, identifier)
        }
        let anyIn = c.options.isEmpty && (c.quantifier == nil || c.quantifier == .anyElement) && c.operator == .in
        if anyIn, case .list(let values) = right {
            var pieces: [Piece] = []
            for value in values {
                switch value {
                case .string(let identifier)?: pieces.append(Self.treeContains(column: column, identifier))
                case nil: continue  // elements are never nil
                default: continue   // a non-string never equals an identifier
                }
            }
            return Self.join(pieces, with: "OR")
        }
        var arguments: [SQLValue] = []
        var values: [String] = []
        var isList = 0
        switch right {
        case .constant(let value): values.append("?"); arguments.append(Self.sqlValue(value))
        case .list(let elements):
            isList = 1
            for element in elements { values.append("?"); arguments.append(Self.sqlValue(element)) }
        case .column(let sql, _): values.append(sql)
        }
        let quantifier = c.quantifier?.rawValue ?? ""
        let sql = "ubq_tree('\(quantifier)', '\(c.operator.rawValue)', '\(c.options)', \(isList), \(column)"
            + values.map { ", " + $0 }.joined() + ")"
        return Piece(sql: sql, arguments: arguments, nullable: false)
    }

    /// Every identifier that `ContentType` knows.
    static var knownContentTypes: [String] {
        var known = Set(ContentType.byExtension.values)
        known.formUnion(ContentType.parents.keys)
        known.insert(ContentType.data)
        return known.sorted()
    }

    /// `identifier ∈ ContentType.tree(of: column)`, as an indexable `IN`.
    static func treeContains(column: String, _ identifier: String) -> Piece {
        var types = Set(ContentType.identifiers(conformingTo: identifier))
        types.insert(identifier)
        let sorted = types.sorted()
        var piece = Piece(sql: "(\(column) IN (\(Array(repeating: "?", count: sorted.count).joined(separator: ", "))))",
                          arguments: sorted.map(SQLValue.text), nullable: true)
        if identifier == ContentType.data || identifier == "public.item" {
            // An unknown type's tree is [type, public.data, public.item].
            let known = knownContentTypes
            piece = Piece(
                sql: "(\(piece.sql) OR (\(column) IS NOT NULL AND \(column) NOT IN (\(Array(repeating: "?", count: known.count).joined(separator: ", ")))))",
                arguments: piece.arguments + known.map(SQLValue.text), nullable: true)
        }
        return piece
    }
}
