import UbiquityCore

/// One sort key of an index query.
public struct IndexSort: Sendable, Hashable {
    /// The attribute to sort by.
    public var attribute: MetadataAttribute
    /// Whether smaller values come first.
    public var ascending: Bool

    /// Sort by `attribute`, ascending unless told otherwise.
    public init(attribute: MetadataAttribute, ascending: Bool = true) {
        self.attribute = attribute
        self.ascending = ascending
    }
}
