// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore

struct SafeSaveTests {
    func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-safesave-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("overwrites atomically, keeps permissions and user xattrs, leaves no temporary file")
    func overwrite() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("doc.txt").path
        try SafeSave.write(Data("old".utf8), to: path)
        chmod(path, 0o600)
        try BackupExclusion.setExcluded(true, path)
        let before = try #require(FileStamp.of(path))
        let after = try SafeSave.write(Data("new".utf8), to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "new")
        #expect(after.inode != before.inode && after.mode == 0o600)
        #expect(try BackupExclusion.isExcluded(path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["doc.txt"])
    }

    @Test("create refuses to replace an existing file and leaves it intact")
    func createRefusesExisting() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("doc.txt").path
        try SafeSave.write(Data("first".utf8), to: path, mode: .create)
        #expect { try SafeSave.write(Data("second".utf8), to: path, mode: .create) } throws: {
            ($0 as? UbiquityError)?.code == .alreadyExists
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "first")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["doc.txt"])
    }

    @Test("a failing writer leaves the old content and no temporary file")
    func failureKeepsOldContent() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("doc.txt").path
        try SafeSave.write(Data("old".utf8), to: path)
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try SafeSave.write(to: path) { fd in
                _ = Glibc.write(fd, "partial", 7)
                throw Boom()
            }
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "old")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["doc.txt"])
    }

    @Test("a directory in the way is a clear error")
    func directoryInTheWay() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect { try SafeSave.write(Data(), to: dir.path) } throws: { ($0 as? UbiquityError)?.code == .invalidArgument }
    }
}
