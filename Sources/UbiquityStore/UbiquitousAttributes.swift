import UbiquityCore

/// The iCloud-style state of an indexed item, as sync reports it (the `NSMetadataUbiquitousItem…`
/// attributes). The scanner knows none of it: new items start not uploaded and current.
package struct UbiquitousAttributes: Sendable, Hashable, Codable {
    /// Whether the server has this item's current content.
    package var isUploaded: Bool
    /// Whether an upload is in progress.
    package var isUploading: Bool
    /// Upload progress, 0…100.
    package var percentUploaded: Double
    /// Whether the local copy is current, outdated or absent.
    package var downloadingStatus: UbiquitousDownloadingStatus
    /// Whether a download is in progress.
    package var isDownloading: Bool
    /// Download progress, 0…100.
    package var percentDownloaded: Double
    /// Whether unresolved conflict versions exist.
    package var hasUnresolvedConflicts: Bool
    /// Whether the skip-backup attribute is set (never uploaded).
    package var isExcludedFromBackup: Bool
    /// Why the last upload failed, until one succeeds (`NSMetadataUbiquitousItemUploadingErrorKey`).
    package var uploadingError: String?
    /// Why the last download failed, until one succeeds (`NSMetadataUbiquitousItemDownloadingErrorKey`).
    package var downloadingError: String?

    /// Attributes with the given values; the defaults describe a local item not yet uploaded.
    package init(
        isUploaded: Bool = false, isUploading: Bool = false, percentUploaded: Double = 0,
        downloadingStatus: UbiquitousDownloadingStatus = .current, isDownloading: Bool = false,
        percentDownloaded: Double = 0, hasUnresolvedConflicts: Bool = false,
        isExcludedFromBackup: Bool = false, uploadingError: String? = nil, downloadingError: String? = nil
    ) {
        self.isUploaded = isUploaded
        self.isUploading = isUploading
        self.percentUploaded = percentUploaded
        self.downloadingStatus = downloadingStatus
        self.isDownloading = isDownloading
        self.percentDownloaded = percentDownloaded
        self.hasUnresolvedConflicts = hasUnresolvedConflicts
        self.isExcludedFromBackup = isExcludedFromBackup
        self.uploadingError = uploadingError
        self.downloadingError = downloadingError
    }
}

extension UbiquitousAttributes {
    /// Sets the attributes that follow from sync's state of the item: a function of `status`
    /// alone (and of `evicted`: an evicted item is not downloaded), so the same state gives the
    /// same attributes whichever path it took. The transfer attributes (downloading, progress,
    /// errors) are left as they are; an unknown state changes nothing.
    package mutating func apply(_ status: SyncItemStatus, evicted: Bool = false) {
        switch status {
        case .uploaded, .inConflict:
            hasUnresolvedConflicts = status == .inConflict
            isUploaded = true
            isUploading = false
            percentUploaded = 100
            downloadingStatus = evicted ? .notDownloaded : .current
            isExcludedFromBackup = false
        case .uploading:
            hasUnresolvedConflicts = false
            isUploaded = false
            isUploading = true
            percentUploaded = 0
            isExcludedFromBackup = false
            if evicted { downloadingStatus = .notDownloaded }
        case .excluded:
            hasUnresolvedConflicts = false
            isUploaded = false
            isUploading = false
            percentUploaded = 0
            isExcludedFromBackup = true
        case .unknown:
            break
        }
    }
}
