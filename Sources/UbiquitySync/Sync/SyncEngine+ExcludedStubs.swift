// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import UbiquityCloudKit
import UbiquityCore

extension SyncEngine {
    /// A folder marked skip-backup keeps its items on this disk and deletes their records; an
    /// evicted file in it (at its path, or moved there with its folder in the same pass) has its
    /// only bytes on the server, so it is downloaded first, into the excluded folder, where it
    /// stays. One that cannot be downloaded keeps its record, and its folder is not taken as
    /// excluded yet (`excludedNow`), so the next pass tries again. Returns how many wait. Found
    /// by the sync simulator (seeds 52 and 86: a folder with evicted files marked skip-backup
    /// deleted the files everywhere). The same holds for a folder kept back since earlier
    /// passes (`keptBack`) that an evicted file came into by a rename made elsewhere (of the
    /// file, or of its folder): judged gone, its delete went out with only the stub left here
    /// (seed 923).
    func downloadBeforeExcluding(_ excludedNow: inout [(path: String, entry: JournalEntry?, inode: UInt64)], missing: inout [JournalEntry],
                                 evicted: Set<String>, keptBack: Set<String>) async -> Int {
        let root = folder
        let lost = missing.filter { evicted.contains($0.id) }
        guard !lost.isEmpty else { return 0 }
        let holding = keptBack.filter { folder in lost.contains { $0.path.hasPrefix(folder + "/") } }
        let folders = excludedNow.map(\.path) + holding.sorted()
        guard !folders.isEmpty else { return 0 }
        // where each stub is now: at its own path under an excluded folder, or found there by its inode
        let places = (try? await BlockingWork.run { Self.stubPlaces(of: lost, in: folders, root: root) }) ?? [:]
        var waiting = 0
        for entry in lost {
            guard let place = places[entry.id] else { continue }
            do {
                try await downloadEvicted(entry, into: place.path)
            } catch {
                waiting += 1
                missing.removeAll { $0.id == entry.id }
                excludedNow.removeAll { $0.path == place.folder }
                logger.warning("a folder marked skip-backup holds an evicted file that could not be downloaded: its record is kept until it is",
                               metadata: ["ubiquity.path": "\(place.path)", "ubiquity.error": "\(error)"])
            }
        }
        return waiting
    }

    /// The stubs of `entries` found under `folders` (relative): by their journaled path, or
    /// else by the stub's inode (moved there with a folder).
    nonisolated static func stubPlaces(of entries: [JournalEntry], in folders: [String], root: String) -> [String: (path: String, folder: String)] {
        var places: [String: (path: String, folder: String)] = [:]
        var byInode: [UInt64: String] = [:]
        for entry in entries {
            if let folder = folders.first(where: { entry.path.hasPrefix($0 + "/") }), SyncFiles.stubItem(path: entry.path, absolute: root + "/" + entry.path) != nil {
                places[entry.id] = (entry.path, folder)
            } else {
                byInode[entry.stat.inode] = entry.id
            }
        }
        guard !byInode.isEmpty else { return places }
        for folder in folders {
            guard let walker = FileManager.default.enumerator(atPath: root + "/" + folder) else { continue }
            while let relative = walker.nextObject() as? String {
                let name = (relative as NSString).lastPathComponent
                guard name.hasPrefix("."), name.hasSuffix(".icloud"), let stamp = FileStamp.of(root + "/" + folder + "/" + relative),
                      let id = byInode[SyncStat(stamp).inode] else { continue }
                let directory = SyncFiles.relativeParent(of: relative)
                let document = String(name.dropFirst().dropLast(".icloud".count))
                places[id] = (folder + "/" + (directory.isEmpty ? document : directory + "/" + document), folder)
            }
        }
        return places
    }

    /// Downloads the evicted file of `entry` to `path` (where its stub is now) and removes the
    /// stub; the entry is journaled at `path`, no longer evicted. A file written at its name
    /// beside the stub (the folder marked before a pass saw the write) is settled as anywhere
    /// else (``settleWrittenOverStub(_:_:item:record:)``): the server's version takes the name,
    /// what was written is kept as a conflict version. Downloaded over it, the download was
    /// refused as a local change at every pass, and the server's content, on no device, was
    /// never brought down (sync simulator seed 3131).
    func downloadEvicted(_ entry: JournalEntry, into path: String) async throws {
        let record = try await database.record(for: Record.ID(recordName: entry.id, zoneID: SyncRecord.zoneID))
        guard var item = SyncRecord.item(from: record) else {
            throw UbiquityError(.protocolError, "the server's record of '\(absolute(path))' is not a synced item")
        }
        item.path = path
        let target = absolute(path)
        if let written = try await BlockingWork.run({ SyncFiles.item(path: path, absolute: target) }), !written.isStub {
            var here = entry
            here.path = path
            try await settleWrittenOverStub(here, written, item: item, record: record)
        } else {
            try await download(item, record, expected: nil)
        }
        Placeholder.removeStub(for: absolute(path))
        logger.info("downloaded before its folder was kept back (skip-backup)", metadata: ["ubiquity.path": "\(path)"])
    }
}
