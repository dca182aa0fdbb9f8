// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A token of a CloudKit query predicate (the NSPredicate format-string subset `CKQuery` takes).
struct CloudKitPredicateToken: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// A key path or a keyword (keywords are matched case-insensitively by the parser).
        case identifier(String)
        /// `#name`: a key that is never a keyword.
        case escapedIdentifier(String)
        /// `distanceToLocation:fromLocation:` and other selector-style function names.
        case function(String)
        /// A quoted string, escapes resolved.
        case string(String)
        /// An integer literal.
        case integer(Int64)
        /// A floating-point literal.
        case double(Double)
        /// `%@`, `%K`, `%d`…: the conversion letters without the `%`.
        case format(String)
        /// `( ) { } [ ] , == != < <= > >= && || !` (normalised spellings).
        case symbol(String)
        /// The end of the input.
        case end
    }

    var kind: Kind
    /// 1-based column (in Unicode scalars).
    var column: Int
    /// The source text.
    var text: String

    /// `'text'` or `end of input`, for messages.
    var described: String {
        switch kind {
        case .end: return "end of input"
        case .string: return "string \(text)"
        default: return "'\(text)'"
        }
    }
}

/// Splits a predicate format string into tokens; errors name the column.
struct CloudKitPredicateLexer {
    private let scalars: [Unicode.Scalar]
    private var index = 0

    init(_ text: String) { scalars = Array(text.unicodeScalars) }

