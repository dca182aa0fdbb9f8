// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
import UbiquityTestSupport
@testable import UbiquitySync

/// The app containers' links in the sync folder: names (pure), and placing and moving them in a
/// real temporary folder.
@Suite struct AppFolderLinksTests {
    @Test func namesAreTheLastComponentDisambiguatedWhenTaken() {
        #expect(AppFolderLinks.preferredName(of: "iCloud.com.example.Notes") == "Notes")
        #expect(AppFolderLinks.disambiguatedName(of: "iCloud.com.example.Notes", attempt: 1) == "Notes (com.example.Notes)")
        #expect(AppFolderLinks.disambiguatedName(of: "iCloud.com.example.Notes", attempt: 3) == "Notes (com.example.Notes) 3")
        // a user's item has the name; two apps end alike
        let names = AppFolderLinks.names(for: ["iCloud.com.b.Notes", "iCloud.com.a.Notes", "iCloud.com.a.Sketch"], current: [:]) { $0 == "Sketch" }
        #expect(names == ["iCloud.com.a.Notes": "Notes", "iCloud.com.b.Notes": "Notes (com.b.Notes)", "iCloud.com.a.Sketch": "Sketch (com.a.Sketch)"])
        // a link keeps its name while it is free, even against an app that sorts first
        let kept = AppFolderLinks.names(for: ["iCloud.com.a.Notes", "iCloud.com.b.Notes"], current: ["iCloud.com.b.Notes": "Notes"]) { _ in false }
        #expect(kept == ["iCloud.com.b.Notes": "Notes", "iCloud.com.a.Notes": "Notes (com.a.Notes)"])
        // the disambiguated name taken too
        let third = AppFolderLinks.names(for: ["iCloud.com.a.Notes"], current: [:]) { $0 == "Notes" || $0 == "Notes (com.a.Notes)" }
        #expect(third == ["iCloud.com.a.Notes": "Notes (com.a.Notes) 2"])
    }

    @Test func aDeclaredDisplayNameNamesTheLink() throws {
        #expect(AppFolderLinks.preferredName(of: "iCloud.com.example.Notes", displayName: "My Notes") == "My Notes")
        #expect(AppFolderLinks.disambiguatedName(of: "iCloud.com.example.Notes", displayName: "My Notes", attempt: 2)
                == "My Notes (com.example.Notes) 2")
        let names = AppFolderLinks.names(for: ["iCloud.com.a.Notes", "iCloud.com.b.Notes"], current: [:],
                                         displayNames: ["iCloud.com.b.Notes": "Notes"]) { _ in false }
        #expect(names == ["iCloud.com.a.Notes": "Notes", "iCloud.com.b.Notes": "Notes (com.b.Notes)"])
        // a link keeps its name while its display name is the same, and follows a new one
        let same = AppFolderLinks.names(for: ["iCloud.com.a.Notes"], current: ["iCloud.com.a.Notes": "Jots (com.a.Notes)"],
                                        displayNames: ["iCloud.com.a.Notes": "Jots"]) { _ in false }
        #expect(same == ["iCloud.com.a.Notes": "Jots (com.a.Notes)"])
        let renamed = AppFolderLinks.names(for: ["iCloud.com.a.Notes"], current: ["iCloud.com.a.Notes": "Notes"],
                                           displayNames: ["iCloud.com.a.Notes": "Jots"]) { _ in false }
        #expect(renamed == ["iCloud.com.a.Notes": "Jots"])

