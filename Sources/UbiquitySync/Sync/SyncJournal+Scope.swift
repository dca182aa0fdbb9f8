// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore
import UbiquityStore

extension SyncJournal {
    /// The number of entries.
    package func count() throws -> Int {
        try read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sync_items WHERE journal = ?", arguments: [scope]) ?? 0 }
    }

    /// Whether an entry is at `path`.
    package func contains(path: String) throws -> Bool {
        try read { db in
            try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM sync_items WHERE journal = ? AND path = ?"), arguments: [scope, path]) ?? false
        }
    }

    /// Which of `ids` have an entry, and which of `paths` (one read for a page of records,
    /// instead of two per record).
    func known(ids: [String], paths: [String]) throws -> (ids: Set<String>, paths: Set<String>) {
        guard !ids.isEmpty || !paths.isEmpty else { return ([], []) }
        return try read { db in
            let byID = try db.cachedStatement(sql: "SELECT 1 FROM sync_items WHERE journal = ? AND id = ?")
            let byPath = try db.cachedStatement(sql: "SELECT 1 FROM sync_items WHERE journal = ? AND path = ?")
            var knownIDs = Set<String>(), knownPaths = Set<String>()
            for id in ids {
                if try Bool.fetchOne(byID, arguments: [scope, id]) != nil { knownIDs.insert(id) }
            }
            for path in paths {
                if try Bool.fetchOne(byPath, arguments: [scope, path]) != nil { knownPaths.insert(path) }
            }
            return (knownIDs, knownPaths)
        }
    }

    /// The paths journaled for `ids` (IDs without an entry are left out): one read for a
    /// fetched page's folders, to find those moving away (``SyncEngine/movesFirst(_:)``).
    func paths(ids: [String]) throws -> [String: String] {
        guard !ids.isEmpty else { return [:] }
        return try read { db in
            let byID = try db.cachedStatement(sql: "SELECT path FROM sync_items WHERE journal = ? AND id = ?")
            var paths: [String: String] = [:]
            for id in ids {
                if let path = try String.fetchOne(byID, arguments: [scope, id]) { paths[id] = path }
            }
            return paths
        }
    }

    /// The change tags journaled for `ids` (IDs without an entry, or whose entry has no tag,
    /// are left out): one read for a fetched page, to drop the records this device already
    /// has in the fetched version (its own uploads coming back).
    func changeTags(ids: [String]) throws -> [String: String] {
        guard !ids.isEmpty else { return [:] }
        return try read { db in
            let byID = try db.cachedStatement(sql: "SELECT tag FROM sync_items WHERE journal = ? AND id = ?")
            var tags: [String: String] = [:]
            tags.reserveCapacity(ids.count)
            for id in ids {
                if let tag = try String?.fetchOne(byID, arguments: [scope, id]) ?? nil { tags[id] = tag }
            }
            return tags
        }
    }

    /// Of `paths` just uploaded, those with a recorded transfer state (an upload's progress or
    /// error to clear): one read for a batch, instead of one per item.
    func transfers(among paths: [String]) throws -> Set<String> {
        guard !paths.isEmpty else { return [] }
        return try read { db in
            // (mostly no transfer is recorded: then no lookups)
            guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM sync_transfers WHERE journal = ?)"),
                                    arguments: [scope]) == true else { return [] }
            let transfer = try db.cachedStatement(sql: "SELECT 1 FROM sync_transfers WHERE journal = ? AND path = ?")
            var transfers = Set<String>()
            for path in paths where try Bool.fetchOne(transfer, arguments: [scope, path]) != nil { transfers.insert(path) }
            return transfers
        }
    }

    /// Of `paths`, those whose item is evicted (inside a transaction).
    func evictedPaths(among paths: [String], _ db: Database) throws -> Set<String> {
        // (mostly nothing is evicted: then no lookups)
        guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM sync_evicted WHERE journal = ?)"),
                                arguments: [scope]) == true else { return [] }
        let evicted = try db.cachedStatement(sql: """
            SELECT 1 FROM sync_evicted e JOIN sync_items s ON s.journal = e.journal AND s.id = e.id WHERE s.journal = ? AND s.path = ?
            """)
        var found = Set<String>()
        for path in paths where try Bool.fetchOne(evicted, arguments: [scope, path]) != nil { found.insert(path) }
        return found
    }

    /// Calls `body` with each index row under the journal's folder, in path order, and the
    /// journal's entry at its path (nil: none): a whole pass compares the folder with the
    /// journal in one query of the device database, one row at a time.
    func forEachRow(_ body: (IndexFileFacts, JournalEntry?) throws -> Void) throws {
        let columns = Self.itemColumns.split(separator: ",").map { "s." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
        try read { db in  // (one statement, cached: the column list is the same each time)
            let rows = try Row.fetchCursor(db.cachedStatement(sql: """
                SELECT \(MetadataIndex.factColumns(of: "i")), \(columns)
                FROM items i LEFT JOIN sync_items s ON s.journal = ? AND s.path = substr(i.path, ?)
                WHERE i.path > ? AND i.path < ? ORDER BY i.path
                """), arguments: [scope, folder.unicodeScalars.count + 2, folder + "/", folder + "0"])
            while let row = try rows.next() {
                let entry = IndexFileFacts.columnCount
                try body(IndexFileFacts(row), (row[entry] as String?) == nil ? nil : Self.entry(row, from: entry))
            }
        }
    }

    /// The entries whose item has no index row under the journal's folder (gone, or not
    /// indexed yet: the pass looks on the disk before it deletes anything).
    func entriesWithoutRows() throws -> [JournalEntry] {
        try read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT \(Self.itemColumns) FROM sync_items s
                WHERE s.journal = ? AND NOT EXISTS (SELECT 1 FROM items i WHERE i.path = ? || s.path)
                """), arguments: [scope, folder + "/"]).map { Self.entry($0) }
        }
    }

    /// The entries a narrowed pass looks at: the one at each named path, and every one at or
    /// under each subtree — found through the path index (one lookup per path, one range per
    /// subtree), never by reading every entry. The whole journal when the scope is full.
    func entries(in scope: LocalScope) throws -> [JournalEntry] {
        if scope.full { return try entries() }
        return try read { db in
            var found: [String: JournalEntry] = [:]
            let single = try db.cachedStatement(sql: "SELECT \(Self.itemColumns) FROM sync_items WHERE journal = ? AND path = ?")
            for path in scope.paths.union(scope.subtrees) {
                if let row = try Row.fetchOne(single, arguments: [self.scope, path]) { found[path] = Self.entry(row) }
            }
            // the paths under `prefix/`: from "prefix/" up to "prefix0" ("0" follows "/" in byte order)
            let range = try db.cachedStatement(sql: "SELECT \(Self.itemColumns) FROM sync_items WHERE journal = ? AND path > ? AND path < ?")
            for subtree in scope.subtrees {
                for row in try Row.fetchAll(range, arguments: [self.scope, subtree + "/", subtree + "0"]) {
                    let entry = Self.entry(row)
                    found[entry.path] = entry
                }
            }
            return Array(found.values)
        }
    }
}
