/// A metadata query predicate, written in Apple's predicate format-string language
/// (`NSPredicate(format:)`): `kMDItemFSName ENDSWITH[c] '.txt' AND kMDItemFSSize > 1000`.
///
/// Parsing checks the whole predicate: every error is a `UbiquityError(.invalidArgument, …)`
/// whose message names the 1-based column (counted in Unicode scalars) and what was expected.
/// A predicate can be evaluated against any ``MetadataAttributeProvider``
/// (``evaluate(with:)``) or translated to an SQL `WHERE` expression (``sql(using:)``); both
/// give the same answer.
public struct QueryPredicate: Sendable, Hashable, CustomStringConvertible {
    /// The syntax tree type (``PredicateExpression``; Foundation has a protocol of that name, so
    /// code that imports both can write `QueryPredicate.Expression`).
    public typealias Expression = PredicateExpression

    /// The syntax tree.
    public let expression: PredicateExpression

    /// Wraps a tree that came from the parser (or from substituting one).
    init(validated expression: PredicateExpression) {
        self.expression = expression
    }

    /// Parses `format`, replacing `%@`, `%K`, `%d`… with `arguments` in order, as
    /// `NSPredicate(format:_:)` does.
    ///
    /// `%@` takes a `String`, any integer or floating-point number, `Bool`, `Date`, `URL`
    /// (compared as its absolute string), an array of those (an aggregate), `MetadataValue`, or
    /// `nil` (an empty `Optional`). `%K` takes an attribute name (`String`) or a
    /// `MetadataAttribute`. `%d %i %ld %lld %u` take integers and `%f %lf` numbers.
    public init(format: String, _ arguments: any Sendable...) throws {
        try self.init(format: format, argumentArray: arguments)
    }

    /// Parses `format` with `arguments` given as an array.
    public init(format: String, argumentArray: [any Sendable]) throws {
        var parser = try PredicateParser(format: format, arguments: argumentArray)
        self.init(validated: try parser.parse())
    }

    /// Always true (`TRUEPREDICATE`).
    public static let truePredicate = QueryPredicate(validated: .constant(true))
    /// Always false (`FALSEPREDICATE`).
    public static let falsePredicate = QueryPredicate(validated: .constant(false))

    /// The predicate's canonical format string; parsing it gives back an equal predicate.
    public var predicateFormat: String { PredicateFormatter.format(expression) }

    /// ``predicateFormat``.
    public var description: String { predicateFormat }

    /// Every attribute the predicate refers to (`*` counts as every string attribute).
    public var attributes: Set<MetadataAttribute> {
        var result: Set<MetadataAttribute> = []
        forEachOperand { operand in
            switch operand {
            case .attribute(let attribute): result.insert(attribute)
            case .anyAttribute: result.formUnion(QueryPredicate.anyAttributeExpansion)
            default: break
            }
        }
        return result
    }

    /// The names of the `$VARIABLES` not yet substituted.
    public var variableNames: Set<String> {
        var result: Set<String> = []
        forEachOperand { operand in
            if case .variable(let name) = operand { result.insert(name) }
        }
        return result
    }

    /// The conversions of `format`'s `%` substitutions, in order, without the `%` (`@`, `K`,
    /// `d`, `ld`, `f`…), as the parser reads them; for callers that hold arguments as text.
    public static func formatSpecifiers(in format: String) throws -> [String] {
        var lexer = PredicateLexer(format)
        return try lexer.tokenize().compactMap { token in
            if case .format(let letters) = token.kind { letters } else { nil }
        }
    }

    /// Calls `body` with every operand of every comparison, aggregates' elements included
    /// (iteratively: nesting depth never grows the stack).
    private func forEachOperand(_ body: (PredicateOperand) -> Void) {
        func visit(_ operand: PredicateOperand) {
            body(operand)
            if case .aggregate(let elements) = operand { elements.forEach(visit) }
        }
        var stack = [expression]
        while let next = stack.popLast() {
            switch next {
            case .constant: break
            case .not(let inner): stack.append(inner)
            case .and(let parts), .or(let parts): stack.append(contentsOf: parts)
            case .comparison(let c): visit(c.left); visit(c.right)
            }
        }
    }

    /// The attributes `*` stands for: every string attribute.
    public static let anyAttributeExpansion: [MetadataAttribute] =
        MetadataAttribute.allCases.filter { $0.valueKind == .string }

    /// The `kMDItemURL` string of an item at `path`: `file://` + the percent-encoded path, with a
    /// trailing slash for folders (what `URL(fileURLWithPath:isDirectory:).absoluteString` gives).
    /// Attribute providers and the SQL function `ubq_file_url` both use this.
    public static func fileURLString(forPath path: String, isDirectory: Bool) -> String {
        var bytes: [UInt8] = Array("file://".utf8)
        bytes.reserveCapacity(path.utf8.count + 16)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in path.utf8 {
            if urlPathAllowed[Int(byte)] {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 15)])
            }
        }
        if isDirectory, bytes.last != UInt8(ascii: "/") { bytes.append(UInt8(ascii: "/")) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The bytes a file URL path keeps as they are (RFC 3986 `pchar` and `/`).
    private static let urlPathAllowed: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for byte in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/!$&'()*+,;=:@".utf8 {
            table[Int(byte)] = true
        }
        return table
    }()

    /// `"text"` with the escapes the lexer understands (`\"`, `\\`, `\n`, `%%`…).
    static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case "%": out += "%%"
            default:
                if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
