// SPDX-License-Identifier: Apache-2.0
import CUbiquityShims
import Foundation
import Glibc
import Synchronization
import UbiquityCore

/// Mutual exclusion between processes without the daemon: open-file-description byte-range
/// locks on one lock file, at offsets derived from each item's canonical path.
///
/// Each path has three bytes: the item itself (shared for reads, exclusive for writes), a
/// "something inside is being read" intention and a "something inside is being written"
/// intention. An access takes the item byte and the matching intention byte of every ancestor;
/// deleting/moving/replacing a folder takes both intention bytes of the folder exclusively, a
/// read `forUploading` the write-intention byte. That gives Apple's rules — readers share,
/// writers exclude, a folder delete covers its subtree, a plain folder write does not — across
/// processes. Bytes are taken in offset order (so two processes cannot deadlock) with a
/// non-blocking attempt and a bounded back-off, so a time-out is an error, never a hang.
///
/// Claims with the same purpose identifier share locks (nested coordination is allowed).
/// Presenters in other processes are not messaged in this mode: that needs the daemon.
package final class InterprocessLocks: Sendable {
    private struct Held { var shared = 0; var exclusive = 0 }
    private struct PurposeLocks { var fd: Int32; var held: [Int64: Held] = [:] }
    private let table = Mutex<[String: PurposeLocks]>([:])
    /// Open descriptors of the lock file that hold no locks, reused to avoid an open per claim.
    private let spare = Mutex<[Int32]>([])
    private let lockFile: String

    package init(lockFile: String) {
        self.lockFile = lockFile
    }

    /// The byte-range requests for `locks`: offset → exclusive?, sorted by offset. The root
    /// folder takes no intention bytes (coordinating the deletion of `/` is not supported).
    package static func requests(for locks: [ItemLock]) -> [(offset: Int64, exclusive: Bool)] {
        var wanted: [Int64: Bool] = [:]
        func want(_ offset: Int64, _ exclusive: Bool) { wanted[offset] = (wanted[offset] ?? false) || exclusive }
        for lock in locks {
            // One pass over the path: the FNV-1a state at each "/" is the hash of that ancestor.
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            var index = 0
            for byte in lock.path.utf8 {
                if byte == UInt8(ascii: "/"), index > 0 {
                    want(offset(of: hash) + (lock.mode.isWrite ? 2 : 1), false)
                }
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
                index += 1
            }
            let base = offset(of: hash)
            want(base, lock.mode.isWrite)
            switch lock.mode {
            case .subtreeWrite: want(base + 1, true); want(base + 2, true)
            case .subtreeRead: want(base + 2, true)
            default: break
            }
        }
        return wanted.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    private static func offset(of hash: UInt64) -> Int64 { Int64(bitPattern: (hash & ((1 << 58) - 1)) << 2) }

    /// Takes the byte locks for `locks` on behalf of `purpose`, waiting until `deadline`.
    package func acquire(_ locks: [ItemLock], purpose: String, deadline: ContinuousClock.Instant) throws {
        try acquire(Self.requests(for: locks), describing: locks.first?.path ?? "?", purpose: purpose, deadline: deadline)
    }

    /// Takes precomputed byte locks (see ``requests(for:)``).
    package func acquire(_ wanted: [(offset: Int64, exclusive: Bool)], describing path: String, purpose: String,
                         deadline: ContinuousClock.Instant) throws {
        var taken: [(Int64, Bool)] = []
        var delay = 20  // microseconds
        var index = 0
        while index < wanted.count {
            let (offset, exclusive) = wanted[index]
            let result: Int32 = try table.withLock { table in
                if table[purpose] == nil {
                    var fd = spare.withLock { $0.popLast() } ?? -1
                    if fd < 0 { fd = open(lockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0o600) }
                    guard fd >= 0 else { throw UbiquityError.posix("open", path: lockFile) }
                    table[purpose] = PurposeLocks(fd: fd)
                }
                // in place: a copy of the entry would copy its `held` table at every byte (a
                // claim of 500 files took O(n²) time)
                let held = table[purpose]!.held[offset] ?? Held()
                let covered = exclusive ? held.exclusive > 0 : (held.shared > 0 || held.exclusive > 0)
                if !covered {
                    if ub_ofd_lock(table[purpose]!.fd, 0, Int16(exclusive ? F_WRLCK : F_RDLCK), offset, 1) != 0 {
                        return errno
                    }
                }
                if exclusive {
                    table[purpose]!.held[offset, default: Held()].exclusive += 1
                } else {
                    table[purpose]!.held[offset, default: Held()].shared += 1
                }
                return 0
            }
            if result == 0 {
                taken.append((offset, exclusive))
                index += 1
                delay = 20
                continue
            }
            guard result == EAGAIN || result == EACCES || result == EINTR else {
                release(taken.map { (offset: $0.0, exclusive: $0.1) }, purpose: purpose)
                throw UbiquityError.posix("fcntl(F_OFD_SETLK)", path: lockFile, errno: result)
            }
            if ContinuousClock.now >= deadline {
                release(taken.map { (offset: $0.0, exclusive: $0.1) }, purpose: purpose)
                throw UbiquityError(.timedOut,
                    "another process held a coordinated access to '\(path)' past the time-out (inter-process lock on \(lockFile))")
            }
            usleep(UInt32(delay))
            delay = min(delay * 2, 2000)
        }
    }

    /// Releases what ``acquire(_:purpose:deadline:)`` took.
    package func release(_ locks: [ItemLock], purpose: String) {
        release(Self.requests(for: locks), purpose: purpose)
    }

    /// Releases precomputed byte locks.
    package func release(_ taken: [(offset: Int64, exclusive: Bool)], purpose: String) {
        table.withLock { table in
            // taken out of the table, so that its `held` table is changed in place (not copied)
            guard var entry = table.removeValue(forKey: purpose) else { return }
            if entry.held.count == taken.count && taken.allSatisfy({ entry.held[$0.offset].map { $0.shared + $0.exclusive == 1 } ?? false }) {
                // The common case: this claim is the purpose's only holder — one unlock of everything.
                _ = ub_ofd_lock(entry.fd, 0, Int16(F_UNLCK), 0, 0)
                entry.held.removeAll()
            }
            for (offset, exclusive) in taken.reversed() {
                guard var held = entry.held[offset] else { continue }
                if exclusive { held.exclusive -= 1 } else { held.shared -= 1 }
                if held.exclusive == 0 && held.shared == 0 {
                    _ = ub_ofd_lock(entry.fd, 0, Int16(F_UNLCK), offset, 1)
                    entry.held.removeValue(forKey: offset)
                } else {
                    if exclusive && held.exclusive == 0 { _ = ub_ofd_lock(entry.fd, 0, Int16(F_RDLCK), offset, 1) }
                    entry.held[offset] = held
                }
            }
            if entry.held.isEmpty {
                let kept = spare.withLock { spare -> Bool in
                    guard spare.count < 16 else { return false }
                    spare.append(entry.fd)
                    return true
                }
                if !kept { close(entry.fd) }
            } else {
                table[purpose] = entry
            }
        }
    }
}
