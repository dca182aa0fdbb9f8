// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore
import UbiquityWire

/// Which chunks a manifest commit must retain (restart the age of, under ``FileBlobStore/chunkLock``),
/// and the handshake with garbage collection that lets it skip the others.
///
/// A commit normally retains every chunk of its list, so that a collection running meanwhile
/// does not delete one between the check and the manifest's rename (`utimensat` of 16,000 files
/// for 1 GiB). The chunks of the list's **base** — the stored version a relative list was built
/// from (`docs/assets.md`, "Lists relative to a base") — need not be retained when no
/// collection can run between the check and the rename:
///
/// - only collection deletes chunks, and a manifest on disk never names a missing chunk, so the
///   base's chunks are all present when its manifest is found;
/// - a commit that skips registers itself (``RetentionState/skippingCommits``) unless a
///   collection is running, and deregisters once its manifest is in place (or it failed);
/// - a collection marks itself running, then waits until no skipping commit is registered
///   before it reads the first manifest. So it sees the new manifest, whose list names the
///   base's chunks, and keeps them; a commit that comes while it runs retains every chunk, as
///   before (a chunk collected meanwhile is answered `404` with `missing`).
struct RetentionState {
    /// Whether a garbage collection is running (from before its first read to its end).
    var collecting = false
    /// Commits under way that did not retain their base's chunks.
    var skippingCommits = 0
}

/// How many chunks commits retained (tests count them).
struct RetentionCounters {
    var retained = 0
    var skipped = 0
}

extension FileBlobStore {
    /// Registers a commit that may skip retaining its base's chunks; false while a collection
    /// runs (the commit then retains every chunk).
    func beginSkippingCommit() -> Bool {
        retention.withLock { state in
            guard !state.collecting else { return false }
            state.skippingCommits += 1
            return true
        }
    }

    /// Deregisters a commit registered by ``beginSkippingCommit()``.
    func endSkippingCommit() {
        retention.withLock { $0.skippingCommits -= 1 }
    }

    /// Marks a collection running and waits (blocking) until no skipping commit is under way.
    func beginCollecting() {
        retention.withLock { $0.collecting = true }
        while retention.withLock({ $0.skippingCommits }) > 0 { usleep(1000) }
    }

    /// Marks the collection ended.
    func endCollecting() {
        retention.withLock { $0.collecting = false }
    }

    /// Retains the chunks of `chunks` that the manifest of `base` (when given and stored) does
    /// not name, or all of them; see ``RetentionState``. Call only between
    /// ``beginSkippingCommit()`` (when it returned true) and the manifest's rename. Blocking.
    /// - Throws: `notFound` (underlying ``BlobMissingChunks``) naming those not stored.
    func retain(_ chunks: [AssetChunkRef], skippingBase base: String?) throws {
        var toRetain = chunks
        if let base, let manifest = try loadManifest(base) {
            let named = Set(manifest.chunks.map(\.hash))
            toRetain = chunks.filter { !named.contains($0.hash) }
        }
        try retainAll(toRetain)
        retentionCounters.withLock {
            $0.retained += toRetain.count
            $0.skipped += chunks.count - toRetain.count
        }
    }

    /// How many chunks commits retained and skipped so far (tests).
    package var commitRetains: (retained: Int, skipped: Int) {
        retentionCounters.withLock { ($0.retained, $0.skipped) }
    }
}
