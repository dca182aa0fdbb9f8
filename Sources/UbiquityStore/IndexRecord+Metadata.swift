import Foundation
import UbiquityCore

extension IndexRecord: MetadataAttributeProvider {
    /// The value of `attribute` for this item (every ``MetadataAttribute`` has one, except a
    /// creation date the file system did not report).
    package func metadataValue(for attribute: MetadataAttribute) -> MetadataValue? {
        switch attribute {
        case .fsName, .displayName: .string(name)
        case .path: .string(path)
        case .url: .string(QueryPredicate.fileURLString(forPath: path, isDirectory: isDirectory))
        case .fsSize: .integer(size)
        case .fsCreationDate: creationDate.map { .date($0) }
        case .fsContentChangeDate: .date(contentChangeDate)
        case .contentType: .string(contentType)
        case .contentTypeTree: .array(ContentType.tree(of: contentType).map { .string($0) })
        case .isDirectory: .bool(isDirectory)
        case .isUbiquitous: .bool(true)
        case .isUploaded: .bool(ubiquitous.isUploaded)
        case .isUploading: .bool(ubiquitous.isUploading)
        case .percentUploaded: .double(ubiquitous.percentUploaded)
        case .downloadingStatus: .string(ubiquitous.downloadingStatus.rawValue)
        case .isDownloading: .bool(ubiquitous.isDownloading)
        case .percentDownloaded: .double(ubiquitous.percentDownloaded)
        case .isDownloaded: .bool(ubiquitous.downloadingStatus != .notDownloaded)
        case .hasUnresolvedConflicts: .bool(ubiquitous.hasUnresolvedConflicts)
        case .isExcludedFromBackup: .bool(ubiquitous.isExcludedFromBackup)
        case .uploadingError: ubiquitous.uploadingError.map { .string($0) }
        case .downloadingError: ubiquitous.downloadingError.map { .string($0) }
        }
    }
}
