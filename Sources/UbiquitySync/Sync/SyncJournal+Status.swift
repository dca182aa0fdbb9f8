// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityIndex
import UbiquityStore

extension SyncJournal {
    /// The sync state of the item at the absolute `path`, from the journal of the synced folder
    /// holding it in the device database at `database`; nil when no synced folder holds it or it
    /// does not exist. `conflicts` is the item's number of unresolved conflict versions.
    package static func status(ofItemAt path: String, conflicts: Int, database: String) -> SyncItemStatus? {
        guard let stamp = FileStamp.of(path), let canonical = try? CanonicalPath.canonicalize(path),
              let (journal, relative) = holding(canonical, database: database) else { return nil }
        return journal.status(relativePath: relative, canonical: canonical, stamp: stamp, conflicts: conflicts)
    }

    /// The sync state of the item at `relative` (absolute: `canonical`, now `stamp`) in this
    /// journal's folder; `conflicts` is its number of unresolved conflict versions.
    package func status(relativePath relative: String, canonical: String, stamp: FileStamp, conflicts: Int) -> SyncItemStatus {
        if (try? excluded().contains(relative)) == true || (try? BackupExclusion.isExcluded(canonical)) == true { return .excluded }
        if conflicts > 0 { return .inConflict }
        guard let entry = try? entry(path: relative), entry.changeTag != nil else { return .uploading }
        var now = SyncStat(stamp)
        if now.kind == .folder { return .uploaded }
        // an evicted file: its stub (with the document's size) is what the journal has
        if FileStamp.of(canonical) == nil, let stub = SyncFiles.stubItem(path: relative, absolute: canonical) { now = stub.stat }
        return now.differs(from: entry.stat) ? .uploading : .uploaded
    }
}
