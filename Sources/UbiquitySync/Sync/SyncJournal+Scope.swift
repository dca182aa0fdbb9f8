// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore

extension SyncJournal {
    /// The number of entries.
    package func count() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM items") ?? 0 }
    }

    /// Whether an entry is at `path`.
    package func contains(path: String) throws -> Bool {
        try queue.read { db in
            try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM items WHERE path = ?"), arguments: [path]) ?? false
        }
    }

    /// Which of `ids` have an entry, and which of `paths` (one read for a page of records,
    /// instead of two per record).
    func known(ids: [String], paths: [String]) throws -> (ids: Set<String>, paths: Set<String>) {
        guard !ids.isEmpty || !paths.isEmpty else { return ([], []) }
        return try queue.read { db in
            let byID = try db.cachedStatement(sql: "SELECT 1 FROM items WHERE id = ?")
            let byPath = try db.cachedStatement(sql: "SELECT 1 FROM items WHERE path = ?")
            var knownIDs = Set<String>(), knownPaths = Set<String>()
            for id in ids {
                if try Bool.fetchOne(byID, arguments: [id]) != nil { knownIDs.insert(id) }
            }
            for path in paths {
                if try Bool.fetchOne(byPath, arguments: [path]) != nil { knownPaths.insert(path) }
            }
            return (knownIDs, knownPaths)
        }
    }

    /// The change tags journaled for `ids` (IDs without an entry, or whose entry has no tag,
    /// are left out): one read for a fetched page, to drop the records this device already
    /// has in the fetched version (its own uploads coming back).
    func changeTags(ids: [String]) throws -> [String: String] {
        guard !ids.isEmpty else { return [:] }
        return try queue.read { db in
            let byID = try db.cachedStatement(sql: "SELECT tag FROM items WHERE id = ?")
            var tags: [String: String] = [:]
            tags.reserveCapacity(ids.count)
            for id in ids {
                if let tag = try String?.fetchOne(byID, arguments: [id]) ?? nil { tags[id] = tag }
            }
            return tags
        }
    }

    /// Of `paths` just uploaded, those with a recorded transfer state (an upload's progress or
    /// error to clear) and those whose item is evicted (its state is published again): one read
    /// for a batch, instead of two per item.
    func uploadFacts(paths: [String]) throws -> (transfers: Set<String>, evicted: Set<String>) {
        guard !paths.isEmpty else { return ([], []) }
        return try queue.read { db in
            let transfer = try db.cachedStatement(sql: "SELECT 1 FROM transfers WHERE path = ?")
            let evicted = try db.cachedStatement(sql: "SELECT 1 FROM evicted JOIN items ON items.id = evicted.id WHERE items.path = ?")
            var transfers = Set<String>(), evictedPaths = Set<String>()
            for path in paths {
                if try Bool.fetchOne(transfer, arguments: [path]) != nil { transfers.insert(path) }
                if try Bool.fetchOne(evicted, arguments: [path]) != nil { evictedPaths.insert(path) }
            }
            return (transfers, evictedPaths)
        }
    }

    /// The entries a narrowed pass looks at: the one at each named path, and every one at or
    /// under each subtree — found through the path index (one lookup per path, one range per
    /// subtree), never by reading every entry. The whole journal when the scope is full.
    func entries(in scope: LocalScope) throws -> [JournalEntry] {
        if scope.full { return try entries() }
        return try queue.read { db in
            var found: [String: JournalEntry] = [:]
            let single = try db.cachedStatement(sql: "SELECT \(Self.itemColumns) FROM items WHERE path = ?")
            for path in scope.paths.union(scope.subtrees) {
                if let row = try Row.fetchOne(single, arguments: [path]) { found[path] = Self.entry(row) }
            }
            // the paths under `prefix/`: from "prefix/" up to "prefix0" ("0" follows "/" in byte order)
            let range = try db.cachedStatement(sql: "SELECT \(Self.itemColumns) FROM items WHERE path > ? AND path < ?")
            for subtree in scope.subtrees {
                for row in try Row.fetchAll(range, arguments: [subtree + "/", subtree + "0"]) {
                    let entry = Self.entry(row)
                    found[entry.path] = entry
                }
            }
            return Array(found.values)
        }
    }
}
