// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Ubiquity
import UbiquityCore
import UbiquityStore
import UbiquityCloudKit

extension SyncEngine {
    /// Records per `records/modify` request (CloudKit's limit).
    static let recordsPerBatch = 200
    /// Inline content per `records/modify` request at most (a batch of small files is cut
    /// before it, well under the server's body limit).
    static let inlineBytesPerBatch = 4 << 20
    /// Files read, asset uploads and downloads in flight at once.
    static let transfersInFlight = 8
    /// `records/modify` requests of one pass's uploads in flight at once (``sendAll(_:)``).
    static let savesInFlight = 2

    /// An upload read and ready to save: its record (content inline, or an asset already
    /// uploaded), and what the journal records once the server took it.
    struct PreparedUpload: Sendable {
        var upload: Upload
        var record: Record
        var stat: SyncStat
        var hash: String
        /// The bytes of inline content in the record.
        var inlineBytes: Int
    }

    /// Sends uploads: up to ``transfersInFlight`` items read (under a coordinated read) and
    /// their large contents uploaded as assets at once, then saved in batches of up to
    /// ``recordsPerBatch`` records per `records/modify` (non-atomic: one refused record does not
    /// fail the others). The next window is read while one is saved, and up to
    /// ``savesInFlight`` windows are saved at once, so the server stores one while this device
    /// journals the answer of the other. Folders still go before their files: a window with a
    /// folder is saved alone, and the windows after it wait until the server took it. Returns
    /// how many failed for a reason worth retrying.
    func sendAll(_ uploads: [Upload]) async throws -> Int {
        guard !uploads.isEmpty else { return 0 }
        defer { memory.ownChangeSteps = [] }  // a step still unchained now never will be
        // windows as ranges: each is copied out of `uploads` when it is prepared
        let windows = stride(from: 0, to: uploads.count, by: Self.recordsPerBatch).map {
            $0..<min($0 + Self.recordsPerBatch, uploads.count)
        }
        return try await withThrowingTaskGroup(of: (failed: Int, folders: Bool).self) { saves in
            var failed = 0
            var running = 0
            var foldersRunning = 0
            var current = try await prepareWindow(0, of: windows, in: uploads)
            for index in windows.indices {
                try Task.checkCancellation()
                async let following = prepareWindow(index + 1, of: windows, in: uploads)
                let (prepared, failures) = current
                failed += failures
                let folders = prepared.contains { $0.stat.kind == .folder }
                while running > 0 && (running >= Self.savesInFlight || foldersRunning > 0 || folders), let done = try await saves.next() {
                    failed += done.failed
                    running -= 1
                    if done.folders { foldersRunning -= 1 }
                }
                running += 1
                if folders { foldersRunning += 1 }
                saves.addTask { (try await self.saveInBatches(prepared), folders) }
                current = try await following
            }
            for try await done in saves { failed += done.failed }
            return failed
        }
    }

    /// ``prepareAll(_:)`` of window `index`; nothing past the last one. Its new items are
    /// journaled first, with their new IDs, so a restart after their records were saved (and
    /// before the answer was journaled) reuses the IDs instead of making second records. The
    /// window's items are "uploading" in the journal from then on; in the index too when they
    /// are large (their upload takes a while): a small file's row goes straight to "uploaded"
    /// with the save's answer, one index write per file instead of two.
    private func prepareWindow(_ index: Int, of windows: [Range<Int>], in uploads: [Upload]) async throws -> ([PreparedUpload], Int) {
        guard index < windows.count else { return ([], 0) }
        let window = Array(uploads[windows[index]])
        let large = Set(window.filter { !Self.readsSmall($0) }.map(\.path))
        try journal.putAll(window.filter(\.isNew).map(\.newEntry), enqueue: true, indexing: false) { _ in .uploading }
        try journal.setStatus(.uploading, paths: window.filter { !$0.isNew || large.contains($0.path) }.map(\.path), indexing: large)
        return try await prepareAll(window)
    }

