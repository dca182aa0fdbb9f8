import UbiquityCore

/// One sort key of an index query.
package struct IndexSort: Sendable, Hashable {
    /// The attribute to sort by.
    package var attribute: MetadataAttribute
    /// Whether smaller values come first.
    package var ascending: Bool

    /// Sort by `attribute`, ascending unless told otherwise.
    package init(attribute: MetadataAttribute, ascending: Bool = true) {
        self.attribute = attribute
        self.ascending = ascending
    }
}
