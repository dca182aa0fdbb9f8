// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import UbiquityTestSupport
import UbiquityCore
@testable import UbiquitySync

/// Names that are not valid UTF-8 cannot be record names: the scan sees them as they are
/// (`readdir`, not Foundation, which repairs them), the daemon reports each once and syncs the
/// rest, and `ubiq doctor` lists them with the fix.
@Suite(.serialized) struct InvalidNameTests {
    /// Creates a file whose name is `prefix` + `bytes` + `suffix` in `folder`.
    static func createFile(in folder: URL, _ prefix: String, _ bytes: [UInt8], _ suffix: String, content: String) throws {
        let path = Array(folder.path.utf8) + Array(("/" + prefix).utf8) + bytes + Array(suffix.utf8) + [0]
        let descriptor = path.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
        }
        guard descriptor >= 0 else { throw UbiquityError.posix("open", path: folder.path + "/" + prefix + "…") }
        defer { close(descriptor) }
        let data = Array(content.utf8)
        guard write(descriptor, data, data.count) == data.count else { throw UbiquityError.posix("write", path: folder.path) }
    }

    @Test func escapingAndListing() throws {
        #expect(DirectoryEntries.escaped(Array("café".utf8)) == "café")
        #expect(DirectoryEntries.escaped(Array("caf".utf8) + [0xE9] + Array(".txt".utf8)) == "caf\\xE9.txt")
        #expect(DirectoryEntries.escaped([0xFF, 0xFE]) == "\\xFF\\xFE")
        #expect(DirectoryEntries.escaped([0xE2, 0x82]) == "\\xE2\\x82")  // a cut-off sequence

        let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("invalid-names-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("sub"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try Data("fine".utf8).write(to: root.appendingPathComponent("fine.txt"))
        try Self.createFile(in: root, "sub/caf", [0xE9], ".txt", content: "latin-1")
        let entries = try #require(DirectoryEntries.read(root.appendingPathComponent("sub").path))
        #expect(entries.names.isEmpty && entries.invalid == ["caf\\xE9.txt"])
        #expect(Set(try #require(DirectoryEntries.read(root.path)).names) == ["fine.txt", "sub"])
        #expect(try #require(DirectoryEntries.read(root.path)).folders == ["sub"], "a folder, told by d_type")
        #expect(DirectoryEntries.read(root.appendingPathComponent("missing").path) == nil)

        let walk = try #require(Doctor.walk(root.path))
        #expect(walk.directories == 2 && walk.invalidNames == ["sub/caf\\xE9.txt"])
        let finding = Doctor.names(invalid: walk.invalidNames)
        #expect(finding.level == .warning && finding.detail.contains("sub/caf\\xE9.txt") && finding.fix != nil)
        #expect(Doctor.names(invalid: []).level == .ok)

        // the engine's scan leaves it out and returns it for the report
        let scan = SyncFiles.scan(root: root.path, rules: IgnoreRules(patterns: []))
        #expect(Set(scan.items.keys) == ["fine.txt", "sub"])
        #expect(scan.unsyncable == ["sub/caf\\xE9.txt"])
        var reported = UnsyncableNames()
        #expect(reported.takeNew(scan.unsyncable) == ["sub/caf\\xE9.txt"])
        let again = SyncFiles.scan(root: root.path, rules: IgnoreRules(patterns: []))
        #expect(again.unsyncable == scan.unsyncable && reported.takeNew(again.unsyncable).isEmpty)  // reported once
    }

    @Test func aNameThatIsNotUTF8IsReportedAndTheRestSyncs() async throws {
        let cloud = try SyncRig.Cloud()
        let a = SyncRig.SyncDevice("alpha", cloud), b = SyncRig.SyncDevice("beta", cloud)
        let failures = a.device.root.appendingPathComponent("failures.log")
        try HookRunnerTests.script(a.device.root.appendingPathComponent("config/ubiquity/hooks/upload-failed"),
                                   "echo \"$UBIQUITY_PATH|$UBIQUITY_ERROR\" >> '\(failures.path)'")
        try a.start()
        try b.start()
        try FileManager.default.createDirectory(at: a.folder, withIntermediateDirectories: true)
        try Self.createFile(in: a.folder, "caf", [0xE9], ".txt", content: "latin-1 name")
        try a.write("ok.txt", "fine")
        #expect(SyncRig.eventually("B has ok.txt") { b.read("ok.txt") == "fine" })
        #expect(SyncRig.eventually("the upload-failed hook names the file") {
            let log = (try? String(contentsOf: failures, encoding: .utf8)) ?? ""
            return log.contains("caf\\xE9.txt|") && log.contains("not valid UTF-8")
        })
        let names = try await cloud.items().keys
        #expect(!names.contains { $0.hasPrefix("caf") }, "\(names)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: b.folder.path).filter { $0.hasPrefix("caf") }.isEmpty)

        let doctor = try a.device.run(["doctor", "--folder", a.folder.path, "--json"])
        #expect(doctor.stdout.contains("caf\\\\xE9.txt") || doctor.stdout.contains("caf\\xE9.txt"), "\(doctor.stdout)")
        a.stop()
        b.stop()
    }
}