    /// Saves prepared uploads in order, one `records/modify` per ``recordsPerBatch`` records at
    /// most, cut before ``inlineBytesPerBatch`` of inline content.
    private func saveInBatches(_ prepared: [PreparedUpload]) async throws -> Int {
        var failed = 0
        var batch: [PreparedUpload] = []
        var bytes = 0
        for item in prepared {
            if !batch.isEmpty && bytes + item.inlineBytes > Self.inlineBytesPerBatch {
                failed += try await save(batch)
                batch = []
                bytes = 0
            }
            batch.append(item)
            bytes += item.inlineBytes
        }
        if !batch.isEmpty { failed += try await save(batch) }
        return failed
    }

    /// Prepares uploads, ``transfersInFlight`` at once, in the order given; returns the ready
    /// ones and how many failed.
    func prepareAll(_ uploads: [Upload]) async throws -> ([PreparedUpload], Int) {
        var ready: [Int: PreparedUpload] = [:]
        var failed = 0
        // small files (as the scan saw them) are read together, under one coordinated read
        let small = uploads.indices.filter { Self.readsSmall(uploads[$0]) }
        var others: [Int] = []
        for (index, outcome) in try await prepareSmall(small.map { ($0, uploads[$0]) }) {
            switch outcome {
            case .ready(let prepared): ready[index] = prepared
            case .requeued: break
            case .readAlone: others.append(index)
            case .failed(let error):
                if error is CancellationError { throw error }
                if uploadFailed(uploads[index], error) { failed += 1 }
            }
        }
        let rest = (Set(uploads.indices).subtracting(small).union(others)).sorted()
        var next = 0
        while next < rest.count {
            // one wave of up to `transfersInFlight` reads (and asset uploads) at once
            let wave = Array(rest[next..<min(next + Self.transfersInFlight, rest.count)])
            next += wave.count
            // (each outcome is a ``Preparation``: with `Result<PreparedUpload?, any Error>` here,
            // the optimized build (Swift 6.3.1) read most ready folder uploads as nil, so their
            // records went up passes after their files and the other device made its own —
            // duplicate folder records; docs/sync.md, "Folders before their files")
            let outcomes = try await withThrowingTaskGroup(of: (Int, Preparation).self, returning: [(Int, Preparation)].self) { group in
                for index in wave {
                    let upload = uploads[index]
                    group.addTask {
                        do {
                            guard let prepared = try await self.prepare(upload) else { return (index, .requeued) }
                            return (index, .ready(prepared))
                        } catch {
                            return (index, .failed(error))
                        }
                    }
                }
                var outcomes: [(Int, Preparation)] = []
                for try await outcome in group { outcomes.append(outcome) }
                return outcomes
            }
            for (index, outcome) in outcomes {
                switch outcome {
                case .ready(let prepared): ready[index] = prepared
                case .requeued, .readAlone: break
                case .failed(let error):
                    if error is CancellationError { throw error }
                    if uploadFailed(uploads[index], error) { failed += 1 }
                }
            }
        }
        return (ready.keys.sorted().compactMap { ready[$0] }, failed)
    }

    /// Handles an upload that failed: reported, and either remembered as refused for good (too
    /// large, over quota: tried again when the item changes) or left for the next pass (returns
    /// true).
    func uploadFailed(_ upload: Upload, _ error: any Error) -> Bool {
        if let error = error as? UbiquityError, error.code == .notFound {
            // gone since the pass looked (the index's rows a moment behind the disk): no failure;
            // its removal or rename comes on the change feed next
            logger.debug("gone before it was read; looked at again", metadata: ["ubiquity.path": "\(upload.path)"])
            return false
        }
        let code = (error as? CloudKitError)?.code
        onEvent?(.uploadFailed(path: upload.path, error: "\(error)", quota: code == .quotaExceeded))
        noteUploadFailed(upload.path, error)  // status (SyncEngine+Progress.swift)
        if code == .limitExceeded || code == .quotaExceeded {
            memory.refusedUploads[upload.path] = upload.local.stat
            logger.error("the server refused the upload; it is tried again when the item changes",
                         metadata: ["ubiquity.path": "\(upload.path)", "ubiquity.error": "\(error)"])
            return false
        }
        logger.warning("upload failed; retried next pass", metadata: ["ubiquity.path": "\(upload.path)", "ubiquity.error": "\(error)"])
        return true
    }

