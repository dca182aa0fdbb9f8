// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport

/// `ubiq container url` and `ubiq container list` as real processes.
@Suite("CLI container commands")
struct CLIContainerCommandTests {
    static let declared = ["UBIQUITY_CONTAINERS": "iCloud.com.example.A,iCloud.com.example.B"]

    func containers(_ device: Device) -> URL {
        device.dataHome.appendingPathComponent("ubiquity/containers", isDirectory: true)
    }

    func isDirectory(_ url: URL) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &directory) && directory.boolValue
    }

    func permissions(_ url: URL) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber)?.intValue
    }

    @Test("container url --json: the default (first) container under XDG_DATA_HOME, with Documents created")
    func defaultContainer() throws {
        let device = Device()
        let a = containers(device).appendingPathComponent("iCloud~com~example~A", isDirectory: true)
        #expect(!isDirectory(a))

        let run = try device.run(["container", "url", "--json"], extraEnvironment: Self.declared)
        try #require(run.status == 0, "\(run)")
        let entry = try run.decode(ContainerJSON.self)
        #expect(entry == ContainerJSON(identifier: "iCloud.com.example.A", path: a.path,
                                       documents: a.appendingPathComponent("Documents").path, isDefault: true))
        #expect(isDirectory(a) && isDirectory(a.appendingPathComponent("Documents")))
        #expect(permissions(a) == 0o700 && permissions(a.appendingPathComponent("Documents")) == 0o700)
        #expect(!isDirectory(containers(device).appendingPathComponent("iCloud~com~example~B")),
                "only the asked-for container is created")

        // Plain output is just the path; asking again is idempotent.
        let plain = try device.run(["container", "url"], extraEnvironment: Self.declared)
        #expect(plain.status == 0, "\(plain)")
        #expect(plain.stdout == a.path + "\n", "\(plain)")
    }

    @Test("container url ID: a declared non-default container; --json marks it not default")
    func namedContainer() throws {
        let device = Device()
        let b = containers(device).appendingPathComponent("iCloud~com~example~B", isDirectory: true)

        let plain = try device.run(["container", "url", "iCloud.com.example.B"], extraEnvironment: Self.declared)
        #expect(plain.status == 0, "\(plain)")
        #expect(plain.stdout == b.path + "\n", "\(plain)")
        #expect(isDirectory(b.appendingPathComponent("Documents")))

        let json = try device.run(["container", "url", "iCloud.com.example.B", "--json"], extraEnvironment: Self.declared)
        #expect(json.status == 0, "\(json)")
        #expect(try json.decode(ContainerJSON.self) == ContainerJSON(
            identifier: "iCloud.com.example.B", path: b.path, documents: b.appendingPathComponent("Documents").path, isDefault: false))

        // --container declares one on the command line, ahead of UBIQUITY_CONTAINERS.
        let c = containers(device).appendingPathComponent("iCloud~com~example~C", isDirectory: true)
        let declared = try device.run(["container", "url", "--container", "iCloud.com.example.C", "--json"],
                                      extraEnvironment: Self.declared)
        #expect(declared.status == 0, "\(declared)")
        #expect(try declared.decode(ContainerJSON.self) == ContainerJSON(
            identifier: "iCloud.com.example.C", path: c.path, documents: c.appendingPathComponent("Documents").path, isDefault: true))
    }

    @Test("an undeclared container exits 1, an invalid identifier exits 64; neither creates anything")
    func errors() throws {
        let device = Device()

        let undeclared = try device.run(["container", "url", "iCloud.com.example.C"], extraEnvironment: Self.declared)
        #expect(undeclared.status == 1, "\(undeclared)")
        #expect(undeclared.stdout.isEmpty, "\(undeclared)")
        #expect(undeclared.stderr.contains("iCloud.com.example.C") && undeclared.stderr.contains("not declared"), "\(undeclared)")

        let none = try device.run(["container", "url"])
        #expect(none.status == 1, "no container declared, so no default: \(none)")
        #expect(!none.stderr.isEmpty, "\(none)")

        for invalid in ["not valid!", "single", "com..example", "iCloud.com.exa mple"] {
            let run = try device.run(["container", "url", invalid], extraEnvironment: Self.declared)
            #expect(run.status == 64, "\(run)")
            #expect(run.stderr.contains("invalid"), "\(run)")
            let option = try device.run(["container", "list", "--container", invalid])
            #expect(option.status == 64, "\(option)")
        }

        let badEnvironment = try device.run(["container", "list", "--json"],
                                            extraEnvironment: ["UBIQUITY_CONTAINERS": "iCloud.com.example.A,bad id"])
        #expect(badEnvironment.status == 1, "\(badEnvironment)")
        #expect(badEnvironment.stderr.contains("UBIQUITY_CONTAINERS"), "\(badEnvironment)")

        #expect(!FileManager.default.fileExists(atPath: containers(device).path), "errors must create nothing")
    }

    @Test("container list --json lists the declared containers, the default first, creating nothing")
    func list() throws {
        let device = Device()
        let root = containers(device)

        let run = try device.run(["container", "list", "--json"], extraEnvironment: Self.declared)
        try #require(run.status == 0, "\(run)")
        let entries = try run.decode([ContainerJSON].self)
        let a = root.appendingPathComponent("iCloud~com~example~A"), b = root.appendingPathComponent("iCloud~com~example~B")
        #expect(entries == [
            ContainerJSON(identifier: "iCloud.com.example.A", path: a.path, documents: a.appendingPathComponent("Documents").path, isDefault: true),
            ContainerJSON(identifier: "iCloud.com.example.B", path: b.path, documents: b.appendingPathComponent("Documents").path, isDefault: false),
        ])
        #expect(!FileManager.default.fileExists(atPath: root.path), "list creates nothing")

        // --container ones come first; duplicates are listed once.
        let more = try device.run(["container", "list", "--json", "--container", "iCloud.com.example.C",
                                   "--container", "iCloud.com.example.B"], extraEnvironment: Self.declared)
        #expect(more.status == 0, "\(more)")
        let ids = try more.decode([ContainerJSON].self).map(\.identifier)
        #expect(ids == ["iCloud.com.example.C", "iCloud.com.example.B", "iCloud.com.example.A"])
        #expect(try more.decode([ContainerJSON].self).map(\.isDefault) == [true, false, false])

        let text = try device.run(["container", "list"], extraEnvironment: Self.declared)
        #expect(text.status == 0, "\(text)")
        #expect(text.stdout == "iCloud.com.example.A (default)\t\(a.path)\niCloud.com.example.B\t\(b.path)\n", "\(text)")

        let empty = try device.run(["container", "list", "--json"])
        #expect(empty.status == 0, "\(empty)")
        #expect(try empty.decode([ContainerJSON].self).isEmpty, "\(empty)")
    }
}