        // placed in a real folder: the link moves to the new name, the user's item stays
        let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("links-" + UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = root.appendingPathComponent("Ubiquity").path
        let notes = root.appendingPathComponent("containers/iCloud~com~example~Notes/Documents").path
        for path in [notes, folder + "/Jots"] { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        let links = try AppFolderLinks(folder: folder, logger: Logger(label: "test"))
        #expect(links.place(["iCloud.com.example.Notes": notes]).map(\.name) == ["Notes"])
        #expect(links.place(["iCloud.com.example.Notes": notes], displayNames: ["iCloud.com.example.Notes": "Jots"]).map(\.name)
                == ["Jots (com.example.Notes)"])
        #expect(FileManager.default.fileExists(atPath: folder + "/Notes") == false)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: folder + "/Jots (com.example.Notes)") == notes)
        // a synced item of the link's name: the link moves aside under its display name
        links.makeRoom(for: "Jots (com.example.Notes)/a.txt")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: folder + "/Jots (com.example.Notes) 2") == notes)
        // the name declared no more: back to the identifier's last component
        #expect(links.place(["iCloud.com.example.Notes": notes]).map(\.name) == ["Notes"])
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder)) == ["Jots", "Notes"])
    }

    @Test func linksNeverReplaceUserContentAndMoveAsideForASyncedItem() throws {
        let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("links-" + UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = root.appendingPathComponent("Ubiquity").path
        let notes = root.appendingPathComponent("containers/iCloud~com~example~Notes/Documents").path
        let sketch = root.appendingPathComponent("containers/iCloud~com~example~Sketch/Documents").path
        for path in [notes, sketch, folder + "/Sketch"] { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        try Data("mine".utf8).write(to: URL(fileURLWithPath: folder + "/Sketch/mine.txt"))
        let links = try AppFolderLinks(folder: folder, logger: Logger(label: "test"))
        let placed = links.place(["iCloud.com.example.Notes": notes, "iCloud.com.example.Sketch": sketch])
        #expect(placed.map(\.name) == ["Notes", "Sketch (com.example.Sketch)"])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: folder + "/Notes") == notes)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: folder + "/Sketch (com.example.Sketch)") == sketch)
        #expect((try? String(contentsOfFile: folder + "/Sketch/mine.txt", encoding: .utf8)) == "mine")
        #expect(links.isLink("Notes") && !links.isLink("Sketch") && !links.isLink("Notes/x"))
        // placing again changes nothing
        #expect(links.place(["iCloud.com.example.Notes": notes, "iCloud.com.example.Sketch": sketch]) == placed)
        // the scan's result loses the links only
        var items: [String: LocalItem] = [:]
        for name in ["Notes", "Sketch", "Sketch (com.example.Sketch)"] {
            items[name] = SyncFiles.item(path: name, absolute: folder + "/" + name)
        }
        links.removeLinks(from: &items)
        #expect(Set(items.keys) == ["Sketch"])
        // a synced item named Notes arrives: the link moves aside, the name is free
        links.makeRoom(for: "Notes/list.txt")
        #expect(FileManager.default.fileExists(atPath: folder + "/Notes") == false)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: folder + "/Notes (com.example.Notes)") == notes)
        // a user's own link of a link's name is not one of ours
        try FileManager.default.createSymbolicLink(atPath: folder + "/Notes", withDestinationPath: "/elsewhere")
        #expect(!links.isLink("Notes") && links.isLink("Notes (com.example.Notes)"))
        #expect(links.place(["iCloud.com.example.Notes": notes, "iCloud.com.example.Sketch": sketch]).map(\.name)
                == ["Notes (com.example.Notes)", "Sketch (com.example.Sketch)"])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: folder + "/Notes") == "/elsewhere")
        // a daemon started again takes the links it finds as its own before placing any
        let again = try AppFolderLinks(folder: folder, containersDirectory: root.appendingPathComponent("containers").path, logger: Logger(label: "test"))
        #expect(again.links.map(\.identifier) == ["iCloud.com.example.Notes", "iCloud.com.example.Sketch"])
        #expect(again.isLink("Notes (com.example.Notes)") && !again.isLink("Notes"))
        // removing them all leaves the user's items
        #expect(links.removeAll().count == 2)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder)) == ["Notes", "Sketch"])
    }
}
