// SPDX-License-Identifier: Apache-2.0
import CFuse
import CUbiquityShims
import Glibc
import UbiquityCore

/// Extended attributes (`user.*`, the skip-backup attribute): those of the file on disk. An
/// evicted file's are its stub's (the stub keeps the document's); changing one brings the
/// content back first, so sync sees an ordinary change of the file.
extension MountFileSystem {
    /// Runs `body` with a path naming exactly the item at `path` on disk (its descriptor's
    /// `/proc/self/fd` link, so nothing outside the folder is reached), or answers errno.
    /// Links have no user attributes: `nil` is passed.
    private func withItem(_ path: String, _ body: (String?) -> Int) -> Int {
        let fd = openat(root, Self.at(path), UB_O_PATH | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return -Int(errno) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return -Int(errno) }
        if (st.st_mode & S_IFMT) == S_IFLNK { return body(nil) }
        return body("/proc/thread-self/fd/\(fd)")  // this thread's table (the file system's own)
    }

    /// The path on disk an attribute request of node `id` reads (`changes`: writes, which bring
    /// an evicted file's content first), or nil once the request is answered with the error.
    private func attributePath(_ request: fuse_req_t, _ id: UInt64, changes: Bool) -> String? {
        guard let path = nodes.withLock({ $0.path(of: id) }) else {
            _ = fuse_reply_err(request, ESTALE)
            return nil
        }
        guard case .dataless = resolve(path, in: view(request)) else { return path }
        if !changes { return Placeholder.stubPath(for: path) }
        let error = materialize(path)
        guard error == 0 else {
            _ = fuse_reply_err(request, error)
            return nil
        }
        return path
    }

    func getxattr(_ request: fuse_req_t, _ id: UInt64, _ name: String, size: Int) {
        guard let path = attributePath(request, id, changes: false) else { return }
        var buffer = [UInt8](repeating: 0, count: size)
        let result = withItem(path) { item in
            guard let item else { return -Int(ENODATA) }
            let count = buffer.withUnsafeMutableBytes { ub_getxattr(item, name, $0.baseAddress, size) }
            return count < 0 ? -Int(errno) : count
        }
        if result < 0 { return _ = fuse_reply_err(request, Int32(-result)) }
        if size == 0 { return _ = fuse_reply_xattr(request, result) }
        _ = buffer.withUnsafeBytes { fuse_reply_buf(request, $0.baseAddress?.assumingMemoryBound(to: CChar.self), result) }
    }

    func listxattr(_ request: fuse_req_t, _ id: UInt64, size: Int) {
        guard let path = attributePath(request, id, changes: false) else { return }
        var buffer = [CChar](repeating: 0, count: size)
        let result = withItem(path) { item in
            guard let item else { return 0 }
            let count = buffer.withUnsafeMutableBufferPointer { ub_listxattr(item, $0.baseAddress, size) }
            return count < 0 ? -Int(errno) : count
        }
        if result < 0 { return _ = fuse_reply_err(request, Int32(-result)) }
        if size == 0 { return _ = fuse_reply_xattr(request, result) }
        _ = buffer.withUnsafeBufferPointer { fuse_reply_buf(request, $0.baseAddress, result) }
    }

    func setxattr(_ request: fuse_req_t, _ id: UInt64, _ name: String, _ value: UnsafePointer<CChar>?, size: Int, flags: Int32) {
        guard let path = attributePath(request, id, changes: true) else { return }
        let result = withItem(path) { item in
            guard let item else { return -Int(EPERM) }
            return ub_setxattr(item, name, value, size, flags) == 0 ? 0 : -Int(errno)
        }
        if result == 0 { told(.modified, path) }
        _ = fuse_reply_err(request, Int32(-result))
    }

    func removexattr(_ request: fuse_req_t, _ id: UInt64, _ name: String) {
        guard let path = attributePath(request, id, changes: true) else { return }
        let result = withItem(path) { item in
            guard let item else { return -Int(ENODATA) }
            return ub_removexattr(item, name) == 0 ? 0 : -Int(errno)
        }
        if result == 0 { told(.modified, path) }
        _ = fuse_reply_err(request, Int32(-result))
    }
}
