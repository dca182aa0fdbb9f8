// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import UbiquityCore

extension FileVersion {
    /// Adds a version of the item at `url` holding the contents of `contentsURL` (often `url`
    /// itself, to keep a snapshot of the file as it is now), and tells presenters the item gained
    /// it. Apple's `addOfItem(at:withContentsOf:options:)`.
    ///
    /// - Parameter options: `.byMoving` moves `contentsURL` into the store instead of copying it;
    ///   refused (`invalidArgument`) when `contentsURL` is the item itself.
    /// - Throws: `notFound` when the item or the contents are missing, `invalidArgument` for
    ///   relative paths, `unsupported` when the contents are a folder. On failure nothing changed.
    @discardableResult
    public class func addOfItem(at url: URL, withContentsOf contentsURL: URL, options: AddingOptions = []) throws -> FileVersion {
        try add(itemAt: url, contentsURL: contentsURL, conflict: false, savingComputerName: nil,
                modificationDate: nil, byMoving: options.contains(.byMoving))
    }

    /// Adds an unresolved conflict version of the item at `url` holding the contents of
    /// `contentsURL`: what sync (and `Document`) does when another device's change lost.
    ///
    /// - Parameters:
    ///   - savingComputerName: the device that made the content; defaults to this device
    ///     (`UBIQUITY_DEVICE_NAME` or the host name).
    ///   - modificationDate: when the content was last modified; defaults to the contents file's
    ///     modification time.
    ///   - options: `.byMoving` moves `contentsURL` into the store instead of copying it.
    /// - Throws: as ``addOfItem(at:withContentsOf:options:)``.
    @discardableResult
    public class func addConflictVersion(ofItemAt url: URL, withContentsOf contentsURL: URL, savingComputerName: String? = nil,
                                         modificationDate: Date? = nil, options: AddingOptions = []) throws -> FileVersion {
        try add(itemAt: url, contentsURL: contentsURL, conflict: true, savingComputerName: savingComputerName,
                modificationDate: modificationDate, byMoving: options.contains(.byMoving))
    }

    private class func add(itemAt url: URL, contentsURL: URL, conflict: Bool, savingComputerName: String?,
                           modificationDate: Date?, byMoving: Bool) throws -> FileVersion {
        let path = try itemPath(of: url)
        let source = try itemPath(of: contentsURL)
        guard FileStamp.of(path) != nil else { throw UbiquityError(.notFound, "no item at '\(path)' to add a version to") }
        guard let sourceStamp = FileStamp.of(source) else { throw UbiquityError(.notFound, "no contents at '\(source)'") }
        if sourceStamp.isDirectory {
            throw UbiquityError(.unsupported, "'\(source)' is a folder; versions of folders (file packages) are not supported yet")
        }
        if byMoving && source == path {
            throw UbiquityError(.invalidArgument, "adding '\(path)' as a version of itself with .byMoving would remove the item; copy it instead")
        }
        let store = VersionStore.current
        let itemID = try store.itemID(forPath: path)
        let versionID = UUID().uuidString
        let fileExtension = (CanonicalPath.lastComponent(of: path) as NSString).pathExtension
        let file = fileExtension.isEmpty ? versionID : versionID + "." + fileExtension
        let destination = store.contentPath(itemID, file: file)

        let record = try store.withItemLock(itemID) { () throws -> VersionManifest.Record in
            var manifest = try store.readManifest(itemID) ?? VersionManifest(itemID: itemID, path: path)
            let moved = byMoving && !sourceStamp.isSymbolicLink && rename(source, destination) == 0
            let summary: VersionContent.Summary
            do {
                // moved in: its bytes made durable here (a copy is saved durably by `store`)
                if moved { try Durability.syncFile(at: destination) }
                summary = moved ? try VersionContent.summary(of: destination)
                                : try VersionContent.store(copying: source, to: destination)
            } catch {
                if moved { rename(destination, source) }
                throw error
            }
            let record = VersionManifest.Record(
                id: versionID, conflict: conflict, resolved: !conflict,
                modificationDate: modificationDate ?? sourceStamp.modificationDate,
                savingComputer: savingComputerName ?? DeviceName.current,
                displayName: CanonicalPath.lastComponent(of: path), size: summary.size,
                sha256: summary.sha256, file: file, added: Date())
            manifest.path = path
            manifest.versions.append(record)
            do {
                try store.writeManifest(manifest)
            } catch {
                if moved { rename(destination, source) } else { unlink(destination) }
                throw error
            }
            if byMoving && !moved { unlink(source) }  // copied across file systems: finish the move
            return record
        }
        let version = FileVersion(record: record, itemID: itemID, itemPath: path, store: store)
        VersionAnnouncements.post(.gained, version, path: path)
        return version
    }
}
