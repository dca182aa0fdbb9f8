// SPDX-License-Identifier: Apache-2.0

/// What one scan of the synced folder found (``SyncFiles/scan(root:rules:)``): the items, and
/// the names it cannot sync. The scan runs off the engine (in `BlockingWork`) and hands all of
/// it back; nothing is left in a global for the engine to collect.
struct LocalScan: Sendable {
    /// The items, by path relative to the synced folder.
    var items: [String: LocalItem] = [:]
    /// New plain files (no journal entry, not excluded, not excluded before), in path order,
    /// when the scan compared the index with the journal (``SyncFiles/differences(journal:root:rules:excluded:queued:)``):
    /// a list, not a dictionary, since a first pass over 100,000 new files looks none of them up
    /// by path. Not in ``items``.
    var fresh: [LocalItem] = []
    /// The relative paths of names that are not valid UTF-8 (record names are Unicode text),
    /// each bad byte written `\xNN` (``DirectoryEntries``): never synced, reported instead.
    var unsyncable: Set<String> = []
    /// Folders (relative) whose subtrees the scan of the index's rows left out: ignored,
    /// excluded from backup, our temporaries (what is under them is not looked for on the disk).
    var leftOut: Set<String> = []
}
