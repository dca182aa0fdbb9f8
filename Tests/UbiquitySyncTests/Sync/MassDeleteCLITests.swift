// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport

/// The mass-delete guard through real daemons: deleting most of the folder at once is held back
/// (the other device keeps the files) until `ubiq sync confirm-deletes` asks the daemon to send it.
@Suite(.serialized) struct MassDeleteCLITests {
    @Test func aMassDeleteWaitsForConfirmDeletes() async throws {
        let cloud = try SyncRig.Cloud()
        let a = SyncRig.SyncDevice("alpha", cloud), b = SyncRig.SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        for index in 0..<60 { try a.write("many/\(index).txt", "file \(index)") }
        #expect(SyncRig.eventually("B has the 60 files") { (0..<60).allSatisfy { b.read("many/\($0).txt") == "file \($0)" } })

        try FileManager.default.removeItem(at: a.url("many"))
        try a.write("after.txt", "other changes still flow")
        #expect(SyncRig.eventually("B has A's later file") { b.read("after.txt") == "other changes still flow" })
        #expect(b.read("many/0.txt") == "file 0", "the deletes wait for a confirmation")

        let confirm = try a.device.run(["sync", "confirm-deletes"])
        #expect(confirm.status == 0, "\(confirm.stderr)")
        #expect(confirm.stdout.contains("confirmed"), "\(confirm.stdout)")
        #expect(SyncRig.eventually("B's files are deleted") { !b.exists("many/0.txt") && !b.exists("many/59.txt") })
        a.stop()
        b.stop()
    }
}
