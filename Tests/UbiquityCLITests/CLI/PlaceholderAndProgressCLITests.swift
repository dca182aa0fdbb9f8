// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import UbiquityTestSupport
import UbiquityCore
@testable import UbiquitySync

/// Download on open in the CLI (`ubiq cat` / `get` / `put` of an evicted file) and the upload
/// percentage in `ubiq present --editor` state lines, with a real `ubiq serve` and `ubiq daemon`.
/// Every wait is a hang guard, never a timing assertion.
@Suite(.serialized) struct PlaceholderAndProgressCLITests {
    typealias Cloud = SyncRig.Cloud
    typealias SyncDevice = SyncRig.SyncDevice

    static func eventually(_ what: String, seconds: Double = 120, _ check: () -> Bool) -> Bool {
        SyncRig.eventually(what, seconds: seconds, check)
    }

    /// Random bytes (no run of zeros, nothing to deduplicate or compress).
    static func randomData(_ size: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        var data = Data(count: (size + 7) / 8 * 8)
        data.withUnsafeMutableBytes { buffer in
            for index in buffer.bindMemory(to: UInt64.self).indices { buffer.bindMemory(to: UInt64.self)[index] = generator.next() }
        }
        return data.prefix(size)
    }

    @Test func catGetAndPutOfAnEvictedFileDownloadItFirst() throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud)
        try a.start()
        defer { a.stop() }
        let data = SyncRig.content("report", size: 200_000)  // text: stdout is read as a string
        try FileManager.default.createDirectory(at: a.url("docs"), withIntermediateDirectories: true)
        try data.write(to: a.url("docs/report.bin"))
        #expect(Self.eventually("uploaded") { a.syncStatus("docs/report.bin") == "uploaded" })
        let path = a.url("docs/report.bin").path
        let folderArgument = ["--folder", a.folder.path]

        func evict() {
            let evict = try? a.device.run(["evict", path])
            #expect(evict?.status == 0, "\(String(describing: evict))")
            #expect(Placeholder.isEvicted(path) && FileStamp.of(path) == nil, "only the stub is there")
        }

        // cat: the content
        evict()
        let cat = try a.device.run(["cat", path] + folderArgument, timeout: 120)
        #expect(cat.status == 0, "\(cat.stderr)")
        #expect(cat.stdout == String(decoding: data, as: UTF8.self), "cat printed the content")
        #expect(!Placeholder.isEvicted(path) && FileStamp.of(Placeholder.stubPath(for: path)) == nil, "downloaded in place")
        #expect((try? Data(contentsOf: a.url("docs/report.bin"))) == data)

        // get to a local file
        evict()
        let copy = a.device.root.appendingPathComponent("copy.bin")
        let get = try a.device.run(["get", path, copy.path] + folderArgument, timeout: 120)
        #expect(get.status == 0, "\(get)")
        #expect((try? Data(contentsOf: copy)) == data)

        // put's source: an evicted file of the folder copied elsewhere in it
        evict()
        let put = try a.device.run(["put", path, "docs/again.bin"] + folderArgument, timeout: 120)
        #expect(put.status == 0, "\(put)")
        #expect((try? Data(contentsOf: a.url("docs/again.bin"))) == data)

        // no daemon: a clear error, and nothing printed
        evict()
        a.stop()
        let refused = try a.device.run(["cat", path] + folderArgument)
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.stdout.isEmpty, "no zeros printed")
        #expect(refused.stderr.contains("evicted") && refused.stderr.contains("ubiq daemon"), "\(refused.stderr)")
        let refusedGet = try a.device.run(["get", path, copy.path + "2"] + folderArgument)
        #expect(refusedGet.status != 0 && refusedGet.stderr.contains("SRC"), "\(refusedGet)")
        #expect(!FileManager.default.fileExists(atPath: copy.path + "2"))
        // --only-evicted: a file that is here is left alone without asking the daemon
        let here = try a.device.run(["download", "--only-evicted", copy.path])
        #expect(here.status == 0, "\(here)")
    }

    @Test func presentEditorStateLinesCarryTheUploadPercentage() throws {
        let cloud = try Cloud()
        let port = try #require(URL(string: cloud.url)?.port)
        // the daemon talks to the server through a slow link: a 24 MiB upload takes a while
        let proxy = try ThrottledProxy(to: UInt16(port), bytesPerSlice: 64 * 1024, pauseMicroseconds: 15_000)
        defer { proxy.stop() }
        let a = SyncDevice("alpha", cloud)
        let arguments = a.arguments.map { $0 == cloud.url ? proxy.url : $0 }
        let daemon = try a.device.start(Binaries.ubiq, arguments)
        defer { daemon.kill(SIGTERM) }
        #expect(daemon.waitForLine(containing: "coordination service listening on", seconds: 60) != nil)
        try a.write("small.txt", "first")
        #expect(Self.eventually("the daemon syncs") { a.syncStatus("small.txt") == "uploaded" })

        let path = a.url("big.bin").path
        let job = try a.device.start(Binaries.ubiq, ["present", "--editor", "--state-interval", "0.05", path])
        defer { job.kill() }
        let ready = job.waitForLine(containing: "\"ready\"")
        #expect(ready?.contains("\"synced\":true") == true, "\(job.output)")
        // written aside and renamed in: the daemon sees the whole file at once
        let aside = a.device.root.appendingPathComponent("home/big.bin")
        try Self.randomData(24 * 1024 * 1024).write(to: aside)
        #expect(rename(aside.path, path) == 0)

        func states() -> [[String: Any]] {
            job.output.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .filter { $0["event"] as? String == "state" }
        }
        // as an editor with nothing unsaved: the daemon's coordinated read for the upload asks
        // to save first, answered at once
        var answered = Set<Int>()
        #expect(Self.eventually("the upload ends", seconds: 300) {
            for line in job.output where line.contains("savePresentedItemChanges") {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      let id = (object["id"] as? NSNumber)?.intValue, answered.insert(id).inserted else { continue }
                job.send(#"{"ack":\#(id)}"#)
            }
            return states().contains { $0["sync"] as? String == "uploaded" && $0["exists"] as? Bool == true }
        }, "\(job.output)")
        let percents = states().filter { $0["sync"] as? String == "uploading" }.compactMap { ($0["progress"] as? NSNumber)?.intValue }
        #expect(percents.contains { $0 > 0 && $0 < 100 }, "state lines during the upload: \(job.output)")
        #expect(percents.allSatisfy { (0...100).contains($0) })
        #expect(states().last?["sync"] as? String == "uploaded", "\(job.output)")
    }
}
