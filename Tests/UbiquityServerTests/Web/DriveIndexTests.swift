// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
import UbiquityServer
import UbiquityWire

/// The Drive's index follows every change of a documents zone on both stores: saves, renames,
/// deletes and a deleted zone; pages sort folders first, then by name; search ignores case.
@Suite struct DriveIndexTests {
    @Test(arguments: StoreKind.available)
    func theIndexFollowsTheRecords(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store in
            var logger = Logger(label: "test.drive")
            logger.logLevel = .warning
            let engine = RecordsEngine(store: store, logger: logger, changeObserver: RecordChangeObservers([DocumentHistoryRecorder(), DriveIndexer()]))
            let history = DocumentHistory(engine: engine)
            let actions = DriveActions(engine: engine, history: history)
            let context = RecordsEngine.Context(container: DocumentItemRecord.container, environment: .development, scope: .private,
                                                caller: RecordsCaller(identity: .user(accountID: 1, userRecordName: "_0123456789abcdef0123456789abcdef")))
            try await actions.makeFolder(named: "Work", in: "", context: context)
            try await actions.makeFolder(named: "zeta", in: "Work", context: context)
            for name in ["b.txt", "A.txt", "c 100%_done.txt"] {
                _ = try await actions.saveUpload(named: name, in: "Work", asset: nil, recordName: UUID().uuidString.lowercased(), modified: 1,
                                                 context: context)
            }
            var page = try await actions.page(of: "Work", offset: 0, limit: 10, context: context)
            #expect(page.items.map(\.name) == ["zeta", "A.txt", "b.txt", "c 100%_done.txt"])
            #expect(page.total == 4)
            page = try await actions.page(of: "Work", offset: 1, limit: 2, context: context)
            #expect(page.items.map(\.name) == ["A.txt", "b.txt"] && page.total == 4)
            #expect(try await actions.search("a.TXT", context: context).map(\.path) == ["Work/A.txt"])
            #expect(try await actions.search("100%_", context: context).map(\.name) == ["c 100%_done.txt"])
            #expect(try await actions.search("%", context: context).count == 1)  // a literal %, not a wildcard

            // a rename of the folder moves its rows; a delete removes them
            let work = try #require(try await actions.page(of: "", offset: 0, limit: 10, context: context).items.first)
            try await actions.rename(work.recordName, to: "Play", context: context)
            #expect(try await actions.page(of: "Work", offset: 0, limit: 10, context: context).total == 0)
            #expect(try await actions.page(of: "Play", offset: 0, limit: 10, context: context).total == 4)
            try await actions.delete(work.recordName, context: context)
            #expect(try await actions.page(of: "", offset: 0, limit: 10, context: context).total == 0)
            #expect(try await actions.search("txt", context: context).isEmpty)

            // restoring from Recently Deleted puts the rows back
            let trash = try await history.trash(context: context).objectValue?["items"]?.arrayValue ?? []
            let id = try #require(trash.first?.objectValue?["id"])
            _ = try await history.restoreTrashed(.object(["ids": .array([id])]), context: context)
            #expect(try await actions.page(of: "Play", offset: 0, limit: 10, context: context).total == 4)
        }
    }
}
