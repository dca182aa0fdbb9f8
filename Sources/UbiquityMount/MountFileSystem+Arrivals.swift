// SPDX-License-Identifier: Apache-2.0
import CFuse
import Glibc
import Synchronization
import UbiquityCore

/// Reading an evicted file while it downloads: an open for reading answers as soon as the
/// download's partial file exists, and each read waits only for its own bytes.
extension MountFileSystem {
    /// What opening an evicted file for reading found.
    enum ArrivingOpen {
        /// The partial file, opened (the handle's descriptor), and its arrival.
        case reading(Int32, ByteArrival)
        /// The download is over, or was not written in order: the file is under its name now
        /// (or gone); the kernel is to look it up again.
        case lookUpAgain
        /// The open fails (errno).
        case failed(Int32)
    }

    /// Starts the download of the evicted file at `path` and opens its partial file once the
    /// first bytes are in it (at most ``Configuration/fetchTimeout`` without progress).
    func openArriving(_ path: String) -> ArrivingOpen {
        let delegate = self.delegate
        let started = Mutex<ByteArrival?>(nil)
        let error = wait(configuration.fetchTimeout) {
            let arrival = try await delegate.stream(path)
            started.withLock { $0 = arrival }
        }
        guard error == 0, let arrival = started.withLock({ $0 }) else { return .failed(error == 0 ? EIO : error) }
        switch arrival.waitForFile(stall: configuration.fetchTimeout) {
        case .ready:
            // the partial file is in the folder (on the disk under the mount); when it has been
            // renamed into place already, the file is simply there
            guard let file = arrival.file, let relative = relativePath(file) else { return .lookUpAgain }
            let fd = openat(root, relative, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { return finished(arrival) }
            return .reading(fd, arrival)
        case .finished: return .lookUpAgain
        case .failed(let error): return .failed(error)
        case .stalled: return .failed(EIO)
        }
    }

    /// The partial file could not be opened (renamed into place, or removed): waits for the
    /// download's end.
    private func finished(_ arrival: ByteArrival) -> ArrivingOpen {
        switch arrival.wait(through: .max, stall: configuration.fetchTimeout) {
        case .failed(let error): return .failed(error)
        case .stalled: return .failed(EIO)
        case .ready, .finished: return .lookUpAgain
        }
    }

    /// `absolute` relative to the mounted folder (nil when outside it).
    func relativePath(_ absolute: String) -> String? {
        guard absolute.hasPrefix(folder + "/") else { return nil }
        return String(absolute.dropFirst(folder.count + 1))
    }

    /// Answers the open `file` of the evicted file at `path` for reading while it downloads.
    func replyArriving(_ request: fuse_req_t, _ path: String, _ file: UnsafeMutablePointer<fuse_file_info>) {
        switch openArriving(path) {
        case .reading(let fd, let arrival):
            arriving.withLock { $0[fd] = arrival }
            file.pointee.fh = UInt64(fd)
            file.pointee.keep_cache = 0
            if fuse_reply_open(request, file) != 0 { closeHandle(fd) }
        case .lookUpAgain:
            _ = fuse_reply_err(request, ESTALE)  // the kernel looks the name up again (see open)
        case .failed(let error):
            _ = fuse_reply_err(request, error)
        }
    }

    /// Waits until the bytes `[offset, offset + size)` of the file open as `fd` are there,
    /// when it is still downloading: 0 or errno.
    func awaitBytes(_ fd: Int32, offset: off_t, size: Int) -> Int32 {
        guard let arrival = arriving.withLock({ $0[fd] }) else { return 0 }
        switch arrival.wait(through: Int64(offset) + Int64(size), stall: configuration.fetchTimeout) {
        case .ready: return 0
        case .finished:
            arriving.withLock { _ = $0.removeValue(forKey: fd) }
            return 0
        case .failed(let error): return error
        case .stalled: return EIO
        }
    }

    /// Closes a file handle's descriptor (and forgets its download, if it had one).
    func closeHandle(_ fd: Int32) {
        arriving.withLock { _ = $0.removeValue(forKey: fd) }
        close(fd)
    }
}
