// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
import UbiquityTestSupport
import UbiquityCore
import UbiquityStore

/// `ubiq ls`, `cat`, `put`, `get`, `mv`, `rm` and `mkdir` as real processes, with and without a
/// daemon.
@Suite("CLI folder commands")
struct CLIFolderCommandTests {
    /// One `ubiq ls --json` line.
    struct ListJSON: Decodable, Equatable {
        static let keys: Set<String> = ["path", "name", "kind", "size", "modified", "status", "percent"]
        var path: String
        var name: String
        var kind: String
        var size: Int?
        var modified: String?
        var status: String
        var percent: Double?
    }

    /// A device with its folder (`~/Ubiquity`) created.
    func device() throws -> (Device, URL) {
        let device = Device()
        let folder = URL(fileURLWithPath: device.environment["HOME"]!).appendingPathComponent("Ubiquity", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return (device, URL(fileURLWithPath: try CanonicalPath.canonicalize(folder.path), isDirectory: true))
    }

    func write(_ url: URL, _ text: String) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    func lines(_ run: UbiqRun) throws -> [ListJSON] {
        try run.stdout.split(separator: "\n").map { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(run)")
            #expect(Set(object.keys) == ListJSON.keys, "\(line)")
            return try JSONDecoder().decode(ListJSON.self, from: Data(line.utf8))
        }
    }

    @Test("without a daemon: mkdir, put (file and stdin), ls, cat, get, mv and rm work on the folder")
    func happyPathWithoutDaemon() throws {
        let (device, folder) = try device()
        let outside = device.root.appendingPathComponent("outside.txt")
        try write(outside, "from outside\n")

        let mkdir = try device.run(["mkdir", "-p", "docs/2026", "--json", "--verbose"])
        #expect(mkdir.status == 0, "\(mkdir)")
        #expect(mkdir.stdout == "{\"path\":\"\(folder.path)/docs/2026\",\"created\":true}\n", "\(mkdir)")
        #expect(mkdir.stderr.contains("no daemon"), "--verbose says coordination is in-process: \(mkdir)")
        #expect(FileStamp.of(folder.path + "/docs/2026")?.isDirectory == true)

        let put = try device.run(["put", outside.path, "docs/", "--json"])
        #expect(put.status == 0, "\(put)")
        #expect(put.stdout == "{\"path\":\"\(folder.path)/docs/outside.txt\",\"size\":13}\n", "\(put)")
        #expect(put.stderr.isEmpty, "no note without --verbose: \(put)")
        #expect(device.contents(folder.appendingPathComponent("docs/outside.txt")) == "from outside\n")

        let stdin = try device.run(["put", "-", "docs/2026/notes.txt"], input: "line one\n")
        #expect(stdin.status == 0, "\(stdin)")
        #expect(device.contents(folder.appendingPathComponent("docs/2026/notes.txt")) == "line one\n")
        // No temporary is left next to it.
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path + "/docs/2026")
        #expect(names == ["notes.txt"], "\(names)")

        // Relative paths are taken from the current directory inside the folder.
        let cat = try device.run(["cat", "outside.txt", "2026/notes.txt"], in: folder.appendingPathComponent("docs"))
        #expect(cat.status == 0, "\(cat)")
        #expect(cat.stdout == "from outside\nline one\n", "\(cat)")

        let ls = try device.run(["ls"])
        #expect(ls.status == 0, "\(ls)")
        #expect(ls.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) } == [["unknown", "docs/"]], "\(ls)")
        #expect(!ls.stdout.contains("\u{1B}["), "no colour when stdout is not a terminal")

        let recursive = try lines(try device.run(["ls", "-R", "--json"]))
        #expect(recursive.map(\.name) == ["docs", "docs/2026", "docs/2026/notes.txt", "docs/outside.txt"])
        #expect(recursive.map(\.kind) == ["folder", "folder", "file", "file"])
        #expect(recursive.map(\.status) == Array(repeating: "unknown", count: 4), "no index: status unknown")
        #expect(recursive[2].path == folder.path + "/docs/2026/notes.txt" && recursive[2].size == 9 && recursive[2].percent == nil)
        #expect(parseTimestamp(recursive[2].modified) != nil, "\(recursive[2])")

        let long = try device.run(["ls", "-l", "docs/2026"])
        #expect(long.status == 0, "\(long)")
        let columns = long.stdout.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        #expect(columns.first == "unknown" && columns.contains("9") && columns.last == "notes.txt\n", "\(long)")

        let getDir = device.root.appendingPathComponent("copies", isDirectory: true)
        try FileManager.default.createDirectory(at: getDir, withIntermediateDirectories: true)
        let get = try device.run(["get", "docs/2026/notes.txt", getDir.path, "--json"])
        #expect(get.status == 0, "\(get)")
        #expect(get.stdout == "{\"path\":\"\(getDir.path)/notes.txt\",\"size\":9}\n", "\(get)")
        #expect(device.contents(getDir.appendingPathComponent("notes.txt")) == "line one\n")
        let getOut = try device.run(["get", "docs/outside.txt", "-"])
        #expect(getOut.status == 0 && getOut.stdout == "from outside\n", "\(getOut)")

        let mv = try device.run(["mv", "docs/outside.txt", "docs/2026", "--json"])
        #expect(mv.status == 0, "\(mv)")
        #expect(mv.stdout == "{\"from\":\"\(folder.path)/docs/outside.txt\",\"to\":\"\(folder.path)/docs/2026/outside.txt\"}\n", "\(mv)")
        #expect(FileStamp.of(folder.path + "/docs/outside.txt") == nil)
        #expect(device.contents(folder.appendingPathComponent("docs/2026/outside.txt")) == "from outside\n")

        let rm = try device.run(["rm", "docs/2026/outside.txt", "--json"])
        #expect(rm.status == 0, "\(rm)")
        #expect(rm.stdout == "{\"path\":\"\(folder.path)/docs/2026/outside.txt\",\"deleted\":true,\"error\":null}\n", "\(rm)")
        let rmTree = try device.run(["rm", "-r", "docs"])
        #expect(rmTree.status == 0, "\(rmTree)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }

    @Test("ls of an app's folder (a link to the app container's documents) lists the documents in it")
    func listsThroughAppFolder() throws {
        let (device, folder) = try device()
        let documents = URL(fileURLWithPath: device.environment["XDG_DATA_HOME"]!)
            .appendingPathComponent("ubiquity/containers/iCloud.com.example.Notes/Documents", isDirectory: true)
        try write(documents.appendingPathComponent("groceries.txt"), "milk\n")
        try write(documents.appendingPathComponent("drafts/poem.txt"), "roses\n")
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/Notes", withDestinationPath: documents.path)

        let top = try lines(try device.run(["ls", "--json"]))
        #expect(top.map(\.name) == ["Notes"] && top.first?.kind == "symlink", "the folder shows the app's folder itself: \(top)")
        let inside = try lines(try device.run(["ls", "-R", "--json", "Notes"]))
        #expect(inside.map(\.name) == ["drafts", "drafts/poem.txt", "groceries.txt"], "\(inside)")
    }

    @Test("bad input: a missing file, a path outside the folder, rm of a folder without -r, put onto a folder, no folder")
    func badInput() throws {
        let (device, folder) = try device()
        try write(folder.appendingPathComponent("keep/a.txt"), "a")
        try write(folder.appendingPathComponent("b.txt"), "b")

        let missing = try device.run(["cat", "nope.txt"])
        #expect(missing.status == 1, "\(missing)")
        #expect(missing.stderr.contains("ubiq cat:") && missing.stderr.contains("nope.txt") && missing.stderr.contains("does not exist"), "\(missing)")

        // cat goes on with the other files, and fails at the end.
        let partly = try device.run(["cat", "nope.txt", "b.txt"])
        #expect(partly.status == 1 && partly.stdout == "b", "\(partly)")

        for arguments in [["cat", "/etc/hostname"], ["ls", "../.."], ["rm", "/tmp"], ["put", "b.txt", "/tmp/x.txt"],
                          ["get", "../../x", "/tmp/x"], ["mv", "b.txt", "/tmp/b.txt"], ["mkdir", "/tmp/ubq-never"]] {
            let run = try device.run(arguments)
            #expect(run.status == 64, "a path outside the folder is a usage error: \(run)")
            #expect(run.stderr.contains("is outside the folder '\(folder.path)'"), "\(run)")
            #expect(!run.stderr.contains("Fatal error"), "\(run)")
        }

        let rmFolder = try device.run(["rm", "keep"])
        #expect(rmFolder.status == 1, "\(rmFolder)")
        #expect(rmFolder.stderr.contains("rm -r"), "the error says the fix: \(rmFolder)")
        #expect(device.contents(folder.appendingPathComponent("keep/a.txt")) == "a", "nothing is lost")

        let rmRoot = try device.run(["rm", "-r", "."])
        #expect(rmRoot.status == 64, "\(rmRoot)")
        #expect(device.contents(folder.appendingPathComponent("b.txt")) == "b")

        // stdin onto a folder has no name to take.
        let putStdin = try device.run(["put", "-", "keep"], input: "x")
        #expect(putStdin.status == 1, "\(putStdin)")
        #expect(putStdin.stderr.contains("DEST") && putStdin.stderr.contains("is a folder"), "\(putStdin)")
        // A file over a folder of the same name is refused.
        try FileManager.default.createDirectory(at: device.root.appendingPathComponent("src"), withIntermediateDirectories: true)
        let source = device.root.appendingPathComponent("src/keep")
        try write(source, "would replace a folder")
        let putOnFolder = try device.run(["put", source.path, "."])
        #expect(putOnFolder.status == 1, "\(putOnFolder)")
        #expect(putOnFolder.stderr.contains("is a folder"), "\(putOnFolder)")
        #expect(device.contents(folder.appendingPathComponent("keep/a.txt")) == "a")

        let noParent = try device.run(["put", source.path, "missing/dir/x.txt"])
        #expect(noParent.status == 1 && noParent.stderr.contains("DEST's folder") && noParent.stderr.contains("mkdir -p"), "\(noParent)")

        let missingSource = try device.run(["put", device.root.appendingPathComponent("nothing").path, "x.txt"])
        #expect(missingSource.status == 1 && missingSource.stderr.contains("SRC"), "\(missingSource)")
        #expect(FileStamp.of(folder.path + "/x.txt") == nil)

        let mkdirExisting = try device.run(["mkdir", "keep"])
        #expect(mkdirExisting.status == 1 && mkdirExisting.stderr.contains("-p"), "\(mkdirExisting)")

        let badOption = try device.run(["ls", "--bogus"])
        #expect(badOption.status == 64 && badOption.stderr.contains("--bogus"), "\(badOption)")
        let missingArgument = try device.run(["put", "b.txt"])
        #expect(missingArgument.status == 64 && missingArgument.stderr.contains("destination"), "\(missingArgument)")

        let noFolder = try device.run(["ls"], extraEnvironment: ["UBIQUITY_FOLDER": device.root.appendingPathComponent("absent").path])
        #expect(noFolder.status == 1, "\(noFolder)")
        #expect(noFolder.stderr.contains("$UBIQUITY_FOLDER") && noFolder.stderr.contains("mkdir -p"), "\(noFolder)")
    }

    @Test("ls reads the status column from the index: uploaded, uploading, conflict, excluded, not downloaded")
    func statusFromIndex() throws {
        let (device, folder) = try device()
        for name in ["up.txt", "going.txt", "both.txt", "skip.txt", "away.txt", "new.txt"] {
            try write(folder.appendingPathComponent("d/" + name), name)
        }
        let database = device.root.appendingPathComponent("index.sqlite").path
        let scan = try device.run(["index", "scan", folder.path, "--database", database])
        #expect(scan.status == 0, "\(scan)")
        do {
            let index = try MetadataIndex(path: database, logger: Logger(label: "test"))
            let d = folder.path + "/d/"
            _ = try index.updateUbiquitousAttributes(path: d + "up.txt", UbiquitousAttributes(isUploaded: true, percentUploaded: 100))
            _ = try index.updateUbiquitousAttributes(path: d + "going.txt", UbiquitousAttributes(isUploading: true, percentUploaded: 42.5))
            _ = try index.updateUbiquitousAttributes(path: d + "both.txt", UbiquitousAttributes(isUploaded: true, hasUnresolvedConflicts: true))
            _ = try index.updateUbiquitousAttributes(path: d + "skip.txt", UbiquitousAttributes(isExcludedFromBackup: true))
            _ = try index.updateUbiquitousAttributes(path: d + "away.txt", UbiquitousAttributes(isUploaded: true, downloadingStatus: .notDownloaded))
        }
        try write(folder.appendingPathComponent("d/later.txt"), "not indexed")

        let run = try device.run(["ls", "d", "--json"], extraEnvironment: ["UBIQUITY_INDEX_DATABASE": database])
        #expect(run.status == 0, "\(run)")
        let rows = try lines(run)
        let status = Dictionary(uniqueKeysWithValues: rows.map { ($0.name, $0.status) })
        #expect(status == ["away.txt": "not downloaded", "both.txt": "conflict", "going.txt": "uploading", "later.txt": "unknown",
                           "new.txt": "not uploaded", "skip.txt": "excluded", "up.txt": "uploaded"], "\(run)")
        #expect(rows.first { $0.name == "going.txt" }?.percent == 42.5)

