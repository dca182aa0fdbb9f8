// SPDX-License-Identifier: Apache-2.0
import Testing
import UbiquityTestSupport
import UbiquityMount
@testable import UbiquitySync

/// The mount's logic without I/O: the node table, the views of a folder, mountinfo, doctor.
struct MountLogicTests {
    @Test func nodesFollowRenamesAndGoWhenForgotten() {
        var table = MountNodeTable()
        let docs = table.lookUp("docs", in: MountNodeTable.rootID)!
        let file = table.lookUp("a.txt", in: docs)!
        #expect(table.path(of: file) == "docs/a.txt")
        #expect(table.lookUp("a.txt", in: docs) == file, "a second lookup is the same node")
        // a folder renamed: everything under it follows
        table.move("docs", in: MountNodeTable.rootID, to: "papers", in: MountNodeTable.rootID)
        #expect(table.path(of: file) == "papers/a.txt")
        // a rename over a name detaches the node it replaced
        let other = table.lookUp("b.txt", in: docs)!
        table.move("b.txt", in: docs, to: "a.txt", in: docs)
        #expect(table.path(of: other) == "papers/a.txt")
        #expect(table.path(of: file) == nil)
        // an exchange swaps them
        let c = table.lookUp("c.txt", in: docs)!
        table.move("c.txt", in: docs, to: "a.txt", in: docs, exchange: true)
        #expect(table.path(of: c) == "papers/a.txt" && table.path(of: other) == "papers/c.txt")
        // forgotten: gone at zero lookups (two were taken of `file`)
        let before = table.count
        table.forget(file, count: 2)
        #expect(table.count == before - 1)
        table.remove("c.txt", in: docs)
        #expect(table.path(of: other) == nil)
    }

    @Test func theDocumentsViewShowsEvictedFilesUnderTheirNames() {
        let names = ["a.txt", ".b.txt.icloud", ".a.txt.icloud", ".hidden", ".icloud"]
        #expect(MountView.raw.entries(names).map(\.name) == names)
        let shown = MountView.documents.entries(names)
        #expect(shown.map(\.name) == ["a.txt", "b.txt", ".hidden", ".icloud"], "a stub beside its document is not shown")
        #expect(shown.filter(\.isDataless).map(\.name) == ["b.txt"])
    }

    @Test func mountInfoTellsUbiquityMountsFromOthers() {
        let info = """
            22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
            42 27 0:39 / /home/mei/My\\040Files rw,nosuid,nodev,relatime - fuse.ubiquity ubiquity rw,user_id=0,group_id=0
            43 27 0:40 / /mnt/other rw - fuse.rclone remote: rw
            """
        #expect(MountPoint.state(of: "/home/mei/My Files", probe: false, mountInfo: info) == .ubiquity(live: true))
        #expect(MountPoint.state(of: "/mnt/other", probe: false, mountInfo: info) == .other(type: "fuse.rclone"))
        #expect(MountPoint.state(of: "/home/mei", probe: false, mountInfo: info) == .none)
    }

    @Test func doctorReportsFuseAndStaleMounts() {
        #expect(Doctor.mount("/f", devFuse: true, fusermount: true, mounted: nil).map(\.level) == [.ok])
        #expect(Doctor.mount("/f", devFuse: false, fusermount: true, mounted: nil).map(\.level) == [.warning])
        let stale = Doctor.mount("/f", devFuse: true, fusermount: true, mounted: false)
        #expect(stale.map(\.level) == [.ok, .failure])
        #expect(stale.last?.fix?.contains("fusermount3 -u -z") == true)
        #expect(Doctor.mount("/f", devFuse: true, fusermount: true, mounted: true).map(\.level) == [.ok, .ok])
    }
}
