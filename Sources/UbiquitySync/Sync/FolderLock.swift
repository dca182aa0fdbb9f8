// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import UbiquityCore

/// An exclusive `flock` on a file, held for as long as the value lives or until
/// ``release()``: one sync engine per folder (a second daemon on the same folder is refused).
package final class FolderLock: Sendable {
    /// The lock file.
    package let path: String
    /// The locked file's descriptor; -1 once released.
    private let descriptor: Mutex<Int32>

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
        descriptor = Mutex(fd)
    }

    /// Gives the lock up now (a stopped engine whose tasks still hold it for a moment).
    package func release() {
        descriptor.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    deinit { release() }
}
