// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import UbiquityCloudKit
import UbiquityCore

extension SyncEngine {
    /// Stubs that no journaled evicted item stands behind (`docs/sync.md`, "Eviction"). The
    /// stub names its record:
    /// - the journal no longer has the record (an evicted file moved here with its folder while
    ///   its record was deleted elsewhere, forgotten before the scan found where it went): if the
    ///   server no longer has it either, the stub stands for nothing and is removed; if it does,
    ///   the stub is removed and the record applied again (back where the server has it);
    /// - the journal has the record at another path (a copy of a stub, or a stub moved away while
    ///   a remote edit brought the file back at its old name): the copy becomes a copy of the
    ///   file, its content fetched to the stub's name and sent as a new item.
    /// Found by the sync simulator (seeds 19, 27, 37, 48: stubs left in folders renamed here,
    /// never downloadable). Returns the paths of those that could not be settled (tried again
    /// next pass: a stub in sight is found by the next scan, one hidden behind a file is noted,
    /// ``settleHiddenStubs(behind:evicted:)``).
    func settleOrphanStubs(_ stubs: [LocalItem]) async -> [String] {
        var failed: [String] = []
        for stub in stubs {
            let document = absolute(stub.path)
            guard let placeholder = Placeholder.read(stubAt: Placeholder.stubPath(for: document)),
                  let journaled = try? journal.entry(id: placeholder.id).map(\.path) ?? "" else { continue }
            do {
                let record: Record?
                do {
                    record = try await database.record(for: Record.ID(recordName: placeholder.id, zoneID: SyncRecord.zoneID))
                } catch let error as CloudKitError where error.code == .unknownItem {
                    record = nil
                }
                if journaled.isEmpty {
                    _ = try await coordinator.coordinate(writingItemAt: URL(fileURLWithPath: document), options: .forDeleting) { (url: URL) async in
                        Placeholder.removeStub(for: url.path)
                    }
                    logger.notice("removed a stub whose item is no longer journaled here", metadata: ["ubiquity.path": "\(stub.path)", "ubiquity.onServer": "\(record != nil)"])
                    if let record, let item = SyncRecord.item(from: record) { try await applyRemote(item, record) }
                } else if let record {
                    try await materializeCopy(of: record, at: stub.path)
                    logger.notice("a stub copied from another item's is now a copy of its file", metadata: ["ubiquity.path": "\(stub.path)", "ubiquity.of": "\(journaled)"])
                }
            } catch {
                failed.append(stub.path)
                logger.warning("could not settle a stub no journaled item stands behind; retried",
                               metadata: ["ubiquity.path": "\(stub.path)", "ubiquity.error": "\(error)"])
            }
        }
        return failed
    }

    /// The stubs hidden behind the files `files` (new or moved here, found by the scan) at their
    /// documents' names that no journaled evicted item stands behind. The scans list the file at
    /// such a name, not the stub (a stub beside its file is an evicted file written over, settled
    /// through its evicted entry there); with the name's file new or moved here, no evicted entry
    /// is there, and nothing else looked at the stub (sync simulator seed 1817: a file moved
    /// onto an evicted file's name, the folder then renamed, and the record brought back at its
    /// old path by an edit elsewhere; the stub stayed after every download). One stat per file.
    func hiddenOrphanStubs(behind files: [LocalItem], evicted: Set<String>) async throws -> [LocalItem] {
        guard !files.isEmpty else { return [] }
        let root = folder
        return try await BlockingWork.run {
            files.filter { file in
                guard let stub = Placeholder.read(stubAt: Placeholder.stubPath(for: root + "/" + file.path)) else { return false }
                return !evicted.contains(stub.id)
            }.map { LocalItem(path: $0.path, stat: $0.stat, target: nil, excluded: false, isStub: true) }
        }
    }

    static let hiddenStubPrefix = "hidden-stub:"

