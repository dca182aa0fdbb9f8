// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Ubiquity
import UbiquityCore
import UbiquityStore
import UbiquityCloudKit

/// Conflict versions on every device (`docs/sync.md`, "Conflict versions on every device").
///
/// The device that keeps a conflict version (``keepConflict(_:_:localPath:local:)``) journals
/// it in `conflicts` unpublished; at the end of the pass it saves a `UbiquityConflictVersion`
/// record (``ConflictRecord``) in the zone. Other devices fetching that record add the content
/// as an unresolved conflict version of their copy of the item (the version store: `ubiq
/// versions`, the index, `ubiq status` and open documents see it) and journal the record, so a
/// refetch or a restart never adds it twice. Every pass compares the journaled conflicts with the
/// version store: a version resolved or removed here (the API, `ubiq resolve`) deletes its
/// record; a record deleted on the server (resolved on another device, or its item deleted)
/// removes the version here.
extension SyncEngine {
    /// A conflict version of item `itemID` was kept here: journaled, and published at the end
    /// of the pass (``shareConflictVersions()``).
    func noteConflictKept(itemID: String, version: FileVersion) {
        let conflict = JournalConflict(record: ConflictRecord.recordName(forVersion: version.persistentIdentifier), item: itemID,
                                       version: version.persistentIdentifier, published: false)
        do { try journal.putConflict(conflict) } catch {
            logger.warning("could not journal a conflict version; it stays on this device only", metadata: ["ubiquity.error": "\(error)"])
        }
    }

    /// Item `itemID` at `path` has a new unresolved conflict version here: followed through
    /// renames (SyncEngine+ConflictMoves.swift), reported in conflict, and told to the listener.
    func noteInConflict(itemID: String, path: String) {
        memory.conflicted[itemID] = path
        report(path, .inConflict)
        onEvent?(.conflict(path: path))
    }

    /// Writes a record's content (as ``writeContent(of:inline:asset:to:)``) to a new staging
    /// file, checked against `contentHash` (unchecked when empty), and returns its path; the
    /// caller removes it. `what` names the content in the error of a mismatch.
    func stageContent(of record: Record, inline: String, asset: String, contentHash: String, what: String) async throws -> String {
        let staged = stagingDirectory + "/staged-" + UUID().uuidString
        do {
            try await Self.writeContent(of: record, inline: inline, asset: asset, to: staged)
            let hash = try await BlockingWork.run { try SyncFiles.hashFile(staged, like: contentHash) }
            guard contentHash.isEmpty || hash == contentHash else { throw UbiquityError(.io, "the downloaded \(what) does not match its hash") }
        } catch {
            unlink(staged)
            throw error
        }
        return staged
    }

    // MARK: Receiving

    /// Applies the fetched `UbiquityConflictVersion` records and the deletions of known ones;
    /// after a full listing (`listed`: every record name the server has), published conflicts
    /// missing from it count as deleted. Returns whether something failed (the changes are then
    /// fetched again).
    func applyRemoteConflictVersions(_ records: some Sequence<Record>, deleted: [String], listed: Set<String>?) async -> Bool {
        var failed = false
        for record in records where record.recordType == ConflictRecord.recordType {
            guard let version = ConflictRecord.version(from: record) else {
                logger.warning("ignoring a malformed conflict version record", metadata: ["ubiquity.record": "\(record.recordID.recordName)"])
                continue
            }
            do {
                try await importConflictVersion(version, record)
            } catch is CancellationError {
                return true
            } catch {
                failed = true
                logger.warning("could not add a conflict version from another device",
                               metadata: ["ubiquity.path": "\(version.path)", "ubiquity.error": "\(error)"])
            }
        }
        do {
            let known = try journal.conflicts()  // few: one query, not one per deleted record
            guard !known.isEmpty else { return failed }
            let deletedNames = Set(deleted)
            let gone = known.filter { conflict in
                deletedNames.contains(conflict.record) || (conflict.published && listed.map { !$0.contains(conflict.record) } ?? false)
            }
            for conflict in gone {
                if deletedNames.contains(conflict.item) {
                    // deleted with its item (the record's reference cascades), not resolved: the
                    // version stays with the local item while that is kept (an edit here wins over
                    // the delete) and goes with it when it is deleted; found by the sync simulator
                    try journal.removeConflict(record: conflict.record)
                } else {
                    try await removeConflictVersion(conflict)
                }
            }
        } catch {
            failed = true
            logger.warning("could not remove conflict versions resolved elsewhere", metadata: ["ubiquity.error": "\(error)"])
        }
        return failed
    }

