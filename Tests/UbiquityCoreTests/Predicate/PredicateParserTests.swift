import Foundation
import Testing
@testable import UbiquityCore

@Suite struct PredicateParserTests {
    private func comparison(_ format: String, _ arguments: any Sendable...) throws -> PredicateComparison {
        let predicate = try QueryPredicate(format: format, argumentArray: arguments)
        guard case .comparison(let c) = predicate.expression else {
            Issue.record("not a comparison: \(predicate.expression)")
            throw UbiquityError(.invalidArgument, "not a comparison")
        }
        return c
    }

    @Test(arguments: [
        ("kMDItemFSSize = 1", PredicateOperator.equal), ("kMDItemFSSize == 1", .equal),
        ("kMDItemFSSize != 1", .notEqual), ("kMDItemFSSize <> 1", .notEqual),
        ("kMDItemFSSize < 1", .less), ("kMDItemFSSize <= 1", .lessOrEqual), ("kMDItemFSSize =< 1", .lessOrEqual),
        ("kMDItemFSSize > 1", .greater), ("kMDItemFSSize >= 1", .greaterOrEqual), ("kMDItemFSSize => 1", .greaterOrEqual),
        ("kMDItemFSName BEGINSWITH 'a'", .beginsWith), ("kMDItemFSName ENDSWITH 'a'", .endsWith),
        ("kMDItemFSName CONTAINS 'a'", .contains), ("kMDItemFSName LIKE 'a*'", .like),
        ("kMDItemFSName MATCHES 'a.*'", .matches), ("kMDItemFSSize IN {1, 2}", .in),
        ("kMDItemFSSize BETWEEN {1, 2}", .between),
        ("kMDItemFSName beginswith 'a'", .beginsWith), ("kMDItemFSName Like 'a'", .like),
    ])
    func operators(format: String, expected: PredicateOperator) throws {
        #expect(try comparison(format).operator == expected)
    }

    @Test(arguments: [
        ("kMDItemFSName ==[c] 'a'", .caseInsensitive),
        ("kMDItemFSName ==[d] 'a'", .diacriticInsensitive),
        ("kMDItemFSName ==[cd] 'a'", [.caseInsensitive, .diacriticInsensitive]),
        ("kMDItemFSName LIKE[CD] 'a'", [.caseInsensitive, .diacriticInsensitive]),
        ("kMDItemFSName !=[c] 'a'", .caseInsensitive),
        ("kMDItemFSName IN[c] {'a', 'b'}", .caseInsensitive),
        ("kMDItemFSName BEGINSWITH [dc] 'a'", [.caseInsensitive, .diacriticInsensitive]),
        ("kMDItemFSName CONTAINS 'a'", []),
    ] as [(String, PredicateStringMatch.Options)])
    func modifiers(format: String, expected: PredicateStringMatch.Options) throws {
        #expect(try comparison(format).options == expected)
    }

