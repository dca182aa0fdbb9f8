// SPDX-License-Identifier: Apache-2.0
import CUbiquityShims
import Foundation
import Glibc

/// Folders and files only their user may reach (issue 24, findings 7 and 8; `docs/threat-model.md`):
/// the runtime folder with the daemon's sockets, and the state with journals, indexes, key-value
/// stores and the server's data. Made 0700 and 0600 whatever the umask.
public enum PrivateFolder {
    /// Makes sure `path` is this user's private folder: created (with its parents) mode 0700 when
    /// missing; refused when it is a symbolic link or anything but a folder, or belongs to another
    /// user; when it is writable by its group or others, refused with `strict` (a folder for
    /// sockets: another user could have put one there), else tightened to 0700.
    /// - Throws: `permissionDenied` naming the folder and what is wrong, `io` when it cannot be made.
    public static func ensure(_ path: String, strict: Bool = false) throws {
        var st = stat()
        if lstat(path, &st) != 0 {
            guard errno == ENOENT else { throw UbiquityError.posix("lstat", path: path) }
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw UbiquityError(.io, "cannot create directory '\(path)'", underlying: error)
            }
            chmod(path, 0o700)  // whatever the umask
            guard lstat(path, &st) == 0 else { throw UbiquityError.posix("lstat", path: path) }
        }
        if (st.st_mode & S_IFMT) == S_IFLNK {
            throw UbiquityError(.permissionDenied, "'\(path)' is a symbolic link, not a private folder: remove it (or set XDG_RUNTIME_DIR)")
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else {
            throw UbiquityError(.permissionDenied, "'\(path)' is not a folder: remove it")
        }
        let uid = getuid()
        if st.st_uid != uid {
            throw UbiquityError(.permissionDenied, "'\(path)' belongs to user \(st.st_uid), not to you (user \(uid)): refusing to keep private state there; remove it or set XDG_RUNTIME_DIR / XDG_STATE_HOME")
        }
        if st.st_mode & 0o077 != 0 {
            if strict && st.st_mode & 0o022 != 0 {
                throw UbiquityError(.permissionDenied, "'\(path)' is writable by others (mode \(String(st.st_mode & 0o777, radix: 8))): another user could have put a socket there; remove it and start again")
            }
            guard chmod(path, 0o700) == 0 else { throw UbiquityError.posix("chmod", path: path) }
        }
    }

    /// Prepares the private file `path` (a database): its folder created mode 0700 when missing
    /// (an existing one is left as it is: it may be any folder the user named), the file created
    /// mode 0600 when missing, or tightened to 0600 with its SQLite companions (`-wal`, `-shm`,
    /// which SQLite creates with the database's mode).
    public static func prepareFile(_ path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty, FileStamp.of(folder) == nil { try ensure(folder) }
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: path) }
        fchmod(fd, 0o600)
        close(fd)
        for companion in [path + "-wal", path + "-shm", path + "-journal"] { chmod(companion, 0o600) }
    }

    /// The user ID of the process serving the connected Unix socket `fd`, or nil when the kernel
    /// does not tell.
    public static func peerUser(of fd: Int32) -> uid_t? {
        var uid: UInt32 = 0
        return ub_peer_uid(fd, &uid) == 0 ? uid_t(uid) : nil
    }
}
