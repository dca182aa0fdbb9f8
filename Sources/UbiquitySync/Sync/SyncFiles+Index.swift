// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import UbiquityCore
import UbiquityStore

extension SyncFiles {
    /// The items of a narrowed `scope` in the folder `root` as the device's index holds them:
    /// the rows the daemon's one watcher and walker wrote (``MetadataIndex``), read instead of
    /// walking the folder (a whole pass is ``differences(journal:root:rules:excluded:queued:)``).
    /// The same items a walk (``scan(root:rules:)``) finds: ignored names and our temporaries
    /// left out (a leftover temporary is removed, as the walk does), nothing under a folder that
    /// is ignored or carries the skip-backup attribute, an evicted file's stub standing for its
    /// document. Only the skip-backup attribute of each item is read from the disk (the index
    /// does not keep it). A row written before the index kept modes is read from the disk.
    /// Names that are not UTF-8 have no rows: the scope's ``LocalScope/unindexable`` paths have
    /// their folders read for them (``unsyncableNames(near:root:rules:excluded:)``).
    ///
    /// Trust it only while the index watches the folder and its first scan is done
    /// (`IndexHost.covers`); the pass checks on the disk what looks deleted before acting on it.
    static func scan(index: MetadataIndex, root: String, rules: IgnoreRules, scope: LocalScope, excluded: Set<String>,
                     journaled: (String) -> Bool) throws -> LocalScan {
        var rows = IndexRowFilter(root: root, rules: rules, excluded: excluded, whole: false)
        for row in try indexRows(index: index, root: root, scope: scope, journaled: journaled) { _ = rows.take(row) }
        var found = rows.found
        found.unsyncable = unsyncableNames(near: scope.unindexable, root: root, rules: rules, excluded: excluded)
        return found
    }

    /// The names that are not UTF-8 in the folders of `paths` (relative: the index's
    /// ``IndexDelta/unindexable``, the bad bytes as U+FFFD), each bad byte written `\xNN`, as the
    /// walk reports them; folders that are ignored or excluded are not read.
    static func unsyncableNames(near paths: Set<String>, root: String, rules: IgnoreRules, excluded: Set<String>) -> Set<String> {
        var reachable = ReachableFolders(excluded: excluded, rules: rules)
        var found = Set<String>()
        for parent in Set(paths.map(relativeParent(of:))) {
            guard parent.isEmpty || reachable.isReachable(folder: parent),
                  let entries = DirectoryEntries.read(parent.isEmpty ? root : root + "/" + parent) else { continue }
            for bad in entries.invalid { found.insert(parent.isEmpty ? bad : parent + "/" + bad) }
        }
        return found
    }

    /// A whole pass as a comparison of the index with the journal, row by row in one query
    /// (``SyncJournal/forEachRow(_:)``): only the items that differ from their entries (new,
    /// changed, carrying the skip-backup attribute, queued, excluded before) are kept, with their
    /// entries, and the entries of items left out (ignored, under an excluded folder) or without
    /// a row (judged deleted after a look on the disk). A whole pass over 100,000 synced items
    /// holds what changed, not 100,000 items and entries; what it decides is what the plain
    /// whole pass decides (an unchanged item with its entry leads to nothing).
    static func differences(journal: SyncJournal, root: String, rules: IgnoreRules, excluded: Set<String>,
                            queued: Set<String>) throws -> (scan: LocalScan, entries: [JournalEntry]) {
        var rows = IndexRowFilter(root: root, rules: rules, excluded: excluded, whole: true)
        var entries: [JournalEntry] = []
        try journal.forEachRow { row, entry in
            let (relative, item) = rows.take(row) { item in
                entry != nil || item.stat.kind != .file || item.isStub || item.excluded || excluded.contains(item.path)
            }
            guard let item else {
                if let entry { entries.append(entry) }  // left out: judged as gone
                return
            }
            guard let entry else { return }  // new: kept (a plain file in the list of fresh ones)
            if !item.excluded && !queued.contains(relative) && !excluded.contains(relative) && !item.stat.differs(from: entry.stat)
                && item.stat.mode == entry.stat.mode && item.target == entry.target {
                rows.drop(relative)  // as synced: nothing to decide
                return
            }
            entries.append(entry)
        }
        return (rows.found, entries + (try journal.entriesWithoutRows()))
    }