    static func error(_ column: Int, _ message: String) -> CloudKitError {
        CloudKitError(.invalidArguments, "predicate: column \(column): \(message)")
    }

    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        index + offset < scalars.count ? scalars[index + offset] : nil
    }

    private func text(from start: Int) -> String {
        String(String.UnicodeScalarView(scalars[start..<index]))
    }

    static func isIdentifierStart(_ s: Unicode.Scalar) -> Bool { s == "_" || s.properties.isAlphabetic }
    static func isIdentifierPart(_ s: Unicode.Scalar) -> Bool {
        isIdentifierStart(s) || s.properties.numericType != nil || s == "." || s == "@"
    }

    /// Every token, ending with `.end`.
    mutating func tokenize() throws -> [CloudKitPredicateToken] {
        var tokens: [CloudKitPredicateToken] = []
        while true {
            let token = try next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private mutating func next() throws -> CloudKitPredicateToken {
        while let s = peek(), s.properties.isWhitespace { index += 1 }
        let start = index
        let column = start + 1
        guard let s = peek() else { return CloudKitPredicateToken(kind: .end, column: column, text: "") }

        func symbol(_ length: Int, _ normalized: String) -> CloudKitPredicateToken {
            index += length
            return CloudKitPredicateToken(kind: .symbol(normalized), column: column, text: text(from: start))
        }

        switch s {
        case "(", ")", "{", "}", "[", "]", ",": return symbol(1, String(s))
        case "=":
            if peek(1) == "=" { return symbol(2, "==") }
            if peek(1) == "<" { return symbol(2, "<=") }
            if peek(1) == ">" { return symbol(2, ">=") }
            return symbol(1, "==")
        case "!":
            if peek(1) == "=" { return symbol(2, "!=") }
            return symbol(1, "!")
        case "<":
            if peek(1) == "=" { return symbol(2, "<=") }
            if peek(1) == ">" { return symbol(2, "!=") }
            return symbol(1, "<")
        case ">":
            if peek(1) == "=" { return symbol(2, ">=") }
            return symbol(1, ">")
        case "&":
            if peek(1) == "&" { return symbol(2, "&&") }
            throw Self.error(column, "expected '&&', found '&'")
        case "|":
            if peek(1) == "|" { return symbol(2, "||") }
            throw Self.error(column, "expected '||', found '|'")
        case "'", "\"":
            return try stringLiteral(quote: s)
        case "%":
            index += 1
            var letters = ""
            while let c = peek(), "lhqz".unicodeScalars.contains(c), letters.count < 3 {
                letters.unicodeScalars.append(c)
                index += 1
            }
            guard let conversion = peek(), "@Kdiuxf".unicodeScalars.contains(conversion) else {
                throw Self.error(column, "expected %@, %K, %d or %f, found '\(text(from: start))\(peek().map { String($0) } ?? "")'")
            }
            letters.unicodeScalars.append(conversion)
            index += 1
            return CloudKitPredicateToken(kind: .format(letters), column: column, text: text(from: start))
        case "#":
            index += 1
            guard let first = peek(), Self.isIdentifierStart(first) else { throw Self.error(column, "expected a name after '#'") }
            while let c = peek(), Self.isIdentifierPart(c) { index += 1 }
            return CloudKitPredicateToken(kind: .escapedIdentifier(text(from: start + 1)), column: column, text: text(from: start))
        case "$":
            throw Self.error(column, "substitution variables ($NAME) are not supported in CloudKit queries; pass the value as an argument (%@)")
        default:
            break
        }
        if ("0"..."9").contains(s) || (s == "-" || s == "+" || s == ".") && peek(1).map({ ("0"..."9").contains($0) }) == true {
            return try number()
        }
        if Self.isIdentifierStart(s) {
            while let c = peek(), Self.isIdentifierPart(c) { index += 1 }
            // Selector-style function names: `distanceToLocation:fromLocation:`.
            if peek() == ":" {
                while let c = peek(), Self.isIdentifierPart(c) || c == ":" { index += 1 }
                return CloudKitPredicateToken(kind: .function(text(from: start)), column: column, text: text(from: start))
            }
            let name = text(from: start)
            return CloudKitPredicateToken(kind: .identifier(name), column: column, text: name)
        }
        throw Self.error(column, "unexpected character '\(s)'")
    }

    private mutating func number() throws -> CloudKitPredicateToken {
        let start = index
        let column = start + 1
        if peek() == "-" || peek() == "+" { index += 1 }
        var isInteger = true
        while let c = peek(), ("0"..."9").contains(c) { index += 1 }
        if peek() == ".", let after = peek(1), ("0"..."9").contains(after) {
            isInteger = false
            index += 1
            while let c = peek(), ("0"..."9").contains(c) { index += 1 }
        }
        if let e = peek(), e == "e" || e == "E" {
            let save = index
            index += 1
            if peek() == "-" || peek() == "+" { index += 1 }
            if let d = peek(), ("0"..."9").contains(d) {
                isInteger = false
                while let c = peek(), ("0"..."9").contains(c) { index += 1 }
            } else {
                index = save
            }
        }
        let literal = text(from: start)
        if let next = peek(), Self.isIdentifierStart(next) {
            throw Self.error(column, "malformed number '\(literal)\(next)'")
        }
        if isInteger, let value = Int64(literal) {
            return CloudKitPredicateToken(kind: .integer(value), column: column, text: literal)
        }
        guard let value = Double(literal), value.isFinite else { throw Self.error(column, "number '\(literal)' is out of range") }
        return CloudKitPredicateToken(kind: .double(value), column: column, text: literal)
    }

    private mutating func stringLiteral(quote: Unicode.Scalar) throws -> CloudKitPredicateToken {
        let start = index
        let column = start + 1
        index += 1
        var value = String.UnicodeScalarView()
        while true {
            guard let c = peek() else { throw Self.error(column, "unterminated string: expected a closing \(quote)") }
            index += 1
            if c == quote { break }
            if c == "\\" {
                guard let escaped = peek() else { throw Self.error(column, "unterminated string: expected a closing \(quote)") }
                index += 1
                switch escaped {
                case "n": value.append("\n")
                case "t": value.append("\t")
                case "r": value.append("\r")
                case "0": value.append("\0")
                case "u":
                    let hexStart = index
                    while index - hexStart < 4, let h = peek(), h.properties.isASCIIHexDigit { index += 1 }
                    guard index - hexStart == 4, let code = UInt32(text(from: hexStart), radix: 16), let scalar = Unicode.Scalar(code) else {
                        throw Self.error(hexStart, "expected four hex digits after \\u")
                    }
                    value.append(scalar)
                default: value.append(escaped)
                }
                continue
            }
            value.append(c)
        }
        return CloudKitPredicateToken(kind: .string(String(value)), column: column, text: text(from: start))
    }
}
