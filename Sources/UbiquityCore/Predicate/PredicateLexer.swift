import Foundation

/// A token of a predicate format string (shared with the CloudKit client's query translation).
package struct PredicateToken: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        /// A name: a key path or a keyword (keywords are recognised by the parser, case-insensitively).
        case identifier(String)
        /// `#name`: a name that is never a keyword.
        case escapedIdentifier(String)
        /// A quoted string, escapes resolved.
        case string(String)
        /// An integer literal.
        case integer(Int64)
        /// A floating-point literal (or an integer too large for Int64).
        case double(Double)
        /// `$name`.
        case variable(String)
        /// A selector-style function name: `distanceToLocation:fromLocation:`.
        case function(String)
        /// The raw text between the parentheses of `$time.iso(…)`.
        case timeArgument(String)
        /// `%@`, `%K`, `%d`…: the conversion letters without the `%`.
        case format(String)
        /// Punctuation and operators: `( ) { } [ ] , == != < <= > >= && || ! *` (normalised spellings).
        case symbol(String)
        /// The end of the input.
        case end
    }

    package var kind: Kind
    /// 1-based column (in Unicode scalars) of the first character.
    package var column: Int
    /// The source text of the token.
    package var text: String

    /// A short description for error messages: `'foo'`, `end of input`.
    package var described: String {
        switch kind {
        case .end: "end of input"
        case .string: "string \(text)"
        default: "'\(text)'"
        }
    }
}

