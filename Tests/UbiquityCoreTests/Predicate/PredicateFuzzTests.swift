import Foundation
import Testing
@testable import UbiquityCore

typealias PredicateTestRNG = SeededRandom

@Suite struct PredicateFuzzTests {
    static var iterations: Int { ProcessInfo.processInfo.environment["UBIQUITY_RUN_SLOW_TESTS"] == "1" ? 200_000 : 6000 }

    static let seeds = [
        "kMDItemFSName ==[cd] 'Crème' AND kMDItemFSSize > 10",
        "NOT (kMDItemFSSize < 3 OR kMDItemFSSize BETWEEN {1, 0x10})",
        "ANY kMDItemContentTypeTree IN {'public.text', \"public.image\"}",
        "kMDItemFSCreationDate > CAST('2024-01-01T00:00:00Z', 'NSDate') && kMDItemFSName LIKE[c] '*.t?t'",
        "kMDItemFSName MATCHES '[a-z]+\\\\d' || $time.now(-60) < kMDItemFSContentChangeDate",
        "%K == %@ AND kMDItemFSSize IN %@ AND kMDItemFSSize > %d",
        "'x' IN kMDItemFSName AND kMDItemFSName != nil AND $VAR == 1",
        "kMDItemFSSize == -1.5e3 OR kMDItemIsDirectory == YES OR kMDItemFSCreationDate < now()",
    ]

    static let fragments = [
        "(", ")", "{", "}", "[c]", "[d]", "[cd]", "[", "]", ",", "'", "\"", "\\", "%@", "%K", "%d", "%%", "%",
        "$", "$x", "$time.", "$time.iso(", "$time.today(", "CAST(", "'NSDate'", "now()", "AND", "OR", "NOT",
        "&&", "||", "!", "==", "=", "!=", "<>", "<", "<=", "=<", ">", ">=", "=>", "IN", "BETWEEN", "LIKE",
        "MATCHES", "CONTAINS", "BEGINSWITH", "ENDSWITH", "ANY", "ALL", "NONE", "SOME", "nil", "YES", "-", "0x",
        "1e", "1.", ".5", "9999999999999999999999", "kMDItemFSName", "kMDItemFSSize", "kMDItemContentTypeTree",
        "*", "#", "\u{0}", "é", "😀", "\n", " ", "\\u", "\\uD83D", "TRUEPREDICATE",
    ]

    @Test func parserNeverCrashes() throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        var rng = PredicateTestRNG(seed: seed)
        let arguments: [any Sendable] = ["kMDItemFSName", "a", [1, 2], 3, 4.5, true, Date(timeIntervalSince1970: 0)]
        var parsed = 0
        for _ in 0..<Self.iterations {
            var scalars = Array(Self.seeds.randomElement(using: &rng)!.unicodeScalars)
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                switch Int.random(in: 0..<5, using: &rng) {
                case 0 where !scalars.isEmpty:  // delete a run
                    let start = Int.random(in: 0..<scalars.count, using: &rng)
                    let end = min(scalars.count, start + Int.random(in: 1...8, using: &rng))
                    scalars.removeSubrange(start..<end)
                case 1:  // insert a fragment
                    let at = Int.random(in: 0...scalars.count, using: &rng)
                    scalars.insert(contentsOf: Self.fragments.randomElement(using: &rng)!.unicodeScalars, at: at)
                case 2 where !scalars.isEmpty:  // replace a scalar with a random one
                    let at = Int.random(in: 0..<scalars.count, using: &rng)
                    scalars[at] = Unicode.Scalar(UInt8.random(in: 0...127, using: &rng))
                case 3:  // splice two seeds
                    let other = Array(Self.seeds.randomElement(using: &rng)!.unicodeScalars)
                    let cut = Int.random(in: 0...scalars.count, using: &rng)
                    scalars = Array(scalars[..<cut]) + other[Int.random(in: 0...other.count, using: &rng)...]
                default:  // pure random junk
                    scalars = (0..<Int.random(in: 0...30, using: &rng)).map { _ in
                        Unicode.Scalar(UInt8.random(in: 32...126, using: &rng))
                    }
                }
            }
            let format = String(String.UnicodeScalarView(scalars))
            let count = Int.random(in: 0...arguments.count, using: &rng)
            do {
                let predicate = try QueryPredicate(format: format, argumentArray: Array(arguments.prefix(count)))
                parsed += 1
                // Whatever parses must round-trip and evaluate without trapping.
                let again = try QueryPredicate(format: predicate.predicateFormat)
                #expect(again == predicate, "seed \(seed): \(format) → \(predicate.predicateFormat)")
                _ = predicate.evaluate(with: PredicateTestItem.file("a.txt"))
            } catch let error as UbiquityError {
                #expect(error.code == .invalidArgument, "seed \(seed): \(format)")
                #expect(error.message.hasPrefix("predicate: "), "seed \(seed): \(error.message)")
            }
        }
        #expect(parsed > 0, "seed \(seed)")
    }
}
