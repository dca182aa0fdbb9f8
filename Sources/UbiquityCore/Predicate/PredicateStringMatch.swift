import Foundation
import Synchronization

/// String comparison for predicates, shared by the evaluator and the SQL functions
/// (`PredicateSQLFunctions`) so that both agree exactly.
///
/// Every comparison works on Unicode scalars (code points), never on `Character`s: `==` is
/// scalar-for-scalar equality and ordering is code-point order, which is what SQLite's `BINARY`
/// collation gives on UTF-8. `[c]` lowercases each scalar (Unicode full lowercase mapping) and
/// `[d]` removes diacritics (canonical decomposition, then every combining scalar dropped); both
/// are applied one scalar at a time, so folding a substring gives a substring of the folded
/// string (which is what makes the trigram prefilter sound).
public enum PredicateStringMatch {
    /// The `[c]` and `[d]` modifiers.
    public struct Options: OptionSet, Sendable, Hashable, CustomStringConvertible {
        /// The raw bits.
        public let rawValue: UInt8
        /// Makes options from raw bits.
        public init(rawValue: UInt8) { self.rawValue = rawValue & 3 }
        /// `[c]`: case-insensitive.
        public static let caseInsensitive = Options(rawValue: 1)
        /// `[d]`: diacritic-insensitive.
        public static let diacriticInsensitive = Options(rawValue: 2)

        /// `""`, `"c"`, `"d"` or `"cd"` (as inside the brackets; also the SQL functions' argument).
        public var description: String {
            (contains(.caseInsensitive) ? "c" : "") + (contains(.diacriticInsensitive) ? "d" : "")
        }

        /// Parses `"c"`, `"d"`, `"cd"`, `"dc"` or `""` (case-insensitive); `nil` otherwise.
        public init?(letters: String) {
            var options: Options = []
            for letter in letters.lowercased() {
                switch letter {
                case "c": options.insert(.caseInsensitive)
                case "d": options.insert(.diacriticInsensitive)
                default: return nil
                }
            }
            self = options
        }
    }

    /// Lowercases and removes diacritics (`[cd]`). The index stores this in its folded-name
    /// column; the substring prefilter receives needles folded with it.
    public static func fold(_ s: String) -> String {
        fold(s, options: [.caseInsensitive, .diacriticInsensitive])
    }

    /// Folds `s` as `options` say: `[c]` lowercases, `[d]` removes diacritics, `[]` returns `s`.
    public static func fold(_ s: String, options: Options) -> String {
        if options.isEmpty { return s }
        let lower = options.contains(.caseInsensitive)
        switch asciiScan(s) {
        case .unchanged: return s
        case .upper:
            // ASCII: no diacritics, and lowercasing is a byte map.
            guard lower else { return s }
            var bytes = Array(s.utf8)
            for i in bytes.indices where bytes[i] &- 65 < 26 { bytes[i] += 32 }
            return String(decoding: bytes, as: UTF8.self)
        case .nonASCII:
            break
        }
        var scalars = String.UnicodeScalarView()
        for scalar in s.unicodeScalars {
            if scalar.isASCII {
                let v = scalar.value
                scalars.append(lower && v >= 65 && v <= 90 ? Unicode.Scalar(UInt8(v + 32)) : scalar)
            } else {
                scalars.append(contentsOf: folded(scalar, options: options))
            }
        }
        return String(scalars)
    }

    /// Whether `value` satisfies `value op pattern` with the given options.
    ///
    /// `op` is one of `==`, `!=`, `<`, `<=`, `>`, `>=`, `BEGINSWITH`, `ENDSWITH`, `CONTAINS`,
    /// `LIKE` (`*` any run of scalars, `?` one scalar, `\` escapes the next one) or `MATCHES` (a
    /// regular expression that must match the whole string); `IN` means `pattern CONTAINS value`
    /// and `BETWEEN` is always false here. An empty pattern is contained in every string.
    public static func matches(_ op: PredicateOperator, options: Options, value: String, pattern: String) -> Bool {
        switch op {
        case .equal: return equal(value, pattern, options: options)
        case .notEqual: return !equal(value, pattern, options: options)
        case .less: return compare(value, pattern, options: options) < 0
        case .lessOrEqual: return compare(value, pattern, options: options) <= 0
        case .greater: return compare(value, pattern, options: options) > 0
        case .greaterOrEqual: return compare(value, pattern, options: options) >= 0
        case .beginsWith:
            return Array(fold(value, options: options).unicodeScalars)
                .starts(with: fold(pattern, options: options).unicodeScalars)
        case .endsWith:
            return Array(fold(value, options: options).unicodeScalars).reversed()
                .starts(with: Array(fold(pattern, options: options).unicodeScalars).reversed())
        case .contains:
            return containsScalars(Array(fold(value, options: options).unicodeScalars),
                                   Array(fold(pattern, options: options).unicodeScalars))
        case .in:
            return matches(.contains, options: options, value: pattern, pattern: value)
        case .like:
            return like(value, pattern: pattern, options: options)
        case .matches:
            return regexMatches(value, pattern: pattern, options: options)
        case .between:
            return false
        }
    }

