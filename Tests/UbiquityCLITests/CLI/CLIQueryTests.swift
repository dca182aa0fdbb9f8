// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport

/// `ubiq query` and `ubiq index`, with and without a daemon, as real processes.
@Suite("CLI query and index")
struct CLIQueryTests {
    static func makeTree(_ device: Device) throws -> URL {
        let root = device.root.appendingPathComponent("tree", isDirectory: true)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("notes/2024"), withIntermediateDirectories: true)
        try Data("hello".utf8).write(to: root.appendingPathComponent("test.txt"))
        try Data(String(repeating: "x", count: 2000).utf8).write(to: root.appendingPathComponent("notes/Big Report.TXT"))
        try Data("é".utf8).write(to: root.appendingPathComponent("notes/2024/café.md"))
        try Data("~".utf8).write(to: root.appendingPathComponent("notes/test.txt~"))  // editor backup: ignored
        return root
    }

    @Test("finds files by name, size and type without a daemon; paths or JSON")
    func queryWithoutDaemon() throws {
        let device = Device()
        let root = try Self.makeTree(device)
        var run = try device.run(["query", "kMDItemFSName == 'test.txt'", "--root", root.path])
        #expect(run.status == 0, "\(run)")
        #expect(run.stdout == root.appendingPathComponent("test.txt").path + "\n", "\(run)")

        run = try device.run(["query", "kMDItemFSName LIKE[c] %@ AND kMDItemFSSize > %d", "*.txt", "1000", "--root", root.path, "--json"])
        #expect(run.status == 0, "\(run)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run)")
        #expect(object["name"] as? String == "Big Report.TXT")
        #expect(object["size"] as? Int == 2000)
        #expect(object["contentType"] as? String == "public.plain-text")

        run = try device.run(["query", "kMDItemFSName CONTAINS[cd] 'CAFE'", "--root", root.path])
        #expect(run.stdout.hasSuffix("notes/2024/café.md\n"), "\(run)")

        run = try device.run(["query", "kMDItemContentTypeTree == 'public.text' AND kMDItemIsDirectory == NO", "--root", root.path,
                              "--sort", "kMDItemFSSize:desc"])
        #expect(run.stdout.split(separator: "\n").map { String($0.split(separator: "/").last ?? "") } == ["Big Report.TXT", "test.txt", "café.md"], "\(run)")
    }

    @Test("a malformed predicate exits 64 naming the column; other bad input is explained")
    func badInput() throws {
        let device = Device()
        let root = try Self.makeTree(device)
        var run = try device.run(["query", "kMDItemFSName == ", "--root", root.path])
        #expect(run.status == 64, "\(run)")
        #expect(run.stderr.contains("column"), "\(run)")
        run = try device.run(["query", "kMDItemFSSize LIKE 'a'", "--root", root.path])
        #expect(run.status == 64, "\(run)")
        run = try device.run(["query", "kMDItemNope == 1", "--root", root.path])
        #expect(run.status == 64 && run.stderr.contains("kMDItemNope"), "\(run)")
        run = try device.run(["query", "kMDItemFSName == %@", "--root", root.path])
        #expect(run.status == 64 && run.stderr.contains("argument"), "\(run)")
        run = try device.run(["query", "TRUEPREDICATE", "--root", root.appendingPathComponent("missing").path])
        #expect(run.status == 1 && run.stderr.contains("missing"), "\(run)")
        run = try device.run(["query", "TRUEPREDICATE", "--sort", "kMDItemNope"])
        #expect(run.status == 64, "\(run)")
    }

    @Test("--watch prints gathering, then one JSON line per change")
    func watch() throws {
        let device = Device()
        let root = try Self.makeTree(device)
        let watcher = try device.start(Binaries.ubiq, ["query", "kMDItemFSName ENDSWITH '.txt'", "--root", root.path, "--watch"])
        defer { watcher.kill() }
        let finish = try #require(watcher.waitForLine(containing: "finishGathering"), "\(watcher.output)")
        #expect(finish.contains("\"count\":1"), "\(finish)")
        try Data("new".utf8).write(to: root.appendingPathComponent("notes/new.txt"))
        let update = try #require(watcher.waitForLine(containing: "new.txt"), "\(watcher.output)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(update.utf8)) as? [String: Any])
        #expect(object["event"] as? String == "update")
        #expect(((object["added"] as? [[String: Any]])?.first?["path"] as? String)?.hasSuffix("notes/new.txt") == true)
        try FileManager.default.removeItem(at: root.appendingPathComponent("test.txt"))
        let removal = try #require(watcher.waitForLine(containing: "\"removed\":[{"), "\(watcher.output)")
        #expect(removal.contains("test.txt"))
    }

    @Test("with a daemon: the containers are indexed, queries go through it, and index status tells")
    func daemon() throws {
        let device = Device()
        let container = "iCloud.com.example.monkey"
        let daemon = try device.startDaemon()
        defer { daemon.kill() }
        var run = try device.run(["container", "url", container, "--container", container, "--json"])
        let entry = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run)")
        let documentsPath = try #require(entry["documents"] as? String, "\(run)")
        try FileManager.default.createDirectory(atPath: documentsPath + "/Notes", withIntermediateDirectories: true)
        try Data("hi".utf8).write(to: URL(fileURLWithPath: documentsPath + "/Notes/test.txt"))

        let deadline = Date(timeIntervalSinceNow: 30)
        repeat {
            run = try device.run(["query", "kMDItemFSName == 'test.txt'", "--container", container], extraEnvironment: ["UBIQUITY_INDEX": "daemon"])
        } while !run.stdout.contains("Notes/test.txt") && Date() < deadline
        #expect(run.status == 0 && run.stdout == documentsPath + "/Notes/test.txt\n", "\(run)")

        run = try device.run(["index", "status", "--json"])
        #expect(run.status == 0, "\(run)")
        let status = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run)")
        #expect((status["items"] as? Int ?? 0) >= 3, "\(run)")
        let roots = status["roots"] as? [[String: Any]] ?? []
        #expect(roots.contains { ($0["path"] as? String)?.hasSuffix("ubiquity/containers") == true }, "\(run)")

        run = try device.run(["index", "rescan", documentsPath])
        #expect(run.status == 0, "\(run)")
    }

    @Test("the daemon rebuilds an index file deleted under it, and says so")
    func indexDeleted() throws {
        let device = Device()
        let daemon = try device.startDaemon()
        defer { daemon.kill() }
        let database = device.root.appendingPathComponent("state/ubiquity/index.sqlite")
        #expect(FileManager.default.fileExists(atPath: database.path))
        try FileManager.default.removeItem(at: database)
        let deadline = Date(timeIntervalSinceNow: 30)
        var run: UbiqRun
        repeat {
            Thread.sleep(forTimeInterval: 0.2)
            run = try device.run(["index", "status"])
        } while !run.stdout.contains("rebuilt") && Date() < deadline
        #expect(run.stdout.contains("rebuilt"), "\(run)")
        #expect(FileManager.default.fileExists(atPath: database.path))
    }

    @Test("without a daemon, index status says how to start one (69); index scan builds a file query can read")
    func scanAndDatabase() throws {
        let device = Device()
        let root = try Self.makeTree(device)
        var run = try device.run(["index", "status"])
        #expect(run.status == 69 && run.stderr.contains("ubiq daemon"), "\(run)")
        let database = device.root.appendingPathComponent("tree.index").path
        run = try device.run(["index", "scan", root.path, "--database", database, "--json"])
        #expect(run.status == 0, "\(run)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run)")
        #expect(object["items"] as? Int == 5, "\(run)")  // test.txt, notes, Big Report.TXT, 2024, café.md (not the backup)
        run = try device.run(["query", "kMDItemFSName CONTAINS 'port'", "--database", database])
        #expect(run.stdout.hasSuffix("notes/Big Report.TXT\n"), "\(run)")
    }
}