    /// Reads one item into a record: a file's content under a coordinated read, into the record
    /// itself when small (``SyncRecord/inlineLimit``), otherwise read once in place
    /// (``AssetFileScan``: chunks, chunk hashes and the whole hash in one pass, no staging copy)
    /// and uploaded as an asset now (only missing chunks travel; each chunk sent is checked
    /// against its scanned hash, so the server gets the scanned content or nothing). Nil when
    /// the file changed while it was read or uploaded (queued for the next pass).
    func prepare(_ upload: Upload) async throws -> PreparedUpload? {
        let target = absolute(upload.path)
        var record = try SyncRecord.record(id: upload.id, changeTag: upload.previous?.changeTag)
        var stat = upload.local.stat
        var hash = upload.previous?.contentHash ?? ""
        let updating = upload.previous?.changeTag != nil
        switch stat.kind {
        case .file where upload.content:
            let small = try await coordinator.coordinate(readingItemAt: URL(fileURLWithPath: target)) { url in
                try await BlockingWork.run { try SyncFiles.readSmall(url.path, limit: SyncRecord.inlineLimit) }
            }
            if let small { return try prepared(upload, small: small) }
            // big-file: the file's kept chunk list (SyncEngine+Delta.swift) lets the scan skip cutting unchanged chunks
            let previousList = previousChunkList(id: upload.id)
            let scan = try await coordinator.coordinate(readingItemAt: URL(fileURLWithPath: target)) { url in
                try await BlockingWork.run { try AssetFileScan.scan(url, previous: previousList, identity: .chunkList) }  // chunk-list checksum (docs/assets.md)
            }
            countUploadScan(scan)  // SyncEngine+Delta.swift
            guard !scan.changedWhileRead else { return changedWhileRead(upload) }
            await hooks.afterScan?(upload.path)  // tests: the file may change here
            stat = SyncStat(scan.before)
            hash = scan.hexChecksum
            if updating, let previous = upload.previous, previous.path == upload.path, hash == previous.contentHash {
                // the same content (only the stat moved): adopted, or the record's other fields
                // (a mode change) without an asset
                keepChunkList(scan.chunkList, stamp: scan.before, id: upload.id)  // SyncEngine+Delta.swift
                guard stat.mode == previous.stat.mode else { return fill(record, upload: upload, stat: stat, hash: hash, inlineBytes: 0) }
                var adopted = previous
                adopted.stat = stat
                try await makeDurable(file: upload.path)  // SyncEngine+Durability.swift
                try journalSynced([adopted])
                return nil
            }
            record[SyncRecord.Field.content] = .asset(Asset(fileURL: URL(fileURLWithPath: target), scan: scan))
            if updating { record[SyncRecord.Field.inline] = nil }
            do {
                let relative = upload.path
                record = try await database.uploadAssets(of: record) { [self] fraction in
                    noteUploadProgress(relative, fraction: fraction)  // status (SyncEngine+Progress.swift)
                }
            } catch let error as CloudKitError where error.code == .assetFileModified {
                return changedWhileRead(upload)
            }
            keepChunkList(scan.chunkList, stamp: scan.before, id: upload.id)  // SyncEngine+Delta.swift
        case .file:
            break
        case .symlink:
            hash = SyncFiles.hash(Data((upload.local.target ?? "").utf8))
        case .folder:
            hash = ""
        }
        return fill(record, upload: upload, stat: stat, hash: hash, inlineBytes: 0)
    }

    /// `record` with the item's fields (path, kind, size, time, hash, mode, target), ready to save.
    func fill(_ record: Record, upload: Upload, stat: SyncStat, hash: String, inlineBytes: Int) -> PreparedUpload {
        var record = record
        record[SyncRecord.Field.path] = .string(upload.path)
        record[SyncRecord.Field.kind] = .string(stat.kind.rawValue)
        record[SyncRecord.Field.size] = .int64(stat.size)
        record[SyncRecord.Field.modified] = .int64(stat.modifiedNanoseconds / 1_000_000)
        record[SyncRecord.Field.contentHash] = .string(hash)
        record[SyncRecord.Field.mode] = .int64(Int64(stat.mode))
        if let target = upload.local.target { record[SyncRecord.Field.target] = .string(target) }
        return PreparedUpload(upload: upload, record: record, stat: stat, hash: hash, inlineBytes: inlineBytes)
    }

