import Foundation
import GRDB
import Testing
import UbiquityCore
import UbiquityStore

/// The SQL translation must select exactly the rows the evaluator accepts.
@Suite struct PredicateAgreementTests {
    static var slow: Bool { ProcessInfo.processInfo.environment["UBIQUITY_RUN_SLOW_TESTS"] == "1" }
    static let now = Date(timeIntervalSince1970: 1_750_000_000)

    /// Hand-picked cases, including the corners of the semantics.
    static let cases = [
        "kMDItemFSName == 'abc.txt'", "kMDItemFSName != 'abc.txt'", "kMDItemFSName ==[cd] 'RESUME.TXT'",
        "kMDItemFSName CONTAINS[cd] 'resume'", "kMDItemFSName CONTAINS 'ésu'", "kMDItemFSName BEGINSWITH[c] 'rep'",
        "kMDItemFSName ENDSWITH '.TXT'", "kMDItemFSName LIKE[c] '*.txt'", "kMDItemFSName LIKE '?b*'",
        "kMDItemFSName MATCHES[c] '.*report.*'", "NOT kMDItemFSName CONTAINS 'o'", "kMDItemFSName < 'b'",
        "kMDItemFSName >=[c] 'b'", "kMDItemFSSize > 10", "NOT kMDItemFSSize > 10", "kMDItemFSSize == nil",
        "kMDItemFSSize != nil", "kMDItemFSSize != 10", "kMDItemFSSize IN {10, 20, nil}", "kMDItemFSSize BETWEEN {5, 20.5}",
        "NOT (kMDItemFSSize BETWEEN {5, 20})", "kMDItemIsDirectory == YES", "NOT kMDItemIsDirectory == YES",
        "kMDItemFSCreationDate > CAST(0, 'NSDate')", "kMDItemFSCreationDate < kMDItemFSContentChangeDate",
        "NOT kMDItemFSCreationDate < kMDItemFSContentChangeDate", "kMDItemFSCreationDate == kMDItemFSContentChangeDate",
        "kMDItemContentTypeTree == 'public.text'", "kMDItemContentTypeTree == 'public.data'",
        "kMDItemContentTypeTree == 'public.item'", "NOT 'public.item' IN kMDItemContentTypeTree",
        "ANY kMDItemContentTypeTree == 'dyn.unknown'", "ALL kMDItemContentTypeTree BEGINSWITH 'public'",
        "NONE kMDItemContentTypeTree == 'public.image'", "kMDItemContentTypeTree IN {'public.image', 'public.folder'}",
        "kMDItemContentTypeTree == nil", "NOT kMDItemContentTypeTree != nil", "kMDItemContentTypeTree CONTAINS[c] 'PUBLIC.TEXT'",
        "NSMetadataUbiquitousItemIsDownloadedKey == NO", "NSMetadataItemIsUbiquitousKey == YES",
        "kMDItemURL ENDSWITH '/'", "kMDItemURL CONTAINS '%20'", "* ==[cd] 'notes.md'", "'abc' IN kMDItemFSName",
        "kMDItemPath ENDSWITH kMDItemFSName", "NOT kMDItemFSName IN kMDItemPath",
        "kMDItemFSName CONTAINS ''", "kMDItemFSName LIKE '*'", "TRUEPREDICATE", "NOT TRUEPREDICATE",
        "kMDItemFSCreationDate > $time.now(-31536000)",
    ]

    private func makeDatabase(seed: UInt64, rows count: Int) throws -> (PredicateTestDatabase, PredicateGenerator) {
        var generator = PredicateGenerator(rng: PredicateStoreRNG(seed: seed))
        var rows = generator.rows(count: count)
        // A few fixed rows for the hand-written cases.
        let fixed: [(String, Int64)] = [("abc.txt", 10), ("Résumé.TXT", 20), ("report final.md", 5), ("notes.md", 0)]
        for (offset, (name, size)) in fixed.enumerated() {
            rows.append(PredicateTestRow(id: Int64(count + offset + 1), path: "/c/Documents/\(name)", name: name, size: size,
                                         creationDate: 1_700_000_000, contentChangeDate: 1_700_000_000 + Double(offset),
                                         contentType: ContentType.identifier(forFileName: name, isDirectory: false),
                                         isDirectory: false, downloadingStatus: UbiquitousDownloadingStatus.current.rawValue))
        }
        generator.rows = rows
        return (try PredicateTestDatabase(rows: rows), generator)
    }

