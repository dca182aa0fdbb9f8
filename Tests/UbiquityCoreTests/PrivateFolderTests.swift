// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import UbiquityCore

/// Issue 24, findings 7 and 8: private folders and files whatever the umask, and no socket folder
/// or socket of another local user trusted.
@Suite struct PrivateFolderTests {
    static func scratch() throws -> String {
        let path = NSTemporaryDirectory() + "ubq-private-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func mode(_ path: String) -> mode_t {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & 0o777 : 0
    }

    @Test func aMissingFolderIsMade0700AndAnOpenOneOfOursIsTightened() throws {
        let root = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try PrivateFolder.ensure(root + "/a/b")
        #expect(Self.mode(root + "/a/b") == 0o700)
        mkdir(root + "/open", 0o755)
        chmod(root + "/open", 0o755)
        try PrivateFolder.ensure(root + "/open")
        #expect(Self.mode(root + "/open") == 0o700)
    }

    @Test func aSocketFolderWritableByOthersALinkOrAnotherUsersIsRefused() throws {
        let root = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        mkdir(root + "/shared", 0o777)
        chmod(root + "/shared", 0o777)
        #expect(throws: UbiquityError.self) { try PrivateFolder.ensure(root + "/shared", strict: true) }
        #expect(Self.mode(root + "/shared") == 0o777, "left as it is")
        mkdir(root + "/real", 0o700)
        symlink(root + "/real", root + "/link")
        #expect(throws: UbiquityError.self) { try PrivateFolder.ensure(root + "/link") }
        if getuid() == 0 {  // (only root can give a folder away)
            mkdir(root + "/theirs", 0o700)
            chown(root + "/theirs", 65534, 65534)
            let error = #expect(throws: UbiquityError.self) { try PrivateFolder.ensure(root + "/theirs") }
            #expect(error?.message.contains("belongs to user 65534") == true)
        }
    }

    @Test func aPreparedFileIs0600WhateverTheUmask() throws {
        let root = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try PrivateFolder.prepareFile(root + "/state/journal.sqlite")
        #expect(Self.mode(root + "/state") == 0o700)
        #expect(Self.mode(root + "/state/journal.sqlite") == 0o600)
        _ = FileManager.default.createFile(atPath: root + "/old.sqlite", contents: Data("x".utf8), attributes: [.posixPermissions: 0o644])
        _ = FileManager.default.createFile(atPath: root + "/old.sqlite-wal", contents: Data(), attributes: [.posixPermissions: 0o644])
        try PrivateFolder.prepareFile(root + "/old.sqlite")
        #expect(Self.mode(root + "/old.sqlite") == 0o600 && Self.mode(root + "/old.sqlite-wal") == 0o600)
        #expect(try Data(contentsOf: URL(fileURLWithPath: root + "/old.sqlite")) == Data("x".utf8), "its content is kept")
    }

    /// A socket served by another user (a listener run as `nobody` in a folder anyone may write):
    /// the client refuses to talk to it.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
                       && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs root, setpriv and python3"))
    func aSocketServedByAnotherUserIsRefused() throws {
        let root = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        chmod(root, 0o777)
        let socketPath = root + "/control.sock"
        let listener = Process()
        listener.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        listener.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", """
            import socket, sys, time
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(sys.argv[1]); s.listen(4)
            print("ready", flush=True)
            s.settimeout(30)
            try:
                c, _ = s.accept(); c.sendall(b'{"event":"done"}\\n'); time.sleep(1)
            except Exception:
                pass
            """, socketPath]
        let output = Pipe()
        listener.standardOutput = output
        try listener.run()
        defer { listener.terminate(); listener.waitUntilExit() }
        _ = output.fileHandleForReading.availableData  // "ready"
        let error = #expect(throws: UbiquityError.self) { try UnixSocket.connect(to: socketPath) }
        #expect(error?.message.contains("served by user 65534") == true, "\(String(describing: error))")
    }
}