    /// Adds a conflict version made on another device, once. An evicted file is downloaded
    /// first: a version needs its file here, and a document in conflict is one to look at.
    func importConflictVersion(_ version: ConflictRecord.Version, _ record: Record) async throws {
        // ours, or imported already; unless shared again for another item (its file became that
        // item's on the device that keeps it: ``followsItsFile(_:)``), where it goes here too
        let known = try journal.conflict(record: version.recordName)
        if let known, known.item == version.itemID { return }
        if let evicted = try journal.entry(id: version.itemID), evicted.stat.kind == .file, try journal.isEvicted(evicted.id) {
            try await downloadEvicted(evicted.path)
        }
        guard let entry = try journal.entry(id: version.itemID), entry.changeTag != nil, entry.stat.kind == .file else {
            logger.notice("a conflict version of an item not synced here is left out",
                          metadata: ["ubiquity.path": "\(version.path)", "ubiquity.record": "\(version.recordName)"])
            return
        }
        let target = URL(fileURLWithPath: absolute(entry.path))
        let claimed = Set(try journal.conflicts().map(\.version))
        // added before a kill that came before it was journaled: adopted, not added again
        let existing = try await BlockingWork.run {
            FileVersion.unresolvedConflictVersionsOfItem(at: target)?.first { candidate in
                !claimed.contains(candidate.persistentIdentifier) && candidate.localizedNameOfSavingComputer == version.device
                    && candidate.size == version.size && abs(ConflictRecord.milliseconds(candidate.modificationDate) - version.modifiedMilliseconds) <= 1
            }
        }
        let added: FileVersion
        if let existing {
            added = existing
        } else {
            let staged = try await stageContent(of: record, inline: ConflictRecord.Field.inline, asset: ConflictRecord.Field.content,
                                                contentHash: version.contentHash, what: "conflict version of '\(entry.path)'")
            defer { unlink(staged) }
            added = try await BlockingWork.run {
                try FileVersion.addConflictVersion(ofItemAt: target, withContentsOf: URL(fileURLWithPath: staged), savingComputerName: version.device,
                                                   modificationDate: version.modificationDate, options: .byMoving)
            }
        }
        if let known { try await removeLocalVersion(known) }  // the copy kept for the item it stood for before
        try journal.putConflict(JournalConflict(record: version.recordName, item: version.itemID, version: added.persistentIdentifier, published: true))
        noteInConflict(itemID: entry.id, path: entry.path)
        logger.notice("conflict: another device kept its version as a conflict version; added here",
                      metadata: ["ubiquity.path": "\(entry.path)", "ubiquity.conflictDevice": "\(version.device)"])
    }

    /// Writes a record's content to the new file `path`: its `inline` bytes, or its `asset`
    /// downloaded, or nothing (an empty file). Conflict versions and items keep their content
    /// in fields of the same shape.
    nonisolated static func writeContent(of record: Record, inline: String, asset: String, to path: String) async throws {
        if let data = record[inline]?.dataValue {
            try await BlockingWork.run { try SyncFiles.writeNew(path, data) }
        } else if let content = record[asset]?.assetValue {
            try await content.download(to: URL(fileURLWithPath: path))
        } else {
            try await BlockingWork.run { try SyncFiles.writeNew(path, Data()) }
        }
    }

    /// The record of `conflict` was deleted on the server (resolved on another device, or its
    /// item deleted): the local version is marked resolved and removed, and forgotten.
    func removeConflictVersion(_ conflict: JournalConflict) async throws {
        if let path = try await removeLocalVersion(conflict) {
            logger.notice("conflict resolved on another device", metadata: ["ubiquity.path": "\(path)", "ubiquity.record": "\(conflict.record)"])
        }
        try journal.removeConflict(record: conflict.record)
    }

