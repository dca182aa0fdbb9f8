// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore

/// The ubiquitous attributes (sync state) of every indexed item under one folder, read from an
/// index file in one query through a read-only connection — for listings (`ubiq ls`) that must not
/// open the index for writing (the daemon owns it) nor ask for each item separately.
public struct IndexStatusSnapshot: Sendable {
    /// The attributes by absolute path.
    public let attributes: [String: UbiquitousAttributes]

    /// The attributes of the item at the absolute `path`, nil when it is not indexed.
    public subscript(path: String) -> UbiquitousAttributes? { attributes[path] }

    /// Reads the rows under `folder` from the index file at `databasePath` without writing to it
    /// (no migration, no checkpoint): its children only, or, when `recursive`, every descendant.
    ///
    /// Throws `UbiquityError(.notFound)` when there is no index file and `.io` when it cannot be
    /// read (not an index, locked for too long, a newer schema).
    public static func read(databasePath: String, under folder: String, recursive: Bool) throws -> IndexStatusSnapshot {
        guard FileManager.default.fileExists(atPath: databasePath) else {
            throw UbiquityError(.notFound, "no index at '\(databasePath)'")
        }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(2)
        configuration.label = "IndexStatusSnapshot"
        do {
            let queue = try DatabaseQueue(path: databasePath, configuration: configuration)
            defer { try? queue.close() }
            return try queue.read { db in
                let range = MetadataIndex.subtreeRange(of: MetadataIndex.normalize(folder))
                // The downloading status as a small number (compared in SQLite, not decoded as text).
                var sql = """
                    SELECT path, is_uploaded, is_uploading, percent_uploaded, \
                    CASE downloading_status WHEN '\(UbiquitousDownloadingStatus.notDownloaded.rawValue)' THEN 2 \
                    WHEN '\(UbiquitousDownloadingStatus.downloaded.rawValue)' THEN 1 ELSE 0 END, is_downloading, \
                    percent_downloaded, has_unresolved_conflicts, is_excluded_from_backup, uploading_error, \
                    downloading_error FROM items \
                    WHERE path >= ? AND path < ?
                    """
                var arguments: StatementArguments = [range.lower, range.upper]
                if !recursive {
                    sql += " AND instr(substr(path, length(?) + 1), '/') = 0"
                    arguments += [range.lower]
                }
                var attributes: [String: UbiquitousAttributes] = [:]
                // Sized once (a count on the path index is cheap; growing a 100,000-entry table is not).
                let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM items WHERE path >= ? AND path < ?",
                                             arguments: [range.lower, range.upper]) ?? 0
                attributes.reserveCapacity(recursive ? count : min(count, 4096))
                let rows = try Row.fetchCursor(db, sql: sql, arguments: arguments)
                while let row = try rows.next() {
                    let status: Int = row[4]
                    attributes[row[0]] = UbiquitousAttributes(
                        isUploaded: row[1], isUploading: row[2], percentUploaded: row[3],
                        downloadingStatus: status == 2 ? .notDownloaded : status == 1 ? .downloaded : .current,
                        isDownloading: row[5], percentDownloaded: row[6], hasUnresolvedConflicts: row[7],
                        isExcludedFromBackup: row[8], uploadingError: row[9], downloadingError: row[10])
                }
                return IndexStatusSnapshot(attributes: attributes)
            }
        } catch let error as UbiquityError {
            throw error
        } catch {
            throw UbiquityError(.io, "cannot read the index '\(databasePath)'", underlying: error)
        }
    }

    /// A snapshot of the given attributes (tests, callers that already have them).
    public init(attributes: [String: UbiquitousAttributes]) {
        self.attributes = attributes
    }
}
