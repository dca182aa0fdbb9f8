// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
@testable import UbiquitySync

/// The sync engine under deterministic simulation (SimWorld): seeded runs of two or three
/// devices against the real server, with faults, crashes and mid-pass interleavings, each
/// checked against the invariants after quiescence. CI runs a bounded batch of seeds;
/// `UBIQUITY_SIM_SEEDS=N` runs N, `UBIQUITY_SIM_FIRST_SEED=S` starts elsewhere, and
/// `UBIQUITY_SIM_SEED=S` replays one seed with its trace (the line a failure prints;
/// `UBIQUITY_SIM_MODEL=without-power-loss` for the older regressions' world). Debugging a lost
/// write: `UBIQUITY_SIM_WATCH=DIGEST-PREFIX` logs where that content is after every step, and
/// `UBIQUITY_SIM_DUMP=1` prints every device's and account's items at the end.
/// Serialized: a seed replays the same run when the machine's load does not reorder what a
/// pass does concurrently (its parallel uploads), which the seeded plan does not order yet.
@Suite(.serialized) struct SimulationTests {
    static let environment = ProcessInfo.processInfo.environment
    /// Seeds a plain test run covers (a couple of minutes on 2 cores).
    static let defaultSeeds = 24
    static var seeds: Int { environment["UBIQUITY_SIM_SEEDS"].flatMap(Int.init) ?? defaultSeeds }
    static var firstSeed: UInt64 { environment["UBIQUITY_SIM_FIRST_SEED"].flatMap(UInt64.init) ?? 1 }
    static var steps: Int { environment["UBIQUITY_SIM_STEPS"].flatMap(Int.init) ?? 60 }

    /// Seeds that find bugs since fixed: each runs on every test run (each failed before its
    /// fix). The bugs:
    /// - a delete (or a skip-backup mark) sent by a device that had not seen another device's
    ///   newer edit deleted that edit everywhere (deletes were `forceDelete`; now they carry the
    ///   synced change tag: SyncEngine+ConditionalDeletes.swift) (2, 16, 22, 60, 68, 69, 80);
    /// - an item deleted on one device while edited on another came back with the edit but
    ///   without its conflict versions (removed as if resolved elsewhere);
    /// - items a folder renamed elsewhere took along here, unknown to the renaming device, stayed
    ///   at their old path on the server (`sendWhatMovedAlong`);
    /// - a file in conflict deleted elsewhere took this device's own versions with it
    ///   (SyncEngine+DeletedInConflict.swift) (5);
    /// - a folder marked skip-backup deleted the records of the evicted files in it, their only
    ///   copy, and a remote delete removed a skip-backup item (`downloadBeforeExcluding`) (52, 86);
    /// - a record for a name held here by a skip-backup item was skipped for good
    ///   (SyncEngine+HeldBack.swift) (56);
    /// - stubs whose item the journal forgot stayed, never downloadable (`settleOrphanStubs`)
    ///   (27, 37, 48);
    /// - a conflict that landed an item at a new name left its earlier versions at the old one,
    ///   taken for resolved (101); versions unlinked by an editor's save and a rename were taken
    ///   for resolved, and ones an item took along when sent as new were never shared (110);
    /// - two records of one fetch at one path: the second took the first one's journal row and
    ///   the first was never deleted (130);
    /// - a remote change replaced a skip-backup file and failed at every pass (191);
    /// - a new file applied early made its folder before that folder's rename there came (234);
    /// - a conflict kept the local version only after the server's had replaced it, so a stop
    ///   after the download's rename lost it (92, 133, 174, 264: found once the simulator could
    ///   stop a device there);
    /// - a delete refused because of this device's own lost upload, sent again, left another
    ///   device an evicted file's stub beside a new record's file at its name, judged as content
    ///   at every pass (68, with that fix);
    /// - conflict versions lost when nothing on the disk linked a file to them any more: a file
    ///   saved by rename, then renamed, while deleted elsewhere (30); saved by rename in a
    ///   folder renamed just before (302); the same in a folder the remote part made again at
    ///   its old name (110, once the fix for 30 took it that way);
    /// - a file renamed and edited elsewhere, gone from its name here, downloaded over a new
    ///   file not yet sent at its new name (102);
    /// - a new folder at the name a folder's rename left took the renamed one's journal row, and
    ///   the rename failing left that folder's record on the server beside the new one's (234,
    ///   once the fix for 110 took it that way);
    /// - the content of a record dropped as one of two for a path, its own device having moved
    ///   its file aside for a rename and then deleted it with the record (117).
    /// (Seeds 43 and 202 were the ledger's: a folder deleted with an evicted file, or a
    /// skip-backup folder, in it deleted those files knowingly. Seed 78 also failed without the first three fixes, but does not replay the same
    /// run every time: it still fails now and then, an open bug.)
    /// These replay in the world they were found in (``SimWorld/Model/withoutPowerLoss``).
    static let regressions: [UInt64] = [2, 5, 16, 22, 27, 30, 37, 48, 52, 56, 60, 68, 69, 80, 86, 92, 101, 102, 110, 117, 130, 133, 174, 191, 234, 264, 302]