    /// Whether `upload` sends a file small enough (as the scan saw it) to go inline.
    static func readsSmall(_ upload: Upload) -> Bool {
        upload.content && upload.local.stat.kind == .file && upload.local.stat.size <= SyncRecord.inlineLimit
    }

    /// What became of an upload being prepared.
    enum Preparation: Sendable {
        /// Read and ready to save.
        case ready(PreparedUpload)
        /// Changed while it was read: queued for the next pass.
        case requeued
        /// A small file that grew past the inline limit: read alone (``prepare(_:)``).
        case readAlone
        /// Could not be read.
        case failed(any Error)
    }

    /// Prepares small-file uploads (``readsSmall(_:)``): every file read into memory under one
    /// coordinated read of them all (one claim instead of one per file), ``smallFilesPerClaim``
    /// at most per claim.
    func prepareSmall(_ uploads: [(Int, Upload)]) async throws -> [(Int, Preparation)] {
        var outcomes: [(Int, Preparation)] = []
        var start = 0
        while start < uploads.count {
            try Task.checkCancellation()
            let chunk = Array(uploads[start..<min(start + Self.smallFilesPerClaim, uploads.count)])
            start += chunk.count
            // (`isDirectory: false`: a file, so `URL` need not stat it to find out)
            let intents = chunk.map { FileAccessIntent.readingIntent(with: URL(fileURLWithPath: absolute($0.1.path), isDirectory: false)) }
            let reads: [SmallFileRead]
            do {
                reads = try await coordinator.coordinate(with: intents) {
                    try await BlockingWork.run {
                        intents.map { intent -> SmallFileRead in
                            do {
                                return try SyncFiles.readSmall(intent.url.path, limit: SyncRecord.inlineLimit).map(SmallFileRead.read) ?? .tooLarge
                            } catch {
                                return .failed(error)
                            }
                        }
                    }
                }
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                // the claim as a whole failed (a path gone since the scan, a time-out): each alone
                logger.debug("reading small files together failed; each is read alone", metadata: ["ubiquity.error": "\(error)"])
                outcomes += chunk.map { ($0.0, .readAlone) }
                continue
            }
            for ((index, upload), read) in zip(chunk, reads) {
                switch read {
                case .read(let small):
                    do {
                        outcomes.append((index, try prepared(upload, small: small).map(Preparation.ready) ?? .requeued))
                    } catch {
                        outcomes.append((index, .failed(error)))
                    }
                case .tooLarge: outcomes.append((index, .readAlone))
                case .failed(let error): outcomes.append((index, .failed(error)))
                }
            }
        }
        return outcomes
    }

    /// One small file read under a claim (a plain enum, like ``Preparation``, not a `Result` of
    /// an optional).
    enum SmallFileRead: Sendable {
        /// Read: its bytes, their hash, and the file's stamp before and after the read.
        case read((data: Data, hash: String, before: FileStamp, after: FileStamp))
        /// Over the inline limit: read alone.
        case tooLarge
        /// Could not be read.
        case failed(any Error)
    }

    /// Small files read at most under one coordinated claim.
    static let smallFilesPerClaim = 200

    /// The record of a small file read into memory (`small`, with the stat before and after
    /// the read): its content inline. Nil when the file changed while it was read (queued).
    func prepared(_ upload: Upload, small: (data: Data, hash: String, before: FileStamp, after: FileStamp)) throws -> PreparedUpload? {
        guard !small.before.contentDiffers(from: small.after) else { return changedWhileRead(upload) }
        let updating = upload.previous?.changeTag != nil
        var record = try SyncRecord.record(id: upload.id, changeTag: upload.previous?.changeTag)
        if small.data.isEmpty {
            if updating { record[SyncRecord.Field.inline] = nil }
        } else {
            record[SyncRecord.Field.inline] = .bytes(small.data)
        }
        if updating { record[SyncRecord.Field.content] = nil }  // the old asset, if any, is cleared
        return fill(record, upload: upload, stat: SyncStat(small.before), hash: small.hash, inlineBytes: small.data.count)
    }

