/// A metadata attribute of an indexed item, as `NSMetadataItem` names them.
///
/// The raw value is Apple's literal (`kMDItemFSName`, `NSMetadataUbiquitousItemIsUploadedKey`…);
/// ``init(name:)`` also accepts the Swift constant names (`NSMetadataItemFSNameKey`) and a few
/// short spellings, so predicates written for Apple's platforms work unchanged.
public enum MetadataAttribute: String, Sendable, Hashable, CaseIterable, Codable {
    /// The file name (`NSMetadataItemFSNameKey`).
    case fsName = "kMDItemFSName"
    /// The name shown to users (`NSMetadataItemDisplayNameKey`); the file name here.
    case displayName = "kMDItemDisplayName"
    /// The absolute path (`NSMetadataItemPathKey`).
    case path = "kMDItemPath"
    /// The file URL (`NSMetadataItemURLKey`).
    case url = "kMDItemURL"
    /// The size in bytes (`NSMetadataItemFSSizeKey`); 0 for folders.
    case fsSize = "kMDItemFSSize"
    /// The creation (birth) date (`NSMetadataItemFSCreationDateKey`).
    case fsCreationDate = "kMDItemFSCreationDate"
    /// The date of the last content change (`NSMetadataItemFSContentChangeDateKey`).
    case fsContentChangeDate = "kMDItemFSContentChangeDate"
    /// The uniform type identifier (`NSMetadataItemContentTypeKey`), from the extension.
    case contentType = "kMDItemContentType"
    /// The type and every type it conforms to (`NSMetadataItemContentTypeTreeKey`).
    case contentTypeTree = "kMDItemContentTypeTree"
    /// Whether the item is a folder (an addition: Apple tells by content type `public.folder`).
    case isDirectory = "kMDItemIsDirectory"
    /// Whether the item lives in a ubiquity container (`NSMetadataItemIsUbiquitousKey`).
    case isUbiquitous = "NSMetadataItemIsUbiquitousKey"
    /// Whether the server has this item's current content.
    case isUploaded = "NSMetadataUbiquitousItemIsUploadedKey"
    /// Whether an upload is in progress.
    case isUploading = "NSMetadataUbiquitousItemIsUploadingKey"
    /// Upload progress, 0…100.
    case percentUploaded = "NSMetadataUbiquitousItemPercentUploadedKey"
    /// `NSMetadataUbiquitousItemDownloadingStatusCurrent`, `…Downloaded` or `…NotDownloaded`.
    case downloadingStatus = "NSMetadataUbiquitousItemDownloadingStatusKey"
    /// Whether a download is in progress.
    case isDownloading = "NSMetadataUbiquitousItemIsDownloadingKey"
    /// Download progress, 0…100.
    case percentDownloaded = "NSMetadataUbiquitousItemPercentDownloadedKey"
    /// Deprecated by Apple in favour of the downloading status; true unless not downloaded.
    case isDownloaded = "NSMetadataUbiquitousItemIsDownloadedKey"
    /// Whether unresolved conflict versions exist.
    case hasUnresolvedConflicts = "NSMetadataUbiquitousItemHasUnresolvedConflictsKey"
    /// Whether the skip-backup attribute is set (never uploaded).
    case isExcludedFromBackup = "NSURLIsExcludedFromBackupKey"
    /// Why the last upload failed, until one succeeds; nil otherwise (Apple's value is an `NSError`).
    case uploadingError = "NSMetadataUbiquitousItemUploadingErrorKey"
    /// Why the last download failed, until one succeeds; nil otherwise (Apple's value is an `NSError`).
    case downloadingError = "NSMetadataUbiquitousItemDownloadingErrorKey"

    /// The kind of value the attribute holds.
    public enum ValueKind: String, Sendable {
        /// A string.
        case string
        /// A number (integer or floating point).
        case number
        /// A date.
        case date
        /// A Boolean.
        case bool
        /// An array of strings (the content type tree).
        case stringArray
    }

    /// The kind of value this attribute holds.
    public var valueKind: ValueKind {
        switch self {
        case .fsName, .displayName, .path, .url, .contentType, .downloadingStatus, .uploadingError, .downloadingError: .string
        case .fsSize, .percentUploaded, .percentDownloaded: .number
        case .fsCreationDate, .fsContentChangeDate: .date
        case .isDirectory, .isUbiquitous, .isUploaded, .isUploading, .isDownloading, .isDownloaded,
             .hasUnresolvedConflicts, .isExcludedFromBackup: .bool
        case .contentTypeTree: .stringArray
        }
    }

    /// The Swift constant name (`NSMetadataItemFSNameKey`), where Apple has one.
    public var swiftConstantName: String {
        switch self {
        case .fsName: "NSMetadataItemFSNameKey"
        case .displayName: "NSMetadataItemDisplayNameKey"
        case .path: "NSMetadataItemPathKey"
        case .url: "NSMetadataItemURLKey"
        case .fsSize: "NSMetadataItemFSSizeKey"
        case .fsCreationDate: "NSMetadataItemFSCreationDateKey"
        case .fsContentChangeDate: "NSMetadataItemFSContentChangeDateKey"
        case .contentType: "NSMetadataItemContentTypeKey"
        case .contentTypeTree: "NSMetadataItemContentTypeTreeKey"
        case .isDirectory: "kMDItemIsDirectory"
        case .isExcludedFromBackup: "NSURLIsExcludedFromBackupKey"
        default: rawValue
        }
    }

    /// Finds an attribute by Apple's literal, its Swift constant name, or a short name
    /// (`fsName`, `name`, `size`, `path`…). Returns `nil` for unknown names.
    public init?(name: String) {
        if let attribute = MetadataAttribute(rawValue: name) { self = attribute; return }
        if let attribute = Self.byName[name] { self = attribute; return }
        return nil
    }

    private static let byName: [String: MetadataAttribute] = {
        var table: [String: MetadataAttribute] = [:]
        for attribute in MetadataAttribute.allCases {
            table[attribute.swiftConstantName] = attribute
            table[String(describing: attribute)] = attribute
        }
        table["name"] = .fsName
        table["size"] = .fsSize
        table["kMDItemContentModificationDate"] = .fsContentChangeDate
        table["kMDItemContentCreationDate"] = .fsCreationDate
        table["NSMetadataUbiquitousItemIsExcludedFromBackupKey"] = .isExcludedFromBackup
        table["isExcludedFromBackup"] = .isExcludedFromBackup
        return table
    }()
}

/// The downloading-status values, whose strings equal their Swift names as on Apple's platforms.
public enum UbiquitousDownloadingStatus: String, Sendable, Codable, CaseIterable {
    /// The local copy is the most recent this device knows of.
    case current = "NSMetadataUbiquitousItemDownloadingStatusCurrent"
    /// A local copy exists; a newer one will be downloaded.
    case downloaded = "NSMetadataUbiquitousItemDownloadingStatusDownloaded"
    /// No local copy (evicted or never downloaded).
    case notDownloaded = "NSMetadataUbiquitousItemDownloadingStatusNotDownloaded"
}
