// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityStore

/// An item's sync state as the sync journal and the daemon know it: what `ubiq status` shows
/// and the library's ubiquitous resource values are made of (Apple's `NSURLUbiquitousItem…`
/// keys).
package struct ItemSyncState: Codable, Sendable, Hashable {
    /// Uploaded, uploading, in conflict, excluded (or unknown).
    package var sync: SyncItemStatus
    /// `NSMetadataUbiquitousItemDownloadingStatusCurrent`, `…Downloaded` or `…NotDownloaded`.
    package var downloadingStatus: UbiquitousDownloadingStatus
    /// Whether a download runs.
    package var isDownloading: Bool
    /// Download progress, 0…100 (while downloading).
    package var percentDownloaded: Double?
    /// Whether a download was asked for (`startDownloadingUbiquitousItem`, `ubiq download`); also
    /// true for an item that is here, as Apple's key is.
    package var downloadRequested: Bool
    /// Whether an upload runs (or waits).
    package var isUploading: Bool
    /// Upload progress, 0…100 (while uploading).
    package var percentUploaded: Double?
    /// Why the last upload failed, until one succeeds.
    package var uploadError: String?
    /// Why the last download failed, until one succeeds.
    package var downloadError: String?
    /// Whether the item is pinned (Apple's "Keep Downloaded": `ubiq pin`), itself or through a
    /// folder above it; nil from a daemon that predates pinning.
    package var isPinned: Bool?

    /// A state from its parts.
    package init(sync: SyncItemStatus, downloadingStatus: UbiquitousDownloadingStatus = .current, isDownloading: Bool = false,
                percentDownloaded: Double? = nil, downloadRequested: Bool = true, isUploading: Bool = false, percentUploaded: Double? = nil,
                uploadError: String? = nil, downloadError: String? = nil) {
        self.sync = sync
        self.downloadingStatus = downloadingStatus
        self.isDownloading = isDownloading
        self.percentDownloaded = percentDownloaded
        self.downloadRequested = downloadRequested
        self.isUploading = isUploading
        self.percentUploaded = percentUploaded
        self.uploadError = uploadError
        self.downloadError = downloadError
    }
}

extension UbiquitousAttributes {
    /// Sets the transfer attributes from an item's state: downloading status, whether a download
    /// runs and how far, the errors, and while an upload runs its progress.
    package mutating func apply(transfer: ItemSyncState) {
        downloadingStatus = transfer.downloadingStatus
        uploadingError = transfer.uploadError
        downloadingError = transfer.downloadError
        isDownloading = transfer.isDownloading
        percentDownloaded = transfer.percentDownloaded ?? (transfer.downloadingStatus == .notDownloaded ? 0 : 100)
        if transfer.isUploading {
            isUploading = true
            percentUploaded = transfer.percentUploaded ?? 0
        }
    }
}