    private func changedWhileRead(_ upload: Upload) -> PreparedUpload? {
        logger.debug("changed while read: queued again", metadata: ["ubiquity.path": "\(upload.path)"])
        try? journal.enqueue([upload.path])
        wakeLater()
        return nil
    }

    /// Saves prepared uploads in one `records/modify` (the client splits it further only when
    /// the server says it is too large) and journals what the server took in one transaction;
    /// each refused record is handled on its own: changed on the server → adopted or a
    /// conflict, deleted there → a new record next pass, refused → reported. Returns how many
    /// failed for a reason worth retrying.
    func save(_ batch: [PreparedUpload]) async throws -> Int {
        try Task.checkCancellation()
        // new content is durable here before it is sent and journaled (SyncEngine+Durability.swift)
        var notDurable = try await makeDurable(batch.compactMap { item in
            item.stat.kind == .file && !item.upload.local.isStub && item.hash != item.upload.previous?.contentHash ? item.upload.path : nil
        })
        notDurable.merge(try await makeNamesDurable(batch.compactMap { item in
            item.stat.kind == .folder && item.upload.previous?.changeTag == nil ? item.upload.path : nil
        })) { first, _ in first }
        var failed = 0
        var batch = batch
        if !notDurable.isEmpty {
            for item in batch { if let error = notDurable[item.upload.path], uploadFailed(item.upload, error) { failed += 1 } }
            batch.removeAll { notDurable[$0.upload.path] != nil }
            guard !batch.isEmpty else { return failed }
        }
        // the content each update sends is noted first: should its answer never come, the
        // server's version is known for this device's own when it comes back or a later save is
        // refused (a rename or a mode change sends the synced content: not noted)
        let updates = batch.compactMap { item -> (id: String, hash: String)? in
            guard let previous = item.upload.previous, previous.changeTag != nil, item.stat.kind == .file, !item.upload.local.isStub,
                  item.hash != previous.contentHash else { return nil }
            return (id: item.upload.id, hash: item.hash)
        }
        try journal.noteSent(updates)
        let results: [Record.ID: Result<Record, any Error>]
        let tokens: [ModifyChangeTokens]
        do {
            // the answer's records without fields: only their change tags are journaled (the
            // server does not send 200 files' inline content back)
            (results, _, tokens) = try await database.modifyRecordsTrackingChanges(saving: batch.map(\.record), deleting: [],
                                                                                  savePolicy: .ifServerRecordUnchanged, atomically: false,
                                                                                  desiredKeys: [])
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            return batch.reduce(failed) { $0 + (uploadFailed($1.upload, error) ? 1 : 0) }
        }
        var saved: [(PreparedUpload, JournalEntry)] = []
        for item in batch {
            let result = results[item.record.recordID]
                ?? .failure(CloudKitError(.internalError, "the server did not answer for record \(item.record.recordID.recordName)"))
            switch result {
            case .success(let record):
                saved.append((item, JournalEntry(id: item.upload.id, path: item.upload.path, stat: item.stat, contentHash: item.hash,
                                                 target: item.upload.local.target, changeTag: record.recordChangeTag)))
            case .failure(let error as CloudKitError) where error.code == .serverRecordChanged:
                do { try await resolveRefusedSave(item, error) } catch is CancellationError { throw CancellationError() } catch {
                    if uploadFailed(item.upload, error) { failed += 1 }
                }
            case .failure(let error as CloudKitError) where error.code == .unknownItem:
                // the record was deleted elsewhere while this edit waited: the edit wins, as a new
                // record, and its conflict versions go with it (SyncEngine+DeletedInConflict.swift)
                await keepConflictVersionsWithFile(of: item.upload.id, at: item.upload.path)
                try journal.remove(id: item.upload.id)
                wakeLater()
            case .failure(let error):
                if uploadFailed(item.upload, error) { failed += 1 }
            }
        }
        // one transaction for the batch, states included (SyncEngine.swift), the notes of what was sent cleared
        // (only updates may have notes: a new record's first upload is its unconfirmed entry)
        try journalSynced(saved.map(\.1), forgettingSent: Set(saved.lazy.filter { $0.0.upload.previous?.changeTag != nil }.map(\.0.upload.id)))
        if saved.count == batch.count { try skipOwnChanges(tokens) }
        for (item, _) in saved {
            memory.refusedUploads[item.upload.path] = nil
            onEvent?(.didUpload(path: item.upload.path))
        }
        if !saved.isEmpty { logger.debug("uploaded", metadata: ["ubiquity.count": "\(saved.count)"]) }
        return failed
    }

