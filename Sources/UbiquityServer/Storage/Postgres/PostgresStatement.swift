// SPDX-License-Identifier: Apache-2.0
import PostgresNIO

/// A statement of the requests' hot paths (credentials, a zone, a record type, a query index's
/// page, a lookup's records), which `PostgresSession` runs as a named prepared statement:
/// postgres-nio prepares it once per connection, so PostgreSQL parses and plans it once instead
/// of at every request, and the answer carries no row description. Its parameters' types are
/// the ones PostgreSQL infers from the text.
protocol PostgresStatement {
    /// A name unique among the store's statements (PostgreSQL keeps 63 bytes of a name).
    static var name: String { get }
    /// The statement.
    static var sql: String { get }
}

/// postgres-nio's form of a ``PostgresStatement`` with its parameters.
struct PostgresPrepared<Statement: PostgresStatement>: PostgresPreparedStatement {
    typealias Row = PostgresRandomAccessRow

    static var name: String { "ubiquity_" + Statement.name }
    static var sql: String { Statement.sql }

    let bindings: PostgresBindings

    func makeBindings() throws -> PostgresBindings { bindings }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRandomAccessRow { row.makeRandomAccess() }
}
