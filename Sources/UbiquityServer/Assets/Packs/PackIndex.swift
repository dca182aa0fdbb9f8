// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import Synchronization
import UbiquityCore

/// Which chunk is in which pack: the union of the store's pack indexes (`indexes/<pack id>`,
/// one ``PackChunkLocation`` line per chunk, written once the pack is whole), held in memory and
/// brought up to date by listing the indexes and reading those not yet seen. Another server's
/// new packs are learnt at the next ``refresh(objects:minimumInterval:force:)``; until then their chunks count as
/// missing, which costs only a second copy, never a wrong answer.
///
/// A location found here names a pack that existed when its index was read: before relying on
/// it, a writer restarts the pack's age (``PackBlobStore/retain(packs:)``), which also shows it is
/// still there.
final class PackIndex: Sendable {
    private struct State {
        var locations: [String: PackChunkLocation] = [:]
        var packs: Set<String> = []
        var lastRefresh: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    /// Serializes refreshes (each lists the indexes once for every caller waiting).
    private let refreshing = AsyncTurns()

    /// The key of a pack's index.
    static func key(pack id: String) -> String { "indexes/\(id)" }

    /// Where the chunk is, when known.
    func location(_ hash: String) -> PackChunkLocation? { state.withLock { $0.locations[hash] } }

    /// How many distinct chunks are known.
    var count: Int { state.withLock { $0.locations.count } }

    /// Learns a pack's chunks (a pack just written).
    func add(_ entries: [PackChunkLocation]) {
        guard let pack = entries.first?.pack else { return }
        state.withLock { state in
            state.packs.insert(pack)
            for entry in entries where state.locations[entry.hash] == nil { state.locations[entry.hash] = entry }
        }
    }

    /// Forgets a pack (deleted, or found missing).
    func forget(pack: String) {
        state.withLock { state in
            state.packs.remove(pack)
            state.locations = state.locations.filter { $0.value.pack != pack }
        }
    }

    /// Reads the indexes of packs not yet known; skipped when the last refresh ended less than
    /// `minimumInterval` ago, unless `force`.
    func refresh(objects: any BlobObjects, minimumInterval: Duration = .seconds(1), force: Bool = false) async throws {
        let asked = ContinuousClock.now
        try await refreshing.run {
            if !force, let last = self.state.withLock({ $0.lastRefresh }), last > asked || ContinuousClock.now - last < minimumInterval { return }
            let listed = try await objects.list(prefix: "indexes/")
            let known = self.state.withLock { $0.packs }
            let present = Set(listed.map { String($0.key.dropFirst("indexes/".count)) })
            for pack in known.subtracting(present) { self.forget(pack: pack) }
            for pack in present.subtracting(known) {
                guard let body = try await objects.get(PackIndex.key(pack: pack)) else { continue }
                let entries = try PackChunkLocation.lines(Substring(String(buffer: body)), lenient: false, what: "the pack index \(pack)")
                guard entries.allSatisfy({ $0.pack == pack }) else { throw UbiquityError(.io, "the pack index \(pack) names another pack") }
                self.add(entries)
            }
            self.state.withLock { $0.lastRefresh = ContinuousClock.now }
        }
    }
}
