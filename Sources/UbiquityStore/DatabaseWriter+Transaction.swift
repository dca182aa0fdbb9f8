// SPDX-License-Identifier: Apache-2.0
import GRDB

extension DatabaseWriter {
    /// Runs `body` in one transaction of `kind` on the writer's queue, then `afterCommit` with its
    /// result while still on that queue (before any later write starts): what a commit must be
    /// followed by, in commit order, goes there.
    func transaction<T>(kind: Database.TransactionKind? = nil, _ body: (Database) throws -> T,
                        afterCommit: (Database, T) throws -> Void = { _, _ in }) throws -> T {
        try writeWithoutTransaction { db in
            let result = try db.inTransactionReturning(kind: kind, body)
            try afterCommit(db, result)
            return result
        }
    }
}

extension Database {
    /// Runs `body` in one transaction of `kind` and returns what it returned.
    func inTransactionReturning<T>(kind: Database.TransactionKind? = nil, _ body: (Database) throws -> T) throws -> T {
        var result: T?
        try inTransaction(kind) {
            result = try body(self)
            return .commit
        }
        return result!
    }
}
