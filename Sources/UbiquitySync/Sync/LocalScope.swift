// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityIndex

/// What the local part of the next pass looks at: everything (a full scan: at start, after a
/// watcher overflow or a lost watch, on the poll interval, after a failed pass), or the paths
/// the watcher named since the last pass. A value with no I/O.
struct LocalScope: Sendable, Equatable {
    /// Scan the whole folder.
    var full = true
    /// Items to stat again (relative paths); a folder among them is scanned whole when it is new.
    var paths = Set<String>()
    /// Subtrees to scan whole, with every journal entry under them (removed, moved, new folders).
    var subtrees = Set<String>()

    /// Whether nothing needs looking at.
    var isEmpty: Bool { !full && paths.isEmpty && subtrees.isEmpty }

    /// Adds a watcher batch for the folder `root` (absolute paths outside it are ignored).
    mutating func add(_ batch: WatchBatch, root: String) {
        let prefix = Array((root + "/").utf8)
        func relative(_ path: String) -> String? {
            if path == root { full = true; return nil }
            // on the bytes: a batch names every file written (thousands)
            let bytes = path.utf8
            guard bytes.count >= prefix.count, bytes.starts(with: prefix) else { return nil }
            let relative = String(decoding: bytes.dropFirst(prefix.count), as: UTF8.self)
            // an evicted file's stub stands for the file (``Placeholder``)
            if bytes.last == UInt8(ascii: "d"), let document = Placeholder.documentPath(ofStub: relative) { return document }
            return relative
        }
        for change in batch.changes {
            switch change {
            case .changed(let path): if let path = relative(path) { paths.insert(path) }
            case .removed(let path): if let path = relative(path) { subtrees.insert(path) }
            case .moved(let from, let to):
                if let from = relative(from) { subtrees.insert(from) }
                if let to = relative(to) { subtrees.insert(to) }
            }
        }
        for rescan in batch.rescans {
            switch rescan.reason {
            case .newDirectory: if let path = relative(rescan.path) { subtrees.insert(path) }
            case .overflow, .watchLimit, .rootChanged: full = true
            }
        }
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
