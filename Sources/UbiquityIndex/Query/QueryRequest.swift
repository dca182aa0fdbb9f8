import UbiquityCore

/// What a metadata query asks for: the same in the library, on the daemon's control socket and
/// in `ubiq query`.
package struct QueryRequest: Sendable, Hashable, Codable {
    /// The predicate, in its canonical format string (``QueryPredicate/predicateFormat``).
    package var predicate: String
    /// Absolute folder paths; an item is in scope when it lies inside one of them.
    package var scopes: [String]
    /// Absolute folder paths inside the scopes whose contents are left out (the data scope
    /// leaves out each container's `Documents`).
    package var excluding: [String]
    /// Sort keys (attribute names), applied in order.
    package var sort: [QuerySortKey]
    /// Whether live updates follow the initial results.
    package var watch: Bool

    /// A request for `predicate` under `scopes`.
    package init(predicate: String, scopes: [String], excluding: [String] = [], sort: [QuerySortKey] = [], watch: Bool = true) {
        self.predicate = predicate
        self.scopes = scopes
        self.excluding = excluding
        self.sort = sort
        self.watch = watch
    }
}

/// One sort key of a query: an attribute and a direction.
package struct QuerySortKey: Sendable, Hashable, Codable {
    /// The attribute.
    package var attribute: MetadataAttribute
    /// Whether smaller values come first.
    package var ascending: Bool

    /// Sorts by `attribute`, ascending unless told otherwise.
    package init(_ attribute: MetadataAttribute, ascending: Bool = true) {
        self.attribute = attribute
        self.ascending = ascending
    }
}
