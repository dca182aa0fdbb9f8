// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Ubiquity
import UbiquityCore

extension SyncEngine {
    /// One upload to do.
    struct Upload {
        var id: String
        var path: String
        var local: LocalItem
        var previous: JournalEntry?
        var content: Bool
        var hash: String?
    }

    /// Scans the folder against the journal and sends what changed: renames and moves (by inode,
    /// or by content for a delete and create pair) as path updates, edits as uploads, new items as
    /// records, deletes as record deletes; skip-backup items are never sent, and one marked after
    /// it was uploaded has its record deleted (the file stays).
    func pushLocal() async throws {
        let root = folder, rules = self.rules
        let items = try await BlockingWork.run { SyncFiles.scan(root: root, rules: rules) }
        let entries = try journal.entries()
        var byPath: [String: JournalEntry] = [:]
        for entry in entries { byPath[entry.path] = entry }
        var uploads: [Upload] = []
        var unexclude: [String] = []
        var excludedNow: [(String, JournalEntry?)] = []
        var missing: [JournalEntry] = []
        var created: [LocalItem] = []
        let previouslyExcluded = try journal.excluded()
        // paths queued for (at least) a metadata upload: a name the server does not have yet
        let queued = Set(try journal.pending())
        let evicted = try journal.evicted()  // eviction: SyncEngine+Eviction.swift

        for entry in entries {
            guard let local = items[entry.path] else {
                missing.append(entry)
                continue
            }
            if evicted.contains(entry.id), try keepsPlaceholder(entry, local) { continue }  // never uploaded (SyncEngine+Eviction.swift)
            if local.excluded {
                excludedNow.append((entry.path, entry))
                continue
            }
            if local.stat.kind != entry.stat.kind && entry.changeTag != nil {
                // replaced by another kind of item: delete the old record, send a new one
                missing.append(entry)
                created.append(local)
                continue
            }
            var hash: String?
            if local.stat.kind == .file && !local.excluded && entry.changeTag != nil && local.stat.differs(from: entry.stat) {
                hash = try await hashOf(local)
            }
            switch SyncDecision.localChange(entry: entry, local: local.stat, localHash: hash, target: local.target, excluded: local.excluded) {
            case .nothing where queued.contains(entry.path), .adopt where queued.contains(entry.path):
                uploads.append(Upload(id: entry.id, path: entry.path, local: local, previous: entry, content: false, hash: hash))
            case .nothing:
                break
            case .adopt:
                var updated = entry
                updated.stat = local.stat
                try journal.put(updated)
            case .upload(let content):
                uploads.append(Upload(id: entry.id, path: entry.path, local: local, previous: entry, content: content, hash: hash))
            case .deleteRemoteKeepLocal:
                excludedNow.append((entry.path, entry))
            }
        }
        for (path, local) in items where byPath[path] == nil {
            if local.excluded {
                if !previouslyExcluded.contains(path) { excludedNow.append((path, nil)) }
                continue
            }
            created.append(local)
        }
        for path in previouslyExcluded where items[path].map({ !$0.excluded }) ?? true { unexclude.append(path) }

        // moves: a vanished entry and a new item with its inode (or, for files, its content)
        var createdHashes: [String: String] = [:]
        if !missing.isEmpty {
            for local in created where local.stat.kind == .file { createdHashes[local.path] = try? await hashOf(local) }
        }
        let moves = SyncDecision.matchMoves(missing: missing, created: created.map { ($0.path, $0.stat, createdHashes[$0.path]) })
        let movedPaths = Set(moves.values)
        for entry in missing {
            guard let path = moves[entry.id], let local = items[path] else { continue }
            if isMovedPlaceholder(entry, at: path, evicted: evicted) {  // only its path (SyncEngine+Eviction.swift)
                uploads.append(Upload(id: entry.id, path: path, local: local, previous: entry, content: false, hash: entry.contentHash))
                continue
            }
            var hash = createdHashes[path]
            if hash == nil && local.stat.kind == .file && local.stat.differs(from: entry.stat) { hash = try await hashOf(local) }
            let content = local.stat.kind == .symlink ? local.target != entry.target
                : local.stat.kind == .file && (hash.map { $0 != entry.contentHash } ?? false)
            uploads.append(Upload(id: entry.id, path: path, local: local, previous: entry, content: content || entry.changeTag == nil, hash: hash))
        }
        for local in created where !movedPaths.contains(local.path) {
            let id = UUID().uuidString
            // journaled before the upload, so a restart reuses the ID instead of making a second record
            try journal.put(JournalEntry(id: id, path: local.path, stat: local.stat, contentHash: "", target: local.target, changeTag: nil))
            try journal.enqueue([local.path])
            uploads.append(Upload(id: id, path: local.path, local: local, previous: nil, content: true, hash: createdHashes[local.path]))
        }
        for path in unexclude { try journal.setExcluded(path, false) }

        if !uploads.isEmpty || !missing.isEmpty {
            logger.debug("local changes", metadata: [
                "ubiquity.uploads": "\(uploads.map { "\($0.previous?.path ?? "new") → \($0.path)" })",
                "ubiquity.missing": "\(missing.map { "\($0.path)@\($0.stat.inode)" })",
                "ubiquity.created": "\(created.map { "\($0.path)@\($0.stat.inode)" })",
            ])
        }
        uploads.sort { (Self.depth($0.path), $0.path) < (Self.depth($1.path), $1.path) }
        var failedUploads = 0
        for upload in uploads {
            try Task.checkCancellation()
            if let refused = refusedUploads[upload.path], refused == upload.local.stat { continue }
            do {
                try await send(upload)
                refusedUploads[upload.path] = nil
            } catch is CancellationError { throw CancellationError() } catch {
                let code = (error as? CloudKitError)?.code
                onEvent?(.uploadFailed(path: upload.path, error: "\(error)", quota: code == .quotaExceeded))
                noteUploadFailed(upload.path, error)  // status (SyncEngine+Progress.swift)
                if code == .limitExceeded || code == .quotaExceeded {
                    // Refused for good: retried once the item changes, not at every pass.
                    refusedUploads[upload.path] = upload.local.stat
                    logger.error("the server refused the upload; it is tried again when the item changes",
                                 metadata: ["ubiquity.path": "\(upload.path)", "ubiquity.error": "\(error)"])
                } else {
                    failedUploads += 1
                    logger.warning("upload failed; retried next pass", metadata: ["ubiquity.path": "\(upload.path)", "ubiquity.error": "\(error)"])
                }
            }
        }

        let deletes = missing.filter { moves[$0.id] == nil }.sorted { Self.depth($0.path) > Self.depth($1.path) }
        for entry in deletes {
            try await deleteRemote(entry)
        }
        for (path, entry) in excludedNow {
            if let entry { try await deleteRemote(entry) }
            try journal.setExcluded(path, true)
            report(path, .excluded)
            logger.info("not uploaded: the item is excluded from backup", metadata: ["ubiquity.path": "\(path)"])
        }
        // the pass counts as failed, so retries back off instead of spinning
        if failedUploads > 0 { throw UbiquityError(.io, "\(failedUploads) upload(s) failed; they are retried") }
    }