    /// Evicted files among `missing` whose stub moved with a folder renamed here (`moves` of the
    /// `missing` folders), hidden behind a file moved onto their name before the rename: no scan
    /// lists such a stub. The name was free (an evicted file's is), so the file there is a new
    /// item and the evicted file moves aside, its stub renamed to a conflicted copy's name and
    /// its new path sent (`moves`, `items`: the stub there); both kept. Before, it was deleted
    /// as gone and its stub left behind the file for good (sync simulator seed 10026), or paired
    /// with the file by its name and its stub written again at the old path, which the folder
    /// had left: every pass failed (seed 10117).
    func moveAsideStubsMovedAlong(_ missing: [JournalEntry], evicted: Set<String>, moves: inout [String: String],
                                  items: inout [String: LocalItem]) throws {
        guard !evicted.isEmpty else { return }
        let folderMoves = missing.compactMap { entry in
            entry.stat.kind == .folder ? moves[entry.id].map { (from: entry.path, to: $0) } : nil
        }.sorted { $0.from.count > $1.from.count }  // the deepest first
        guard !folderMoves.isEmpty else { return }
        for entry in missing where entry.stat.kind == .file && evicted.contains(entry.id) {
            guard let move = folderMoves.first(where: { entry.path.hasPrefix($0.from + "/") }) else { continue }
            let path = move.to + entry.path.dropFirst(move.from.count)
            let stub = Placeholder.stubPath(for: absolute(path))
            guard Placeholder.read(stubAt: stub)?.id == entry.id, FileStamp.of(absolute(path)) != nil else { continue }
            let aside = conflictName(path, device: deviceName)
            guard rename(stub, Placeholder.stubPath(for: absolute(aside))) == 0 else { throw UbiquityError.posix("rename", path: stub) }
            try SafeSave.syncDirectory(SyncFiles.parent(of: stub))
            guard let moved = SyncFiles.stubItem(path: aside, absolute: absolute(aside)) else { continue }
            logger.notice("an evicted file moved with its folder onto a name a file took: it moves aside",
                          metadata: ["ubiquity.path": "\(path)", "ubiquity.aside": "\(aside)"])
            moves[entry.id] = aside
            items[aside] = moved
        }
    }

    /// Settles the stubs hidden behind the files `files` (new or moved here) that no journaled
    /// evicted item stands behind (``hiddenOrphanStubs(behind:evicted:)``), and those an earlier
    /// pass found so and could not settle; returns how many could not be settled now. Those are
    /// noted in the journal (keys `hidden-stub:<path>`), for the file in front is journaled once
    /// sent and no scan lists the stub behind it again: one whose settling failed once (the
    /// server out of reach) stayed for good.
    func settleHiddenStubs(behind files: [LocalItem], evicted: Set<String>) async throws -> Int {
        let noted = try journal.keys(withPrefix: Self.hiddenStubPrefix).map { String($0.dropFirst(Self.hiddenStubPrefix.count)) }
        let found = try await hiddenOrphanStubs(behind: files, evicted: evicted)
        let root = folder, foundPaths = Set(found.map(\.path))
        let lookAgain = noted.filter { !foundPaths.contains($0) }
        let inFront = lookAgain.isEmpty ? [] : try await BlockingWork.run {
            lookAgain.compactMap { SyncFiles.item(path: $0, absolute: root + "/" + $0) }.filter { $0.stat.kind == .file && !$0.isStub }
        }
        let stubs = found + (try await hiddenOrphanStubs(behind: inFront, evicted: evicted))
        let failed = Set(stubs.isEmpty ? [] : await settleOrphanStubs(stubs))
        for path in noted where !failed.contains(path) { try journal.setValue(nil, Self.hiddenStubPrefix + path) }
        for path in failed { try journal.setValue("", Self.hiddenStubPrefix + path) }
        return failed.count
    }

    /// Writes the content of `record` in place of the stub at `path` (a new file, queued as a
    /// new item), under a coordinated write; nothing is replaced but the stub. When another
    /// file holds the name (the stub was hidden behind it), the copy goes beside it as a
    /// conflicted copy.
    func materializeCopy(of record: Record, at path: String) async throws {
        let destination = FileStamp.of(absolute(path)) == nil ? path : conflictName(path, device: deviceName)
        let target = absolute(destination)
        let temporary = try temporaryPath(near: target)  // SyncEngine+Temporaries.swift
        defer { unlink(temporary) }
        try await Self.writeContent(of: record, inline: SyncRecord.Field.inline, asset: SyncRecord.Field.content, to: temporary)
        try await coordinator.coordinate(writingItemAt: URL(fileURLWithPath: target)) { (url: URL) async throws in
            guard FileStamp.of(url.path) == nil else { throw UbiquityError(.alreadyExists, "'\(destination)' was written meanwhile") }
            guard rename(temporary, url.path) == 0 else { throw UbiquityError.posix("rename", path: url.path) }
        }
        try removeStubsDurably(at: [path])
        try keepUnjournaled(destination)
    }
}