        let text = try device.run(["ls", "-R", "--index", database])
        #expect(text.status == 0, "\(text)")
        #expect(text.stdout.contains("uploading 42%     d/going.txt"), "\(text)")
        #expect(text.stdout.contains("uploaded          d/up.txt"), "\(text)")
        #expect(!text.stdout.contains("\u{1B}["), "no colour when stdout is not a terminal")

        // status of the folder: the counts by state, and what is moving or needs attention
        let summary = try device.run(["status", folder.path, "--json", "--index", database])
        #expect(summary.status == 0, "\(summary)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(summary.stdout.utf8)) as? [String: Any], "\(summary)")
        let items = try #require(object["items"] as? [String: Any], "\(summary)")
        #expect(items["indexed"] as? Bool == true && items["total"] as? Int == 7, "the folder d and its six indexed files: \(items)")
        #expect(items["uploaded"] as? Int == 1 && items["uploading"] as? Int == 1 && items["conflict"] as? Int == 1
                && items["excluded"] as? Int == 1 && items["notDownloaded"] as? Int == 1 && items["notUploaded"] as? Int == 2, "\(items)")
        let active = try #require(items["active"] as? [[String: Any]], "\(items)")
        #expect(active.map { $0["path"] as? String } == ["d/both.txt", "d/going.txt", "d/skip.txt"], "\(active)")
        #expect(active.map { $0["status"] as? String } == ["conflict", "uploading", "excluded"], "\(active)")
        #expect(active[1]["percent"] as? Double == 43, "rounded as the item's own percentUploaded: \(active)")
        let summaryText = try device.run(["status", folder.path + "/d"], extraEnvironment: ["UBIQUITY_INDEX_DATABASE": database])
        #expect(summaryText.status == 0, "\(summaryText)")
        #expect(summaryText.stdout.contains("items:     6 (1 uploaded, 1 not uploaded, 1 uploading, 1 not downloaded, 1 conflict, 1 excluded)"), "\(summaryText)")
        #expect(summaryText.stdout.contains("↑ going.txt  [########            ] 42%"), "\(summaryText)")
        #expect(summaryText.stdout.contains("conflict: both.txt") && summaryText.stdout.contains("excluded: skip.txt"), "\(summaryText)")
        // a file has no items; no index: the folder says so
        let file = try device.run(["status", folder.path + "/d/up.txt", "--json", "--index", database])
        #expect(!file.stdout.contains("\"items\""), "\(file)")
        let unindexed = try device.run(["status", folder.path, "--index", device.root.appendingPathComponent("none.sqlite").path])
        #expect(unindexed.status == 0 && unindexed.stdout.contains("items:     unknown"), "\(unindexed)")
    }

    /// Runs `ubiq ARGUMENTS` on a pseudo-terminal (`script`), returning what it printed there.
    func onTerminal(_ device: Device, _ arguments: [String], extraEnvironment: [String: String] = [:]) throws -> String {
        let quoted = ([Binaries.ubiq.path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-qec", quoted.joined(separator: " "), "/dev/null"]
        var environment = device.environment
        environment.removeValue(forKey: "NO_COLOR")
        environment["TERM"] = "xterm"
        environment.merge(extraEnvironment) { $1 }
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    @Test("ls colours its status column on a terminal only, and never with NO_COLOR", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
    func colourOnTerminalOnly() throws {
        let (device, folder) = try device()
        try write(folder.appendingPathComponent("both.txt"), "x")
        let database = device.root.appendingPathComponent("index.sqlite").path
        #expect(try device.run(["index", "scan", folder.path, "--database", database]).status == 0)
        _ = try MetadataIndex(path: database, logger: Logger(label: "test"))
            .updateUbiquitousAttributes(path: folder.path + "/both.txt", UbiquitousAttributes(isUploaded: true, hasUnresolvedConflicts: true))

        let coloured = try onTerminal(device, ["ls", "--index", database])
        #expect(coloured.contains("\u{1B}[31mconflict"), "\(coloured)")
        let plain = try onTerminal(device, ["ls", "--index", database], extraEnvironment: ["NO_COLOR": "1"])
        #expect(plain.contains("conflict") && !plain.contains("\u{1B}["), "\(plain)")
        let dumb = try onTerminal(device, ["ls", "--index", database], extraEnvironment: ["TERM": "dumb"])
        #expect(dumb.contains("conflict") && !dumb.contains("\u{1B}["), "\(dumb)")
    }

    /// The events (without ids) `ubiq present` printed after its ready line.
    func events(_ present: Subprocess) -> [String] {
        present.output.compactMap { line -> String? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let event = object["event"] as? String, event != "ready" else { return nil }
            return event
        }
    }

    func waitForEvents(_ present: Subprocess, count: Int) -> [String] {
        let deadline = Date(timeIntervalSinceNow: 30)
        while events(present).count < count && Date() < deadline { usleep(5000) }
        return events(present)
    }

    @Test("with a daemon: a presenter in another process saves before put writes, hears of mv and of rm")
    func presenterInAnotherProcess() throws {
        let (device, folder) = try device()
        let daemon = try device.startDaemon()
        defer { daemon.kill(SIGTERM) }
        let file = folder.appendingPathComponent("notes.txt")
        try write(file, "one")
        let present = try device.present(file)
        defer { present.kill() }
        #expect(present.output.first?.contains("\"daemon\":true") == true, "\(present.output)")

        let put = try device.run(["put", "-", "notes.txt", "--verbose"], input: "two")
        #expect(put.status == 0, "\(put)")
        #expect(put.stderr.contains("through the daemon"), "\(put)")
        #expect(device.contents(file) == "two")
        let afterPut = waitForEvents(present, count: 4)
        #expect(afterPut == ["relinquishToWriter", "savePresentedItemChanges", "didChange", "reacquire"], "\(present.output)")

        let cat = try device.run(["cat", "notes.txt"])
        #expect(cat.status == 0 && cat.stdout == "two", "\(cat)")
        #expect(Array(waitForEvents(present, count: 7).suffix(3)) == ["relinquishToReader", "savePresentedItemChanges", "reacquire"],
                "\(present.output)")

        let mv = try device.run(["mv", "notes.txt", "renamed.txt"])
        #expect(mv.status == 0, "\(mv)")
        #expect(Array(waitForEvents(present, count: 10).suffix(3)) == ["relinquishToWriter", "didMove", "reacquire"], "\(present.output)")
        #expect(present.output.contains { $0.contains("\"to\":\"\(folder.path)/renamed.txt\"") }, "\(present.output)")

        let rm = try device.run(["rm", "renamed.txt"])
        #expect(rm.status == 0, "\(rm)")
        #expect(Array(waitForEvents(present, count: 13).suffix(3)) == ["relinquishToWriter", "accommodateDeletion", "reacquire"],
                "\(present.output)")
        #expect(FileStamp.of(folder.path + "/renamed.txt") == nil)
    }
}
