import Foundation
import GRDB
import Logging
import Synchronization
import UbiquityCore

/// The metadata index: one SQLite database (GRDB, WAL) of every item under the indexed roots,
/// queried by metadata queries and kept current by the indexer.
///
/// One writer per process (GRDB serializes writes); reads run concurrently with it. Every write
/// returns an ``IndexDelta`` describing the rows it touched, for live queries.
///
/// If the database file is deleted while open, connections already open keep using the unlinked
/// file, new reader connections fail (`UbiquityError(.io)`, "unable to open database file") and
/// nothing reaches the path any more; open a new index at the path (it starts empty) and rescan.
package final class MetadataIndex: Sendable {
    /// The database (a pool for files, a queue in memory).
    let writer: any DatabaseWriter
    /// The database file, nil in memory.
    package let path: String?
    let logger: Logger
    /// Whether the file was found corrupt when opened and replaced by an empty one.
    package let wasRebuilt: Bool
    /// Scan sessions in progress (``beginScan(root:)``): rows written meanwhile count as seen.
    let activeScans = Mutex<Set<Int64>>([])
    let nextScanID = Mutex<Int64>(1)

    /// Opens (creating folders and file if needed) the index at `path` and migrates it.
    ///
    /// If the file is not a database or is corrupt (`SQLITE_NOTADB`, `SQLITE_CORRUPT`), it is moved
    /// aside to `path.corrupt-<date>` with its WAL, a new empty index is created, a warning is
    /// logged and ``wasRebuilt`` is true; the indexer then rebuilds it by scanning.
    package init(path: String, logger: Logger) throws {
        self.path = path
        self.logger = logger
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty {
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                throw UbiquityError(.io, "Cannot create the folder of the metadata index '\(path)'", underlying: error)
            }
        }
        // private whatever the umask: names, sizes and times of the user's files
        try? PrivateFolder.prepareFile(path)
        do {
            writer = try Self.openPool(path: path)
            wasRebuilt = false
        } catch let error as DatabaseError where Self.isCorruption(error) {
            let aside = path + ".corrupt-" + Self.timestamp()
            logger.warning("The metadata index is corrupt; moving it aside and rebuilding it", metadata: [
                "path": "\(path)", "movedTo": "\(aside)", "error": "\(error)",
            ])
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
                guard rename(path + suffix, aside + suffix) == 0 else {
                    throw UbiquityError.posix("rename", path: path + suffix)
                }
            }
            do {
                writer = try Self.openPool(path: path)
            } catch {
                throw UbiquityError(.io, "Cannot create the metadata index '\(path)'", underlying: error)
            }
            wasRebuilt = true
        } catch let error as UbiquityError {
            throw error
        } catch {
            throw UbiquityError(.io, "Cannot open the metadata index '\(path)'", underlying: error)
        }
    }

    /// An index in memory, for the library's no-daemon mode and tests.
    package static func inMemory(logger: Logger) throws -> MetadataIndex {
        do {
            let queue = try DatabaseQueue(configuration: configuration())
            try migrator.migrate(queue)
            return MetadataIndex(writer: queue, logger: logger)
        } catch {
            throw UbiquityError(.io, "Cannot create an in-memory metadata index", underlying: error)
        }
    }

    private init(writer: any DatabaseWriter, logger: Logger) {
        self.writer = writer
        self.path = nil
        self.logger = logger
        self.wasRebuilt = false
    }

    private static func openPool(path: String) throws -> DatabasePool {
        let pool = try DatabasePool(path: path, configuration: configuration())
        try migrator.migrate(pool)
        return pool
    }

    static func isCorruption(_ error: DatabaseError) -> Bool {
        error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB
    }

    private static func timestamp() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: Date())
    }

    /// Runs `body` in a write transaction, turning database errors into ``UbiquityError``.
    func write<T>(_ what: String, _ body: (Database) throws -> T) throws -> T {
        do {
            return try writer.write(body)
        } catch let error as UbiquityError {
            throw error
        } catch {
            throw UbiquityError(.io, "Metadata index: \(what) failed", underlying: error)
        }
    }

    /// Runs `body` in a read transaction, turning database errors into ``UbiquityError``.
    func read<T>(_ what: String, _ body: (Database) throws -> T) throws -> T {
        do {
            return try writer.read(body)
        } catch let error as UbiquityError {
            throw error
        } catch {
            throw UbiquityError(.io, "Metadata index: \(what) failed", underlying: error)
        }
    }
}
