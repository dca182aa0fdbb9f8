// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore
import UbiquityWire

/// A synced file's chunk list as the journal keeps it: the list and the file's stamp (device,
/// inode, size, modification and change times) when the list was taken. The list describes the
/// file only while the file still has that stamp.
package struct JournalChunkList: Sendable, Hashable {
    /// The file's chunk list (hashes possibly shortened, ``AssetChunkList/hashBytes``).
    package var list: AssetChunkList
    /// The file's stamp when the list was recorded.
    package var stamp: FileStamp

    /// Makes a kept list.
    package init(list: AssetChunkList, stamp: FileStamp) {
        self.list = list
        self.stamp = stamp
    }

    /// Whether `current` is still the file the list describes: the same device, inode, size,
    /// modification and change times (a write, a truncation, a rename over it or a metadata
    /// change all move the change time, which no user can set back).
    package func describes(_ current: FileStamp?) -> Bool {
        guard let current else { return false }
        return current.device == stamp.device && current.inode == stamp.inode && current.size == stamp.size
            && current.modificationNanoseconds == stamp.modificationNanoseconds && current.changeNanoseconds == stamp.changeNanoseconds
    }
}

extension SyncJournal {
    /// Keeps `list` as the chunk list of item `id`'s file while the file has `stamp`.
    package func setChunkList(_ list: AssetChunkList, stamp: FileStamp, id: String) throws {
        let json = list.json.serialized()
        try write { db in
            try db.execute(sql: """
                INSERT OR REPLACE INTO sync_chunk_lists (journal, id, device, inode, size, mtime, ctime, list) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [scope, id, Int64(bitPattern: stamp.device), Int64(bitPattern: stamp.inode), stamp.size,
                                 stamp.modificationNanoseconds, stamp.changeNanoseconds, json])
        }
    }

    /// The chunk list kept for item `id` with the stamp it was recorded with, or nil.
    package func chunkList(id: String) throws -> JournalChunkList? {
        let row = try read { db in
            try Row.fetchOne(db, sql: "SELECT device, inode, size, mtime, ctime, list FROM sync_chunk_lists WHERE journal = ? AND id = ?",
                             arguments: [scope, id])
        }
        guard let row else { return nil }
        let data: Data = row[5]
        guard let json = try? JSONValue.parse(data), let list = try? AssetChunkList(json: json) else { return nil }
        let stamp = FileStamp(device: UInt64(bitPattern: row[0]), inode: UInt64(bitPattern: row[1]), size: row[2],
                              modificationNanoseconds: row[3], changeNanoseconds: row[4])
        return JournalChunkList(list: list, stamp: stamp)
    }

    /// Forgets item `id`'s chunk list.
    package func removeChunkList(id: String) throws {
        try write { db in try db.execute(sql: "DELETE FROM sync_chunk_lists WHERE journal = ? AND id = ?", arguments: [scope, id]) }
    }

    /// How many chunk lists are kept (for tests).
    func chunkListCount() throws -> Int {
        try read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sync_chunk_lists WHERE journal = ?", arguments: [scope]) ?? 0 }
    }
}
