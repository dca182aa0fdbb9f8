import Foundation
import Testing
@testable import UbiquityCore

@Suite struct PredicateEvaluationTests {
    let report = PredicateTestItem.file("Report Final.TXT", size: 1500, created: 1_700_000_000)
    let photo = PredicateTestItem.file("Crème brûlée.jpg", size: 2_000_000, created: 1_600_000_000, uploaded: false)
    let folder = PredicateTestItem.file("Projects", size: 0, isDirectory: true)
    let bare = PredicateTestItem([.fsName: .string("bare")])

    private func check(_ format: String, _ item: PredicateTestItem, _ expected: Bool,
                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        let predicate = try QueryPredicate(format: format)
        #expect(predicate.evaluate(with: item) == expected, "\(format)", sourceLocation: sourceLocation)
    }

    @Test func equalityAndOrdering() throws {
        try check("kMDItemFSSize == 1500", report, true)
        try check("kMDItemFSSize == 1500.0", report, true)
        try check("kMDItemFSSize != 1500", report, false)
        try check("kMDItemFSSize > 1499.5", report, true)
        try check("kMDItemFSSize >= 1500 AND kMDItemFSSize <= 1500", report, true)
        try check("kMDItemFSSize < 1500", report, false)
        try check("kMDItemFSSize BETWEEN {1000, 1500}", report, true)
        try check("kMDItemFSSize BETWEEN {1501, 2000}", report, false)
        try check("kMDItemFSSize IN {1, 1500}", report, true)
        try check("kMDItemFSName == 'Report Final.TXT'", report, true)
        try check("kMDItemFSName == 'report final.txt'", report, false)
        try check("kMDItemFSName ==[c] 'report final.txt'", report, true)
        try check("kMDItemFSName < 'S'", report, true)
        try check("kMDItemFSName < 'a'", report, true)  // code-point order: uppercase first
        try check("kMDItemFSName <[c] 'a'", report, false)
        try check("kMDItemIsDirectory == YES", folder, true)
        try check("kMDItemIsDirectory == 1", folder, true)
        try check("kMDItemIsDirectory == NO", report, true)
        try check("NSMetadataUbiquitousItemIsUploadedKey == NO", photo, true)
        try check("NSMetadataUbiquitousItemPercentUploadedKey > 42", photo, true)
    }

    @Test func dates() throws {
        try check("kMDItemFSCreationDate == CAST('2023-11-14T22:13:20Z', 'NSDate')", report, true)
        try check("kMDItemFSCreationDate > CAST('2023-01-01', 'NSDate')", report, true)
        try check("kMDItemFSCreationDate > CAST('2023-01-01', 'NSDate')", photo, false)
        try check("kMDItemFSCreationDate == CAST(721692800, 'NSDate')", report, true)
        try check("kMDItemFSCreationDate < kMDItemFSContentChangeDate", report, true)
        try check("kMDItemFSCreationDate < now()", report, true)
        try check("kMDItemFSCreationDate > $time.now(-3600)", report, false)
        try check("kMDItemFSCreationDate BETWEEN {$time.iso(2023-01-01), $time.today}", report, true)
        let fixedNow = Date(timeIntervalSince1970: 1_700_000_030)
        let recent = try QueryPredicate(format: "kMDItemFSCreationDate > $time.now(-60)")
        #expect(recent.evaluate(with: report, now: fixedNow))
        #expect(!recent.evaluate(with: report, now: fixedNow.addingTimeInterval(60)))
    }