    private func expectAgreement(_ predicate: QueryPredicate, in database: PredicateTestDatabase, context: String,
                                 withoutPrefilter: Bool = true,
                                 sourceLocation: SourceLocation = #_sourceLocation) throws {
        let expected = database.evaluatorIDs(predicate, now: Self.now)
        let actual = try database.sqlIDs(predicate, now: Self.now)
        if expected != actual {
            let fragment = try predicate.sql(using: PredicateTestSchema(), now: Self.now)
            let onlyEvaluator = expected.subtracting(actual).sorted().prefix(3)
            let onlySQL = actual.subtracting(expected).sorted().prefix(3)
            let sample = (onlyEvaluator + onlySQL).compactMap { id in database.rows.first { $0.id == id } }
            Issue.record("""
                \(context): evaluator and SQL disagree on \(predicate.predicateFormat)
                SQL: \(fragment)
                only evaluator: \(Array(onlyEvaluator)), only SQL: \(Array(onlySQL))
                rows: \(sample)
                """, sourceLocation: sourceLocation)
        }
        // Without the prefilter the answer is the same.
        guard withoutPrefilter else { return }
        let plain = try database.sqlIDs(predicate, schema: PredicateTestSchema(prefilter: false), now: Self.now)
        #expect(plain == actual, "\(context): prefilter changed the result of \(predicate.predicateFormat)", sourceLocation: sourceLocation)
    }

    @Test func handWrittenCases() throws {
        let (database, _) = try makeDatabase(seed: 42, rows: 200)
        for format in Self.cases {
            let predicate = try QueryPredicate(format: format)
            try expectAgreement(predicate, in: database, context: "case")
        }
    }

    @Test func randomPredicatesAgree() throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        let (database, generatorWithRows) = try makeDatabase(seed: seed, rows: Self.slow ? 600 : 200)
        var generator = generatorWithRows
        // The default keeps the suite at a few seconds in a debug build; UBIQUITY_RUN_SLOW_TESTS=1 runs far more.
        let count = Self.slow ? 20_000 : 500
        var nonTrivial = 0
        for index in 0..<count {
            let format = generator.predicate()
            let predicate: QueryPredicate
            do {
                predicate = try QueryPredicate(format: format.text, argumentArray: format.arguments)
            } catch {
                Issue.record("seed \(seed) #\(index): generated predicate did not parse: \(format.text) \(format.arguments): \(error)")
                continue
            }
            // The canonical format parses back to the same predicate.
            let reparsed = try QueryPredicate(format: predicate.predicateFormat)
            #expect(reparsed == predicate, "seed \(seed) #\(index): \(predicate.predicateFormat)")
            let expected = database.evaluatorIDs(predicate, now: Self.now)
            if !expected.isEmpty, expected.count < database.rows.count { nonTrivial += 1 }
            try expectAgreement(predicate, in: database, context: "seed \(seed) #\(index)", withoutPrefilter: index % 4 == 0)
        }
        // The generator must produce mostly selective predicates to be a meaningful test.
        #expect(nonTrivial > count / 4, "seed \(seed): only \(nonTrivial) of \(count) predicates were selective")
    }

    @Test func sqlShapes() throws {
        let schema = PredicateTestSchema()
        // Plain string equality stays indexable.
        #expect(try QueryPredicate(format: "kMDItemFSName == 'a'").sql(using: schema)
            == SQLFragment(sql: "(items.name = ?)", arguments: [.text("a")]))
        // NOT of a nullable comparison is two-valued.
        #expect(try QueryPredicate(format: "NOT kMDItemFSSize > 3").sql(using: schema).sql == "(NOT IFNULL((items.size > ?), 0))")
        // The trigram prefilter guards substring searches on names.
        let contains = try QueryPredicate(format: "kMDItemFSName CONTAINS[c] 'Crème'").sql(using: schema)
        #expect(contains.sql.hasPrefix("(items.id IN (SELECT rowid FROM names_fts WHERE names_fts MATCH ?) AND ubq_match("))
        #expect(contains.arguments.first == .text("\"creme\""))
        // Content type tree equality becomes an IN over the content type column.
        let tree = try QueryPredicate(format: "kMDItemContentTypeTree == 'public.image'").sql(using: schema)
        #expect(tree.sql.hasPrefix("(items.content_type IN (?"))
        #expect(tree.arguments.contains(.text("public.png")))
        // Dates are bound as Unix seconds.
        let date = try QueryPredicate(format: "kMDItemFSCreationDate > CAST(0, 'NSDate')").sql(using: schema)
        #expect(date.arguments == [.real(978_307_200)])
    }

    @Test func functionsAreRegisteredAndDeterministic() throws {
        let (database, _) = try makeDatabase(seed: 1, rows: 5)
        let values = try database.queue.read { db -> [String?] in
            try [
                "SELECT ubq_match('LIKE', 'c', 'Hello.TXT', '*.txt')",
                "SELECT ubq_match('MATCHES', '', 'abc', 'a.c')",
                "SELECT ubq_match('CONTAINS', '', NULL, 'a')",
                "SELECT ubq_fold('cd', 'Crème')",
                "SELECT ubq_tree('', '==', '', 0, 'public.png', 'public.image')",
                "SELECT ubq_file_url('/a b/c', 1)",
            ].map { sql in try String.fetchOne(db, sql: sql) }
        }
        #expect(values == ["1", "1", "0", "creme", "1", "file:///a%20b/c/"])
    }
}
