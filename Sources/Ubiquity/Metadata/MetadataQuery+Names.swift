import Foundation
import UbiquityCore

/// Apple's name for ``MetadataQuery``, for code ported from Apple's platforms.
public typealias NSMetadataQuery = MetadataQuery
/// Apple's name for ``MetadataItem``.
public typealias NSMetadataItem = MetadataItem

/// The `Documents` folders of the app's ubiquity containers.
public let NSMetadataQueryUbiquitousDocumentsScope = "NSMetadataQueryUbiquitousDocumentsScope"
/// The app's ubiquity containers outside their `Documents` folders.
public let NSMetadataQueryUbiquitousDataScope = "NSMetadataQueryUbiquitousDataScope"
/// Everything in the app's ubiquity containers (documents and data; an addition of Ubiquity's).
public let UbiquityMetadataQueryAllUbiquitousScope = "UbiquityMetadataQueryAllUbiquitousScope"

/// The `userInfo` key of a did-update notification for the items that entered the results.
public let NSMetadataQueryUpdateAddedItemsKey = "kMDQueryUpdateAddedItems"
/// The `userInfo` key for the results whose attributes changed.
public let NSMetadataQueryUpdateChangedItemsKey = "kMDQueryUpdateChangedItems"
/// The `userInfo` key for the items that left the results.
public let NSMetadataQueryUpdateRemovedItemsKey = "kMDQueryUpdateRemovedItems"

/// The file name attribute (`kMDItemFSName`).
public let NSMetadataItemFSNameKey = MetadataAttribute.fsName.rawValue
/// The display name attribute (`kMDItemDisplayName`).
public let NSMetadataItemDisplayNameKey = MetadataAttribute.displayName.rawValue
/// The URL attribute (`kMDItemURL`).
public let NSMetadataItemURLKey = MetadataAttribute.url.rawValue
/// The path attribute (`kMDItemPath`).
public let NSMetadataItemPathKey = MetadataAttribute.path.rawValue
/// The size attribute (`kMDItemFSSize`).
public let NSMetadataItemFSSizeKey = MetadataAttribute.fsSize.rawValue
/// The creation date attribute (`kMDItemFSCreationDate`).
public let NSMetadataItemFSCreationDateKey = MetadataAttribute.fsCreationDate.rawValue
/// The content change date attribute (`kMDItemFSContentChangeDate`).
public let NSMetadataItemFSContentChangeDateKey = MetadataAttribute.fsContentChangeDate.rawValue
/// The content type attribute (`kMDItemContentType`).
public let NSMetadataItemContentTypeKey = MetadataAttribute.contentType.rawValue
/// The content type tree attribute (`kMDItemContentTypeTree`).
public let NSMetadataItemContentTypeTreeKey = MetadataAttribute.contentTypeTree.rawValue
/// Whether the item is in a ubiquity container.
public let NSMetadataItemIsUbiquitousKey = MetadataAttribute.isUbiquitous.rawValue
/// Whether the server has the item's current content.
public let NSMetadataUbiquitousItemIsUploadedKey = MetadataAttribute.isUploaded.rawValue
/// Whether an upload is in progress.
public let NSMetadataUbiquitousItemIsUploadingKey = MetadataAttribute.isUploading.rawValue
/// Upload progress, 0…100.
public let NSMetadataUbiquitousItemPercentUploadedKey = MetadataAttribute.percentUploaded.rawValue
/// The downloading status.
public let NSMetadataUbiquitousItemDownloadingStatusKey = MetadataAttribute.downloadingStatus.rawValue
/// Whether a download is in progress.
public let NSMetadataUbiquitousItemIsDownloadingKey = MetadataAttribute.isDownloading.rawValue
/// Download progress, 0…100.
public let NSMetadataUbiquitousItemPercentDownloadedKey = MetadataAttribute.percentDownloaded.rawValue
/// Deprecated by Apple: whether a local copy exists.
public let NSMetadataUbiquitousItemIsDownloadedKey = MetadataAttribute.isDownloaded.rawValue
/// Whether unresolved conflict versions exist.
public let NSMetadataUbiquitousItemHasUnresolvedConflictsKey = MetadataAttribute.hasUnresolvedConflicts.rawValue
/// Why the last upload failed, until one succeeds (a message; Apple's value is an `NSError`).
public let NSMetadataUbiquitousItemUploadingErrorKey = MetadataAttribute.uploadingError.rawValue
/// Why the last download failed, until one succeeds (a message; Apple's value is an `NSError`).
public let NSMetadataUbiquitousItemDownloadingErrorKey = MetadataAttribute.downloadingError.rawValue
/// The downloading status of an item whose local copy is the latest known.
public let NSMetadataUbiquitousItemDownloadingStatusCurrent = UbiquitousDownloadingStatus.current.rawValue
/// The downloading status of an item with a local copy that may not be the latest.
public let NSMetadataUbiquitousItemDownloadingStatusDownloaded = UbiquitousDownloadingStatus.downloaded.rawValue
/// The downloading status of an item with no local copy.
public let NSMetadataUbiquitousItemDownloadingStatusNotDownloaded = UbiquitousDownloadingStatus.notDownloaded.rawValue

extension Notification.Name {
    /// Posted when a query starts gathering its initial results.
    public static let NSMetadataQueryDidStartGathering = Notification.Name("NSMetadataQueryDidStartGatheringNotification")
    /// Posted while gathering, as results arrive in batches.
    public static let NSMetadataQueryGatheringProgress = Notification.Name("NSMetadataQueryGatheringProgressNotification")
    /// Posted when the initial results are complete.
    public static let NSMetadataQueryDidFinishGathering = Notification.Name("NSMetadataQueryDidFinishGatheringNotification")
    /// Posted when the results change after gathering; `userInfo` holds the added, changed and
    /// removed items under ``NSMetadataQueryUpdateAddedItemsKey`` and its siblings.
    public static let NSMetadataQueryDidUpdate = Notification.Name("NSMetadataQueryDidUpdateNotification")
}

/// Sorts query results by an attribute (`NSSortDescriptor(key:ascending:)`, whose key-value
/// form swift-corelibs-foundation does not offer).
public struct MetadataSortDescriptor: Sendable, Hashable {
    /// The attribute name (`kMDItemFSName`, `NSMetadataItemFSSizeKey`…).
    public var key: String
    /// Whether smaller values come first.
    public var ascending: Bool

    /// Sorts by `key`.
    public init(key: String, ascending: Bool = true) {
        self.key = key
        self.ascending = ascending
    }
}

/// Receives a query's results and values before they are stored (`NSMetadataQueryDelegate`).
public protocol MetadataQueryDelegate: AnyObject, Sendable {
    /// The object to keep in the results in place of `result` (by default `result` itself).
    func metadataQuery(_ query: MetadataQuery, replacementObjectForResultObject result: MetadataItem) -> Any
    /// The value to use for `attribute` (by default `value`).
    func metadataQuery(_ query: MetadataQuery, replacementValueForAttribute attribute: String, value: Any) -> Any
}

extension MetadataQueryDelegate {
    /// Keeps `result`.
    public func metadataQuery(_ query: MetadataQuery, replacementObjectForResultObject result: MetadataItem) -> Any { result }
    /// Keeps `value`.
    public func metadataQuery(_ query: MetadataQuery, replacementValueForAttribute attribute: String, value: Any) -> Any { value }
}
