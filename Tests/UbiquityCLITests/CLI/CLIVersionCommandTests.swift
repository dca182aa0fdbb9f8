// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore

/// `ubiq versions` and `ubiq resolve` as real processes, on conflicts added through the library
/// in the test process (pointed at the device's version store).
@Suite("CLI version commands")
struct CLIVersionCommandTests {
    /// The store the `ubiq` processes of `device` use: `$XDG_DATA_HOME/ubiquity/versions`.
    func store(_ device: Device) -> URL {
        device.dataHome.appendingPathComponent("ubiquity/versions", isDirectory: true)
    }

    /// Runs `body` with the library pointed at the device's version store.
    func withStore<T>(_ device: Device, _ body: () throws -> T) throws -> T {
        try VersionStoreLocation.$override.withValue(store(device)) { try body() }
    }

    /// Adds a conflict version of `file` holding `text`, as another device's losing change.
    func addConflict(_ device: Device, of file: URL, _ text: String, computer: String, date: Date) throws -> FileVersion {
        let contents = device.file("incoming-\(UUID().uuidString).txt", text)
        defer { try? FileManager.default.removeItem(at: contents) }
        return try withStore(device) {
            try FileVersion.addConflictVersion(ofItemAt: file, withContentsOf: contents,
                                               savingComputerName: computer, modificationDate: date)
        }
    }

    func versions(_ device: Device, _ path: String, in directory: URL? = nil) throws -> VersionsJSON {
        let run = try device.run(["versions", path, "--json"], in: directory)
        try #require(run.status == 0, "\(run)")
        #expect(try run.keys() == VersionsJSON.keys, "\(run)")
        let decoded = try run.decode(VersionsJSON.self)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let all: [Any] = [rows["current"] as Any] + ((rows["versions"] as? [Any]) ?? [])
        for row in all {
            #expect((row as? [String: Any]).map { Set($0.keys) } == VersionJSON.keys, "\(run)")
        }
        return decoded
    }

    func status(_ device: Device, _ path: String) throws -> StatusJSON {
        let run = try device.run(["status", path, "--json"])
        try #require(run.status == 0, "\(run)")
        return try run.decode()
    }

    static let theirDate = Date(timeIntervalSince1970: 1_700_000_000.25)  // 2023-11-14T22:13:20.250Z

    @Test("versions --json lists a conflict added by another process; resolve --keep ID takes its content and saves the old one")
    func keepConflictVersion() throws {
        let device = Device()
        let file = device.file("report.txt", "mine")
        let conflict = try addConflict(device, of: file, "theirs!", computer: "Other Laptop", date: Self.theirDate)

        let listed = try versions(device, file.path)
        #expect(listed.path == file.path)
        #expect(listed.current.id == "current" && !listed.current.conflict && listed.current.size == 4)
        #expect(listed.current.url == file.path)
        #expect(listed.conflicts == 1)
        try #require(listed.versions.count == 1, "\(listed.versions.map(\.id))")
        let row = listed.versions[0]
        #expect(row.id == conflict.persistentIdentifier)
        #expect(row.conflict && !row.resolved)
        #expect(row.device == "Other Laptop")
        #expect(row.size == 7)
        #expect(row.name == "report.txt")
        #expect(row.modified == "2023-11-14T22:13:20.250Z")
        #expect(row.url.hasPrefix(store(device).path + "/"), "stored outside the user's folders: \(row.url)")
        #expect(device.contents(URL(fileURLWithPath: row.url)) == "theirs!")

        let text = try device.run(["versions", file.path])
        #expect(text.status == 0, "\(text)")
        #expect(text.stdout.contains(conflict.persistentIdentifier) && text.stdout.contains("conflict"), "\(text)")
        #expect(text.stdout.contains("1 unresolved conflict;"), "\(text)")

        #expect(try status(device, file.path).conflicts == 1)

        let resolve = try device.run(["resolve", file.path, "--keep", conflict.persistentIdentifier, "--json"])
        try #require(resolve.status == 0, "\(resolve)")
        #expect(try resolve.keys() == ResolveJSON.keys, "\(resolve)")
        let outcome = try resolve.decode(ResolveJSON.self)
        #expect(outcome.path == file.path)
        #expect(outcome.kept == conflict.persistentIdentifier)
        #expect(outcome.resolved == [conflict.persistentIdentifier])
        #expect(outcome.removed == [conflict.persistentIdentifier])
        let saved = try #require(outcome.savedVersion, "the previous content must be saved: \(resolve)")
        #expect(saved != conflict.persistentIdentifier)

        #expect(device.contents(file) == "theirs!", "the file holds the kept version's content")

        let after = try versions(device, file.path)
        #expect(after.conflicts == 0)
        #expect(after.current.size == 7)
        #expect(after.versions.filter(\.conflict).isEmpty, "conflict versions are removed: \(after.versions.map(\.id))")
        try #require(after.versions.count == 1, "\(after.versions.map(\.id))")
        let previous = after.versions[0]
        #expect(previous.id == saved && !previous.conflict && previous.resolved && previous.size == 4)
        #expect(device.contents(URL(fileURLWithPath: previous.url)) == "mine", "nothing is lost")
        #expect(!FileManager.default.fileExists(atPath: row.url), "the conflict's stored content is gone")

        let afterStatus = try status(device, file.path)
        #expect(afterStatus.conflicts == 0 && afterStatus.size == 7)

        // The library in this process sees the same store.
        try withStore(device) {
            #expect(FileVersion.unresolvedConflictVersionsOfItem(at: file)?.isEmpty == true)
            #expect(FileVersion.otherVersionsOfItem(at: file)?.map(\.persistentIdentifier) == [saved])
        }
    }

