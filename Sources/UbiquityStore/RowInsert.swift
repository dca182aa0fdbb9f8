// SPDX-License-Identifier: Apache-2.0
import GRDB
import GRDBSQLite

/// The insert of one index row, bound and stepped on SQLite's own statement: a first scan of
/// 100,000 files binds 25 values per row, and GRDB's arguments (an existential per value) were
/// a fifth of the writer's time. Used inside a write transaction, on a statement of the
/// connection's cache.
struct RowInsert {
    private let statement: OpaquePointer
    private var column: Int32 = 1

    init(_ statement: Statement) {
        self.statement = statement.sqliteStatement
    }

    /// The next value (`?` in order).
    mutating func bind(_ text: String?) {
        defer { column += 1 }
        guard let text else { sqlite3_bind_null(statement, column); return }
        _ = text.utf8.withContiguousStorageIfAvailable { bytes in
            sqlite3_bind_text(statement, column, bytes.baseAddress, Int32(bytes.count), SQLITE_TRANSIENT)
        } ?? {
            var copy = text
            return copy.withUTF8 { sqlite3_bind_text(statement, column, $0.baseAddress, Int32($0.count), SQLITE_TRANSIENT) }
        }()
    }

    mutating func bind(_ value: Int64) {
        sqlite3_bind_int64(statement, column, value)
        column += 1
    }

    mutating func bind(_ value: Bool) { bind(Int64(value ? 1 : 0)) }

    mutating func bind(_ value: Double?) {
        if let value { sqlite3_bind_double(statement, column, value) } else { sqlite3_bind_null(statement, column) }
        column += 1
    }

    /// Runs the insert; returns whether a row was inserted (false: `ON CONFLICT DO NOTHING`).
    mutating func run(_ db: Database) throws -> Bool {
        defer {
            sqlite3_reset(statement)
            column = 1
        }
        let code = sqlite3_step(statement)
        guard code == SQLITE_DONE else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(sqlite3_db_handle(statement))))
        }
        return sqlite3_changes(sqlite3_db_handle(statement)) > 0
    }
}

/// SQLite's `SQLITE_TRANSIENT`: the text is copied when bound.
private let SQLITE_TRANSIENT = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