    /// Scalar-for-scalar equality after folding.
    public static func equal(_ a: String, _ b: String, options: Options) -> Bool {
        if options.isEmpty || (asciiScan(a) != .nonASCII && asciiScan(b) != .nonASCII) {
            // Plain, or ASCII on both sides: compare bytes, lowercasing on the fly for [c].
            let lower = options.contains(.caseInsensitive)
            var i = a.utf8.makeIterator(), j = b.utf8.makeIterator()
            while true {
                switch (i.next(), j.next()) {
                case (nil, nil): return true
                case let (x?, y?):
                    if x == y { continue }
                    guard lower, x | 0x20 == y | 0x20, (x | 0x20) &- 97 < 26 else { return false }
                default: return false
                }
            }
        }
        return fold(a, options: options).utf8.elementsEqual(fold(b, options: options).utf8)
    }

    private enum ASCIIScan { case unchanged, upper, nonASCII }

    /// Whether `s` is ASCII, and whether it has uppercase letters.
    private static func asciiScan(_ s: String) -> ASCIIScan {
        var upper = false
        for byte in s.utf8 {
            if byte >= 0x80 { return .nonASCII }
            if byte &- 65 < 26 { upper = true }
        }
        return upper ? .upper : .unchanged
    }

    /// Code-point order after folding: negative, zero or positive.
    public static func compare(_ a: String, _ b: String, options: Options) -> Int {
        let x = fold(a, options: options).utf8, y = fold(b, options: options).utf8
        var i = x.makeIterator(), j = y.makeIterator()
        while true {
            switch (i.next(), j.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case let (p?, q?): if p != q { return p < q ? -1 : 1 }
            }
        }
    }

    // MARK: LIKE

    /// One element of a parsed `LIKE` pattern.
    package enum LikeToken: Hashable, Sendable {
        /// Literal scalars.
        case literal([Unicode.Scalar])
        /// `*`.
        case anyRun
        /// `?`.
        case anyOne
    }

    /// Splits a `LIKE` pattern into literal runs and wildcards (folding the literals).
    package static func likeTokens(_ pattern: String, options: Options) -> [LikeToken] {
        var tokens: [LikeToken] = []
        var literal = String.UnicodeScalarView()
        func flush() {
            if !literal.isEmpty {
                tokens.append(.literal(Array(fold(String(literal), options: options).unicodeScalars)))
                literal = String.UnicodeScalarView()
            }
        }
        var iterator = pattern.unicodeScalars.makeIterator()
        while let scalar = iterator.next() {
            switch scalar {
            case "*": flush(); if tokens.last != .anyRun { tokens.append(.anyRun) }
            case "?": flush(); tokens.append(.anyOne)
            case "\\":
                if let next = iterator.next() { literal.append(next) } else { literal.append(scalar) }
            default: literal.append(scalar)
            }
        }
        flush()
        return tokens
    }

    /// The longest literal run of a `LIKE` pattern, unfolded-then-folded as `options` say.
    package static func longestLikeLiteral(_ pattern: String) -> String {
        var best: [Unicode.Scalar] = []
        for case .literal(let run) in likeTokens(pattern, options: []) where run.count > best.count { best = run }
        return String(String.UnicodeScalarView(best))
    }

    static func like(_ value: String, pattern: String, options: Options) -> Bool {
        let text = Array(fold(value, options: options).unicodeScalars)
        // Expand tokens to single-scalar steps: nil = `?`, and a separate marker for `*`.
        enum Step: Equatable { case scalar(Unicode.Scalar), one, star }
        var steps: [Step] = []
        for token in likeTokens(pattern, options: options) {
            switch token {
            case .literal(let run): steps.append(contentsOf: run.map(Step.scalar))
            case .anyOne: steps.append(.one)
            case .anyRun: steps.append(.star)
            }
        }
        // Classic iterative wildcard matching with backtracking to the last star: O(n·m) worst case.
        var t = 0, p = 0, starP = -1, starT = 0
        while t < text.count {
            if p < steps.count, steps[p] == .one || steps[p] == .scalar(text[t]) {
                t += 1; p += 1
            } else if p < steps.count, steps[p] == .star {
                starP = p; starT = t; p += 1
            } else if starP >= 0 {
                p = starP + 1; starT += 1; t = starT
            } else {
                return false
            }
        }
        while p < steps.count, steps[p] == .star { p += 1 }
        return p == steps.count
    }