    /// This device's own saves, all journaled with the change tags the server gave them, need
    /// not come back through the zone's changes: when the server says they are all that
    /// changed in the zone since the change token fetched last, the token moves past them
    /// (``ModifyChangeTokens``). Otherwise they come back and are dropped unjudged
    /// (``SyncDecision/isAlreadyApplied(_:journaledTag:)``).
    /// Two saves overlap (``sendAll(_:)``), so the server may apply the later one first: a step
    /// that does not start where the token is waits in ``ownChangeSteps`` for the answer that
    /// ends where it starts.
    func skipOwnChanges(_ tokens: [ModifyChangeTokens]) throws {
        let current = try journal.value(Self.tokenKey).map(ServerChangeToken.init(rawValue:))
        let (next, unchained) = ModifyChangeTokens.chained(current, by: memory.ownChangeSteps + tokens.filter { $0.zoneID == SyncRecord.zoneID })
        memory.ownChangeSteps = unchained
        guard let next else { return }
        try journal.setValue(next.rawValue, Self.tokenKey)
    }

    /// A save refused because the server's record changed (or a new record's name is taken: a
    /// restart after a save that was not journaled): the same content is adopted, another one
    /// makes a conflict version.
    func resolveRefusedSave(_ item: PreparedUpload, _ error: CloudKitError) async throws {
        let upload = item.upload
        var serverRecord = error.serverRecord
        if serverRecord == nil { serverRecord = try await database.record(for: item.record.recordID) }
        guard let serverRecord, let server = SyncRecord.item(from: serverRecord) else { throw error }
        // this device's own versions the server may hold unconfirmed: the updates it sent, and the
        // first upload of an entry never confirmed (the record has the size and time the entry
        // journaled: ``SyncDecision/judgedEntry(_:remote:)``)
        var sent = try journal.sentHashes(id: upload.id)
        if let previous = upload.previous, previous.changeTag == nil, SyncDecision.judgedEntry(previous, remote: server) != nil {
            sent.insert(server.contentHash)
        }
        switch SyncDecision.refusedSave(localKind: item.stat.kind, localHash: item.hash, server: server, sent: sent) {
        case .adopt:
            if item.stat.kind == .file, !upload.local.isStub { try await makeDurable(file: upload.path) }  // SyncEngine+Durability.swift
            try journalSynced([JournalEntry(id: upload.id, path: server.path, stat: item.stat, contentHash: item.hash, target: upload.local.target,
                                            changeTag: server.changeTag)], forgettingSent: [upload.id])
            if server.path != upload.path { wakeLater() }
        case .resend:
            // the server holds this device's own earlier upload, its answer lost: the journal
            // takes that version as synced, and the local one, newer, goes next pass
            logger.notice("the server holds this device's own upload whose answer was lost; the newer local version is sent again",
                          metadata: ["ubiquity.path": "\(upload.path)"])
            // (an update, or a first upload journaled before it went: there is a previous entry;
            // its stat stays, and the local version differs from it)
            guard var seen = upload.previous else { throw error }
            seen.changeTag = server.changeTag
            seen.contentHash = server.contentHash
            try journalSynced([seen], status: .uploading, forgettingSent: [upload.id])
            try journal.enqueue([upload.path])
            wakeLater()
        case .conflict:
            // fetch the record with its download URL, then keep both versions
            let fresh = try await database.record(for: serverRecord.recordID)
            guard let freshItem = SyncRecord.item(from: fresh) else { throw error }
            try await keepConflict(freshItem, fresh, localPath: upload.path, local: upload.local)
        }
    }