    @Test func strings() throws {
        try check("kMDItemFSName BEGINSWITH 'Report'", report, true)
        try check("kMDItemFSName BEGINSWITH 'report'", report, false)
        try check("kMDItemFSName BEGINSWITH[c] 'report'", report, true)
        try check("kMDItemFSName ENDSWITH[c] '.txt'", report, true)
        try check("kMDItemFSName CONTAINS ' Fin'", report, true)
        try check("kMDItemFSName CONTAINS ''", report, true)
        try check("kMDItemFSName LIKE '*.TXT'", report, true)
        try check("kMDItemFSName LIKE 'Report?Final.*'", report, true)
        try check("kMDItemFSName LIKE 'Report?Final'", report, false)
        try check("kMDItemFSName LIKE[c] 'r*t'", report, true)
        try check("kMDItemFSName LIKE '*'", report, true)
        try check("kMDItemFSName MATCHES 'Report .*\\\\.TXT'", report, true)
        try check("kMDItemFSName MATCHES 'Report'", report, false)  // whole string
        try check("kMDItemFSName MATCHES[c] 'report final\\\\.txt'", report, true)
        try check("kMDItemFSName CONTAINS 'creme'", photo, false)
        try check("kMDItemFSName CONTAINS[d] 'Creme brulee'", photo, true)
        try check("kMDItemFSName CONTAINS[cd] 'CREME BRULEE'", photo, true)
        try check("kMDItemFSName ==[cd] 'creme brulee.JPG'", photo, true)
        try check("kMDItemFSName MATCHES[cd] 'creme.*'", photo, true)
        try check("'Final' IN kMDItemFSName", report, true)
        try check("kMDItemFSName IN[c] {'x', 'report final.txt'}", report, true)
        try check("kMDItemFSName IN 'Report Final.TXT and more'", report, true)
        try check("kMDItemPath BEGINSWITH '/c/Documents/'", report, true)
        try check("kMDItemURL ENDSWITH 'Report%20Final.TXT'", report, true)
        try check("kMDItemURL ENDSWITH 'Projects/'", folder, true)
        try check("* ==[c] 'projects'", folder, true)
        try check("* == 'nothing'", folder, false)
    }

    @Test func contentTypeTree() throws {
        try check("kMDItemContentTypeTree == 'public.text'", report, true)
        try check("ANY kMDItemContentTypeTree == 'public.image'", photo, true)
        try check("'public.image' IN kMDItemContentTypeTree", photo, true)
        try check("kMDItemContentTypeTree CONTAINS 'public.image'", report, false)
        try check("kMDItemContentTypeTree CONTAINS 'public'", report, false)  // membership, not substring
        try check("ANY kMDItemContentTypeTree CONTAINS 'image'", photo, true)  // explicit ANY: per element
        try check("ALL kMDItemContentTypeTree BEGINSWITH 'public.'", report, true)
        try check("ALL kMDItemContentTypeTree BEGINSWITH 'public.p'", report, false)
        try check("NONE kMDItemContentTypeTree == 'public.image'", report, true)
        try check("kMDItemContentTypeTree IN {'public.image', 'public.folder'}", folder, true)
        try check("kMDItemContentTypeTree == nil", bare, true)
        try check("kMDItemContentTypeTree != nil", report, true)
        try check("ANY kMDItemContentTypeTree == 'public.text'", bare, false)
        try check("NONE kMDItemContentTypeTree == 'public.text'", bare, true)
    }

    @Test func missingValues() throws {
        try check("kMDItemFSSize == nil", bare, true)
        try check("kMDItemFSSize != nil", bare, false)
        try check("kMDItemFSName != nil", bare, true)
        try check("kMDItemFSSize > 0", bare, false)
        try check("kMDItemFSSize < 0", bare, false)
        try check("NOT kMDItemFSSize > 0", bare, true)
        try check("kMDItemFSSize != 5", bare, true)
        try check("kMDItemFSSize == 5", bare, false)
        try check("kMDItemPath BEGINSWITH '/'", bare, false)
        try check("NOT kMDItemPath BEGINSWITH '/'", bare, true)
        try check("kMDItemFSSize IN {nil, 3}", bare, true)
        try check("kMDItemFSSize BETWEEN {nil, 3}", report, false)
        try check("kMDItemFSName > nil", report, false)
    }

