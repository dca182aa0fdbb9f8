// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import UbiquityCore

/// `FileStamp` read through `statx`: the same facts `lstat` gives, plus the inode's birth time.
@Suite struct FileStampTests {
    @Test func aStampHasWhatLstatSaysAndTheBirthTime() throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-stamp-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("a.txt")
        try Data("some bytes".utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: file.path)

        var st = stat()
        #expect(lstat(file.path, &st) == 0)
        let stamp = try #require(FileStamp.of(file.path))
        #expect(stamp.device == UInt64(st.st_dev), "the device encoded as st_dev is: chunk lists kept before compare it")
        #expect(stamp.inode == UInt64(st.st_ino))
        #expect(stamp.size == 10)
        #expect(stamp.modificationNanoseconds == Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec))
        #expect(stamp.changeNanoseconds == Int64(st.st_ctim.tv_sec) * 1_000_000_000 + Int64(st.st_ctim.tv_nsec))
        #expect(stamp.mode == 0o640)
        #expect(!stamp.isDirectory && !stamp.isSymbolicLink)

        let descriptor = open(file.path, O_RDONLY)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        let open = try #require(FileStamp.of(descriptor: descriptor))
        #expect(open == stamp)
        #expect(open.birthNanoseconds == stamp.birthNanoseconds)

        // a file system that reports birth times (ext4, tmpfs, XFS, btrfs): born about now
        if let birth = stamp.birthNanoseconds {
            #expect(abs(Double(birth) / 1e9 - Date().timeIntervalSince1970) < 60)
        }
        // equality leaves the birth time out: a stamp kept without it still matches
        var kept = stamp
        kept.birthNanoseconds = nil
        #expect(kept == stamp && kept.hashValue == stamp.hashValue)

        let link = directory.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "a.txt")
        #expect(FileStamp.of(link.path)?.isSymbolicLink == true, "a final link is not followed")
        #expect(FileStamp.of(directory.path)?.isDirectory == true)
        #expect(FileStamp.of(directory.appendingPathComponent("missing").path) == nil)
    }
}