    func hashOf(_ local: LocalItem) async throws -> String {
        let path = absolute(local.path)
        return try await BlockingWork.run { try SyncFiles.contentHash(of: local, absolute: path) }
    }

    func wakeLater() {
        Task { [wakeContinuation] in
            try? await Task.sleep(for: .seconds(1))
            wakeContinuation.yield()
        }
    }

    /// Deletes an item's record (a local delete), then forgets it.
    func deleteRemote(_ entry: JournalEntry) async throws {
        if entry.changeTag != nil {
            do {
                try await database.deleteRecord(withID: Record.ID(recordName: entry.id, zoneID: SyncRecord.zoneID))
            } catch let error as CloudKitError where error.code == .unknownItem {}
        }
        try journal.remove(id: entry.id)
    }

    /// Sends one item: content read under a coordinated read into a staging copy (hashed on the
    /// way), uploaded as an asset (only missing chunks travel), the record saved with the change
    /// tag it was based on. A file that changed while it was read is left for the next pass.
    func send(_ upload: Upload) async throws {
        let target = absolute(upload.path)
        report(upload.path, .uploading)
        var record = try SyncRecord.record(id: upload.id, changeTag: upload.previous?.changeTag)
        var stat = upload.local.stat
        var hash = upload.previous?.contentHash ?? ""
        var staged: String?
        defer { if let staged { unlink(staged) } }
        switch stat.kind {
        case .file where upload.content:
            let copy = stagingDirectory + "/" + UUID().uuidString
            staged = copy
            let result = try await coordinator.coordinate(readingItemAt: URL(fileURLWithPath: target)) { url in
                try await BlockingWork.run { try SyncFiles.stage(url.path, to: copy) }
            }
            guard !result.before.contentDiffers(from: result.after) else {
                logger.debug("changed while read: queued again", metadata: ["ubiquity.path": "\(upload.path)"])
                try journal.enqueue([upload.path])
                wakeLater()
                return
            }
            stat = SyncStat(result.before)
            hash = result.hash
            if stat.size > 0 {
                record[SyncRecord.Field.content] = .asset(Asset(fileURL: URL(fileURLWithPath: copy)))
            } else if upload.previous?.changeTag != nil {
                record[SyncRecord.Field.content] = nil  // emptied: clear the old content
            }
        case .file:
            break
        case .symlink:
            hash = SyncFiles.hash(Data((upload.local.target ?? "").utf8))
        case .folder:
            hash = ""
        }
        record[SyncRecord.Field.path] = .string(upload.path)
        record[SyncRecord.Field.kind] = .string(stat.kind.rawValue)
        record[SyncRecord.Field.size] = .int64(stat.size)
        record[SyncRecord.Field.modified] = .int64(stat.modifiedNanoseconds / 1_000_000)
        record[SyncRecord.Field.contentHash] = .string(hash)
        record[SyncRecord.Field.mode] = .int64(Int64(stat.mode))
        if let target = upload.local.target { record[SyncRecord.Field.target] = .string(target) }
        do {
            let saved = try await database.save(record)
            try journal.put(JournalEntry(id: upload.id, path: upload.path, stat: stat, contentHash: hash, target: upload.local.target,
                                         changeTag: saved.recordChangeTag))
            report(upload.path, .uploaded)
            onEvent?(.didUpload(path: upload.path))
            logger.debug("uploaded", metadata: ["ubiquity.path": "\(upload.path)"])
        } catch let error as CloudKitError where error.code == .serverRecordChanged {
            var serverRecord = error.serverRecord
            if serverRecord == nil { serverRecord = try await database.record(for: record.recordID) }
            guard let serverRecord, let server = SyncRecord.item(from: serverRecord) else { throw error }
            switch SyncDecision.refusedSave(localKind: stat.kind, localHash: hash, server: server) {
            case .adopt:
                try journal.put(JournalEntry(id: upload.id, path: server.path, stat: stat, contentHash: hash, target: upload.local.target,
                                             changeTag: server.changeTag))
                report(upload.path, .uploaded)
                if server.path != upload.path { wakeLater() }
            default:
                // fetch the record with its download URL, then keep both versions
                let fresh = try await database.record(for: serverRecord.recordID)
                guard let freshItem = SyncRecord.item(from: fresh) else { throw error }
                try await keepConflict(freshItem, fresh, localPath: upload.path, local: upload.local)
            }
        } catch let error as CloudKitError where error.code == .unknownItem {
            // the record was deleted elsewhere while this edit waited: the edit wins, as a new record
            try journal.remove(id: upload.id)
            wakeLater()
        }
    }
}
