// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport

/// Files the user may not read: clear errors, nothing changed, no temporary files. Root reads
/// everything, so the programs run as `nobody` through setpriv(1) (skipped when that is not
/// possible).
/// Whether tests can run the built programs as `nobody`: root, setpriv, and a build folder that
/// `nobody` can reach (a clone under /root is not).
enum Nobody {
    static let canRun: Bool = {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { return false }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        // Through env, as the tests run them: setpriv itself may exec what its children cannot.
        process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "env", Binaries.ubiq.path, "--help"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()
}

@Suite("Unreadable files", .enabled(if: Nobody.canRun, "needs root, setpriv, and binaries nobody can run"))
struct UnreadableFileTests {
    /// Runs `arguments` as nobody; returns the status and stderr.
    func runAsNobody(_ arguments: [String], runtime: String) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "env", "HOME=/tmp",
                             "XDG_RUNTIME_DIR=\(runtime)", "UBIQUITY_COORDINATION=local"] + arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    @Test("a document that cannot be read fails to open with a permission error and is left intact")
    func unreadableDocument() throws {
        let root = URL(fileURLWithPath: "/tmp/ubq-perm-" + String(UUID().uuidString.prefix(8)))
        try FileManager.default.createDirectory(at: root.appendingPathComponent("run"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        chmod(root.path, 0o755)
        chown(root.appendingPathComponent("run").path, 65534, 65534)
        let file = root.appendingPathComponent("doc.txt")
        try Data("secret".utf8).write(to: file)
        chmod(file.path, 0o600)
        let (status, errors) = try runAsNobody([Binaries.monkey.path, "--file", file.path],
                                               runtime: root.appendingPathComponent("run").path)
        #expect(status == 1)
        #expect(errors.contains("permissionDenied") && errors.contains(file.path))
        #expect(try String(contentsOf: file, encoding: .utf8) == "secret")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path).sorted() == ["doc.txt", "run"])
        // The skip-backup attribute cannot be set by someone who may not write the file.
        let (excluded, message) = try runAsNobody([Binaries.ubiq.path, "exclude", file.path],
                                                  runtime: root.appendingPathComponent("run").path)
        #expect(excluded == 1 && message.contains("permissionDenied"))
    }
}
