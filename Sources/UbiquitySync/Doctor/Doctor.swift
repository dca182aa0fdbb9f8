// SPDX-License-Identifier: Apache-2.0
import Foundation
import CUbiquityShims
import Glibc
import UbiquityCore
import UbiquityIndex

/// The checks of `ubiq doctor`, each a function that reads the system and returns findings.
/// The parts that decide (limits against needs, file-system names, clock skew) are static and
/// tested on their own.
package enum Doctor {
    /// inotify's limits (`/proc/sys/fs/inotify/*`) against what watching `directories` folders needs.
    package static func inotify(limits: (watches: Int, instances: Int, queue: Int)?, directories: Int?) -> [DoctorFinding] {
        guard let limits else {
            return [DoctorFinding("inotify", .failure, "cannot read /proc/sys/fs/inotify: this kernel may lack inotify",
                                  fix: "run on Linux with inotify (CONFIG_INOTIFY_USER)")]
        }
        var findings: [DoctorFinding] = []
        let persist = "and keep it with `echo fs.inotify.max_user_watches=524288 | sudo tee /etc/sysctl.d/90-ubiquity.conf`"
        if let directories, directories > limits.watches * 3 / 4 {
            findings.append(DoctorFinding("inotify", directories > limits.watches ? .failure : .warning,
                                          "watching \(directories) folders needs \(directories) watches; the limit is \(limits.watches) (shared by every program of this user)",
                                          fix: "sudo sysctl fs.inotify.max_user_watches=\(max(524_288, directories * 2)) \(persist)"))
        } else if limits.watches < 65_536 {
            findings.append(DoctorFinding("inotify", .warning, "max_user_watches is \(limits.watches): enough for \(limits.watches) folders in all",
                                          fix: "sudo sysctl fs.inotify.max_user_watches=524288 \(persist)"))
        } else {
            findings.append(DoctorFinding("inotify", .ok, "max_user_watches \(limits.watches)" + (directories.map { " for \($0) folders" } ?? "")))
        }
        if limits.instances < 16 {
            findings.append(DoctorFinding("inotify", .warning, "max_user_instances is \(limits.instances); each watching program needs one",
                                          fix: "sudo sysctl fs.inotify.max_user_instances=256"))
        }
        if limits.queue < 16_384 {
            findings.append(DoctorFinding("inotify", .warning, "max_queued_events is \(limits.queue): bursts overflow the queue and force full rescans",
                                          fix: "sudo sysctl fs.inotify.max_queued_events=16384"))
        }
        return findings
    }

    /// The limits from `/proc`, or nil.
    package static func readInotifyLimits() -> (watches: Int, instances: Int, queue: Int)? {
        func value(_ name: String) -> Int? {
            (try? String(contentsOfFile: "/proc/sys/fs/inotify/\(name)", encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
        guard let watches = value("max_user_watches"), let instances = value("max_user_instances"), let queue = value("max_queued_events") else { return nil }
        return (watches, instances, queue)
    }

    /// The name of a file-system type from `statfs`'s `f_type`.
    package static func fileSystemName(_ type: Int) -> String {
        switch type {
        case 0xEF53: return "ext4"
        case 0x9123683E: return "btrfs"
        case 0x58465342: return "xfs"
        case 0x01021994: return "tmpfs"
        case 0x2FC12FC1: return "zfs"
        case 0x6969: return "nfs"
        case 0xFF534D42: return "cifs"
        case 0xFE534D42: return "smb2"
        case 0x65735546: return "fuse"
        case 0x794C7630: return "overlayfs"
        case 0x4D44: return "vfat"
        case 0x5346544E: return "ntfs"
        case 0xF2F52010: return "f2fs"
        default: return String(format: "0x%llx", UInt64(truncatingIfNeeded: type))
        }
    }

    /// What the folder's file system means for sync.
    package static func folder(_ path: String, fileSystem: String?, exists: Bool) -> DoctorFinding {
        guard exists else {
            return DoctorFinding("folder", .warning, "\(path) does not exist yet", fix: "it is created by `ubiq daemon` once you are signed in (`ubiq account login`)")
        }
        guard let fileSystem else { return DoctorFinding("folder", .failure, "cannot read the file system of \(path)") }
        switch fileSystem {
        case "nfs", "cifs", "smb2", "fuse":
            return DoctorFinding("folder", .warning, "\(path) is on \(fileSystem): inotify does not see changes made by other machines there",
                                 fix: "keep the sync folder on a local disk (`ubiq daemon --folder PATH`)")
        case "vfat":
            return DoctorFinding("folder", .warning, "\(path) is on vfat: no permissions, symbolic links or extended attributes",
                                 fix: "keep the sync folder on ext4, btrfs or xfs")
        default:
            return DoctorFinding("folder", .ok, "\(path) on \(fileSystem)")
        }
    }

    /// The mounted folder (`ubiq daemon --mount`): whether FUSE can be used here (`/dev/fuse`
    /// readable and writable, `fusermount3` installed) and, when the folder is mounted,
    /// whether a daemon still serves it (`live` false: a stale mount of a killed daemon).
    package static func mount(_ path: String, devFuse: Bool, fusermount: Bool, mounted live: Bool?) -> [DoctorFinding] {
        var findings: [DoctorFinding] = []
        if devFuse && fusermount {
            findings.append(DoctorFinding("fuse", .ok, "/dev/fuse and fusermount3 are there (`ubiq daemon --mount` can serve the folder)"))
        } else {
            let missing = [devFuse ? nil : "/dev/fuse (not there, or not readable and writable)", fusermount ? nil : "fusermount3"].compactMap { $0 }
            findings.append(DoctorFinding("fuse", live == nil ? .warning : .failure, "`ubiq daemon --mount` cannot work: missing \(missing.joined(separator: " and "))",
                                          fix: "apt-get install fuse3 (and load the fuse module: modprobe fuse)"))
        }
        switch live {
        case nil: break
        case true?: findings.append(DoctorFinding("mount", .ok, "\(path) is served through FUSE by `ubiq daemon --mount`"))
        case false?:
            findings.append(DoctorFinding("mount", .failure, "\(path) is a stale mount (its daemon was killed): every access fails with ENOTCONN",
                                          fix: "start `ubiq daemon --mount` again (it clears the stale mount), or `fusermount3 -u -z '\(path)'`"))
        }
        return findings
    }

    /// The file system of `path` (statfs), or nil.
    package static func fileSystem(of path: String) -> String? {
        var type: Int64 = 0
        guard ub_fs_type(path, &type) == 0 else { return nil }
        return fileSystemName(Int(type))
    }

    /// Whether user extended attributes (the skip-backup attribute) can be stored in `directory`.
    package static func extendedAttributes(in directory: String) -> DoctorFinding {
        let probe = directory + "/.ubiquity-doctor-\(getpid())"
        guard FileManager.default.createFile(atPath: probe, contents: Data()) else {
            return DoctorFinding("xattr", .failure, "cannot create a file in \(directory)", fix: "check the folder's permissions")
        }
        defer { unlink(probe) }
        do {
            try ExtendedAttributes.setValue([1], for: "user.ubiquity.doctor", at: probe)
            let back = try ExtendedAttributes.value("user.ubiquity.doctor", at: probe)
            guard back == [1] else { throw UbiquityError(.io, "the attribute read back differs") }
            return DoctorFinding("xattr", .ok, "user extended attributes work (the skip-backup attribute can be kept)")
        } catch {
            return DoctorFinding("xattr", .failure, "user extended attributes do not work in \(directory): \(error)",
                                 fix: "mount the file system with user_xattr (ext4: `sudo mount -o remount,user_xattr MOUNTPOINT`), or move the folder")
        }
    }

    /// Free space in `path`.
    package static func disk(_ path: String) -> DoctorFinding? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        let free = Int64(info.f_bavail) * Int64(info.f_frsize)
        let text = ByteCountFormatter.string(fromByteCount: free, countStyle: .binary)
        if free < 1 << 30 {
            return DoctorFinding("disk", .warning, "\(text) free where \(path) is: downloads will fail when it is full",
                                 fix: "free space, or evict files you do not need here (`ubiq evict PATH`)")
        }
        return DoctorFinding("disk", .ok, "\(text) free")
    }

    /// The local clock against the server's (`Date` header), allowing `tolerance` seconds.
    package static func clock(skew: Double?, server: String, tolerance: Double = 60) -> DoctorFinding {
        guard let skew else { return DoctorFinding("clock", .warning, "\(server) sent no Date header: cannot compare clocks") }
        let rounded = Int(skew.rounded())
        if abs(skew) > tolerance {
            return DoctorFinding("clock", .warning, "this clock is \(abs(rounded)) s \(skew > 0 ? "ahead of" : "behind") the server's: key-value changes are ordered by time",
                                 fix: "turn on time synchronisation: `sudo timedatectl set-ntp true`")
        }
        return DoctorFinding("clock", .ok, "within \(max(1, abs(rounded))) s of the server's")
    }

    /// The daemon's folder sync: fails when its passes keep failing (``SyncHealthReport/isFailing``),
    /// with the last error; warns after a failure or two.
    package static func sync(_ report: SyncHealthReport, now: Date = Date()) -> DoctorFinding {
        guard report.consecutiveFailures > 0 else {
            let last = report.lastSuccess.map { " (last pass \(Int(max(0, now.timeIntervalSince($0)).rounded())) s ago)" } ?? " (no pass has finished yet)"
            return DoctorFinding("sync", .ok, "\(report.folder) syncs\(last)")
        }
        let since = report.failingSince.map { " for \(Int(max(0, now.timeIntervalSince($0)).rounded())) s" } ?? ""
        let error = report.lastError ?? "no error was kept"
        let refused = error.localizedCaseInsensitiveContains("authenticat") || error.localizedCaseInsensitiveContains("token")
        let fix = refused ? "sign in again: `ubiq account login --server URL --user NAME`" : "look at the daemon's log (`journalctl --user -u ubiquity-daemon` or its terminal)"
        guard report.isFailing else {
            return DoctorFinding("sync", .warning, "the last pass of \(report.folder) failed (it is retried): \(error)", fix: fix)
        }
        return DoctorFinding("sync", .failure, "nothing is uploaded or downloaded: \(report.consecutiveFailures) passes of \(report.folder) failed in a row\(since); the last error: \(error)",
                             fix: fix)
    }
}
