// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore

extension SyncJournal {
    /// The number of entries.
    public func count() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM items") ?? 0 }
    }

    /// Whether an entry is at `path`.
    public func contains(path: String) throws -> Bool {
        try queue.read { db in try Bool.fetchOne(db, sql: "SELECT 1 FROM items WHERE path = ?", arguments: [path]) ?? false }
    }

    /// The entries a narrowed pass looks at: the one at each named path, and every one at or
    /// under each subtree — found through the path index (one lookup per path, one range per
    /// subtree), never by reading every entry. The whole journal when the scope is full.
    func entries(in scope: LocalScope) throws -> [JournalEntry] {
        if scope.full { return try entries() }
        return try queue.read { db in
            var found: [String: JournalEntry] = [:]
            let single = try db.cachedStatement(sql: "SELECT * FROM items WHERE path = ?")
            for path in scope.paths.union(scope.subtrees) {
                if let row = try Row.fetchOne(single, arguments: [path]) { found[path] = Self.entry(row) }
            }
            // the paths under `prefix/`: from "prefix/" up to "prefix0" ("0" follows "/" in byte order)
            let range = try db.cachedStatement(sql: "SELECT * FROM items WHERE path > ? AND path < ?")
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
