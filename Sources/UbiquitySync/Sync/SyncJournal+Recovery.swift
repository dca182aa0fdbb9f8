// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import Logging
import UbiquityCore

extension SyncJournal {
    /// Opens the journal at `path`; one that is damaged (not a database, corrupt, failing its
    /// integrity check) is moved aside as `PATH.corrupt-TIMESTAMP` (with its WAL) and a fresh
    /// one is made. Nothing is lost by that: the next pass lists the server's items and matches
    /// them with the folder by path and content (identical content is adopted, different content
    /// kept as a conflict version, items only here uploaded as new). Items deleted elsewhere
    /// while the journal was damaged come back, rather than local files being deleted.
    /// - Returns: the journal and, when it was rebuilt, where the damaged one went.
    package static func openRecovering(path: String, logger: Logger) throws -> (journal: SyncJournal, movedAside: String?) {
        do {
            let journal = try SyncJournal(path: path)
            try journal.checkIntegrity()
            return (journal, nil)
        } catch let error where isDamage(error) {
            let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
            let aside = path + ".corrupt-" + stamp
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
                try FileManager.default.moveItem(atPath: path + suffix, toPath: aside + suffix)
            }
            logger.error("""
                the sync journal was damaged: it is rebuilt from the folder and the server (nothing is deleted; \
                items deleted elsewhere meanwhile may come back); the damaged file is kept
                """,
                         metadata: ["ubiquity.journal": "\(path)", "ubiquity.kept": "\(aside)", "ubiquity.error": "\(error)"])
            return (try SyncJournal(path: path), aside)
        }
    }

    /// Throws `io` when SQLite's quick check finds damage.
    func checkIntegrity() throws {
        let result = try queue.read { db in try String.fetchOne(db, sql: "PRAGMA quick_check") }
        guard result == "ok" else {
            throw UbiquityError(.io, "the sync journal '\(path)' fails its integrity check: \(result ?? "no answer")",
                                underlying: DatabaseError(resultCode: .SQLITE_CORRUPT))
        }
    }

    /// Whether `error` says the file is damaged (rather than, say, unreadable or on a full disk).
    static func isDamage(_ error: any Error) -> Bool {
        var current: (any Error)? = error
        while let error = current {
            if let database = error as? DatabaseError, [.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(database.resultCode) { return true }
            current = (error as? UbiquityError)?.underlying
        }
        return false
    }
}
