// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
@testable import UbiquitySync
import UbiquityCloudKit

/// Conflict versions on every device, with real processes: one `ubiq serve` and three `ubiq
/// daemon` devices. A conflict made between A and B shows on A, B and C; resolving it on B
/// clears it everywhere; a restart neither loses nor duplicates it; deleting the item deletes
/// its conflict records, and the device whose content a version is keeps it as the file. Every wait is a hang guard (120 s), never a timing assertion.
@Suite(.serialized) struct ConflictVersionSyncTests {
    typealias Cloud = SyncRig.Cloud
    typealias SyncDevice = SyncRig.SyncDevice

    /// A device's unresolved conflict versions of `relative` (`ubiq versions --json`): saving
    /// device and content; nil when the command fails.
    static func conflicts(_ device: SyncDevice, _ relative: String) -> [(device: String, content: String)]? {
        guard let run = try? device.device.run(["versions", device.url(relative).path, "--json"]), run.status == 0,
              let json = try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any],
              let versions = json["versions"] as? [[String: Any]] else { return nil }
        return versions.filter { $0["conflict"] as? Bool == true && $0["resolved"] as? Bool != true }.map { version in
            let content = (version["url"] as? String).flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? ""
            return (version["device"] as? String ?? "", content)
        }
    }

    /// The names of the server's conflict version records.
    static func conflictRecords(_ cloud: Cloud) async throws -> Set<String> {
        let container = CloudContainer(identifier: SyncRecord.defaultContainer, serverURL: URL(string: cloud.url)!,
                                       credentials: .apiToken(cloud.apiToken, webAuthToken: cloud.webToken))
        var token: ServerChangeToken?
        var names = Set<String>()
        while true {
            let page = try await container.privateCloudDatabase.recordZoneChanges(inZoneWith: SyncRecord.zoneID, since: token)
            for (id, result) in page.modificationResultsByID {
                if let record = try? result.get().record, record.recordType == ConflictRecord.recordType { names.insert(id.recordName) }
            }
            for deletion in page.deletions { names.remove(deletion.recordID.recordName) }
            token = page.changeToken
            if !page.moreComing { break }
        }
        return names
    }

    /// Makes a conflict on `relative`: B offline edits it while A's edit reaches the server;
    /// B comes back, takes A's version and keeps its own as a conflict version.
    static func makeConflict(_ relative: String, a: SyncDevice, b: SyncDevice, cloud: Cloud, fromA: String, fromB: String) async throws {
        b.stop()
        try a.write(relative, fromA)
        #expect(await SyncRig.eventuallyAsync("A uploaded its edit") {
            try await cloud.items()[relative]?.hash == SyncRig.sha(fromA)
        })
        try b.write(relative, fromB)
        try b.start()
        #expect(SyncRig.eventually("B has the server's version") { b.read(relative) == fromA })
    }

    @Test func aConflictShowsOnEveryDeviceAndResolvesEverywhere() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud), c = SyncDevice("gamma", cloud)
        try a.start()
        try b.start()
        try c.start()
        try a.write("doc.txt", "base")
        #expect(SyncRig.eventually("B and C have the document") { b.read("doc.txt") == "base" && c.read("doc.txt") == "base" })

        // a presenter of the file on C (an open document there, through C's daemon) hears of the version
        let presenter = try c.device.present(c.url("doc.txt"))
        defer { presenter.kill() }
        try await Self.makeConflict("doc.txt", a: a, b: b, cloud: cloud, fromA: "from A", fromB: "from B, offline")
        #expect(presenter.waitForLine(containing: "\"didGainVersion\"", seconds: 120) != nil, "\(presenter.output)")
        for device in [b, a, c] {
            #expect(SyncRig.eventually("\(device.name) shows B's conflict version") {
                guard let conflicts = Self.conflicts(device, "doc.txt"), conflicts.count == 1 else { return false }
                return conflicts[0].device == "beta" && conflicts[0].content == "from B, offline"
            })
            #expect(SyncRig.eventually("\(device.name) says in conflict") { device.syncStatus("doc.txt") == "in conflict" })
        }
        #expect(try await Self.conflictRecords(cloud).count == 1)

        // a restart neither duplicates nor forgets the imported version (status included)
        a.stop()
        try a.start()
        try a.write("nudge-a.txt", "a pass on A")
        #expect(SyncRig.eventually("B has A's nudge") { b.read("nudge-a.txt") == "a pass on A" })
        #expect(SyncRig.eventually("A says in conflict after a restart") { a.syncStatus("doc.txt") == "in conflict" })
        #expect(Self.conflicts(a, "doc.txt")?.count == 1)
        #expect(Self.conflicts(b, "doc.txt")?.count == 1)  // B's own record came back to it: not added twice

        // resolved on B: gone on A and C too, and from the server (B's daemon hears of the
        // resolution from `ubiq resolve` through its coordination socket: no change is needed)
        let resolve = try b.device.run(["resolve", b.url("doc.txt").path, "--keep", "current"])
        #expect(resolve.status == 0, "\(resolve)")
        for device in [a, c] {
            #expect(SyncRig.eventually("\(device.name) no longer has the conflict") { Self.conflicts(device, "doc.txt")?.isEmpty == true })
            #expect(SyncRig.eventually("\(device.name) says uploaded") { device.syncStatus("doc.txt") == "uploaded" })
        }
        #expect(await SyncRig.eventuallyAsync("the server's record is deleted") { try await Self.conflictRecords(cloud).isEmpty })
        #expect(presenter.waitForLine(containing: "\"didResolveConflictVersion\"", seconds: 120) != nil, "\(presenter.output)")
        #expect(presenter.waitForLine(containing: "\"didLoseVersion\"", seconds: 120) != nil, "\(presenter.output)")
        #expect(a.read("doc.txt") == "from A" && c.read("doc.txt") == "from A")
        a.stop()
        b.stop()
        c.stop()
    }

    @Test func aLargeConflictTravelsAsAnAssetAndDeletingTheItemDeletesItsRecords() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        try a.write("big.txt", "base")
        #expect(SyncRig.eventually("B has the document") { b.read("big.txt") == "base" })

        let large = String(repeating: "B's long offline edit. ", count: 8_000)  // > 64 KiB: an asset
        try await Self.makeConflict("big.txt", a: a, b: b, cloud: cloud, fromA: "from A", fromB: large)
        #expect(SyncRig.eventually("A shows B's large conflict version") {
            guard let conflicts = Self.conflicts(a, "big.txt"), conflicts.count == 1 else { return false }
            return conflicts[0].content == large
        })
        // resolved on A (the device that did not make it): B's copy goes too
        let resolve = try a.device.run(["resolve", a.url("big.txt").path, "--keep", "current"])
        #expect(resolve.status == 0, "\(resolve)")
        #expect(SyncRig.eventually("B no longer has the conflict") { Self.conflicts(b, "big.txt")?.isEmpty == true })

        // another conflict, then the item is deleted on A: its conflict record goes with it, and
        // B, whose content the version is (it lost the name, it was never deleted as the file),
        // keeps it as the file, sent as a new item (delete versus edit keeps the edit)
        try await Self.makeConflict("big.txt", a: a, b: b, cloud: cloud, fromA: "from A again", fromB: "from B again")
        #expect(SyncRig.eventually("A shows the new conflict") { Self.conflicts(a, "big.txt")?.count == 1 })
        #expect(try await Self.conflictRecords(cloud).count == 1)
        try FileManager.default.removeItem(at: a.url("big.txt"))
        #expect(await SyncRig.eventuallyAsync("the conflict record is deleted and B's version is the item now") {
            let item = try await cloud.items()["big.txt"]
            let recordsGone = try await Self.conflictRecords(cloud).isEmpty
            return item?.hash == SyncRig.sha("from B again") && recordsGone
        })
        #expect(SyncRig.eventually("B keeps its version as the file") { b.read("big.txt") == "from B again" && Self.conflicts(b, "big.txt")?.isEmpty == true })
        #expect(SyncRig.eventually("A has it back") { a.read("big.txt") == "from B again" })
        a.stop()
        b.stop()
    }

    /// The paths under `device`'s folder that its index says have unresolved conflicts (`ubiq
    /// query`); nil when the command fails.
    static func conflictedInIndex(_ device: SyncDevice) -> String? {
        guard let run = try? device.device.run(["query", "NSMetadataUbiquitousItemHasUnresolvedConflictsKey == YES", "--root", device.folder.path]),
              run.status == 0 else { return nil }
        return run.stdout
    }

    @Test func theConflictStateFollowsARenameInTheIndexAndTheCommands() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        try a.write("doc.txt", "base")
        #expect(SyncRig.eventually("B has the document") { b.read("doc.txt") == "base" })
        try await Self.makeConflict("doc.txt", a: a, b: b, cloud: cloud, fromA: "from A", fromB: "from B, offline")
        #expect(SyncRig.eventually("B's index has the conflict") { Self.conflictedInIndex(b)?.contains("doc.txt") == true })

        // renamed on B (a plain rename): the index flags the new path only, the commands work there
        try FileManager.default.moveItem(at: b.url("doc.txt"), to: b.url("renamed.txt"))
        #expect(SyncRig.eventually("B's index flags the new path, not the old one") {
            guard let listed = Self.conflictedInIndex(b) else { return false }
            return listed.contains("renamed.txt") && !listed.contains("doc.txt")
        })
        #expect(Self.conflicts(b, "renamed.txt")?.count == 1)
        #expect(b.syncStatus("renamed.txt") == "in conflict")
        // A gets the rename (a remote rename there): its index follows too
        #expect(SyncRig.eventually("A has the rename") { a.read("renamed.txt") == "from A" })
        #expect(SyncRig.eventually("A's index flags the new path") {
            guard let listed = Self.conflictedInIndex(a) else { return false }
            return listed.contains("renamed.txt") && !listed.contains("doc.txt")
        })
        let resolve = try b.device.run(["resolve", b.url("renamed.txt").path, "--keep", "current"])
        #expect(resolve.status == 0, "\(resolve)")
        for device in [a, b] {
            #expect(SyncRig.eventually("\(device.name)'s index no longer lists the conflict") { Self.conflictedInIndex(device)?.contains("renamed.txt") == false })
            #expect(Self.conflicts(device, "renamed.txt")?.isEmpty == true)
        }
        a.stop()
        b.stop()
    }
}
