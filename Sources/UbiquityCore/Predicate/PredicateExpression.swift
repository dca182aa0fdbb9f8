/// The syntax tree of a ``QueryPredicate``.
///
/// `AND` and `OR` are n-ary and flattened (`a AND (b AND c)` is one `.and` of three), so the
/// tree of a parsed predicate equals the tree of its ``QueryPredicate/predicateFormat``.
public indirect enum PredicateExpression: Sendable, Hashable {
    /// `TRUEPREDICATE` (`true`) or `FALSEPREDICATE` (`false`).
    case constant(Bool)
    /// `NOT p`: true exactly when `p` is false (two-valued; a missing value never makes it unknown).
    case not(PredicateExpression)
    /// `p AND q AND …`: two or more operands.
    case and([PredicateExpression])
    /// `p OR q OR …`: two or more operands.
    case or([PredicateExpression])
    /// `lhs op rhs`, possibly quantified.
    case comparison(PredicateComparison)
}

/// One comparison: `[ANY|ALL|NONE] left operator[options] right`.
public struct PredicateComparison: Sendable, Hashable {
    /// How an array-valued left side is compared: `ANY` (or `SOME`), `ALL`, `NONE`.
    public enum Quantifier: String, Sendable, Hashable, CaseIterable {
        /// True when some element satisfies the comparison (`ANY`, `SOME`).
        case anyElement = "ANY"
        /// True when every element satisfies the comparison.
        case everyElement = "ALL"
        /// True when no element satisfies the comparison.
        case noElement = "NONE"
    }

    /// The quantifier, or `nil` for a plain comparison (on an array attribute this means `ANY`,
    /// as in Spotlight; `CONTAINS` then tests membership, and `== nil`/`!= nil` test the whole value).
    public var quantifier: Quantifier?
    /// The left operand (after parsing, an attribute whenever either side is one and the
    /// operator can be flipped).
    public var left: PredicateOperand
    /// The operator.
    public var `operator`: PredicateOperator
    /// The `[c]`, `[d]`, `[cd]` string options.
    public var options: PredicateStringMatch.Options
    /// The right operand.
    public var right: PredicateOperand

    /// Makes a comparison.
    public init(quantifier: Quantifier? = nil, left: PredicateOperand, operator: PredicateOperator,
                options: PredicateStringMatch.Options = [], right: PredicateOperand) {
        self.quantifier = quantifier
        self.left = left
        self.operator = `operator`
        self.options = options
        self.right = right
    }
}

/// A comparison operator. The raw value is the canonical spelling in a format string.
public enum PredicateOperator: String, Sendable, Hashable, CaseIterable {
    /// `==`, `=`.
    case equal = "=="
    /// `!=`, `<>`.
    case notEqual = "!="
    /// `<`.
    case less = "<"
    /// `<=`, `=<`.
    case lessOrEqual = "<="
    /// `>`.
    case greater = ">"
    /// `>=`, `=>`.
    case greaterOrEqual = ">="
    /// `BEGINSWITH`: the left string starts with the right one.
    case beginsWith = "BEGINSWITH"
    /// `ENDSWITH`: the left string ends with the right one.
    case endsWith = "ENDSWITH"
    /// `CONTAINS`: the left string contains the right one (on an array: has it as an element).
    case contains = "CONTAINS"
    /// `LIKE`: the left string matches the right wildcard pattern (`*` any run, `?` one character).
    case like = "LIKE"
    /// `MATCHES`: the whole left string matches the right regular expression.
    case matches = "MATCHES"
    /// `IN`: the left value equals an element of the right aggregate (or is a substring of the
    /// right string).
    case `in` = "IN"
    /// `BETWEEN`: `right[0] <= left <= right[1]`.
    case between = "BETWEEN"

    /// Whether this is one of `<`, `<=`, `>`, `>=`.
    public var isOrdering: Bool {
        switch self {
        case .less, .lessOrEqual, .greater, .greaterOrEqual: true
        default: false
        }
    }

    /// Whether this is one of `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE`, `MATCHES`.
    public var isStringOperator: Bool {
        switch self {
        case .beginsWith, .endsWith, .contains, .like, .matches: true
        default: false
        }
    }

    /// The operator with its operands swapped (`<` ↔ `>`), or `nil` when it cannot be flipped.
    public var flipped: PredicateOperator? {
        switch self {
        case .equal, .notEqual: self
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        default: nil
        }
    }
}

/// One side of a comparison.
public indirect enum PredicateOperand: Sendable, Hashable {
    /// A metadata attribute of the item (`kMDItemFSName`, `%K`).
    case attribute(MetadataAttribute)
    /// `*`: any string attribute (only on the left of string comparisons).
    case anyAttribute
    /// A constant: string, number, Boolean, date, or `nil` (`.null`). Never `.array`: literal
    /// aggregates are ``aggregate(_:)``.
    case value(MetadataValue)
    /// `{a, b, …}`: an aggregate, for `IN` and `BETWEEN`.
    case aggregate([PredicateOperand])
    /// `$NAME`: replaced by ``QueryPredicate/withSubstitutionVariables(_:)``.
    case variable(String)
    /// `now()`, `$time.now`, `$time.now(±seconds)`: the time of evaluation plus `offset` seconds.
    case now(offset: Double)
    /// `$time.today`, `$time.today(±days)`: the start of the current day (local time) plus
    /// `offsetDays` days.
    case today(offsetDays: Int)
}
