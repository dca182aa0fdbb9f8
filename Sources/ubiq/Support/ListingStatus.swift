// SPDX-License-Identifier: Apache-2.0
import UbiquityCore
import UbiquityStore

/// The sync status column of `ubiq ls`, from an item's ubiquitous attributes in the index.
struct ListingStatus: Equatable {
    /// `uploaded`, `uploading`, `downloading`, `not downloaded`, `conflict`, `excluded`,
    /// `not uploaded` (indexed, never sent), `unknown` (not in the index, or no index) or
    /// `deleted` (only in the index: gone from disk, the daemon has not seen it yet).
    var label: String
    /// Transfer progress 0…100 for `uploading` and `downloading`.
    var percent: Double?

    /// The status of an item with `attributes` (nil: not indexed). Conflicts and exclusion win
    /// over transfers, transfers over the settled states.
    init(_ attributes: UbiquitousAttributes?) {
        percent = nil
        guard let attributes else { label = "unknown"; return }
        if attributes.isExcludedFromBackup {
            label = "excluded"
        } else if attributes.hasUnresolvedConflicts {
            label = "conflict"
        } else if attributes.isDownloading {
            label = "downloading"
            percent = attributes.percentDownloaded
        } else if attributes.isUploading {
            label = "uploading"
            percent = attributes.percentUploaded
        } else if attributes.downloadingStatus == .notDownloaded {
            label = "not downloaded"
        } else if attributes.isUploaded {
            label = "uploaded"
        } else {
            label = "not uploaded"
        }
    }

    /// The status of an item the index has and the disk has not (deleted, not seen yet).
    static func deleted(_ attributes: UbiquitousAttributes?) -> ListingStatus {
        var status = ListingStatus(attributes)
        status.label = "deleted"
        status.percent = nil
        return status
    }

    /// The column text: the label, with the percentage for transfers (`uploading 42%`).
    var text: String {
        guard let percent else { return label }
        return label + " " + String(Int(percent.rounded(.down))) + "%"
    }

    /// The ANSI colour of the column (0: none).
    var color: Int {
        switch label {
        case "conflict": return 31
        case "uploading", "downloading": return 33
        case "not downloaded": return 34
        case "excluded", "unknown", "deleted": return 2
        default: return 0
        }
    }
}
