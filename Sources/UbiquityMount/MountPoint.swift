// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import UbiquityCore

/// What is mounted at a folder, from `/proc/self/mountinfo`: the daemon's own kind of mount
/// (`fuse.ubiquity`), live or left by a daemon that was killed (every access answers
/// `ENOTCONN`), or something else.
package enum MountPoint: Sendable, Equatable {
    /// Nothing is mounted there.
    case none
    /// A Ubiquity mount; `live`: a daemon serves it.
    case ubiquity(live: Bool)
    /// Another file system of type `type`.
    case other(type: String)

    /// The file system type of Ubiquity's mounts.
    package static let fileSystemType = "fuse.ubiquity"

    /// What is mounted at `path` (absolute, links resolved), the last mount there winning.
    /// `probe`: whether a Ubiquity mount is asked if it is live (a statfs; never from the file
    /// system's own threads, which would wait for themselves); without, it counts as live.
    package static func state(of path: String, probe: Bool = true, mountInfo: String? = nil) -> MountPoint {
        guard let info = mountInfo ?? (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) else { return .none }
        var found: String?
        for line in info.split(separator: "\n") {
            // ID PARENT MAJOR:MINOR ROOT MOUNT-POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER-OPTIONS
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count > 5, let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count else { continue }
            if unescape(fields[4]) == path { found = String(fields[dash + 1]) }
        }
        guard let found else { return .none }
        guard found == fileSystemType else { return .other(type: found) }
        guard probe else { return .ubiquity(live: true) }
        // statfs always asks the file system (a stat may be answered from the kernel's cache)
        var st = statvfs()
        let live = statvfs(path, &st) == 0 || errno != ENOTCONN
        return .ubiquity(live: live)
    }

    /// mountinfo's octal escapes (`\040` for a space) undone.
    static func unescape(_ field: Substring) -> String {
        guard field.contains("\\") else { return String(field) }
        var bytes: [UInt8] = []
        var utf8 = Array(field.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "\\"), utf8.count >= 3, let value = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(value)
                utf8 = utf8.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Detaches the mount at `path` (a stale one: its daemon was killed): `umount2(MNT_DETACH)`
    /// as root, else `fusermount3 -u -z`.
    /// - Throws: `io` naming what failed.
    package static func detach(_ path: String) throws {
        if geteuid() == 0 {
            guard umount2(path, Int32(MNT_DETACH)) == 0 else { throw UbiquityError.posix("umount", path: path) }
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["fusermount3", "-u", "-z", path]
        do { try process.run() } catch {
            throw UbiquityError(.io, "cannot run fusermount3 to clear the stale mount at '\(path)' (Debian: apt-get install fuse3)", underlying: error)
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw UbiquityError(.io, "fusermount3 -u -z '\(path)' failed (exit \(process.terminationStatus)): clear the stale mount by hand")
        }
    }
}
