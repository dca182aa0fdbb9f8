// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import UbiquityCore

/// `ubiq exclude`, `ubiq include` and `ubiq status` as real processes.
@Suite("CLI document commands")
struct CLIDocumentCommandTests {
    /// The skip-backup attribute's value as macOS writes it, spelled out independently of the
    /// library: `bplist00`, an ASCII string of 17 bytes ("com.apple.backupd"), a one-entry offset
    /// table and the 32-byte trailer.
    static let expectedAttributeValue: [UInt8] = {
        var bytes = Array("bplist00".utf8) + [0x5F, 0x10, 17] + Array("com.apple.backupd".utf8)
        bytes.append(0x08)
        bytes += [0, 0, 0, 0, 0, 0, 1, 1] + [0, 0, 0, 0, 0, 0, 0, 1] + [0, 0, 0, 0, 0, 0, 0, 0] + [0, 0, 0, 0, 0, 0, 0, 28]
        return bytes
    }()

    func status(_ device: Device, _ path: String, in directory: URL? = nil) throws -> StatusJSON {
        let run = try device.run(["status", path, "--json"], in: directory)
        try #require(run.status == 0, "\(run)")
        let keys = try run.keys()
        // a folder also says what is below it (`items`: its counts by state)
        #expect(keys == StatusJSON.keys || keys == StatusJSON.keys.union(["items"]) && run.stdout.contains("\"kind\" : \"folder\""), "\(run)")
        return try run.decode()
    }

    func attribute(_ url: URL) throws -> [UInt8]? {
        try ExtendedAttributes.value(BackupExclusion.attributeName, at: url.path)
    }

    @Test("exclude sets the bplist skip-backup attribute and status shows it; include clears it")
    func excludeThenInclude() throws {
        let device = Device()
        let file = device.file("photo.jpg", "12345")
        #expect(try attribute(file) == nil)

        let before = try status(device, file.path)
        #expect(before.path == file.path && before.exists && before.kind == "file" && before.size == 5)
        #expect(!before.excluded && before.conflicts == 0)
        #expect(parseTimestamp(before.modified) != nil, "modified: \(before.modified ?? "nil")")

        let exclude = try device.run(["exclude", file.path])
        #expect(exclude.status == 0, "\(exclude)")
        #expect(exclude.stdout.contains(file.path), "\(exclude)")
        #expect(exclude.stderr.isEmpty, "\(exclude)")
        #expect(try attribute(file) == Self.expectedAttributeValue)
        #expect(try attribute(file) == BackupExclusion.attributeValue)
        #expect(try BackupExclusion.isExcluded(file.path))
        #expect(device.contents(file) == "12345", "exclude must not touch the contents")

        let excluded = try status(device, file.path)
        #expect(excluded.excluded && excluded.exists && excluded.size == 5)

        // Excluding twice is harmless.
        let again = try device.run(["exclude", file.path])
        #expect(again.status == 0, "\(again)")
        #expect(try attribute(file) == Self.expectedAttributeValue)

        let include = try device.run(["include", file.path])
        #expect(include.status == 0, "\(include)")
        #expect(include.stdout.contains(file.path), "\(include)")
        #expect(try attribute(file) == nil)
        #expect(try !BackupExclusion.isExcluded(file.path))
        #expect(try status(device, file.path).excluded == false)

        // Including an item that is not excluded does nothing and succeeds.
        let includeAgain = try device.run(["include", file.path])
        #expect(includeAgain.status == 0, "\(includeAgain)")
        #expect(try attribute(file) == nil)
    }

    @Test("a folder can be excluded and included; status reports it as a folder")
    func folder() throws {
        let device = Device()
        let folder = device.root.appendingPathComponent("Caches", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)

        let exclude = try device.run(["exclude", folder.path])
        #expect(exclude.status == 0, "\(exclude)")
        #expect(try attribute(folder) == Self.expectedAttributeValue)
        let excluded = try status(device, folder.path)
        #expect(excluded.kind == "folder" && excluded.excluded && excluded.exists)

        let include = try device.run(["include", folder.path])
        #expect(include.status == 0, "\(include)")
        #expect(try attribute(folder) == nil)
        #expect(try status(device, folder.path).excluded == false)
    }

