import Foundation
import UbiquityCore
import UbiquityIndex
import UbiquityStore

/// One result of a metadata query (`NSMetadataItem`): an item's attributes, looked up by
/// Apple's attribute names.
public final class MetadataItem: Sendable, Hashable, CustomStringConvertible {
    /// The index row behind the item.
    package let record: IndexRecord

    /// An item for an index row.
    package init(record: IndexRecord) {
        self.record = record
    }

    /// An item for the file at `url` (`NSMetadataItem(url:)`), read from the file system;
    /// nil when nothing is there.
    public convenience init?(url: URL) {
        guard url.isFileURL, let record = TreeScanner.record(at: url.path) else { return nil }
        self.init(record: record)
    }

    /// The file's URL.
    public var url: URL { URL(fileURLWithPath: record.path, isDirectory: record.isDirectory) }

    /// The value of an attribute (`kMDItemFSName`, `NSMetadataItemFSNameKey`,
    /// `NSMetadataUbiquitousItemIsUploadedKey`…) as Apple's types give it: `String`, `NSNumber`
    /// (`Int64`/`Double`/`Bool` here), `Date`, `URL` or `[String]`; nil for unknown attributes.
    public func value(forAttribute key: String) -> Any? {
        guard let attribute = MetadataAttribute(name: key) else { return nil }
        if attribute == .url { return url }
        return record.metadataValue(for: attribute).flatMap(Self.bridge)
    }

    /// The values of several attributes, by name (unknown or missing ones are left out).
    public func values(forAttributes keys: [String]) -> [String: Any] {
        var values: [String: Any] = [:]
        for key in keys { if let value = value(forAttribute: key) { values[key] = value } }
        return values
    }

    /// The attribute names this item has values for.
    public var attributes: [String] {
        MetadataAttribute.allCases.filter { record.metadataValue(for: $0) != nil }.map(\.rawValue)
    }

    static func bridge(_ value: MetadataValue) -> Any? {
        switch value {
        case .null: nil
        case .string(let string): string
        case .integer(let number): number
        case .double(let number): number
        case .bool(let flag): flag
        case .date(let date): date
        case .array(let values): values.compactMap(bridge)
        }
    }

    /// Items are equal when they stand for the same path with the same attributes.
    public static func == (lhs: MetadataItem, rhs: MetadataItem) -> Bool { lhs.record == rhs.record }

    /// Hashes the row.
    public func hash(into hasher: inout Hasher) { hasher.combine(record) }

    /// The path.
    public var description: String { "MetadataItem(\(record.path))" }
}