    /// The index rows a narrowed scan of `scope` reads, sorted by path: the row of each named
    /// path, and every row in each subtree and in each named folder that is new (not `journaled`).
    static func indexRows(index: MetadataIndex, root: String, scope: LocalScope, journaled: (String) -> Bool) throws -> [IndexFileFacts] {
        var rows = try index.facts(atPaths: scope.paths.union(scope.subtrees).filter { isValid(relativePath: $0) }.map { root + "/" + $0 })
        var wholeFolders = scope.subtrees
        for row in rows.values where row.isDirectory {
            let relative = String(row.path.utf8.dropFirst(root.utf8.count + 1))!
            if !wholeFolders.contains(relative) && !journaled(relative) { wholeFolders.insert(relative) }
        }
        // (the outermost only: a folder inside another read whole is read with it)
        for folder in wholeFolders where !isInside(folder, anyOf: wholeFolders) {
            for row in try index.facts(under: root + "/" + folder) { rows[row.path] = row }
        }
        return rows.values.sorted { $0.path < $1.path }
    }

    /// The local item an index row describes (its stat, a link's target, a stub standing for
    /// its document; the skip-backup attribute read from the disk). A row without a mode (from
    /// before the index kept modes) is read from the disk.
    static func localItem(_ row: IndexFileFacts, path: String, absolute: String) -> LocalItem? {
        guard row.mode != 0 else { return item(path: path, absolute: absolute) }
        let kind: SyncItemKind = row.isSymbolicLink ? .symlink : row.isDirectory ? .folder : .file
        let stat = SyncStat(kind: kind, size: kind == .folder ? 0 : row.size, modifiedNanoseconds: kind == .folder ? 0 : row.mtimeNanoseconds,
                            inode: row.inode, mode: row.mode & 0o7777, birthNanoseconds: row.birthNanoseconds)
        if row.isStub { return LocalItem(path: path, stat: stat, target: nil, excluded: false, isStub: true) }
        let excluded = kind != .symlink && ((try? BackupExclusion.isExcluded(absolute)) ?? false)
        return LocalItem(path: path, stat: stat, target: kind == .symlink ? row.linkTarget : nil, excluded: excluded)
    }
}

/// What a scan of the index's rows keeps of each row, in path order (a folder before what it
/// holds): ignored names, our temporaries (a leftover is removed, as the walk does) and
/// everything under an ignored or excluded folder left out, each other row made a local item.
struct IndexRowFilter {
    let root: String
    let rules: IgnoreRules
    /// Whether the scan is whole (else every row's folders are checked on the way).
    let whole: Bool
    private var reachable: ReachableFolders
    private let prefix: Int
    /// The items and left-out folders so far.
    private(set) var found = LocalScan()

    init(root: String, rules: IgnoreRules, excluded: Set<String>, whole: Bool) {
        self.root = root
        self.rules = rules
        self.whole = whole
        reachable = ReachableFolders(excluded: excluded, rules: rules)
        prefix = root.utf8.count + 1
    }

    /// Takes one row: the item it describes (also kept in ``found``: by path when `byPath` says
    /// so, else in its list of fresh files), or nil when it is left out; with its path relative
    /// to the folder either way.
    mutating func take(_ row: IndexFileFacts, byPath: (LocalItem) -> Bool = { _ in true }) -> (relative: String, item: LocalItem?) {
        let relative = String(decoding: row.path.utf8.dropFirst(prefix), as: UTF8.self)
        if !found.leftOut.isEmpty && SyncFiles.isInside(relative, anyOf: found.leftOut) { return (relative, nil) }
        if !whole && !reachable.isReachable(parentOf: relative) { return (relative, nil) }
        let name = row.name
        if SyncFiles.isOwnTemporary(name) {
            if !relative.contains("/") && name == NewFilesFolder.name { NewFilesFolder.clear(root: root) } else { unlink(row.path) }
            found.leftOut.insert(relative)
            return (relative, nil)
        }
        if SyncFiles.isIgnored(name: name, relativePath: relative, isDirectory: row.isDirectory, rules: rules) {
            found.leftOut.insert(relative)
            return (relative, nil)
        }
        guard let item = SyncFiles.localItem(row, path: relative, absolute: row.path) else { return (relative, nil) }
        if byPath(item) { found.items[relative] = item } else { found.fresh.append(item) }
        if item.stat.kind == .folder && item.excluded { found.leftOut.insert(relative) }
        return (relative, item)
    }

    /// Forgets the item of `relative` (kept out of ``found``).
    mutating func drop(_ relative: String) {
        found.items[relative] = nil
    }
}