    /// Seeds that found bugs once crashes could be power losses (``SimDisk``), fsyncs could fail
    /// and users could edit a file as its download landed (the current model):
    /// - a download renamed into place whose folder's fsync failed, adopted by the next pass as
    ///   the server's version, came back older after a power loss and was sent over it (17);
    /// - a file written at an evicted file's name, taken by another record, left the stub beside
    ///   the download (9);
    /// - an evicted file's content, its record dropped as one of two for a path by its own
    ///   device; a conflict version shared for an evicted file, failing every pass; a remote
    ///   rename onto a name only a stub held, the file put beside the stub (19: it takes another
    ///   path in most runs, so `SyncDuplicateRecordTests` and `EvictionStubTests` hold each);
    /// - a downloaded evicted file's stub, removed after the journal write without a folder
    ///   sync, back beside the file after a power loss (174);
    /// - an evicted file in a folder renamed here, the rename's answer lost: the device took its
    ///   own renames coming back for deletes and deleted the records (178);
    /// - a conflict version found by its path only (an editor's save), left out of reach by a
    ///   switch of account that kept the folder aside (186, 309);
    /// - (the checker's) an evicted file kept aside by a switch, its content on the old account's
    ///   server only, counted as lost (206);
    /// - stubs left where files should be: an eviction whose folder's fsync failed (322), a stub
    ///   removed without a folder sync, back after a power loss (314);
    /// - a folder made at the old path of a folder moved elsewhere, carried along by the move
    ///   here and never sent (346, 366);
    /// - a file renamed, then saved by an editor, no pass between (or moved into a skip-backup
    ///   folder): deleted as the item it was, its conflict versions left out of reach (513, 547,
    ///   565);
    /// - (the disk model's) a folder kept under two names in one parent, the old one the engine's
    ///   folder of temporaries, cleared at start with the user's files in it (532, 595);
    /// - (the checker's) an evicted file sent as an asset, deleted with its folder, its content
    ///   known to the ledger by another kind of hash, counted as lost (628);
    /// - downloads renamed into a new folder whose fsync failed, journaled as synced by the same
    ///   pass's look at its landings, taken back by a power loss and sent as deletes (879);
    /// - an evicted file renamed elsewhere into a folder kept back here (skip-backup since
    ///   earlier passes): judged gone, its delete sent with only the stub left (923; 838's lost
    ///   write too, by a folder's rename); then records moved or made elsewhere inside such a
    ///   folder, written there and deleted everywhere by the next local pass (838: held back now);
    /// - a file in conflict renamed, then saved by an editor, then a switch of account before
    ///   any pass: its conflict version left out of reach in the folder kept aside (1086);
    /// - a conflict version moved with its file onto another item's name, taken for resolved
    ///   and withdrawn, shared again for that item, then deleted by name by a device that still
    ///   had it for the first item (1292);
    /// - an evicted file's own content adopted back, its stub removed without a folder sync,
    ///   back after a power loss beside the file for no item (1161);
    /// - what went aside with a folder moved out of a remote rename's way, left at its old path
    ///   on the server (711, 804: no convergence);
    /// - an evicted file moved there while its folders were renamed here, not scanned yet: taken
    ///   for a delete here, its record and stub gone, the other devices' copies deleted (1497);
    /// - writes lost: conflict versions dropped with the row of a file deleted elsewhere while
    ///   edited here (1652); a conflict version of a file saved by an editor, then moved by a
    ///   remote rename, taken for resolved (1706); a folder journaled with its name not durable
    ///   (1755);
    /// - no convergence: a file marked skip-backup while renamed and rewritten elsewhere (1715);
    ///   what a folder renamed elsewhere took along, its queueing lost to a kill (1738); a folder
    ///   moved under its own old path, applied after a file sorted before it (1836); a folder
    ///   marked skip-backup while renamed elsewhere, its record waiting for the old name (1813);
    ///   a move cycle, sent one level deeper each round (2112);
    /// - a record left under no folder on the server: a new file in a folder waiting for a
    ///   rename's name (1775); a folder marked skip-backup while a record waited under it (1841),
    ///   or in a pass whose fetch failed (2456);
    /// - a file written over an evicted one, its folder then marked skip-backup: the download
    ///   before the exclusion refused at every pass, the server's content on no device (3131);
    /// - a stub hidden behind a file moved onto its name (1817);
    /// - an evicted file's stub that took a deleted file's inode, paired with the deleted file:
    ///   the evicted file's record deleted, its content with it (10625; birth times tell); a new
    ///   file that took a deleted folder's stub's inode: the stub written again into the folder
    ///   that was gone, every pass failing (10956);
    /// - a folder inside one marked skip-backup, deleted in a pass whose fetch failed while a
    ///   file from elsewhere arrived in it: the file under no folder on the server (11251); a
    ///   file marked skip-backup before its upload's answer came, its record renamed elsewhere:
    ///   held back behind the lost upload's entry and never applied once that entry was let go
    ///   of (11489; 12043 the same with a folder).
    /// (314 and 366 take other paths in most runs: `PowerLossTests` and
    /// `SyncDuplicateRecordTests` hold them, and they are not replayed here.)
    static let powerLossRegressions: [UInt64] = [9, 17, 19, 174, 178, 186, 206, 309, 322, 346, 513, 532, 547, 565, 595, 628, 711, 804, 838, 879, 923, 1086, 1161, 1292, 1497, 1652, 1706, 1715, 1738, 1755, 1775, 1813, 1817, 1836, 1841, 2112, 2456, 3131, 3814, 3877, 4164, 5358, 5548, 6206, 6329, 6618, 6862, 7013, 7364, 9185, 9695, 9773, 10026, 10101, 10117, 10356, 10625, 10956, 11251, 11489, 12043]

