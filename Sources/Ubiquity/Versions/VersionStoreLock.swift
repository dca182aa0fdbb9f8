// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import UbiquityCore

/// An exclusive `flock(2)` on a lock file, serialising writers of the version store across
/// threads and processes (each acquisition opens its own file description, so threads of one
/// process exclude each other too). Never nest two acquisitions of the same lock.
enum VersionStoreLock {
    /// Runs `body` while holding the lock on the file at `path` (created if missing).
    static func withLock<T>(_ path: String, _ body: () throws -> T) throws -> T {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: path) }
        defer { close(fd) }  // closing the descriptor releases the lock
        while flock(fd, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            throw UbiquityError.posix("flock", path: path)
        }
        return try body()
    }
}