    /// Marks the local version of `conflict` resolved and removes it; returns its item's path
    /// (nil when the item is not journaled).
    @discardableResult
    func removeLocalVersion(_ conflict: JournalConflict) async throws -> String? {
        guard let entry = try journal.entry(id: conflict.item) else { return nil }
        let target = URL(fileURLWithPath: absolute(entry.path))
        let versionID = conflict.version
        try await BlockingWork.run {
            guard let version = FileVersion.version(itemAt: target, forPersistentIdentifier: versionID), version.hasLocalContents else { return }
            try version.markResolved()
            try version.remove()
        }
        return entry.path
    }

    // MARK: Each pass

    /// Compares the journaled conflicts with the version store (run at the end of every pass):
    /// versions resolved or removed here delete their records, conflicts of items gone are
    /// dropped, versions kept here and not yet published are saved, and the items with
    /// unresolved ones are reported in conflict (after a restart too). Failures are logged and
    /// tried again at the next pass.
    func shareConflictVersions() async {
        let conflicts: [JournalConflict]
        do { conflicts = try journal.conflicts() } catch {
            logger.warning("cannot read the journal's conflict versions", metadata: ["ubiquity.error": "\(error)"])
            return
        }
        for conflict in conflicts {
            if Task.isCancelled { return }
            do {
                guard let entry = try journal.entry(id: conflict.item) else {
                    try await withdraw(conflict)  // the item is gone (its deletion deletes the record on the server too)
                    continue
                }
                let target = URL(fileURLWithPath: absolute(entry.path))
                guard FileStamp.of(target.path) != nil else { continue }  // moving or going: looked at again next pass
                let versionID = conflict.version
                let version = try await BlockingWork.run {
                    // not found by the item: its link to the store may be lost (an editor's save
                    // then a rename between passes); the journal says whose it is (seed 110)
                    FileVersion.version(itemAt: target, forPersistentIdentifier: versionID)
                        ?? FileVersion.relink(version: versionID, toItemAt: target.path)
                }
                guard let version, version.isConflict, !version.isResolved, version.hasLocalContents else {
                    if try await followsItsFile(conflict) { continue }
                    logger.notice("conflict resolved here: telling the other devices", metadata: ["ubiquity.path": "\(entry.path)"])
                    try await withdraw(conflict)
                    continue
                }
                if memory.conflicted.updateValue(entry.path, forKey: entry.id) != entry.path { report(entry.path, .inConflict) }
                if !conflict.published { try await publish(conflict, version, path: entry.path) }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("could not share a conflict version; tried again at the next pass",
                               metadata: ["ubiquity.record": "\(conflict.record)", "ubiquity.error": "\(error)"])
            }
        }
    }

    /// Deletes the record of `conflict` (when published) and forgets it. Only the record as it
    /// stands for this conflict's item goes (deleted if unchanged): one shared again meanwhile
    /// for another item (its record name is the version's, ``followsItsFile(_:)``) is imported
    /// for that item instead; deleted by name, it was withdrawn everywhere (sim seed 1292). A
    /// record changed between the look and the delete stays, and the journal's row too: looked
    /// at again at the next pass.
    func withdraw(_ conflict: JournalConflict) async throws {
        if conflict.published {
            let id = Record.ID(recordName: conflict.record, zoneID: SyncRecord.zoneID)
            let current: Record?
            do { current = try await database.record(for: id) } catch let error as CloudKitError where error.code == .unknownItem { current = nil }
            if let current, let tag = current.recordChangeTag {
                if let version = ConflictRecord.version(from: current), version.itemID != conflict.item {
                    try journal.removeConflict(record: conflict.record)
                    try await importConflictVersion(version, current)
                    return
                }
                switch try await database.deleteRecords(ifUnchanged: [id: tag])[id] {
                case .failure(let error as CloudKitError) where error.code == .serverRecordChanged: return
                case .failure(let error as CloudKitError) where error.code == .unknownItem: break
                case .failure(let error): throw error
                default: break
                }
            }
        }
        try journal.removeConflict(record: conflict.record)
    }

