import Foundation
import Testing
import UbiquityCore
@testable import UbiquityStore

@Suite struct MetadataIndexQueryTests {
    typealias S = MetadataIndexTestSupport

    private func sampleIndex() throws -> MetadataIndex {
        let index = try S.memoryIndex()
        _ = try index.apply([
            S.folder("/c/Docs"),
            S.file("/c/Docs/xABCy.txt", size: 5),
            S.file("/c/Docs/Résumé-abc.md", size: 50),
            S.file("/c/Docs/other.txt", size: 500),
            S.file("/c/ab.txt", size: 20),
            S.file("/elsewhere/abc.txt", size: 99),
        ])
        return index
    }

    private func names(_ records: [IndexRecord]) -> [String] { records.map(\.name) }

    @Test func containsUsesTheTrigramIndexAndStaysExact() throws {
        let index = try sampleIndex()
        let predicate = try QueryPredicate(format: "kMDItemFSName CONTAINS[c] 'abc'")
        #expect(try predicate.sql(using: MetadataIndexSchema()).sql.contains("names_fts"))
        #expect(names(try index.query(predicate, under: [])) == ["Résumé-abc.md", "xABCy.txt", "abc.txt"])
        #expect(names(try index.query(predicate, under: ["/c"])) == ["Résumé-abc.md", "xABCy.txt"])
        // Diacritic-insensitive, via the folded name column.
        let accent = try QueryPredicate(format: "kMDItemFSName CONTAINS[cd] 'resume'")
        #expect(names(try index.query(accent, under: ["/c"])) == ["Résumé-abc.md"])
        // Short needles skip the prefilter.
        let short = try QueryPredicate(format: "kMDItemFSName CONTAINS[c] 'ab'")
        #expect(try index.query(short, under: ["/c"]).count == 3)
    }

    @Test func numericComparisonsSortAndLimit() throws {
        let index = try sampleIndex()
        let predicate = try QueryPredicate(format: "kMDItemFSSize > 10")
        let sorted = try index.query(predicate, under: ["/c/"], sortedBy: [IndexSort(attribute: .fsSize, ascending: false)])
        #expect(names(sorted) == ["other.txt", "Résumé-abc.md", "ab.txt"])
        let limited = try index.query(predicate, under: [], sortedBy: [IndexSort(attribute: .fsSize)], limit: 2)
        #expect(names(limited) == ["ab.txt", "Résumé-abc.md"])
    }

    @Test func scopeExcludesTheScopeFolderItself() throws {
        let index = try sampleIndex()
        let all = try index.query(QueryPredicate(format: "TRUEPREDICATE"), under: ["/c/Docs"])
        #expect(names(all) == ["Résumé-abc.md", "other.txt", "xABCy.txt"])
        let folders = try index.query(QueryPredicate(format: "kMDItemContentTypeTree == 'public.folder'"), under: ["/c"])
        #expect(names(folders) == ["Docs"])
    }

    @Test func queriesSeeMovesAndUbiquitousState() throws {
        let index = try sampleIndex()
        _ = try index.move(from: "/c/Docs", to: "/c/Archive")
        let predicate = try QueryPredicate(format: "kMDItemPath BEGINSWITH '/c/Archive/'")
        #expect(try index.query(predicate, under: []).count == 3)
        _ = try index.updateUbiquitousAttributes(path: "/c/ab.txt", UbiquitousAttributes(isUploaded: true))
        let uploaded = try QueryPredicate(format: "NSMetadataUbiquitousItemIsUploadedKey == YES")
        #expect(names(try index.query(uploaded, under: ["/c"])) == ["ab.txt"])
        _ = try index.updateUbiquitousAttributes(path: "/c/ab.txt", UbiquitousAttributes(uploadingError: "over quota"))
        let failed = try QueryPredicate(format: "NSMetadataUbiquitousItemUploadingErrorKey != nil")
        #expect(names(try index.query(failed, under: ["/c"])) == ["ab.txt"])
        let quota = try QueryPredicate(format: "NSMetadataUbiquitousItemUploadingErrorKey CONTAINS[c] 'QUOTA'")
        #expect(names(try index.query(quota, under: ["/c"])) == ["ab.txt"])
        #expect(try index.record(at: "/c/ab.txt")?.ubiquitous.uploadingError == "over quota")
        let url = try QueryPredicate(format: "kMDItemURL == 'file:///c/Archive/'")
        #expect(names(try index.query(url, under: ["/c"])) == ["Archive"])
    }

    @Test func sqlAgreesWithInMemoryEvaluation() throws {
        let index = try sampleIndex()
        let formats = [
            "kMDItemFSName LIKE[c] '*abc*'", "kMDItemFSSize BETWEEN {10, 100}", "kMDItemFSName ENDSWITH '.txt'",
            "kMDItemContentTypeTree == 'public.text'", "NSMetadataUbiquitousItemIsDownloadedKey == YES",
            "kMDItemDisplayName CONTAINS 'abc'",
        ]
        let everything = try index.records(under: nil)
        for format in formats {
            let predicate = try QueryPredicate(format: format)
            let expected = everything.filter { predicate.evaluate(with: $0) }.map(\.path)
            #expect(try index.query(predicate, under: []).map(\.path).sorted() == expected.sorted(), "\(format)")
        }
    }
}