    static func containsScalars(_ haystack: [Unicode.Scalar], _ needle: [Unicode.Scalar]) -> Bool {
        if needle.isEmpty { return true }
        if needle.count > haystack.count { return false }
        for start in 0...(haystack.count - needle.count)
        where haystack[start] == needle[0] && haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return true
        }
        return false
    }

    // MARK: MATCHES

    /// A compiled regular expression. `Regex` is an immutable value that is safe to share between
    /// threads, but `Regex<AnyRegexOutput>` is not declared `Sendable`.
    private final class CompiledRegex: @unchecked Sendable {
        let regex: Regex<AnyRegexOutput>
        init(_ regex: Regex<AnyRegexOutput>) { self.regex = regex }
    }

    private struct RegexKey: Hashable { var pattern: String; var options: Options }
    private static let regexCache = Mutex<[RegexKey: CompiledRegex]>([:])
    private static let regexCacheLimit = 256

    /// Compiles `pattern` (with `[c]`: case-insensitive; with `[d]`: diacritics removed from the
    /// pattern as from the value), or throws the compiler's error.
    package static func compileRegex(_ pattern: String, options: Options) throws -> Regex<AnyRegexOutput> {
        let key = RegexKey(pattern: pattern, options: options)
        if let cached = regexCache.withLock({ $0[key] }) { return cached.regex }
        var source = pattern
        if options.contains(.diacriticInsensitive) { source = fold(source, options: .diacriticInsensitive) }
        var regex = try Regex(source).matchingSemantics(.unicodeScalar)
        if options.contains(.caseInsensitive) { regex = regex.ignoresCase() }
        let compiled = CompiledRegex(regex)
        regexCache.withLock { cache in
            if cache.count >= regexCacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[key] = compiled
        }
        return regex
    }

    static func regexMatches(_ value: String, pattern: String, options: Options) -> Bool {
        guard let regex = try? compileRegex(pattern, options: options) else { return false }
        var subject = value
        if options.contains(.diacriticInsensitive) { subject = fold(subject, options: .diacriticInsensitive) }
        return ((try? regex.wholeMatch(in: subject)) ?? nil) != nil
    }

    // MARK: Folding, one scalar at a time

    private static let foldCache = Mutex<[UInt32: [Unicode.Scalar]]>([:])

    /// Scalars below this have their folds precomputed (Latin, Greek, Cyrillic), lock-free.
    private static let tableLimit: UInt32 = 0x530

    /// `foldTable[Int(value) * 4 + options.rawValue]` for scalars below ``tableLimit``.
    private static let foldTable: [[Unicode.Scalar]] = {
        var table: [[Unicode.Scalar]] = []
        table.reserveCapacity(Int(tableLimit) * 4)
        for value in 0..<tableLimit {
            for raw in 0..<UInt8(4) {
                if let scalar = Unicode.Scalar(value) {
                    table.append(computeFold(scalar, options: Options(rawValue: raw)))
                } else {
                    table.append([])
                }
            }
        }
        return table
    }()

    /// The fold of one non-ASCII scalar, cached (Foundation's decomposition is slow).
    private static func folded(_ scalar: Unicode.Scalar, options: Options) -> [Unicode.Scalar] {
        if scalar.value < tableLimit { return foldTable[Int(scalar.value) * 4 + Int(options.rawValue)] }
        let key = scalar.value << 2 | UInt32(options.rawValue)
        if let cached = foldCache.withLock({ $0[key] }) { return cached }
        let result = computeFold(scalar, options: options)
        foldCache.withLock { cache in
            if cache.count > 65_536 { cache.removeAll(keepingCapacity: true) }
            cache[key] = result
        }
        return result
    }

    private static func computeFold(_ scalar: Unicode.Scalar, options: Options) -> [Unicode.Scalar] {
        var result: [Unicode.Scalar] = []
        switch (options.contains(.caseInsensitive), options.contains(.diacriticInsensitive)) {
        case (true, true):
            // d(c(d(s))): decompose first so precomposed capitals lose their marks, lowercase, and
            // decompose again (a lowercase mapping can bring marks back, as İ → i̇).
            var lowered: [Unicode.Scalar] = []
            for s in withoutDiacritics(scalar) { lowered.append(contentsOf: s.properties.lowercaseMapping.unicodeScalars) }
            for s in lowered { result.append(contentsOf: withoutDiacritics(s)) }
        case (true, false):
            result.append(contentsOf: scalar.properties.lowercaseMapping.unicodeScalars)
        case (false, true):
            result = withoutDiacritics(scalar)
        case (false, false):
            result = [scalar]
        }
        return result
    }

    /// The scalar decomposed canonically without its combining (non-zero combining class) scalars.
    private static func withoutDiacritics(_ scalar: Unicode.Scalar) -> [Unicode.Scalar] {
        if scalar.isASCII { return [scalar] }
        let decomposed = String(scalar).decomposedStringWithCanonicalMapping.unicodeScalars
        return decomposed.filter { $0.properties.canonicalCombiningClass == .notReordered }
    }
}
