// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import UbiquityCore

/// An exclusive `flock` on a file, held for as long as the value lives: one sync engine per
/// folder (a second daemon on the same folder is refused).
package final class FolderLock: Sendable {
    /// The lock file.
    package let path: String
    private let descriptor: Int32

    /// Takes the lock or throws `alreadyExists` naming the file.
    package init(path: String) throws {
        self.path = path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: path) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw UbiquityError(.alreadyExists, "another daemon already syncs this folder (it holds the lock '\(path)'); stop it first")
        }
        let pid = Data("\(getpid())\n".utf8)
        ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        descriptor = fd
    }

    deinit { close(descriptor) }
}