    @Test func literals() throws {
        let reference = Date(timeIntervalSinceReferenceDate: 0)
        let cases: [(String, MetadataValue)] = [
            ("kMDItemFSName == 'single'", .string("single")),
            ("kMDItemFSName == \"double\"", .string("double")),
            (#"kMDItemFSName == 'a\nb\tc\\d\'e\"f\u00e9'"#, .string("a\nb\tc\\d'e\"fé")),
            (#"kMDItemFSName == "\ud83d\ude00""#, .string("😀")),
            ("kMDItemFSName == '100%%'", .string("100%")),
            ("kMDItemFSName == '%@'", .string("%@")),
            ("kMDItemFSSize == 42", .integer(42)),
            ("kMDItemFSSize == -42", .integer(-42)),
            ("kMDItemFSSize == +7", .integer(7)),
            ("kMDItemFSSize == 0x1F", .integer(31)),
            ("kMDItemFSSize == 0o17", .integer(15)),
            ("kMDItemFSSize == 0b101", .integer(5)),
            ("kMDItemFSSize == -0x10", .integer(-16)),
            ("kMDItemFSSize == 1.5", .double(1.5)),
            ("kMDItemFSSize == -2.25e2", .double(-225)),
            ("kMDItemFSSize == .5", .double(0.5)),
            ("kMDItemFSSize == 99999999999999999999", .double(1e20)),
            ("kMDItemIsDirectory == YES", .bool(true)),
            ("kMDItemIsDirectory == no", .bool(false)),
            ("kMDItemIsDirectory == TRUE", .bool(true)),
            ("kMDItemIsDirectory == false", .bool(false)),
            ("kMDItemFSName == nil", .null),
            ("kMDItemFSName == NULL", .null),
            ("kMDItemFSCreationDate == CAST(0, 'NSDate')", .date(reference)),
            ("kMDItemFSCreationDate == CAST(1.5, \"NSDate\")", .date(Date(timeIntervalSinceReferenceDate: 1.5))),
            ("kMDItemFSCreationDate == CAST('2001-01-01T00:00:00Z', 'NSDate')", .date(reference)),
            ("kMDItemFSCreationDate == CAST('2001-01-01', 'NSDate')", .date(reference)),
            ("kMDItemFSCreationDate == CAST('2001-01-01T02:00:00+02:00', 'NSDate')", .date(reference)),
            ("kMDItemFSCreationDate == CAST('2001-01-01T00:00:00.250Z', 'NSDate')", .date(Date(timeIntervalSinceReferenceDate: 0.25))),
            ("kMDItemFSCreationDate == $time.iso(2001-01-01T00:00:00Z)", .date(reference)),
            ("kMDItemFSCreationDate == $time.iso('2001-01-01')", .date(reference)),
        ]
        for (format, expected) in cases {
            let c = try comparison(format)
            #expect(c.right == .value(expected), "\(format)")
        }
    }

    @Test func dynamicDates() throws {
        #expect(try comparison("kMDItemFSCreationDate > now()").right == .now(offset: 0))
        #expect(try comparison("kMDItemFSCreationDate > NOW()").right == .now(offset: 0))
        #expect(try comparison("kMDItemFSCreationDate > $time.now").right == .now(offset: 0))
        #expect(try comparison("kMDItemFSCreationDate > $time.now(-3600)").right == .now(offset: -3600))
        #expect(try comparison("kMDItemFSCreationDate > $time.now(+60)").right == .now(offset: 60))
        #expect(try comparison("kMDItemFSCreationDate > $time.today").right == .today(offsetDays: 0))
        #expect(try comparison("kMDItemFSCreationDate > $time.today(-1)").right == .today(offsetDays: -1))
        let between = try comparison("kMDItemFSContentChangeDate BETWEEN {$time.today(-7), $time.now}")
        #expect(between.right == .aggregate([.today(offsetDays: -7), .now(offset: 0)]))
    }

    @Test func aggregatesAndQuantifiers() throws {
        #expect(try comparison("kMDItemFSSize IN {1, 2.5, nil}").right == .aggregate([.value(.integer(1)), .value(.double(2.5)), .value(.null)]))
        #expect(try comparison("kMDItemFSName IN {}").right == .aggregate([]))
        for (keyword, quantifier) in [("ANY", PredicateComparison.Quantifier.anyElement), ("some", .anyElement),
                                      ("ALL", .everyElement), ("none", .noElement)] {
            let c = try comparison("\(keyword) kMDItemContentTypeTree BEGINSWITH 'public.'")
            #expect(c.quantifier == quantifier)
        }
        // `'x' IN tree` means the tree contains x.
        let membership = try comparison("'public.image' IN kMDItemContentTypeTree")
        #expect(membership == PredicateComparison(left: .attribute(.contentTypeTree), operator: .contains,
                                                  right: .value(.string("public.image"))))
        // `'x' IN name` is a substring test.
        let substring = try comparison("'doc' IN[c] kMDItemFSName")
        #expect(substring == PredicateComparison(left: .attribute(.fsName), operator: .contains,
                                                 options: .caseInsensitive, right: .value(.string("doc"))))
        #expect(try comparison("kMDItemFSName IN 'abc'").left == .value(.string("abc")))
    }

    @Test func keyPaths() throws {
        for name in ["kMDItemFSName", "NSMetadataItemFSNameKey", "fsName", "name", "#name"] {
            #expect(try comparison("\(name) == 'x'").left == .attribute(.fsName), "\(name)")
        }
        #expect(try comparison("NSMetadataUbiquitousItemIsUploadedKey == YES").left == .attribute(.isUploaded))
        #expect(try comparison("* ==[c] 'x'").left == .anyAttribute)
    }

    @Test func valueOpKeyIsFlipped() throws {
        #expect(try comparison("3 < kMDItemFSSize") == comparison("kMDItemFSSize > 3"))
        #expect(try comparison("3 >= kMDItemFSSize") == comparison("kMDItemFSSize <= 3"))
        #expect(try comparison("'a' == kMDItemFSName") == comparison("kMDItemFSName == 'a'"))
        #expect(try comparison("nil != kMDItemFSName") == comparison("kMDItemFSName != nil"))
        // BEGINSWITH cannot be flipped: the constant stays on the left.
        #expect(try comparison("'abc' BEGINSWITH kMDItemFSName").left == .value(.string("abc")))
    }

    @Test func formatArguments() throws {
        let date = Date(timeIntervalSince1970: 1_000_000)
        #expect(try comparison("%K == %@", "kMDItemFSName", "a") == comparison("kMDItemFSName == 'a'"))
        #expect(try comparison("%K == %@", MetadataAttribute.fsSize, 3) == comparison("kMDItemFSSize == 3"))
        #expect(try comparison("%K == %@", "NSMetadataItemFSSizeKey", Int64(3)).right == .value(.integer(3)))
        #expect(try comparison("kMDItemFSSize == %@", 2.5).right == .value(.double(2.5)))
        #expect(try comparison("kMDItemFSSize == %@", Float(0.5)).right == .value(.double(0.5)))
        #expect(try comparison("kMDItemFSSize == %@", UInt8(7)).right == .value(.integer(7)))
        #expect(try comparison("kMDItemIsDirectory == %@", true).right == .value(.bool(true)))
        #expect(try comparison("kMDItemFSCreationDate > %@", date).right == .value(.date(date)))
        #expect(try comparison("kMDItemURL == %@", URL(fileURLWithPath: "/a b")).right == .value(.string("file:///a%20b")))
        #expect(try comparison("kMDItemFSName IN %@", ["a", "b"]).right == .aggregate([.value(.string("a")), .value(.string("b"))]))
        #expect(try comparison("kMDItemFSSize BETWEEN %@", [1, 10]).right == .aggregate([.value(.integer(1)), .value(.integer(10))]))
        let missing: String? = nil
        #expect(try comparison("kMDItemFSName == %@", missing).right == .value(.null))
        let present: String? = "x"
        #expect(try comparison("kMDItemFSName == %@", present).right == .value(.string("x")))
        #expect(try comparison("kMDItemFSSize > %d", 5).right == .value(.integer(5)))
        #expect(try comparison("kMDItemFSSize > %i", 5).right == .value(.integer(5)))
        #expect(try comparison("kMDItemFSSize > %ld", 5).right == .value(.integer(5)))
        #expect(try comparison("kMDItemFSSize > %lld", Int64.max).right == .value(.integer(Int64.max)))
        #expect(try comparison("kMDItemFSSize > %u", UInt32(5)).right == .value(.integer(5)))
        #expect(try comparison("kMDItemFSSize > %f", 1.25).right == .value(.double(1.25)))
        #expect(try comparison("kMDItemFSSize > %lf", 2).right == .value(.double(2)))
        #expect(try comparison("kMDItemFSCreationDate > CAST(%@, 'NSDate')", 0).right
            == .value(.date(Date(timeIntervalSinceReferenceDate: 0))))
        // Inside quotes, %@ is literal text and consumes no argument.
        let quoted = try QueryPredicate(format: "kMDItemFSName == '%@' OR kMDItemFSName == %@", "x")
        #expect(quoted == (try QueryPredicate(format: "kMDItemFSName == \"%%@\" OR kMDItemFSName == 'x'")))
    }

    @Test func precedenceAndAssociativity() throws {
        let a = "kMDItemFSName == 'a'", b = "kMDItemFSName == 'b'", c = "kMDItemFSName == 'c'"
        func expr(_ format: String) throws -> QueryPredicate.Expression { try QueryPredicate(format: format).expression }
        let ea = try expr(a), eb = try expr(b), ec = try expr(c)
        #expect(try expr("\(a) OR \(b) AND \(c)") == .or([ea, .and([eb, ec])]))
        #expect(try expr("\(a) AND \(b) OR \(c)") == .or([.and([ea, eb]), ec]))
        #expect(try expr("NOT \(a) AND \(b)") == .and([.not(ea), eb]))
        #expect(try expr("NOT (\(a) AND \(b))") == .not(.and([ea, eb])))
        #expect(try expr("!\(a) || \(b) && \(c)") == .or([.not(ea), .and([eb, ec])]))
        #expect(try expr("(\(a) OR \(b)) AND \(c)") == .and([.or([ea, eb]), ec]))
        #expect(try expr("\(a) AND (\(b) AND \(c))") == .and([ea, eb, ec]))
        #expect(try expr("\(a) or \(b) or \(c)") == .or([ea, eb, ec]))
        #expect(try expr("NOT NOT \(a)") == .not(.not(ea)))
        #expect(try expr("((((\(a)))))") == ea)
        #expect(try expr("TRUEPREDICATE") == .constant(true))
        #expect(try expr("falsepredicate OR TRUEPREDICATE") == .or([.constant(false), .constant(true)]))
    }

    @Test func substitutionVariables() throws {
        let template = try QueryPredicate(format: "kMDItemFSName BEGINSWITH $PREFIX AND kMDItemFSSize > $MIN AND kMDItemFSSize IN $SIZES")
        #expect(template.variableNames == ["PREFIX", "MIN", "SIZES"])
        let filled = try template.withSubstitutionVariables(["PREFIX": "re", "MIN": 10, "SIZES": [1, 20, 300]])
        #expect(filled.variableNames.isEmpty)
        #expect(filled == (try QueryPredicate(format: "kMDItemFSName BEGINSWITH 're' AND kMDItemFSSize > 10 AND kMDItemFSSize IN {1, 20, 300}")))
        #expect(filled.evaluate(with: PredicateTestItem.file("report.txt", size: 20)))
        #expect(!filled.evaluate(with: PredicateTestItem.file("report.txt", size: 21)))
        // A partial substitution leaves the rest, and evaluation with a variable left is false.
        let partial = try template.withSubstitutionVariables(["PREFIX": "re"])
        #expect(partial.variableNames == ["MIN", "SIZES"])
        #expect(!partial.evaluate(with: PredicateTestItem.file("report.txt", size: 20)))
        // Values that do not fit are rejected.
        #expect(throws: UbiquityError.self) { try template.withSubstitutionVariables(["MIN": "ten"]) }
        #expect(throws: UbiquityError.self) { try template.withSubstitutionVariables(["SIZES": 3]) }
        // `$VAR IN key` is normalised after substitution.
        let member = try QueryPredicate(format: "$T IN kMDItemContentTypeTree").withSubstitutionVariables(["T": "public.text"])
        #expect(member.evaluate(with: PredicateTestItem.file("a.txt")))
        #expect(!member.evaluate(with: PredicateTestItem.file("a.png")))
    }

    @Test func attributesReferenced() throws {
        let p = try QueryPredicate(format: "kMDItemFSName == 'a' AND (NOT kMDItemFSSize > 3 OR ANY kMDItemContentTypeTree == 'public.text')")
        #expect(p.attributes == [.fsName, .fsSize, .contentTypeTree])
        #expect(QueryPredicate.truePredicate.attributes.isEmpty)
        #expect(try QueryPredicate(format: "* == 'x'").attributes == Set(QueryPredicate.anyAttributeExpansion))
    }

    @Test func deepNestingIsCappedNotCrashing() throws {
        let ok = String(repeating: "(", count: 200) + "kMDItemFSSize > 1" + String(repeating: ")", count: 200)
        #expect(throws: Never.self) { try QueryPredicate(format: ok) }
        let deep = String(repeating: "(", count: 100_000) + "kMDItemFSSize > 1" + String(repeating: ")", count: 100_000)
        #expect(parseError(deep)?.contains("nesting deeper than 256") == true)
        let nots = String(repeating: "NOT ", count: 50_000) + "kMDItemFSSize > 1"
        #expect(parseError(nots)?.contains("nesting") == true)
        let aggregates = "kMDItemFSSize IN " + String(repeating: "{", count: 10_000)
        #expect(parseError(aggregates) != nil)
        // A long flat chain is fine (no recursion per operand).
        let chain = Array(repeating: "kMDItemFSSize > 1", count: 5000).joined(separator: " OR ")
        #expect(try QueryPredicate(format: chain).evaluate(with: PredicateTestItem.file("a", size: 2)))
    }
}
