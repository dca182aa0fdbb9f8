// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB

extension SyncJournal {
    /// Added with pinning (Apple's "Keep Downloaded"): the pinned items, by ID.
    static let pinningSchema = """
        CREATE TABLE IF NOT EXISTS pinned (id TEXT PRIMARY KEY, since INTEGER NOT NULL);
        """

    /// Records whether item `id` is pinned: it (a folder: everything in it) stays downloaded.
    package func setPinned(_ id: String, _ pinned: Bool) throws {
        try setMarked(id, pinned, in: "pinned")
    }

    /// The paths of the pinned items (where their entries are now: a pin follows renames).
    package func pinnedPaths() throws -> Set<String> {
        try queue.read { db in
            Set(try String.fetchAll(db, sql: "SELECT items.path FROM pinned JOIN items ON items.id = pinned.id"))
        }
    }

    /// Whether the item at `path` is pinned, itself or through a folder above it.
    package func isPinned(path: String) throws -> Bool {
        Self.isPinned(path, among: try pinnedPaths())
    }

    /// Whether `path` is one of `pinned` or inside one of them.
    static func isPinned(_ path: String, among pinned: Set<String>) -> Bool {
        guard !pinned.isEmpty else { return false }
        if pinned.contains(path) { return true }
        var current = Substring(path)
        while let slash = current.lastIndex(of: "/") {
            current = current[..<slash]
            if pinned.contains(String(current)) { return true }
        }
        return false
    }
}
