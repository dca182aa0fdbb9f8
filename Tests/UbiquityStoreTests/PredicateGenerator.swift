import Foundation
import UbiquityCore

/// Generates random rows and random (valid) predicates over them.
struct PredicateGenerator {
    var rng: PredicateStoreRNG

    static let words = [
        "Report", "report", "REPORT", "résumé", "Résumé", "re\u{301}sume\u{301}", "CRÈME", "crème brûlée", "naïve",
        "Ünïcödé", "straße", "İstanbul", "ΣΊΣΥΦΟΣ", "σίσυφος", "日本語", "notes", "Notes 2024", "draft", "final",
        "a", "ab", "abc", "x y", "tab\there", "line\nbreak", "😀", "❤️", "👩‍👩‍👧", "100%", "quote's", "\"dq\"",
        "back\\slash", "star*", "what?", "_under_", "-dash-", "  ", "ÅÄÖ", "åäö", "ǅ", "ﬁle",
    ]
    static let extensions = ["", ".txt", ".TXT", ".md", ".jpg", ".png", ".pdf", ".swift", ".json", ".unknownext", ".tar.gz", "."]
    static let statuses = UbiquitousDownloadingStatus.allCases.map(\.rawValue)
    static let knownTypes = ["public.text", "public.image", "public.data", "public.item", "public.content", "public.folder",
                             "public.plain-text", "public.source-code", "com.adobe.pdf", "public.archive", "dyn.unknown", ""]

    mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &rng) < percent }
    mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &rng)] }
    mutating func maybe<T>(_ value: T, nilPercent: Int = 8) -> T? { chance(nilPercent) ? nil : value }

    // MARK: Rows

    mutating func name() -> String {
        var parts: [String] = []
        for _ in 0..<Int.random(in: 1...3, using: &rng) { parts.append(pick(Self.words)) }
        return parts.joined(separator: pick([" ", "", "_", "-"])) + pick(Self.extensions)
    }

    mutating func rows(count: Int) -> [PredicateTestRow] {
        (1...count).map { id in
            let isDirectory = chance(15)
            let name = maybe(self.name(), nilPercent: 4)
            var contentType: String? = name.map { ContentType.identifier(forFileName: $0, isDirectory: isDirectory) }
            if chance(10) { contentType = pick(Self.knownTypes) }
            if chance(4) { contentType = nil }
            let created = Double(1_600_000_000 + Int.random(in: 0...100_000_000, using: &rng)) + pick([0, 0.5, 0.25])
            let folder = pick(["/c/Documents/", "/c/Documents/Sub Dir/", "/c/Data/", "/c/Documents/é/"])
            return PredicateTestRow(
                id: Int64(id), path: name.map { folder + $0 }, name: name,
                size: maybe(isDirectory ? 0 : Int64.random(in: 0...5000, using: &rng)),
                creationDate: maybe(created), contentChangeDate: maybe(created + Double(Int.random(in: -10...10_000, using: &rng))),
                contentType: contentType, isDirectory: maybe(isDirectory, nilPercent: 3),
                isUploaded: maybe(chance(70)), isUploading: maybe(chance(20)),
                percentUploaded: maybe(Double(Int.random(in: 0...200, using: &rng)) / 2),
                downloadingStatus: maybe(pick(Self.statuses)), isDownloading: maybe(chance(10)),
                percentDownloaded: maybe(Double(Int.random(in: 0...200, using: &rng)) / 2),
                hasUnresolvedConflicts: maybe(chance(5)), isExcludedFromBackup: maybe(chance(5)))
        }
    }

    // MARK: Predicates

    /// A random predicate format with its arguments.
    struct Format {
        var text = ""
        var arguments: [any Sendable] = []
    }

    var rows: [PredicateTestRow] = []

    mutating func predicate(depth: Int = 0) -> Format {
        let roll = Int.random(in: 0..<100, using: &rng)
        if depth >= 3 || roll < 55 { return comparison() }
        if roll < 65 {
            let inner = predicate(depth: depth + 1)
            return Format(text: pick(["NOT ", "!", "NOT "]) + "(" + inner.text + ")", arguments: inner.arguments)
        }
        if roll < 67 { return Format(text: pick(["TRUEPREDICATE", "FALSEPREDICATE"])) }
        let a = predicate(depth: depth + 1), b = predicate(depth: depth + 1)
        let op = pick([" AND ", " OR ", " && ", " || ", " and "])
        let wrap = chance(50)
        return Format(text: (wrap ? "(" : "") + a.text + op + b.text + (wrap ? ")" : ""), arguments: a.arguments + b.arguments)
    }

    /// A string that the data contains in some form: a slice of an existing value, maybe re-cased.
    mutating func sampleString(for attribute: MetadataAttribute) -> String {
        let row = pick(rows)
        guard case .string(let value)? = row.metadataValue(for: attribute), !value.isEmpty, !chance(10) else {
            return pick(Self.words)
        }
        let scalars = Array(value.unicodeScalars)
        var start = 0, end = scalars.count
        if chance(60) {
            start = Int.random(in: 0..<scalars.count, using: &rng)
            end = Int.random(in: start...scalars.count, using: &rng)
        }
        var slice = String(String.UnicodeScalarView(scalars[start..<end]))
        switch Int.random(in: 0..<6, using: &rng) {
        case 0: slice = slice.uppercased()
        case 1: slice = slice.lowercased()
        case 2: slice = PredicateStringMatch.fold(slice)
        default: break
        }
        return slice
    }

    mutating func likePattern(for attribute: MetadataAttribute) -> String {
        var pattern = ""
        for scalar in sampleString(for: attribute).unicodeScalars {
            switch scalar {
            case "*", "?", "\\": pattern += "\\" + String(scalar)
            default:
                let r = Int.random(in: 0..<100, using: &rng)
                if r < 8 { pattern += "?" } else if r < 14 { pattern += "*" } else { pattern.unicodeScalars.append(scalar) }
            }
        }
        if chance(50) { pattern = "*" + pattern }
        if chance(50) { pattern += "*" }
        return pattern
    }

    mutating func regex(for attribute: MetadataAttribute) -> String {
        // A slice that starts or ends inside a character (a joiner, a combining mark, a variation
        // selector) would sit against a metacharacter, which the regex parser refuses as
        // confusable (`.*` then U+200D): a user's pattern starts and ends at characters.
        var sample = sampleString(for: attribute)
        func isInsideACharacter(_ scalar: Unicode.Scalar) -> Bool {
            scalar.properties.isGraphemeExtend || scalar.properties.isJoinControl || scalar.properties.isVariationSelector
        }
        while let first = sample.unicodeScalars.first, isInsideACharacter(first) { sample.unicodeScalars.removeFirst() }
        while let last = sample.unicodeScalars.last, isInsideACharacter(last) { sample.unicodeScalars.removeLast() }
        let literal = NSRegularExpression.escapedPattern(for: sample)
        return pick([".*\(literal).*", "\(literal).*", ".*\(literal)", literal, "[A-Za-z ]+\\..*", ".*\\d.*", "[^.]*", "(?s).*\(literal).*"])
    }

    static let modifiers = ["", "[c]", "[d]", "[cd]"]
    static let stringAttributes: [MetadataAttribute] = [.fsName, .displayName, .path, .url, .contentType, .downloadingStatus]
    static let numberAttributes: [MetadataAttribute] = [.fsSize, .percentUploaded, .percentDownloaded]
    static let dateAttributes: [MetadataAttribute] = [.fsCreationDate, .fsContentChangeDate]
    static let boolAttributes: [MetadataAttribute] = [.isDirectory, .isUbiquitous, .isUploaded, .isUploading, .isDownloading,
                                                      .isDownloaded, .hasUnresolvedConflicts, .isExcludedFromBackup]

    mutating func key(_ attribute: MetadataAttribute) -> String {
        pick([attribute.rawValue, attribute.rawValue, attribute.swiftConstantName])
    }

    mutating func comparison() -> Format {
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<40: return stringComparison()
        case 40..<58: return numberComparison()
        case 58..<72: return dateComparison()
        case 72..<84: return boolComparison()
        case 84..<99: return treeComparison()
        default: return Format(text: "* ==[c] %@", arguments: [sampleString(for: .fsName)])
        }
    }

    mutating func stringComparison() -> Format {
        let attribute = pick(Self.stringAttributes)
        let k = key(attribute)
        let mod = pick(Self.modifiers)
        switch Int.random(in: 0..<14, using: &rng) {
        case 0: return Format(text: "\(k) ==\(mod) %@", arguments: [sampleString(for: attribute)])
        case 1: return Format(text: "\(k) !=\(mod) %@", arguments: [sampleString(for: attribute)])
        case 2: return Format(text: "\(k) \(pick(["<", "<=", ">", ">="]))\(mod) %@", arguments: [sampleString(for: attribute)])
        case 3: return Format(text: "\(k) \(pick(["BEGINSWITH", "ENDSWITH", "CONTAINS"]))\(mod) %@", arguments: [sampleString(for: attribute)])
        case 4: return Format(text: "\(k) LIKE\(mod) %@", arguments: [likePattern(for: attribute)])
        case 5: return Format(text: "\(k) MATCHES\(mod) %@", arguments: [regex(for: attribute)])
        case 6: return Format(text: "\(k) IN\(mod) %@", arguments: [[sampleString(for: attribute), sampleString(for: attribute)]])
        case 7: return Format(text: "%@ IN\(mod) \(k)", arguments: [sampleString(for: attribute)])
        case 8: return Format(text: "\(k) BETWEEN\(mod) %@", arguments: [[sampleString(for: attribute), sampleString(for: attribute)].sorted()])
        case 9: return Format(text: "\(k) \(pick(["==", "!="])) nil")
        case 10: return Format(text: "%@ \(pick(["==", "!=", "<", ">="]))\(mod) \(k)", arguments: [sampleString(for: attribute)])
        case 11: return Format(text: "kMDItemPath \(pick(["ENDSWITH", "CONTAINS", "BEGINSWITH"]))\(mod) kMDItemFSName")
        case 12: return Format(text: "kMDItemFSName \(pick(["==", "!=", "<"]))\(mod) kMDItemDisplayName")
        default: return Format(text: "\(k) CONTAINS\(mod) %@", arguments: [String(sampleString(for: attribute).prefix(4))])
        }
    }

    mutating func number() -> String {
        let row = pick(rows)
        var base = Double(row.size ?? Int64.random(in: 0...5000, using: &rng))
        if chance(30) { base = row.percentUploaded ?? 50 }
        switch Int.random(in: 0..<5, using: &rng) {
        case 0: return String(Int64(base))
        case 1: return String(Int64(base) + Int64.random(in: -2...2, using: &rng))
        case 2: return "\(base + 0.5)"
        case 3: return "0x" + String(Int64(base), radix: 16)
        default: return "\(base)"
        }
    }

    mutating func numberComparison() -> Format {
        let k = key(pick(Self.numberAttributes))
        switch Int.random(in: 0..<7, using: &rng) {
        case 0: return Format(text: "\(k) \(pick(["==", "!=", "<", "<=", ">", ">=", "=<", "=>", "<>"])) \(number())")
        case 1: return Format(text: "\(number()) \(pick(["<", ">=", "=="])) \(k)")
        case 2:
            let a = number(), b = number()
            return Format(text: "\(k) BETWEEN {\(a), \(b)}")
        case 3: return Format(text: "\(k) IN {\(number()), \(number()), \(chance(30) ? "nil" : number())}")
        case 4: return Format(text: "\(k) \(pick(["==", "!="])) nil")
        case 5: return Format(text: "\(k) > %@", arguments: [Double(number()) ?? 1])
        default: return Format(text: "\(k) \(pick(["==", "!="])) \(pick(["YES", "NO", "1", "0"]))")
        }
    }

    mutating func date() -> String {
        let row = pick(rows)
        let unix = row.creationDate ?? 1_650_000_000
        let offset = pick([0.0, 0.0, 1, -1, 0.5, 3600, -86_400])
        let reference = unix + offset - 978_307_200
        if chance(25) {
            let date = Date(timeIntervalSince1970: (unix + offset).rounded())
            return "CAST('\(ISO8601DateFormatter().string(from: date))', 'NSDate')"
        }
        if chance(10) { return "$time.now(\(pick([-86_400 * 400, -3600, 0])))" }
        return "CAST(\(reference), 'NSDate')"
    }

    mutating func dateComparison() -> Format {
        let k = key(pick(Self.dateAttributes))
        switch Int.random(in: 0..<6, using: &rng) {
        case 0, 1: return Format(text: "\(k) \(pick(["==", "!=", "<", "<=", ">", ">="])) \(date())")
        case 2: return Format(text: "\(k) BETWEEN {\(date()), \(date())}")
        case 3: return Format(text: "kMDItemFSCreationDate \(pick(["<", "==", ">=", "!="])) kMDItemFSContentChangeDate")
        case 4: return Format(text: "\(k) \(pick(["==", "!="])) nil")
        default: return Format(text: "\(k) > %@", arguments: [Date(timeIntervalSince1970: pick(rows).creationDate ?? 1_650_000_000)])
        }
    }

    mutating func boolComparison() -> Format {
        let k = key(pick(Self.boolAttributes))
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return Format(text: "\(k) \(pick(["==", "!="])) \(pick(["YES", "NO", "TRUE", "false", "1", "0", "nil"]))")
        case 1: return Format(text: "\(k) == %@", arguments: [chance(50)])
        case 2: return Format(text: "\(k) IN {YES, nil}")
        default: return Format(text: "\(pick(["YES", "NO"])) == \(k)")
        }
    }

    mutating func treeComparison() -> Format {
        let k = key(.contentTypeTree)
        let type = chance(80) ? pick(Self.knownTypes) : (pick(rows).contentType ?? "public.text")
        let mod = chance(80) ? "" : pick(Self.modifiers)
        let quantifier = pick(["", "", "ANY ", "SOME ", "ALL ", "NONE "])
        switch Int.random(in: 0..<8, using: &rng) {
        case 0, 1: return Format(text: "\(quantifier)\(k) ==\(mod) %@", arguments: [type])
        case 2: return Format(text: "%@ IN \(k)", arguments: [type])
        case 3: return Format(text: "\(k) CONTAINS\(mod) %@", arguments: [chance(50) ? type : String(type.prefix(8))])
        case 4: return Format(text: "\(quantifier)\(k) \(pick(["BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "!=", "<"]))\(mod) %@",
                              arguments: [String(type.prefix(Int.random(in: 0...12, using: &rng)))])
        case 5: return Format(text: "\(quantifier)\(k) IN\(mod) %@", arguments: [[type, pick(Self.knownTypes)]])
        case 6: return Format(text: "\(k) \(pick(["==", "!="])) nil")
        default: return Format(text: "\(quantifier)\(k) MATCHES\(mod) %@", arguments: ["public\\..*"])
        }
    }
}
