// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import UbiquityCore
import UbiquityStore

extension SyncFiles {
    /// The items of `scope` in the folder `root` as the device's index holds them: the rows the
    /// daemon's one watcher and walker wrote (``MetadataIndex``), read instead of walking the
    /// folder again. The same items the disk scan (``scan(root:rules:scope:excluded:journaled:)``)
    /// finds: ignored names and our temporaries left out (a leftover temporary is removed, as the
    /// walk does), nothing under a folder that is ignored or carries the skip-backup attribute,
    /// an evicted file's stub standing for its document. Only the skip-backup attribute of each
    /// item is read from the disk (the index does not keep it). A row written before the index
    /// kept modes is read from the disk. Names that are not UTF-8 have no rows: a scope path
    /// naming one (the feed's ``IndexDelta/unindexable``) has its folder read for them.
    ///
    /// Trust it only while the index watches the folder and its first scan is done
    /// (`IndexHost.covers`); the pass checks on the disk what looks deleted before acting on it.
    static func scan(index: MetadataIndex, root: String, rules: IgnoreRules, scope: LocalScope, excluded: Set<String>,
                     journaled: (String) -> Bool) throws -> LocalScan {
        var found = LocalScan()
        var reachable = ReachableFolders(excluded: excluded, rules: rules)
        let prefix = root.utf8.count + 1
        // rows in path order: a folder before what it holds
        func take(_ row: IndexFileFacts) {
            let relative = String(decoding: row.path.utf8.dropFirst(prefix), as: UTF8.self)
            if !found.leftOut.isEmpty && isInside(relative, anyOf: found.leftOut) { return }
            if !scope.full && !reachable.isReachable(parentOf: relative) { return }
            let name = row.name
            if isOwnTemporary(name) {
                if !relative.contains("/") && name == NewFilesFolder.name { NewFilesFolder.clear(root: root) } else { unlink(row.path) }
                found.leftOut.insert(relative)
                return
            }
            if isIgnored(name: name, relativePath: relative, isDirectory: row.isDirectory, rules: rules) {
                found.leftOut.insert(relative)
                return
            }
            guard let item = localItem(row, path: relative, absolute: row.path) else { return }
            found.items[relative] = item
            if item.stat.kind == .folder && item.excluded { found.leftOut.insert(relative) }
        }
        if scope.full {
            try index.forEachFact(under: root, take)  // one row at a time: no array of 100,000
        } else {
            for row in try indexRows(index: index, root: root, scope: scope, journaled: journaled) { take(row) }
        }
        // names that are not UTF-8: their folder is read for them, as the walk does
        for path in scope.paths where (path as NSString).lastPathComponent.contains("\u{FFFD}") {
            let parent = (path as NSString).deletingLastPathComponent
            guard reachable.isReachable(parentOf: path), let entries = DirectoryEntries.read(parent.isEmpty ? root : root + "/" + parent) else { continue }
            for bad in entries.invalid { found.unsyncable.insert(parent.isEmpty ? bad : parent + "/" + bad) }
        }
        return found
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
                            inode: row.inode, mode: row.mode & 0o7777)
        if row.isStub { return LocalItem(path: path, stat: stat, target: nil, excluded: false, isStub: true) }
        let excluded = kind != .symlink && ((try? BackupExclusion.isExcluded(absolute)) ?? false)
        return LocalItem(path: path, stat: stat, target: kind == .symlink ? row.linkTarget : nil, excluded: excluded)
    }
}
