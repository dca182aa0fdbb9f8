import Foundation

/// A value of a metadata attribute or a predicate constant.
public enum MetadataValue: Sendable, Hashable {
    /// No value (`nil` in a predicate).
    case null
    /// A string.
    case string(String)
    /// An integer.
    case integer(Int64)
    /// A floating-point number.
    case double(Double)
    /// A Boolean.
    case bool(Bool)
    /// A date.
    case date(Date)
    /// An array (the content type tree, or a predicate's `{…}` aggregate).
    case array([MetadataValue])
}

/// Anything a predicate can be evaluated against: an index row, a scanned file, a test fake.
public protocol MetadataAttributeProvider {
    /// The value of `attribute`, or `nil` when the item has none.
    func metadataValue(for attribute: MetadataAttribute) -> MetadataValue?
}