    @Test("resolve --keep current leaves the file unchanged and settles every conflict")
    func keepCurrent() throws {
        let device = Device()
        let file = device.file("plan.md", "# mine\n")
        let first = try addConflict(device, of: file, "# theirs 1\n", computer: "Phone", date: Self.theirDate)
        let second = try addConflict(device, of: file, "# theirs 2\n", computer: "Tablet", date: Self.theirDate.addingTimeInterval(60))
        let modifiedBefore = try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date

        let listed = try versions(device, file.path)
        #expect(listed.conflicts == 2)
        #expect(Set(listed.versions.map(\.id)) == [first.persistentIdentifier, second.persistentIdentifier])
        #expect(Set(listed.versions.compactMap(\.device)) == ["Phone", "Tablet"])
        #expect(try status(device, file.path).conflicts == 2)

        let resolve = try device.run(["resolve", file.path, "--keep", "current", "--json"])
        try #require(resolve.status == 0, "\(resolve)")
        let outcome = try resolve.decode(ResolveJSON.self)
        #expect(outcome.kept == "current")
        #expect(outcome.savedVersion == nil)
        #expect(resolve.stdout.contains("\"savedVersion\" : null"), "savedVersion is JSON null: \(resolve.stdout)")
        #expect(Set(outcome.resolved) == [first.persistentIdentifier, second.persistentIdentifier])
        #expect(Set(outcome.removed) == [first.persistentIdentifier, second.persistentIdentifier])

        #expect(device.contents(file) == "# mine\n")
        let modifiedAfter = try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date
        #expect(modifiedAfter == modifiedBefore, "keeping the current content must not rewrite the file")

        let after = try versions(device, file.path)
        #expect(after.conflicts == 0 && after.versions.isEmpty, "\(after.versions.map(\.id))")
        #expect(try status(device, file.path).conflicts == 0)

        // Nothing left to resolve: succeeds and does nothing.
        let again = try device.run(["resolve", file.path, "--keep", "current", "--json"])
        #expect(again.status == 0, "\(again)")
        let nothing = try again.decode(ResolveJSON.self)
        #expect(nothing.resolved.isEmpty && nothing.removed.isEmpty && nothing.savedVersion == nil)
        #expect(device.contents(file) == "# mine\n")
    }

    @Test("resolve with an unknown version id exits 1 and changes nothing")
    func unknownVersion() throws {
        let device = Device()
        let file = device.file("budget.csv", "a,b\n")
        let conflict = try addConflict(device, of: file, "c,d\n", computer: "Desktop", date: Self.theirDate)
        let unknown = UUID().uuidString

        let resolve = try device.run(["resolve", file.path, "--keep", unknown, "--json"])
        #expect(resolve.status == 1, "\(resolve)")
        #expect(resolve.stdout.isEmpty, "\(resolve)")
        #expect(resolve.stderr.hasPrefix("ubiq resolve:"), "\(resolve)")
        #expect(resolve.stderr.contains(unknown) && resolve.stderr.contains(file.path), "\(resolve)")

        let notAnID = try device.run(["resolve", file.path, "--keep", "not-a-version"])
        #expect(notAnID.status == 1, "\(notAnID)")

        #expect(device.contents(file) == "a,b\n")
        let after = try versions(device, file.path)
        #expect(after.conflicts == 1)
        #expect(after.versions.map(\.id) == [conflict.persistentIdentifier], "no version was added or removed")
        #expect(try status(device, file.path).conflicts == 1)
    }

    @Test("relative paths, missing files and bad --keep values")
    func pathsAndUsage() throws {
        let device = Device()
        let folder = device.root.appendingPathComponent("docs", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("letter.txt")
        try Data("dear".utf8).write(to: file)
        let conflict = try addConflict(device, of: file, "hi", computer: "Other", date: Self.theirDate)

        let relative = try versions(device, "letter.txt", in: folder)
        #expect(relative.path == file.path && relative.conflicts == 1)

        let resolve = try device.run(["resolve", "docs/letter.txt", "--keep", conflict.persistentIdentifier, "--json"],
                                     in: device.root)
        #expect(resolve.status == 0, "\(resolve)")
        #expect(try resolve.decode(ResolveJSON.self).path == file.path)
        #expect(device.contents(file) == "hi")

        let missing = device.root.appendingPathComponent("missing.txt")
        let versionsMissing = try device.run(["versions", missing.path, "--json"])
        #expect(versionsMissing.status == 1, "\(versionsMissing)")
        #expect(versionsMissing.stderr.contains(missing.path), "\(versionsMissing)")
        let resolveMissing = try device.run(["resolve", missing.path, "--keep", "current"])
        #expect(resolveMissing.status == 1, "\(resolveMissing)")
        #expect(resolveMissing.stderr.contains(missing.path), "\(resolveMissing)")
        #expect(!FileManager.default.fileExists(atPath: missing.path))

        for arguments in [["resolve", file.path], ["resolve", file.path, "--keep", " "], ["resolve", file.path, "--keep", ""],
                          ["versions"], ["versions", ""]] {
            let run = try device.run(arguments)
            #expect(run.status == 64, "\(run)")
        }
    }
}