    /// Seeds of CI's batch that still find bugs (open in issue 27), by what they find: their
    /// failures are reported as known issues until fixed.
    /// (Seeds 156, 247 and 387 found bugs not fixed yet, docs/sync.md "Still open"; since the
    /// sign-in steps their runs take other paths and pass.)
    static let knownFailures: [UInt64: String] = [:]

    static func replayLine(_ seed: UInt64, model: SimWorld.Model = .current) -> String {
        (model == .current ? "" : "UBIQUITY_SIM_MODEL=\(model.name) ") + "UBIQUITY_SIM_SEED=\(seed) swift test --filter SimulationTests/replay"
    }

    static func check(_ report: SimReport) {
        guard !report.failures.isEmpty else { return }
        Issue.record("""
            seed \(report.seed) failed: \(report.failures.joined(separator: "; "))
            replay: \(replayLine(report.seed, model: report.model))
            """)
    }

    @Test func seededRunsKeepEveryInvariant() async throws {
        let clock = ContinuousClock()
        let started = clock.now
        var coverage: [SimCoverage: Int] = [:]
        var hashes = Set<String>()
        var virtual = 0.0
        var faults = 0
        var rounds: [Int] = []
        for seed in Self.firstSeed..<(Self.firstSeed + UInt64(Self.seeds)) {
            let report: SimReport
            do {
                report = try await SimWorld.run(seed: seed, steps: Self.steps)
            } catch let abort as SimAbort {
                Issue.record("\(abort)\nreplay: \(Self.replayLine(seed))")  // the batch goes on with the next seed
                continue
            }
            if let known = Self.knownFailures[seed] {
                withKnownIssue(Comment(rawValue: known), isIntermittent: true) { Self.check(report) }
            } else {
                Self.check(report)
            }
            coverage.merge(report.coverage, uniquingKeysWith: +)
            hashes.insert(report.traceHash)
            virtual += report.virtualSeconds
            faults += report.faults.values.reduce(0, +)
            rounds.append(report.roundsToQuiescence)
        }
        let elapsed = clock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("""
            simulation: \(Self.seeds) seeds × \(Self.steps) steps in \(String(format: "%.1f", seconds)) s: \
            \(String(format: "%.2f", Double(Self.seeds) / seconds)) seeds/s, \
            \(String(format: "%.2f", virtual / 3600 / seconds)) simulated hours per second; \
            \(hashes.count) distinct interleavings; \(faults) network faults; rounds to quiescence max \(rounds.max() ?? 0)
            coverage: \(coverage.sorted { $0.key < $1.key }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", "))
            """)
        #expect(hashes.count == Self.seeds, "every seed is a run of its own")
        // the paths worth testing ran (a batch as large as CI's is enough for each)
        if Self.seeds >= Self.defaultSeeds {
            for path in [SimCoverage.conflict, .crashMidPass, .pausedMidPass, .networkFault, .evictWhileEdited, .editorSave, .caseOnlyRename,
                         .powerLoss, .fsyncFailed, .editDuringDownload, .accountSwitch] {
                #expect(coverage[path, default: 0] > 0, "the \(path.rawValue) path never ran")
            }
        }
    }