    @Test func logic() throws {
        try check("kMDItemFSSize > 1 AND kMDItemIsDirectory == NO", report, true)
        try check("kMDItemFSSize > 1 AND kMDItemIsDirectory == YES", report, false)
        try check("kMDItemFSSize > 1e9 OR kMDItemIsDirectory == NO", report, true)
        try check("NOT (kMDItemFSSize > 1e9 OR kMDItemIsDirectory == NO)", report, false)
        try check("TRUEPREDICATE", bare, true)
        try check("FALSEPREDICATE", bare, false)
        try check("NOT FALSEPREDICATE AND TRUEPREDICATE", bare, true)
        try check("1 == 1", bare, true)
        try check("'a' < 'b'", bare, true)
    }
}

@Suite struct PredicateStringMatchTests {
    typealias M = PredicateStringMatch

    @Test func folding() {
        #expect(M.fold("Crème Brûlée") == "creme brulee")
        #expect(M.fold("ÅNGSTRÖM") == "angstrom")
        #expect(M.fold("İstanbul") == "istanbul")
        #expect(M.fold("ÉCOLE", options: .caseInsensitive) == "école".decomposedStringWithCanonicalMapping.precomposedStringWithCanonicalMapping)
        #expect(M.fold("École", options: .diacriticInsensitive) == "Ecole")
        #expect(M.fold("e\u{301}") == "e")
        #expect(M.fold("Emoji 😀 ❤️") == "emoji 😀 ❤️")
        #expect(M.fold("abc", options: []) == "abc")
        // Folding works scalar by scalar, so a substring folds to a substring.
        let text = "Ünïcödé Çàsé"
        let folded = M.fold(text)
        let scalars = Array(text.unicodeScalars)
        for start in 0..<scalars.count {
            for end in (start + 1)...scalars.count {
                let piece = M.fold(String(String.UnicodeScalarView(scalars[start..<end])))
                #expect(folded.contains(piece) || piece.isEmpty)
            }
        }
    }

    @Test func scalarSemantics() {
        // Precomposed and decomposed é are different strings without [d].
        #expect(!M.equal("\u{e9}", "e\u{301}", options: []))
        #expect(M.equal("\u{e9}", "e\u{301}", options: .diacriticInsensitive))
        #expect(M.compare("B", "a", options: []) < 0)
        #expect(M.compare("B", "a", options: .caseInsensitive) > 0)
        #expect(M.compare("é", "z", options: []) > 0)
        #expect(M.compare("ab", "abc", options: []) < 0)
    }

    @Test func like() {
        #expect(M.matches(.like, options: [], value: "a*b", pattern: "a\\*b"))
        #expect(!M.matches(.like, options: [], value: "axb", pattern: "a\\*b"))
        #expect(M.matches(.like, options: [], value: "a?b", pattern: "a\\?b"))
        #expect(M.matches(.like, options: [], value: "", pattern: "*"))
        #expect(!M.matches(.like, options: [], value: "", pattern: "?"))
        #expect(M.matches(.like, options: [], value: "abcabc", pattern: "*abc"))
        #expect(M.matches(.like, options: [], value: "mississippi", pattern: "m*iss*ppi"))
        #expect(!M.matches(.like, options: [], value: "mississippi", pattern: "m*iss*ppx"))
        #expect(M.matches(.like, options: [], value: "😀x", pattern: "?x"))
        #expect(M.matches(.like, options: .caseInsensitive, value: "README.MD", pattern: "*.md"))
        #expect(!M.matches(.like, options: [], value: "noext", pattern: "*.*"))
        #expect(M.longestLikeLiteral("*ab*cdef?g\\*h") == "cdef")
    }

    @Test func regex() {
        #expect(M.matches(.matches, options: [], value: "abc123", pattern: "[a-z]+\\d+"))
        #expect(!M.matches(.matches, options: [], value: "abc123x", pattern: "[a-z]+\\d+"))
        #expect(M.matches(.matches, options: .caseInsensitive, value: "ABC", pattern: "abc"))
        #expect(!M.matches(.matches, options: [], value: "abc", pattern: "("))
        #expect(M.matches(.matches, options: [], value: "a\nb", pattern: "a\\nb"))
    }
}