    /// Deletes the records of local deletes, ``recordsPerBatch`` per `records/modify`, and
    /// forgets them (a record already gone counts as deleted; one changed elsewhere since this
    /// device synced it is kept and comes back here: ``keepChangedElsewhere(_:_:)``). Returns
    /// how many failed (kept, tried again next pass).
    ///
    /// An entry never confirmed by the server has a record there only when the device stopped
    /// between its save and the journal write of the answer: its record is deleted too when it is
    /// this device's own upload of what it journaled (``SyncDecision/judgedEntry(_:remote:)``),
    /// else the entry is only forgotten (another device's version comes back as a new item).
    /// While the server cannot be asked, those entries are kept (failed, tried next pass): forgotten,
    /// their records would come back as new items and undo the deletes.
    func deleteAll(_ entries: [JournalEntry]) async throws -> Int {
        let unconfirmed = entries.filter { $0.changeTag == nil }
        var failed = 0
        var own: Set<String> = []
        if let found = try await ownUploads(unconfirmed) {
            own = found
            try journal.removeAll(ids: unconfirmed.filter { !own.contains($0.id) }.map(\.id))
        } else {
            failed += unconfirmed.count
        }
        let remote = entries.filter { $0.changeTag != nil || own.contains($0.id) }
        var start = 0
        while start < remote.count {
            try Task.checkCancellation()
            let chunk = Array(remote[start..<min(start + Self.recordsPerBatch, remote.count)])
            start += chunk.count
            let ids = chunk.map { Record.ID(recordName: $0.id, zoneID: SyncRecord.zoneID) }
            let results: [Record.ID: Result<Void, any Error>]
            do {
                results = try await deleteRecords(chunk)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                logger.warning("deletes failed; retried next pass", metadata: ["ubiquity.count": "\(chunk.count)", "ubiquity.error": "\(error)"])
                failed += chunk.count
                continue
            }
            var done: [String] = []
            for (entry, id) in zip(chunk, ids) {
                switch results[id] {
                case .success?: done.append(entry.id)
                case .failure(let error as CloudKitError)? where error.code == .unknownItem: done.append(entry.id)
                case .failure(let error as CloudKitError)? where error.code == .serverRecordChanged && error.serverRecord != nil:
                    try await keepChangedElsewhere(entry, error.serverRecord!)
                case .failure(let error)?:
                    failed += 1
                    logger.warning("delete failed; retried next pass", metadata: ["ubiquity.path": "\(entry.path)", "ubiquity.error": "\(error)"])
                case nil:
                    failed += 1
                }
            }
            try journal.removeAll(ids: done)
        }
        return failed
    }
}

extension SyncEngine {
    /// The IDs of the unconfirmed `entries` whose record on the server is this device's own
    /// upload of what it journaled; nil when the server cannot be asked.
    func ownUploads(_ entries: [JournalEntry]) async throws -> Set<String>? {
        guard !entries.isEmpty else { return [] }
        let byID = Dictionary(entries.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let fetched: [Record.ID: Result<Record, any Error>]
        do {
            fetched = try await database.records(for: entries.map { Record.ID(recordName: $0.id, zoneID: SyncRecord.zoneID) })
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            logger.warning("could not look up records of deleted items; tried next pass", metadata: ["ubiquity.error": "\(error)"])
            return nil
        }
        var own: Set<String> = []
        for (id, result) in fetched {
            guard let entry = byID[id.recordName] else { continue }
            switch result {
            case .success(let record):
                if let item = SyncRecord.item(from: record), SyncDecision.judgedEntry(entry, remote: item) != nil { own.insert(entry.id) }
            case .failure(let error as CloudKitError) where error.code == .unknownItem:
                continue  // never saved: forgotten
            case .failure(let error):
                logger.warning("could not look up the record of a deleted item; tried next pass",
                               metadata: ["ubiquity.path": "\(entry.path)", "ubiquity.error": "\(error)"])
                return nil
            }
        }
        return own
    }

    /// Sets the hook called between reading a large file and uploading it (tests only: they
    /// change the file there to check that no mix of two versions is ever saved).
    func setAfterScan(_ hook: (@Sendable (String) async -> Void)?) {
        hooks.afterScan = hook
    }

    /// Sets the hook called right after a remote change is renamed into place, before it is
    /// journaled (tests only: they edit the file there to check the edit is still uploaded).
    func setAfterWrite(_ hook: (@Sendable (String) -> Void)?) {
        hooks.afterWrite = hook
    }
}
