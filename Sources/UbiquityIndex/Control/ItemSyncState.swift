// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// An item's sync state as the sync journal and the daemon know it: what `ubiq status` shows
/// and the library's ubiquitous resource values are made of (Apple's `NSURLUbiquitousItem…`
/// keys).
public struct ItemSyncState: Codable, Sendable, Hashable {
    /// Uploaded, uploading, in conflict, excluded (or unknown).
    public var sync: SyncItemStatus
    /// `NSMetadataUbiquitousItemDownloadingStatusCurrent`, `…Downloaded` or `…NotDownloaded`.
    public var downloadingStatus: UbiquitousDownloadingStatus
    /// Whether a download runs.
    public var isDownloading: Bool
    /// Download progress, 0…100 (while downloading).
    public var percentDownloaded: Double?
    /// Whether a download was asked for (`startDownloadingUbiquitousItem`, `ubiq download`); also
    /// true for an item that is here, as Apple's key is.
    public var downloadRequested: Bool
    /// Whether an upload runs (or waits).
    public var isUploading: Bool
    /// Upload progress, 0…100 (while uploading).
    public var percentUploaded: Double?
    /// Why the last upload failed, until one succeeds.
    public var uploadError: String?
    /// Why the last download failed, until one succeeds.
    public var downloadError: String?
    /// Whether the item is pinned (Apple's "Keep Downloaded": `ubiq pin`), itself or through a
    /// folder above it; nil from a daemon that predates pinning.
    public var isPinned: Bool?

    /// A state from its parts.
    public init(sync: SyncItemStatus, downloadingStatus: UbiquitousDownloadingStatus = .current, isDownloading: Bool = false,
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
