// SPDX-License-Identifier: Apache-2.0
import CFuse
import Foundation
import Glibc
import Synchronization
import UbiquityCore

/// Reading an evicted file while it downloads: an open for reading answers as soon as the
/// download's partial file has its first bytes, and each read waits only for its own bytes
/// (or, far ahead of the download, fetches them by range).
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

    /// How far ahead of a download a read fetches its own bytes instead of waiting (the
    /// download covers less in the time of one request).
    static let farAhead: Int64 = 4 << 20

    /// Answers a read of `[offset, offset + size)` of the file open as `fd` while it downloads:
    /// far ahead of the download with the bytes fetched for it, else once the download has
    /// them; false when the file is complete (the caller reads it as any other).
    func answerArriving(_ request: fuse_req_t, _ fd: Int32, offset: off_t, size: Int) -> Bool {
        guard let arrival = arriving.withLock({ $0[fd] }) else { return false }
        let range = Int64(offset)..<(Int64(offset) + Int64(size))
        if range.lowerBound > arrival.available + Self.farAhead, let reader = arrival.rangeReader {
            let fetched = Mutex<Data?>(nil)
            let error = wait(configuration.fetchTimeout) {
                let bytes = try await reader(range)
                fetched.withLock { $0 = bytes }
            }
            if error == 0, let bytes = fetched.withLock({ $0 }) {
                bytes.withUnsafeBytes { _ = fuse_reply_buf(request, $0.baseAddress, $0.count) }
                return true
            }
            // the range failed: the read waits for the download as any other
        }
        switch arrival.wait(through: range.upperBound, stall: configuration.fetchTimeout) {
        case .ready: return false
        case .finished:
            arriving.withLock { _ = $0.removeValue(forKey: fd) }
            return false
        case .failed(let error):
            _ = fuse_reply_err(request, error)
            return true
        case .stalled:
            _ = fuse_reply_err(request, EIO)
            return true
        }
    }

    /// Closes a file handle's descriptor (and forgets its download, if it had one).
    func closeHandle(_ fd: Int32) {
        arriving.withLock { _ = $0.removeValue(forKey: fd) }
        close(fd)
    }
}
