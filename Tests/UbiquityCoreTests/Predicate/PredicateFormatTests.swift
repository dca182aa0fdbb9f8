import Foundation
import Testing
@testable import UbiquityCore

@Suite struct PredicateFormatTests {
    static let formats = [
        "kMDItemFSName == 'a'",
        "kMDItemFSName ==[cd] \"Crème\" AND kMDItemFSSize >= 10",
        "NOT (kMDItemFSSize < 3 OR kMDItemFSSize > 10.5)",
        "kMDItemFSName LIKE[c] '*.TXT' || kMDItemFSName MATCHES '[a-z]+\\\\.md'",
        "kMDItemFSName == 'quote\\'s \"double\" back\\\\slash \\n tab\\t 100%% \\u0001 é 😀'",
        "kMDItemFSSize IN {1, 2.5, -3, nil}",
        "kMDItemFSSize BETWEEN {0x10, 1e3}",
        "kMDItemFSCreationDate > CAST(700000000.5, 'NSDate')",
        "kMDItemFSCreationDate > CAST('2024-05-01T12:00:00Z', 'NSDate')",
        "kMDItemFSCreationDate > now() AND kMDItemFSContentChangeDate < $time.now(-60) AND kMDItemFSCreationDate >= $time.today(-1)",
        "ANY kMDItemContentTypeTree == 'public.image'",
        "ALL kMDItemContentTypeTree BEGINSWITH[c] 'public'",
        "NONE kMDItemContentTypeTree IN {'public.text', 'public.image'}",
        "kMDItemContentTypeTree CONTAINS 'public.text'",
        "kMDItemContentTypeTree == nil",
        "'public.text' IN kMDItemContentTypeTree",
        "'doc' IN kMDItemFSName",
        "'abc' BEGINSWITH kMDItemFSName",
        "kMDItemFSName == $NAME AND kMDItemFSSize IN {$A, 2}",
        "TRUEPREDICATE",
        "NOT FALSEPREDICATE",
        "NOT NOT kMDItemIsDirectory == YES",
        "(kMDItemFSSize > 1 OR kMDItemFSSize < 0) AND (kMDItemIsDirectory == NO OR kMDItemFSName ENDSWITH 'x')",
        "kMDItemFSSize > 1 AND kMDItemFSSize > 2 OR kMDItemFSSize > 3 AND NOT kMDItemFSSize > 4",
        "* ==[c] 'readme'",
        "kMDItemFSCreationDate < kMDItemFSContentChangeDate",
        "kMDItemFSSize == 1e999 OR kMDItemFSSize == -1e999 OR kMDItemFSSize == -0.0",
        "kMDItemFSSize == -9223372036854775808",
    ]

    @Test(arguments: formats)
    func roundTrip(format: String) throws {
        let predicate = try QueryPredicate(format: format)
        let canonical = predicate.predicateFormat
        let reparsed = try QueryPredicate(format: canonical)
        #expect(reparsed == predicate, "\(format) → \(canonical)")
        #expect(reparsed.predicateFormat == canonical)
        #expect(predicate.description == canonical)
    }

    @Test func canonicalSpelling() throws {
        #expect(try QueryPredicate(format: "name = 'a'").predicateFormat == "kMDItemFSName == \"a\"")
        #expect(try QueryPredicate(format: "3 < size").predicateFormat == "kMDItemFSSize > 3")
        #expect(try QueryPredicate(format: "a_b_c <> 1".replacingOccurrences(of: "a_b_c", with: "kMDItemFSSize")).predicateFormat
            == "kMDItemFSSize != 1")
        #expect(try QueryPredicate(format: "some kMDItemContentTypeTree like[dc] 'x'").predicateFormat
            == "ANY kMDItemContentTypeTree LIKE[cd] \"x\"")
        #expect(try QueryPredicate(format: "kMDItemFSName == %@", "100%").predicateFormat == "kMDItemFSName == \"100%%\"")
        #expect(QueryPredicate.truePredicate.predicateFormat == "TRUEPREDICATE")
        #expect(QueryPredicate.falsePredicate.predicateFormat == "FALSEPREDICATE")
    }

    @Test func argumentsRoundTripToo() throws {
        let date = Date(timeIntervalSinceReferenceDate: 123_456.789)
        let predicate = try QueryPredicate(format: "%K > %@ AND %K IN %@ AND %K == %@",
                                           "kMDItemFSCreationDate", date, "size", [1, 2], "name", "a\"b")
        #expect(try QueryPredicate(format: predicate.predicateFormat) == predicate)
    }
}
