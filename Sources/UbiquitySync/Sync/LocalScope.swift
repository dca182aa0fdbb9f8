// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityIndex
import UbiquityStore

/// What the local part of the next pass looks at: everything (a full scan: at start, on the poll
/// interval, after a failed pass, while the index does not watch the folder), or the paths the
/// index's change feed named since the last pass. A value with no I/O.
struct LocalScope: Sendable, Equatable {
    /// Scan the whole folder.
    var full = true
    /// Past this many named paths and subtrees, the scope is the whole folder.
    static let wholeBeyond = 20_000
    /// Items to stat again (relative paths); a folder among them is scanned whole when it is new.
    var paths = Set<String>()
    /// Subtrees to scan whole, with every journal entry under them (removed, moved, new folders).
    var subtrees = Set<String>()
    /// Names that are not UTF-8 (``IndexDelta/unindexable``, relative): no row stands for them,
    /// so their folders are read to report them. Kept when the scope becomes whole, since a whole
    /// pass reads the index's rows only.
    var unindexable = Set<String>()

    /// Whether nothing needs looking at.
    var isEmpty: Bool { !full && paths.isEmpty && subtrees.isEmpty && unindexable.isEmpty }

    /// Adds what a delta of the index's change feed changed in the folder `root` (rows outside
    /// it are ignored): an added or changed item is looked at again, a new folder and whatever
    /// was removed or moved (both ends) is a subtree. Returns whether the delta touched the
    /// folder (a pass is worth asking for).
    @discardableResult
    mutating func add(_ delta: IndexDelta, root: String) -> Bool {
        let prefix = Array((root + "/").utf8)
        var touched = false
        func relative(_ path: String) -> String? {
            if path == root {
                full = true
                touched = true
                return nil
            }
            // on the bytes: a delta names every file written (thousands)
            let bytes = path.utf8
            guard bytes.count > prefix.count, bytes.starts(with: prefix) else { return nil }
            touched = true
            let relative = String(decoding: bytes.dropFirst(prefix.count), as: UTF8.self)
            // an evicted file's stub stands for the file (``Placeholder``; the index names the
            // document already, this is for a stub it indexed as itself)
            if bytes.last == UInt8(ascii: "d"), let document = Placeholder.documentPath(ofStub: relative) { return document }
            return relative
        }
        for record in delta.added {
            guard let path = relative(record.path) else { continue }
            if record.isDirectory { subtrees.insert(path) } else { paths.insert(path) }
        }
        for record in delta.changed {
            if let path = relative(record.path) { paths.insert(path) }
        }
        for path in delta.removed {
            if let path = relative(path) { subtrees.insert(path) }
        }
        for move in delta.moved {
            if let from = relative(move.from) { subtrees.insert(from) }
            if let to = relative(move.record.path) { subtrees.insert(to) }
        }
        // the pass reads the folder of a name that is not UTF-8 and reports it unsyncable
        for path in delta.unindexable {
            if let path = relative(path) { unindexable.insert(path) }
        }
        // so many named (the index's first scan of a full folder): a whole pass reads each row
        // once, where the names would be looked up one by one and their folders read again
        // (and a whole pass needs no names)
        if full || paths.count + subtrees.count > Self.wholeBeyond {
            full = true
            paths = []
            subtrees = []
        }
        return touched
    }

    /// The scope so far, leaving an empty one in its place.
    mutating func take() -> LocalScope {
        let taken = self
        self = LocalScope(full: false)
        return taken
    }

    /// Whether the pass may judge the item at `path` (relative) deleted when it is gone: the
    /// scan is whole, or the watcher named its removal or move (the path or a folder above it is
    /// among ``subtrees``). A path named only as changed (or queued) that is gone now was moved or
    /// removed after the watcher's batch: its removal — with a rename's destination in the same
    /// batch — comes in the next batch, so deciding now would take a rename for a delete.
    func namesRemoval(of path: String) -> Bool {
        if full || subtrees.contains(path) { return true }
        return !subtrees.isEmpty && SyncFiles.isInside(path, anyOf: subtrees)
    }

    /// Whether `path` (relative) is looked at: named, or inside a named subtree.
    func contains(_ path: String) -> Bool {
        paths.contains(path) || namesRemoval(of: path)
    }
}
