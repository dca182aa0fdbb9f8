// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
import UbiquityTestSupport
import UbiquityIndex
import UbiquityStore
@testable import UbiquitySync

/// `SyncStatusApplier`: sync's states reach the index's rows, in order, also when a row is
/// indexed after its state was reported (a file just written, the indexer behind).
struct SyncStatusApplierTests {
    @Test func retriesBackOffFromATenthOfASecondToOnePointSixSeconds() {
        let delays = (1...7).map { SyncStatusApplier.backoff(after: $0) }
        #expect(delays == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800),
                           .milliseconds(1600), .milliseconds(1600), .milliseconds(1600)])
    }

    @Test func aStateWaitsForItsRowAndTheLastOneWins() async throws {
        let logger = Logger(label: "test.applier")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("applier-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let root = folder.resolvingSymlinksInPath().path  // (`/tmp` may be a link)
        let host = IndexHost(index: try MetadataIndex.inMemory(logger: logger), logger: logger)
        defer { host.shutdown() }
        try await host.addPermanentRoot(root)
        let applier = SyncStatusApplier(host: { host })

        // reported before the file exists: missed a few times, applied once the row is there
        let late = root + "/late.txt"
        applier.submit(SyncStatusApplier.Change(status: .uploading), at: late)
        applier.submit(SyncStatusApplier.Change(status: .inConflict), at: late)
        try await Task.sleep(for: .milliseconds(400))
        try Data("late".utf8).write(to: URL(fileURLWithPath: late))
        #expect(await Self.eventually { try host.index.record(at: late)?.ubiquitous.hasUnresolvedConflicts == true })

        // a later state of the same path replaces the earlier one
        applier.submit(SyncStatusApplier.Change(status: .uploaded), at: late)
        #expect(await Self.eventually {
            guard let attributes = try host.index.record(at: late)?.ubiquitous else { return false }
            return !attributes.hasUnresolvedConflicts && attributes.isUploaded
        })
    }

    /// An upload's "uploading" waits for its "uploaded" (one write for a small file's upload);
    /// alone, it is written when its wait is over; a transfer's progress goes at once.
    @Test func uploadingWaitsForUploadedAndIsWrittenAloneOnceItsWaitIsOver() async throws {
        let logger = Logger(label: "test.applier")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("applier-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let root = folder.resolvingSymlinksInPath().path
        for name in ["small", "big", "alone"] { try Data(name.utf8).write(to: URL(fileURLWithPath: root + "/" + name)) }
        let host = IndexHost(index: try MetadataIndex.inMemory(logger: logger), logger: logger)
        defer { host.shutdown() }
        try await host.addPermanentRoot(root)
        let deltas = host.deltas()
        // a wait far longer than the test: only what follows "uploading" can end it
        let applier = SyncStatusApplier(host: { host }, uploadingGrace: .seconds(3600))
        applier.submit(SyncStatusApplier.Change(status: .uploading), at: root + "/small")
        applier.submit(SyncStatusApplier.Change(status: .uploaded), at: root + "/small")
        applier.submit(SyncStatusApplier.Change(status: .uploading), at: root + "/big")
        applier.submit(SyncStatusApplier.Change(transfer: ItemSyncState(sync: .uploading, isUploading: true, percentUploaded: 40)), at: root + "/big")
        var seen: [String: [UbiquitousAttributes]] = [:]
        for await delta in deltas {
            for record in delta.changed { seen[record.name, default: []].append(record.ubiquitous) }
            if seen["small"] != nil && seen["big"] != nil { break }
        }
        // one write for "small", already uploaded; "big" shows its progress
        #expect(seen["small"]?.count == 1 && seen["small"]?.first?.isUploaded == true && seen["small"]?.first?.isUploading == false)
        #expect(seen["big"]?.last?.isUploading == true && seen["big"]?.last?.percentUploaded == 40)
        // alone, "uploading" is written once its (short) wait is over
        let quick = SyncStatusApplier(host: { host }, uploadingGrace: .milliseconds(100))
        quick.submit(SyncStatusApplier.Change(status: .uploading), at: root + "/alone")
        #expect(await Self.eventually { try host.index.record(at: root + "/alone")?.ubiquitous.isUploading == true })
    }

    /// Polls `check` (a hang guard of 60 s, not a timing assertion).
    static func eventually(_ check: () throws -> Bool) async -> Bool {
        let deadline = Date(timeIntervalSinceNow: 60)
        while Date() < deadline {
            if (try? check()) == true { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }
}

