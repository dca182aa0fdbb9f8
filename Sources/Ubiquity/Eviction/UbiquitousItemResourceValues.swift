// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityIndex

/// The ubiquitous resource values of a synced item (Apple's `URLResourceValues` members of the
/// same names, which swift-corelibs-foundation lacks), from the daemon; without a daemon, from
/// the item itself (a placeholder is not downloaded).
public struct UbiquitousItemResourceValues: Sendable, Hashable {
    /// `.current` (the local copy is the latest known), `.downloaded` (a newer one is coming) or
    /// `.notDownloaded` (evicted: a placeholder).
    public var ubiquitousItemDownloadingStatus: UbiquitousDownloadingStatus
    /// Whether a download runs.
    public var ubiquitousItemIsDownloading: Bool
    /// Whether a download was asked for (true for items that are here, as Apple's is).
    public var ubiquitousItemDownloadRequested: Bool
    /// Whether the server has the current content.
    public var ubiquitousItemIsUploaded: Bool
    /// Whether an upload runs or waits.
    public var ubiquitousItemIsUploading: Bool
    /// Why the last download failed (Apple's is an `NSError`).
    public var ubiquitousItemDownloadingError: String?
    /// Why the last upload failed (Apple's is an `NSError`).
    public var ubiquitousItemUploadingError: String?
    /// Download progress, 0…100, while downloading.
    public var percentDownloaded: Double?
    /// Upload progress, 0…100, while uploading.
    public var percentUploaded: Double?

    /// Values from the daemon's state.
    package init(_ state: ItemSyncState) {
        ubiquitousItemDownloadingStatus = state.downloadingStatus
        ubiquitousItemIsDownloading = state.isDownloading
        ubiquitousItemDownloadRequested = state.downloadRequested
        ubiquitousItemIsUploaded = state.sync == .uploaded || state.sync == .inConflict
        ubiquitousItemIsUploading = state.isUploading
        ubiquitousItemDownloadingError = state.downloadError
        ubiquitousItemUploadingError = state.uploadError
        percentDownloaded = state.percentDownloaded
        percentUploaded = state.percentUploaded
    }
}

extension URL {
    /// The item's ubiquitous resource values (see ``UbiquitousItemResourceValues``).
    /// - Throws: `invalidArgument` for a relative path, `notFound` when nothing is there; the
    ///   daemon's errors (an item outside the sync folder: `invalidArgument`).
    public func ubiquitousItemResourceValues() throws -> UbiquitousItemResourceValues {
        let path = try UbiquitousItemControl.absolutePath(self)
        guard Placeholder.stamp(ofItemAt: path) != nil else { throw UbiquityError(.notFound, "no item at '\(path)'") }
        do {
            return UbiquitousItemResourceValues(try UbiquitousItemControl.state(at: self))
        } catch let error as UbiquityError where error.code == .serviceUnavailable {
            let evicted = Placeholder.isEvicted(path)
            return UbiquitousItemResourceValues(ItemSyncState(sync: .unknown, downloadingStatus: evicted ? .notDownloaded : .current,
                                                              downloadRequested: !evicted))
        }
    }
}
