// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import UbiquityCore

/// vim (and other editors saving by rename) write a new file and drop extended attributes: the
/// daemon puts the skip-backup attribute back instead of uploading the file; `ubiq include`
/// (the same file losing it) still uploads it.
@Suite(.serialized) struct SkipBackupRenameSaveTests {
    @Test func aSaveByRenameKeepsTheSkipBackupAttribute() async throws {
        let cloud = try SyncRig.Cloud()
        let a = SyncRig.SyncDevice("alpha", cloud), b = SyncRig.SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        try a.write("secret.txt", "version 1")
        try BackupExclusion.setExcluded(true, a.url("secret.txt").path)
        try a.write("marker.txt", "after the exclusion")
        #expect(SyncRig.eventually("B has the marker") { b.read("marker.txt") == "after the exclusion" })
        #expect(SyncRig.eventually("A says excluded") { a.syncStatus("secret.txt") == "excluded" })

        // save by rename, as vim does: a new file, renamed over the old one, without the attribute
        let temporary = a.url("secret.txt~new")
        try Data("version 2, saved by rename".utf8).write(to: temporary)
        #expect(rename(temporary.path, a.url("secret.txt").path) == 0)
        try a.write("marker2.txt", "after the save")
        #expect(SyncRig.eventually("B has the second marker") { b.read("marker2.txt") == "after the save" })
        #expect(SyncRig.eventually("the attribute is back") { (try? BackupExclusion.isExcluded(a.url("secret.txt").path)) == true })
        #expect(a.read("secret.txt") == "version 2, saved by rename")
        #expect(!b.exists("secret.txt"))
        let names = try await cloud.items().keys
        #expect(!names.contains("secret.txt"), "\(names)")

        // `ubiq include`: the same file loses the attribute on purpose and is uploaded
        let include = try a.device.run(["include", a.url("secret.txt").path])
        #expect(include.status == 0, "\(include.stderr)")
        #expect(SyncRig.eventually("B has the included file") { b.read("secret.txt") == "version 2, saved by rename" })
        a.stop()
        b.stop()
    }
}