    /// A content sent as an asset is journaled by its chunk-list checksum: deleted knowingly as
    /// an evicted file (its stub's journal entry), it is superseded in the ledger, not counted
    /// as lost (the checker's mistake, seed 628).
    @Test func theLedgerKnowsAContentSentAsAnAssetByItsChunkListChecksum() {
        let ledger = SimLedger(seed: 1)
        let data = Data((0..<(Int(SyncRecord.inlineLimit) + 1_000)).map { UInt8(truncatingIfNeeded: $0 &* 131) })
        ledger.wrote(data, origin: "big")
        #expect(ledger.lost(present: []).count == 1)
        let checksum = SimLedger.chunkListChecksum(data) ?? ""
        #expect(checksum.count == 66 && checksum.hasPrefix("01"))
        ledger.supersede(digest: checksum)
        #expect(ledger.lost(present: []).isEmpty)
    }

    @Test func aSeedReplaysTheSameRun() async throws {
        let first = try await SimWorld.run(seed: 4242, steps: 40)
        let second = try await SimWorld.run(seed: 4242, steps: 40)
        Self.check(first)
        #expect(first.traceHash == second.traceHash,
                "the same seed ran differently: \(zip(first.trace, second.trace).first { $0 != $1 }.map { "\($0) vs \($1)" } ?? "lengths differ")")
    }

    @Test(arguments: regressions) func aSeedThatFoundABug(_ seed: UInt64) async throws {
        Self.check(try await SimWorld.run(seed: seed, steps: Self.steps, model: .withoutPowerLoss))
    }

    @Test(arguments: powerLossRegressions) func aSeedThatFoundABugWithPowerLosses(_ seed: UInt64) async throws {
        Self.check(try await SimWorld.run(seed: seed, steps: Self.steps))
    }

    @Test(.enabled(if: environment["UBIQUITY_SIM_SEED"] != nil, "UBIQUITY_SIM_SEED=N replays one seed"))
    func replay() async throws {
        let seed = try #require(Self.environment["UBIQUITY_SIM_SEED"].flatMap(UInt64.init))
        // (`UBIQUITY_SIM_MODEL=without-power-loss`: the world of the older regressions)
        let model: SimWorld.Model = Self.environment["UBIQUITY_SIM_MODEL"] == SimWorld.Model.withoutPowerLoss.name ? .withoutPowerLoss : .current
        let report = try await SimWorld.run(seed: seed, steps: Self.steps, model: model)
        print(report.trace.joined(separator: "\n"))
        print("trace hash \(report.traceHash)")
        Self.check(report)
    }
}
