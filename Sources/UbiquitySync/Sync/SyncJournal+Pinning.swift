// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB

extension SyncJournal {
    /// Records whether item `id` is pinned: it (a folder: everything in it) stays downloaded.
    package func setPinned(_ id: String, _ pinned: Bool) throws {
        try write { db in try setMarked(id, pinned, in: "sync_pinned", db) }
    }

    /// The paths of the pinned items (where their entries are now: a pin follows renames).
    package func pinnedPaths() throws -> Set<String> {
        try read { db in try pinnedPaths(db) }
    }

    func pinnedPaths(_ db: Database) throws -> Set<String> {
        Set(try String.fetchAll(db.cachedStatement(sql: """
            SELECT s.path FROM sync_pinned p JOIN sync_items s ON s.journal = p.journal AND s.id = p.id WHERE p.journal = ?
            """), arguments: [scope]))
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
