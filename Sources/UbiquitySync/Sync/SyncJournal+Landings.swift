// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB

/// Downloads about to land: a new item's download is renamed into place and then journaled, in
/// two steps. A daemon killed between them (or a journal write that failed) left a file the
/// journal did not know; the next pass took it for a file made here and uploaded it as a new
/// item, so when another device had deleted it meanwhile it came back everywhere (ChaosTests
/// saw 16 deleted files come back, seed 609986). The entries are noted before the rename, in
/// `sync_meta` under one key per landing (``landingKey(_:)``), and the note goes in the
/// transaction that journals them; a note still there at the next pass is settled by
/// ``SyncEngine/settleLandings()``.
extension SyncJournal {
    /// The prefix of the keys of landings noted and not yet journaled.
    static let landingPrefix = "landing:"
    /// The first key after every landing key (`;` follows `:`).
    static let landingEnd = "landing;"

    /// The key of a landing named `name` (a new item's ID, or a batch's tag).
    static func landingKey(_ name: String) -> String { landingPrefix + name }

    /// Notes `entries` (their stamps those of the files as they will be renamed into place)
    /// under `key`, in one transaction, before their renames.
    package func noteLanding(_ entries: [JournalEntry], key: String) throws {
        guard !entries.isEmpty else { return }
        let text = String(decoding: try JSONEncoder().encode(entries.map(LandingEntry.init)), as: UTF8.self)
        try setValue(text, key)
    }

    /// The landings noted and not journaled: each key with its entries (a note that cannot be
    /// read has none, and is forgotten when settled).
    package func landings() throws -> [(key: String, entries: [JournalEntry])] {
        let rows = try read { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT key, value FROM sync_meta WHERE journal = ? AND key >= ? AND key < ?"),
                             arguments: [scope, Self.landingPrefix, Self.landingEnd])
        }
        return rows.map { row in
            let text: String = row[1]
            let entries = (try? JSONDecoder().decode([LandingEntry].self, from: Data(text.utf8)))?.map(\.entry) ?? []
            return (row[0], entries)
        }
    }
}

/// A journal entry as a landing's note keeps it.
private struct LandingEntry: Codable {
    var id: String
    var path: String
    var kind: SyncItemKind
    var size: Int64
    var mtime: Int64
    var inode: UInt64
    var mode: UInt32
    var hash: String
    var target: String?
    var tag: String?

    init(_ entry: JournalEntry) {
        id = entry.id
        path = entry.path
        kind = entry.stat.kind
        size = entry.stat.size
        mtime = entry.stat.modifiedNanoseconds
        inode = entry.stat.inode
        mode = entry.stat.mode
        hash = entry.contentHash
        target = entry.target
        tag = entry.changeTag
    }

    var entry: JournalEntry {
        JournalEntry(id: id, path: path, stat: SyncStat(kind: kind, size: size, modifiedNanoseconds: mtime,
                                                        inode: inode, mode: mode),
                     contentHash: hash, target: target, changeTag: tag)
    }
}