    @Test("relative paths are taken from the process's working directory")
    func relativePaths() throws {
        let device = Device()
        let work = device.root.appendingPathComponent("work", isDirectory: true)
        let sub = work.appendingPathComponent("sub", isDirectory: true)
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let file = sub.appendingPathComponent("notes.txt")
        try Data("hello".utf8).write(to: file)

        let exclude = try device.run(["exclude", "sub/notes.txt"], in: work)
        #expect(exclude.status == 0, "\(exclude)")
        #expect(exclude.stdout.contains(file.path), "the message names the absolute path: \(exclude)")
        #expect(try attribute(file) == Self.expectedAttributeValue)

        // `.` and `..` are normalised; the reported path is absolute.
        let viaDots = try status(device, "./sub/../sub/notes.txt", in: work)
        #expect(viaDots.path == file.path)
        #expect(viaDots.exists && viaDots.excluded && viaDots.size == 5)

        let fromSub = try status(device, "notes.txt", in: sub)
        #expect(fromSub.path == file.path && fromSub.excluded)

        // The same relative name in another folder is another (missing) item.
        let elsewhere = try status(device, "notes.txt", in: work)
        #expect(elsewhere.path == work.appendingPathComponent("notes.txt").path)
        #expect(!elsewhere.exists && !elsewhere.excluded)

        let include = try device.run(["include", "notes.txt"], in: sub)
        #expect(include.status == 0, "\(include)")
        #expect(try attribute(file) == nil)
    }

    @Test("a missing path: status reports exists false; exclude and include fail with exit 1 naming it")
    func missingPath() throws {
        let device = Device()
        let missing = device.root.appendingPathComponent("nowhere/ghost.txt")

        let statusRun = try device.run(["status", missing.path, "--json"])
        #expect(statusRun.status == 0, "\(statusRun)")
        #expect(try statusRun.keys() == StatusJSON.keys, "\(statusRun)")
        let status = try statusRun.decode(StatusJSON.self)
        #expect(status.path == missing.path && !status.exists)
        #expect(status.kind == nil && status.size == nil && status.modified == nil)
        #expect(!status.excluded && status.conflicts == 0)
        #expect(statusRun.stdout.contains("\"kind\" : null"), "kind is JSON null, not absent: \(statusRun.stdout)")

        let text = try device.run(["status", missing.path])
        #expect(text.status == 0, "\(text)")
        #expect(text.stdout.contains("exists:    no"), "\(text)")

        let exclude = try device.run(["exclude", missing.path])
        #expect(exclude.status == 1, "\(exclude)")
        #expect(exclude.stderr.contains(missing.path), "\(exclude)")
        #expect(exclude.stderr.hasPrefix("ubiq exclude:"), "\(exclude)")
        #expect(exclude.stdout.isEmpty, "\(exclude)")
        #expect(!FileManager.default.fileExists(atPath: missing.path), "exclude must not create the item")

        let include = try device.run(["include", missing.path])
        #expect(include.status == 1, "\(include)")
        #expect(include.stderr.contains(missing.path), "\(include)")

        let relative = try device.run(["exclude", "ghost.txt"], in: device.root)
        #expect(relative.status == 1, "\(relative)")
        #expect(relative.stderr.contains(device.root.appendingPathComponent("ghost.txt").path), "\(relative)")
    }

    @Test("bad usage exits 64: an empty path, a missing argument, an unknown option")
    func badUsage() throws {
        let device = Device()
        let file = device.file("a.txt", "a")
        // (`ubiq status` alone is the current folder's status: PATH is optional)
        for arguments in [["exclude", ""], ["include", ""], ["status", ""], ["exclude"], ["evict"], ["download", ""],
                          ["exclude", file.path, "--bogus"], ["status", file.path, "--bogus"]] {
            let run = try device.run(arguments)
            #expect(run.status == 64, "\(run)")
            #expect(!run.stderr.isEmpty, "\(run)")
        }
        #expect(try attribute(file) == nil)
        let here = try device.run(["status", "--json"], in: device.root)
        let json = try? JSONSerialization.jsonObject(with: Data(here.stdout.utf8)) as? [String: Any]
        #expect(here.status == 0 && json?["kind"] as? String == "folder", "\(here)")
    }

    @Test("a symbolic link: status names its target and reports the target's skip-backup state, as exclude acts on it")
    func symbolicLink() throws {
        let device = Device()
        let file = device.file("f.txt", "hello")
        let link = device.root.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "f.txt")
        #expect(try device.run(["exclude", link.path]).status == 0)
        let run = try device.run(["status", link.path, "--json"])
        let status = try JSONDecoder().decode(StatusJSON.self, from: Data(run.stdout.utf8))
        #expect(status.kind == "symlink" && status.excluded && status.size == 5)
        #expect(status.target.map { $0.hasSuffix("/f.txt") } == true)
        #expect(try BackupExclusion.isExcluded(file.path))
    }
}
