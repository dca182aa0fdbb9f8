/// Where a ``QueryPredicate``'s attributes live in an SQL database, for ``QueryPredicate/sql(using:)``.
///
/// The SQL uses the functions `PredicateSQLFunctions.register(in:)` adds (`ubq_match`,
/// `ubq_fold`, `ubq_tree`, `ubq_file_url`); register them on every connection.
public protocol PredicateSQLSchema: Sendable {
    /// SQL expression for the column holding `attribute`, or nil if not stored (then translation
    /// throws `unsupported`).
    ///
    /// Strings are TEXT; numbers INTEGER or REAL; dates REAL Unix seconds; Booleans INTEGER 0/1;
    /// NULL when the item has no value. For `.contentTypeTree` return the expression holding the
    /// content type identifier: the tree is derived from it with `ContentType.tree(of:)`.
    func column(for attribute: MetadataAttribute) -> String?

    /// Optional fast prefilter for a substring search on a string attribute: given the FOLDED
    /// needle (``PredicateStringMatch/fold(_:)``), return SQL that is true for (a superset of)
    /// rows whose folded value contains it, e.g.
    /// `"items.id IN (SELECT rowid FROM names_fts WHERE names_fts MATCH ?)"`. nil = no prefilter.
    func substringPrefilter(for attribute: MetadataAttribute, foldedNeedle: String) -> SQLFragment?
}

extension PredicateSQLSchema {
    /// No prefilter.
    public func substringPrefilter(for attribute: MetadataAttribute, foldedNeedle: String) -> SQLFragment? { nil }
}

/// A piece of SQL with its `?` arguments, in order.
public struct SQLFragment: Sendable, Hashable, CustomStringConvertible {
    /// The SQL text, with `?` placeholders.
    public var sql: String
    /// The values for the placeholders.
    public var arguments: [SQLValue]

    /// Makes a fragment.
    public init(sql: String, arguments: [SQLValue] = []) {
        self.sql = sql
        self.arguments = arguments
    }

    /// The SQL followed by its arguments.
    public var description: String { arguments.isEmpty ? sql : "\(sql) \(arguments)" }
}

/// An SQLite value bound to a placeholder.
public enum SQLValue: Sendable, Hashable {
    /// NULL.
    case null
    /// An INTEGER.
    case integer(Int64)
    /// A REAL.
    case real(Double)
    /// TEXT.
    case text(String)
}
