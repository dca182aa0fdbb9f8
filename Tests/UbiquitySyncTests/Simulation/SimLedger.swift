// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore
import UbiquityCloudKit
@testable import UbiquitySync
@testable import UbiquitySync

/// The simulator's "sometimes" paths: each counts how often a run took it, so that a batch of
/// seeds shows the paths worth testing actually ran.
enum SimCoverage: String, CaseIterable, Sendable, Comparable {
    case conflict, moveCycle, evictWhileEdited, crashMidWrite, crashMidPass, crashIdle, diskFault, networkFault
    case pausedMidPass, editDuringDownload, exclusionToggled, caseOnlyRename, editorSave, folderDeleted, downloadEvicted
    case powerLoss, fsyncFailed, signInAgain, accountSwitch

    static func < (lhs: SimCoverage, rhs: SimCoverage) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// What a simulated run knows about the users' writes and what happened, shared with the
/// engines' hooks: every content a user wrote, and which ones a user replaced or deleted
/// knowingly (they were the bytes the user's write or delete found there); the trace; the
/// coverage. Every write counts as acknowledged: after quiescence every device has synced, so
/// no written content may be gone unless a user replaced or deleted it.
final class SimLedger: Sendable {
    struct State {
        var acknowledged: [String: String] = [:]  // digest → where it was written
        var superseded: Set<String> = []
        var aliases: [String: String] = [:]  // chunk-list checksum → digest (contents sent as assets)
        var trace: [String] = []
        var coverage: [SimCoverage: Int] = [:]
        var random: SeededRandom
    }
    let state: Mutex<State>

    init(seed: UInt64) { state = Mutex(State(random: SeededRandom(seed: seed ^ 0x5151_5151))) }

    /// The hex SHA-256 of `data`, as the engine hashes contents.
    static func digest(_ data: Data) -> String { SyncFiles.hash(data) }

    /// A user wrote a new content (`origin` says which step where).
    func wrote(_ data: Data, origin: String) {
        let digest = Self.digest(data)
        let checksum = data.count > SyncRecord.inlineLimit ? Self.chunkListChecksum(data) : nil
        state.withLock { state in
            if state.acknowledged[digest] == nil { state.acknowledged[digest] = origin }
            if let checksum { state.aliases[checksum] = digest }
        }
    }

    /// The chunk-list checksum the engine journals for `data` sent as an asset (what a stub's
    /// journal entry holds: the ledger's digest is a whole-content SHA-256).
    static func chunkListChecksum(_ data: Data) -> String? {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ubq-sim-ledger-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: url) }
        guard (try? data.write(to: url)) != nil else { return nil }
        return try? AssetFileScan.scan(url, identity: .chunkList).hexChecksum
    }

    /// The user replaced or deleted these bytes knowingly.
    func supersede(_ data: Data?) {
        guard let data else { return }
        supersede(digest: Self.digest(data))
    }

    /// The user deleted the bytes of digest `digest` knowingly (an evicted file: not on disk),
    /// or of a chunk-list checksum (a journal's, for a content sent as an asset: seed 628).
    func supersede(digest: String) {
        _ = state.withLock { $0.superseded.insert($0.aliases[digest] ?? digest) }
    }

    /// Contents acknowledged, not replaced knowingly, and not in `present`: lost writes.
    func lost(present: Set<String>) -> [String] {
        state.withLock { state in
            state.acknowledged.filter { !state.superseded.contains($0.key) && !present.contains($0.key) }.map { "\($0.value) (\($0.key.prefix(12)))" }.sorted()
        }
    }

    func log(_ line: String) { state.withLock { $0.trace.append(line) } }
    func count(_ path: SimCoverage) { state.withLock { $0.coverage[path, default: 0] += 1 } }
    var coverage: [SimCoverage: Int] { state.withLock { $0.coverage } }
    var trace: [String] { state.withLock { $0.trace } }

    /// True with probability `p`, from the run's seed (for the hooks, which run inside passes).
    func chance(_ p: Double) -> Bool {
        state.withLock { Double($0.random.next() % 10_000) / 10_000 < p }
    }
}
