// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCloudKit

/// What a ``SyncEngine`` remembers from one pass to the next, in memory (the journal keeps what
/// must survive a restart; this is lost with the engine, and a restart finds it again or starts
/// without it). A value: the engine's actor owns it.
struct SyncPassMemory: Sendable {
    /// Whether the zone subscription that makes the server push changes is saved.
    var subscribed = false
    /// Items with unresolved conflict versions, until they are resolved (for the index): item
    /// ID → the path last reported in conflict (keyed by ID so the flag follows a rename:
    /// `followConflictedItems()`, SyncEngine+ConflictMoves.swift).
    var conflicted: [String: String] = [:]
    /// Whether ``conflicted`` holds the items the journal has conflict versions of (loaded once
    /// after a start: `loadConflictedItems()`, SyncEngine+ConflictMoves.swift).
    var conflictsLoaded = false
    /// Uploads the server refused for good (too large, over quota), by path, with the stat they
    /// had: not tried again until the item changes (or the daemon restarts).
    var refusedUploads: [String: SyncStat] = [:]
    /// Change-token steps of this device's saves that did not start where the zone's token
    /// was when their answer came (overlapping saves applied out of order): chained when the
    /// answer that ends where they start arrives (`skipOwnChanges(_:)`).
    var ownChangeSteps: [ModifyChangeTokens] = []
    /// Whether the version store was surveyed for unshared conflict versions since the start.
    var versionsSurveyed = false
    /// Remote records not applied because a link is on the way (item ID → the refused change
    /// tag), so each is reported once (SyncEngine+LinkedParents.swift).
    var refusedDownloads: [String: String] = [:]
    /// Asset contents fetched ahead of applying their records, by item ID (staging files).
    var prefetched: [String: (path: String, hash: String)] = [:]
    /// The paused deletes already reported (so a pause is reported once).
    var massDeletePaused: Int?
    /// The names found unsyncable and already reported (SyncEngine+Names.swift).
    var unsyncableNames = UnsyncableNames()
    /// Journaled items found on the disk while the index had no row for them, by path: how many
    /// times each was looked at again (``SyncEngine/recheckUnindexed(_:)``).
    var unindexedRechecks: [String: Int] = [:]
    /// The folders (relative) noted in the journal as holding this engine's temporaries since
    /// it started (``SyncEngine/noteTemporaries(in:)``).
    var temporaryFolders: Set<String> = []
}

/// What tests put between a ``SyncEngine``'s steps (nil in a daemon).
struct SyncTestHooks: Sendable {
    /// A failure injected between the stages of the new-file writer.
    var newFilesFault: (@Sendable (String) throws -> Void)?
    /// Called between reading a large file and uploading it (the file may change there;
    /// SyncEngine+Upload.swift).
    var afterScan: (@Sendable (String) async -> Void)?
    /// Called right after a remote change was renamed into place, before it is journaled (the
    /// file may be edited there; SyncEngine+Remote.swift, +NewFiles.swift).
    var afterWrite: (@Sendable (String) -> Void)?
}