    /// The version of `conflict` is not found by its item because the file of another synced
    /// item holds it now, unresolved: the file it belongs to moved over that item's name here,
    /// or the remote part gave the name to another record (sim seed 1292: a conflict version
    /// moved with its file by a plain rename, the name then taken by another device's record).
    /// That is no resolution: the record goes, and the version is shared again for the item that
    /// holds it (same record name; other devices move their copy there). Returns whether it did.
    func followsItsFile(_ conflict: JournalConflict) async throws -> Bool {
        let versionID = conflict.version, folder = self.folder
        let found = try await BlockingWork.run { () -> (path: String, version: FileVersion)? in
            guard let holder = FileVersion.holder(ofVersion: versionID), holder.hasPrefix(folder + "/"),
                  let version = FileVersion.version(itemAt: URL(fileURLWithPath: holder), forPersistentIdentifier: versionID),
                  version.isConflict, !version.isResolved, version.hasLocalContents else { return nil }
            return (String(holder.dropFirst(folder.count + 1)), version)
        }
        guard let found, let item = try journal.entry(path: found.path), item.id != conflict.item, item.changeTag != nil,
              item.stat.kind == .file else { return false }
        logger.notice("a conflict version follows its file to another item: shared again for it",
                      metadata: ["ubiquity.path": "\(found.path)", "ubiquity.record": "\(conflict.record)"])
        try await withdraw(conflict)
        let followed = JournalConflict(record: conflict.record, item: item.id, version: versionID, published: false)
        try journal.putConflict(followed)
        noteInConflict(itemID: item.id, path: item.path)
        try await publish(followed, found.version, path: item.path)
        return true
    }

    /// Saves the record of a conflict version kept here: the content inline when small, else
    /// as an asset (a staging copy, so the store may change meanwhile).
    func publish(_ conflict: JournalConflict, _ version: FileVersion, path: String) async throws {
        let staged = stagingDirectory + "/cv-" + UUID().uuidString
        defer { unlink(staged) }
        let source = version.url.path
        let copy = try await BlockingWork.run { try SyncFiles.stage(source, to: staged) }
        var record = ConflictRecord.record(ConflictRecord.Version(
            recordName: conflict.record, itemID: conflict.item, path: path,
            device: version.localizedNameOfSavingComputer ?? deviceName,
            modifiedMilliseconds: ConflictRecord.milliseconds(version.modificationDate), size: copy.before.size, contentHash: copy.hash))
        if copy.before.size > SyncRecord.inlineLimit {
            record[ConflictRecord.Field.content] = .asset(Asset(fileURL: URL(fileURLWithPath: staged)))
            record = try await database.uploadAssets(of: record)
        } else if copy.before.size > 0 {
            record[ConflictRecord.Field.inline] = .bytes(try Data(contentsOf: URL(fileURLWithPath: staged)))
        }
        do {
            _ = try await database.save(record)
        } catch let error as CloudKitError where error.code == .serverRecordChanged {
            // saved before (a kill before it was journaled): the server has it
        } catch let error as CloudKitError where error.code == .unknownItem || error.code == .invalidArguments {
            // the item's record is gone (or refused the reference): the version stays on this device only
            logger.notice("the conflict version cannot be shared; it stays on this device",
                          metadata: ["ubiquity.path": "\(path)", "ubiquity.error": "\(error)"])
            try journal.removeConflict(record: conflict.record)
            return
        }
        var published = conflict
        published.published = true
        try journal.putConflict(published)
        logger.debug("conflict version shared", metadata: ["ubiquity.path": "\(path)", "ubiquity.record": "\(conflict.record)"])
    }
}

extension SyncEngine {
    /// A version of the item at absolute `path` was added, resolved or removed by some process:
    /// when it is in the folder, a pass soon compares the journaled conflicts with the store (no
    /// fetch), and shares a conflict version an app kept (SyncEngine+AppConflictVersions.swift).
    package nonisolated func versionSettled(at path: String) {
        guard CanonicalPath.isSameOrDescendant(path, of: folder) else { return }
        versionCandidates.withLock { _ = $0.insert(path) }
        wakeContinuation.yield()
    }
}
