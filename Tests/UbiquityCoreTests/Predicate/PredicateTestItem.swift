import Foundation
import UbiquityCore

/// A fake item for evaluator tests: a dictionary of attribute values.
struct PredicateTestItem: MetadataAttributeProvider {
    var values: [MetadataAttribute: MetadataValue] = [:]

    init(_ values: [MetadataAttribute: MetadataValue] = [:]) { self.values = values }

    /// A typical file: `name`, `size`, created at `created` (Unix seconds), derived attributes filled in.
    static func file(_ name: String, size: Int64 = 100, created: Double = 1_700_000_000,
                     path: String? = nil, isDirectory: Bool = false, uploaded: Bool = true) -> PredicateTestItem {
        let type = ContentType.identifier(forFileName: name, isDirectory: isDirectory)
        let fullPath = path ?? "/c/Documents/\(name)"
        return PredicateTestItem([
            .fsName: .string(name), .displayName: .string(name), .path: .string(fullPath),
            .url: .string(QueryPredicate.fileURLString(forPath: fullPath, isDirectory: isDirectory)),
            .fsSize: .integer(size), .fsCreationDate: .date(Date(timeIntervalSince1970: created)),
            .fsContentChangeDate: .date(Date(timeIntervalSince1970: created + 60)),
            .contentType: .string(type), .contentTypeTree: .array(ContentType.tree(of: type).map(MetadataValue.string)),
            .isDirectory: .bool(isDirectory), .isUbiquitous: .bool(true), .isUploaded: .bool(uploaded),
            .percentUploaded: .double(uploaded ? 100 : 42.5),
            .downloadingStatus: .string(UbiquitousDownloadingStatus.current.rawValue),
        ])
    }

    func metadataValue(for attribute: MetadataAttribute) -> MetadataValue? { values[attribute] }
}

/// Parses or records the error message.
func parseError(_ format: String, _ arguments: any Sendable...) -> String? {
    do {
        _ = try QueryPredicate(format: format, argumentArray: arguments)
        return nil
    } catch let error as UbiquityError {
        return error.message
    } catch {
        return "unexpected error type: \(error)"
    }
}