/// Splits a format string into tokens.
package struct PredicateLexer {
    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var pending: PredicateToken?

    package init(_ text: String) { scalars = Array(text.unicodeScalars) }

    private func error(_ column: Int, _ message: String) -> UbiquityError {
        UbiquityError(.invalidArgument, "predicate: column \(column): \(message)")
    }

    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        index + offset < scalars.count ? scalars[index + offset] : nil
    }

    private func text(from start: Int) -> String {
        String(String.UnicodeScalarView(scalars[start..<index]))
    }

    static func isIdentifierStart(_ s: Unicode.Scalar) -> Bool {
        s == "_" || s.properties.isAlphabetic
    }

    static func isIdentifierPart(_ s: Unicode.Scalar) -> Bool {
        isIdentifierStart(s) || s.properties.numericType != nil || s == "." || s == "@"
    }

    /// All tokens, ending with `.end`.
    package mutating func tokenize() throws(UbiquityError) -> [PredicateToken] {
        var tokens: [PredicateToken] = []
        while true {
            let token: PredicateToken
            if let queued = pending {
                token = queued
                pending = nil
            } else {
                token = try next()
            }
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private mutating func next() throws(UbiquityError) -> PredicateToken {
        while let s = peek(), s.properties.isWhitespace { index += 1 }
        let start = index
        let column = start + 1
        guard let s = peek() else { return PredicateToken(kind: .end, column: column, text: "") }

        func symbol(_ length: Int, _ normalized: String) -> PredicateToken {
            index += length
            return PredicateToken(kind: .symbol(normalized), column: column, text: text(from: start))
        }

        switch s {
        case "(", ")", "{", "}", "[", "]", ",", "*": return symbol(1, String(s))
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
            throw error(column, "expected '&&', found '&'")
        case "|":
            if peek(1) == "|" { return symbol(2, "||") }
            throw error(column, "expected '||', found '|'")
        case "'", "\"":
            return try stringLiteral(quote: s)
        case "%":
            return try formatSpecifier()
        case "$":
            index += 1
            guard let first = peek(), Self.isIdentifierStart(first) else {
                throw error(column, "expected a variable name after '$'")
            }
            while let c = peek(), Self.isIdentifierPart(c) { index += 1 }
            let name = String(text(from: start + 1))
            if name.lowercased() == "time.iso", peek() == "(" {
                let variable = PredicateToken(kind: .variable(name), column: column, text: text(from: start))
                let open = index
                index += 1
                while let c = peek(), c != ")" { index += 1 }
                guard peek() == ")" else { throw error(open + 1, "expected ')' to close '$time.iso('") }
                var raw = String(String.UnicodeScalarView(scalars[(open + 1)..<index])).trimmingCharacters(in: .whitespaces)
                if raw.count >= 2, let q = raw.first, q == "'" || q == "\"", raw.last == q { raw = String(raw.dropFirst().dropLast()) }
                index += 1
                pending = PredicateToken(kind: .timeArgument(raw), column: open + 1, text: text(from: open))
                return variable
            }
            return PredicateToken(kind: .variable(name), column: column, text: text(from: start))
        case "#":
            index += 1
            guard let first = peek(), Self.isIdentifierStart(first) else {
                throw error(column, "expected a name after '#'")
            }
            while let c = peek(), Self.isIdentifierPart(c) { index += 1 }
            return PredicateToken(kind: .escapedIdentifier(text(from: start + 1)), column: column,
                                  text: text(from: start))
        case "-", "+", "0"..."9":
            if s == "-" || s == "+" {
                guard let d = peek(1), ("0"..."9").contains(d) || (d == "." && peek(2).map { ("0"..."9").contains($0) } == true)
                else { throw error(column, "expected a number after '\(s)'") }
            }
            return try number()
        case ".":
            if let d = peek(1), ("0"..."9").contains(d) { return try number() }
            throw error(column, "unexpected character '.'")
        default:
            if Self.isIdentifierStart(s) {
                while let c = peek(), Self.isIdentifierPart(c) { index += 1 }
                // Selector-style function names: `distanceToLocation:fromLocation:`.
                if peek() == ":" {
                    while let c = peek(), Self.isIdentifierPart(c) || c == ":" { index += 1 }
                    return PredicateToken(kind: .function(text(from: start)), column: column, text: text(from: start))
                }
                let name = text(from: start)
                return PredicateToken(kind: .identifier(name), column: column, text: name)
            }
            let shown = s.properties.isWhitespace || s.value < 0x20 ? "U+\(String(s.value, radix: 16, uppercase: true))" : String(s)
            throw error(column, "unexpected character '\(shown)'")
        }
    }

    private mutating func formatSpecifier() throws(UbiquityError) -> PredicateToken {
        let start = index
        let column = start + 1
        index += 1
        let candidates = ["@", "K", "%", "lld", "lli", "llu", "ld", "li", "lu", "lf", "d", "i", "u", "f"]
        for candidate in candidates {
            let letters = Array(candidate.unicodeScalars)
            guard index + letters.count <= scalars.count,
                  Array(scalars[index..<(index + letters.count)]) == letters else { continue }
            index += letters.count
            if candidate == "%" { throw error(column, "'%%' is only meaningful inside a quoted string") }
            return PredicateToken(kind: .format(candidate), column: column, text: text(from: start))
        }
        let shown = peek().map { "%" + String($0) } ?? "%"
        throw error(column, "unsupported format specifier '\(shown)'; expected %@, %K, %d, %i, %ld, %lld, %u, %f or %lf")
    }

    private mutating func number() throws(UbiquityError) -> PredicateToken {
        let start = index
        let column = start + 1
        var negative = false
        if peek() == "-" || peek() == "+" { negative = peek() == "-"; index += 1 }
        // Hex, octal and binary integers.
        if peek() == "0", let p = peek(1), ["x", "X", "o", "O", "b", "B"].contains(p) {
            let radix = (p == "x" || p == "X") ? 16 : (p == "o" || p == "O") ? 8 : 2
            index += 2
            let digitsStart = index
            while let c = peek(), c.properties.isASCIIHexDigit || c == "_" { index += 1 }
            let digits = String(String.UnicodeScalarView(scalars[digitsStart..<index])).replacingOccurrences(of: "_", with: "")
            guard !digits.isEmpty, let magnitude = UInt64(digits, radix: radix) else {
                throw error(column, "malformed number '\(text(from: start))'")
            }
            if let next = peek(), Self.isIdentifierPart(next) {
                throw error(column, "malformed number '\(text(from: start))\(next)'")
            }
            let value: PredicateToken.Kind
            if negative {
                value = magnitude <= UInt64(Int64.max) + 1
                    ? .integer(magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)) : .double(-Double(magnitude))
            } else {
                value = magnitude <= UInt64(Int64.max) ? .integer(Int64(magnitude)) : .double(Double(magnitude))
            }
            return PredicateToken(kind: value, column: column, text: text(from: start))
        }
        var isDouble = false
        while let c = peek(), ("0"..."9").contains(c) { index += 1 }
        if peek() == ".", let d = peek(1), ("0"..."9").contains(d) {
            isDouble = true
            index += 1
            while let c = peek(), ("0"..."9").contains(c) { index += 1 }
        } else if peek() == ".", !(peek(1).map(Self.isIdentifierStart) ?? false) {
            // "1." is a valid float.
            isDouble = true
            index += 1
        }
        if let e = peek(), e == "e" || e == "E" {
            var lookahead = 1
            if let sign = peek(1), sign == "+" || sign == "-" { lookahead = 2 }
            if let d = peek(lookahead), ("0"..."9").contains(d) {
                isDouble = true
                index += lookahead
                while let c = peek(), ("0"..."9").contains(c) { index += 1 }
            }
        }
        let literal = text(from: start)
        if let next = peek(), Self.isIdentifierPart(next), next != "." || !isDouble {
            throw error(column, "malformed number '\(literal)\(next)'")
        }
        if !isDouble, let value = Int64(literal) {
            return PredicateToken(kind: .integer(value), column: column, text: literal)
        }
        guard let value = Double(literal), !value.isNaN else { throw error(column, "malformed number '\(literal)'") }
        return PredicateToken(kind: .double(value), column: column, text: literal)
    }

    private mutating func stringLiteral(quote: Unicode.Scalar) throws(UbiquityError) -> PredicateToken {
        let start = index
        let column = start + 1
        index += 1
        var value = String.UnicodeScalarView()
        while true {
            guard let c = peek() else {
                throw error(column, "unterminated string starting with \(quote == "'" ? "\"'\"" : "'\"'")")
            }
            index += 1
            if c == quote { break }
            if c == "%", peek() == "%" {
                index += 1
                value.append("%")
                continue
            }
            guard c == "\\" else { value.append(c); continue }
            let escapeColumn = index
            guard let e = peek() else {
                throw error(escapeColumn, "unterminated string starting with \(quote == "'" ? "\"'\"" : "'\"'")")
            }
            index += 1
            switch e {
            case "n": value.append("\n")
            case "t": value.append("\t")
            case "r": value.append("\r")
            case "0": value.append("\0")
            case "\\", "'", "\"": value.append(e)
            case "u":
                var code: UInt32 = 0
                for _ in 0..<4 {
                    guard let h = peek(), h.properties.isASCIIHexDigit, let digit = UInt32(String(h), radix: 16) else {
                        throw error(escapeColumn, "expected four hexadecimal digits after '\\u'")
                    }
                    code = code * 16 + digit
                    index += 1
                }
                // A UTF-16 surrogate pair written as two escapes.
                if (0xD800...0xDBFF).contains(code), peek() == "\\", peek(1) == "u" {
                    let save = index
                    index += 2
                    var low: UInt32 = 0
                    var ok = true
                    for _ in 0..<4 {
                        guard let h = peek(), h.properties.isASCIIHexDigit, let digit = UInt32(String(h), radix: 16) else {
                            ok = false
                            break
                        }
                        low = low * 16 + digit
                        index += 1
                    }
                    if ok, (0xDC00...0xDFFF).contains(low) {
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else {
                        index = save
                    }
                }
                guard let scalar = Unicode.Scalar(code) else {
                    throw error(escapeColumn, "'\\u\(String(code, radix: 16, uppercase: true))' is not a Unicode scalar")
                }
                value.append(scalar)
            default:
                // Unknown escapes keep the escaped character (so `\*` stays a LIKE escape).
                value.append("\\")
                value.append(e)
            }
        }
        return PredicateToken(kind: .string(String(value)), column: column, text: text(from: start))
    }
}
