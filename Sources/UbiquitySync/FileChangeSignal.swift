// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization

/// Calls a handler when a file or a file beside it named with one of `suffixes` (an SQLite
/// database's `-wal`, `-journal`) is written, created, replaced or removed: an inotify watch on
/// the file's folder, read by a thread of its own that sleeps in `poll` — no timer, so an idle
/// daemon does nothing. Several events read at once call the handler once.
///
/// ``init(path:suffixes:onChange:)`` returns nil when the watch cannot be made (no inotify, or
/// the folder is missing): the caller then polls.
final class FileChangeSignal: Sendable {
    /// Written once to stop the thread (the read end is polled with the inotify descriptor).
    private let stopPipe: (read: Int32, write: Int32)
    private let stopped = Atomic<Bool>(false)

    /// Watches `path` (and `path + suffix` for each of `suffixes`); `onChange` runs on the
    /// watcher's thread.
    init?(path: String, suffixes: [String] = ["-wal", "-journal"], onChange: @escaping @Sendable () -> Void) {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        let base = url.lastPathComponent
        let names = Set([base] + suffixes.map { base + $0 })
        let fd = inotify_init1(Int32(IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM)
        var ends: [Int32] = [-1, -1]
        guard inotify_add_watch(fd, folder, mask) >= 0, pipe(&ends) == 0 else {
            close(fd)
            return nil
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        stopPipe = (ends[0], ends[1])
        let thread = Thread { [inotify = fd, stopRead = ends[0]] in
            Self.watch(inotify: inotify, stop: stopRead, names: names, onChange: onChange)
            close(inotify)
            close(stopRead)
        }
        thread.name = "ubiquity.file-change-signal"
        thread.start()
    }

    /// Stops the thread (once; also when released).
    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
        close(stopPipe.write)
    }

    deinit { stop() }

    /// Whether one inotify event calls the handler: it names one of `names`, or the queue
    /// overflowed or the watch went away (something may have been missed).
    static func matters(mask: UInt32, name: String?, names: Set<String>) -> Bool {
        if mask & UInt32(IN_Q_OVERFLOW) != 0 || mask & UInt32(IN_IGNORED) != 0 { return true }
        guard let name else { return false }
        return names.contains(name)
    }

    /// The thread's loop: waits for events or the stop byte; calls `onChange` after each read
    /// that names one of `names` (or reports an overflow: something may have been missed).
    private static func watch(inotify: Int32, stop: Int32, names: Set<String>, onChange: @Sendable () -> Void) {
        let capacity = 16 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: MemoryLayout<inotify_event>.alignment)
        defer { buffer.deallocate() }
        var fds = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }
            guard fds[0].revents != 0 else { continue }
            let count = read(inotify, buffer, capacity)
            if count <= 0 {
                if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                return
            }
            var offset = 0
            var matched = false
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                let nameStart = offset + MemoryLayout<inotify_event>.size
                let name = event.len > 0 ? String(cString: buffer.advanced(by: nameStart).assumingMemoryBound(to: CChar.self)) : nil
                if matters(mask: event.mask, name: name, names: names) { matched = true }
                offset = nameStart + Int(event.len)
            }
            if matched { onChange() }
        }
    }
}
