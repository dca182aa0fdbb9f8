// SPDX-License-Identifier: Apache-2.0
import CFuse
import CUbiquityShims
import Glibc
import UbiquityCore

/// Files: open, create, read, write, flush, release, fsync; and what opening an evicted file
/// asks of sync (reading one while it downloads: MountFileSystem+Arrivals.swift).
extension MountFileSystem {
    // MARK: Evicted files

    /// Waits for sync to bring back the evicted file at `path`: 0 or errno (EIO offline or
    /// after ``Configuration/fetchTimeout``).
    func materialize(_ path: String) -> Int32 {
        let delegate = self.delegate
        return wait(configuration.fetchTimeout) { try await delegate.materialize(path) }
    }

    /// Replaces the evicted file at `path` by an empty file with `mode` (an `O_TRUNC` open, a
    /// truncation to nothing): the next version is what is written, not a conflict.
    func replaceByEmptyFile(_ path: String, mode: mode_t) -> Int32 {
        let root = self.root
        let at = Self.at(path)
        return replacePlaceholder(path) {
            let fd = openat(root, at, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode & 0o7777)
            guard fd >= 0 else { throw UbiquityError.posix("open", path: path) }
            fchmod(fd, mode & 0o7777)
            close(fd)
        }
    }

    /// Waits for sync to run `replace` in place of the evicted file at `path`, then remove its
    /// stub (on the disk, as `replace` works; the kernel is told to forget the stub's name):
    /// 0 or errno.
    func replacePlaceholder(_ path: String, _ replace: @escaping @Sendable () throws -> Void) -> Int32 {
        let delegate = self.delegate
        let root = self.root
        let stub = Placeholder.stubPath(for: path)
        let error = wait(configuration.fetchTimeout) {
            try await delegate.replacePlaceholder(path) {
                try replace()
                unlinkat(root, stub, 0)
            }
        }
        forgetOnDisk(stub)
        return error
    }

    /// Tells the kernel to forget the name at `path` (changed on the disk, not through it).
    func forgetOnDisk(_ path: String) {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let name = parts.last else { return }
        let parent = nodes.withLock { table -> UInt64? in
            var id = MountNodeTable.rootID
            for part in parts.dropLast() {
                guard let child = table.child(part, in: id) else { return nil }
                id = child
            }
            return id
        }
        if let parent { invalidations.forget(name, in: parent) }
    }

    /// Makes the evicted file at `path` ready for an open with `flags` in the documents view:
    /// a write that truncates replaces it, anything else waits for its content. 0 or errno.
    func prepareDataless(_ path: String, flags: Int32, mode: mode_t) -> Int32 {
        let writes = flags & O_ACCMODE != O_RDONLY
        let error = writes && flags & O_TRUNC != 0 ? replaceByEmptyFile(path, mode: mode) : materialize(path)
        guard error == 0 else { return error }
        return rawStat(path) == nil ? EIO : 0  // sync answered, but nothing is there
    }

    // MARK: Opening

    /// The flags a file on disk is opened with for the kernel's `flags`: creation is the
    /// kernel's business (done by then), links are never followed past the mount.
    static func diskFlags(_ flags: Int32) -> Int32 {
        (flags & ~(O_CREAT | O_EXCL | O_NOCTTY)) | O_CLOEXEC
    }

    func open(_ request: fuse_req_t, _ id: UInt64, _ file: UnsafeMutablePointer<fuse_file_info>) {
        guard let path = nodes.withLock({ $0.path(of: id) }) else { return _ = fuse_reply_err(request, ESTALE) }
        let flags = file.pointee.flags
        if case .dataless(let st, _) = resolve(path, in: view(request)) {
            if flags & O_ACCMODE == O_RDONLY {
                return replyArriving(request, path, file)  // read while it downloads (MountFileSystem+Arrivals.swift)
            }
            // the content is put in place under the name (a new node), then the kernel is told
            // its node is stale: it looks the name up again and opens the file itself, so no
            // two nodes of the kernel stand for one file
            let error = prepareDataless(path, flags: flags, mode: st.st_mode)
            return _ = fuse_reply_err(request, error == 0 ? ESTALE : error)
        }
        let fd = openat(root, Self.at(path), Self.diskFlags(flags))
        guard fd >= 0 else { return _ = fuse_reply_err(request, errno) }
        if flags & O_TRUNC != 0, flags & O_ACCMODE != O_RDONLY { told(.modified, path) }
        file.pointee.fh = UInt64(fd)
        // every change reaches the file through the mount: what the kernel cached is still true
        file.pointee.keep_cache = 1
        if fuse_reply_open(request, file) != 0 { close(fd) }
    }

    func create(_ request: fuse_req_t, _ parent: UInt64, _ name: String, _ mode: mode_t, _ file: UnsafeMutablePointer<fuse_file_info>) {
        guard let path = nodes.withLock({ $0.path(of: name, in: parent) }) else { return _ = fuse_reply_err(request, ESTALE) }
        let flags = file.pointee.flags
        let view = view(request)
        if case .dataless(let st, _) = resolve(path, in: view) {
            // the kernel did not know the name yet: an open of the evicted file
            guard flags & O_EXCL == 0 else { return _ = fuse_reply_err(request, EEXIST) }
            let error = prepareDataless(path, flags: flags, mode: st.st_mode)
            return _ = fuse_reply_err(request, error == 0 ? ESTALE : error)  // looked up again (see open)
        }
        let fd = openat(root, Self.at(path), (flags & ~O_NOCTTY) | O_CLOEXEC, mode & 0o7777)
        guard fd >= 0 else { return _ = fuse_reply_err(request, errno) }
        if flags & O_CREAT != 0 { fchmod(fd, mode & 0o7777) }  // the kernel applied the caller's umask; not the daemon's too
        var st = stat()
        guard fstat(fd, &st) == 0, let id = nodes.withLock({ $0.lookUp(name, in: parent) }) else {
            let error = errno
            close(fd)
            return _ = fuse_reply_err(request, error == 0 ? ESTALE : error)
        }
        noteOwnStubChange(name, in: parent, view: view)
        told(.created, path)
        var entry = fuse_entry_param()
        entry.ino = id
        entry.attr = st
        entry.attr_timeout = configuration.cacheSeconds
        entry.entry_timeout = configuration.cacheSeconds
        file.pointee.fh = UInt64(fd)
        file.pointee.keep_cache = 1
        if fuse_reply_create(request, &entry, file) != 0 {
            close(fd)
            nodes.withLock { $0.unlookUp(id) }
        }
    }

    // MARK: Bytes

    func read(_ request: fuse_req_t, size: Int, offset: off_t, _ file: UnsafeMutablePointer<fuse_file_info>) {
        let fd = Int32(file.pointee.fh)
        if answerArriving(request, fd, offset: offset, size: size) { return }  // still downloading (MountFileSystem+Arrivals.swift)
        _ = ub_fuse_reply_fd(request, fd, offset, size)
    }

    func write(_ request: fuse_req_t, _ id: UInt64, _ buffers: UnsafeMutablePointer<fuse_bufvec>, offset: off_t, _ file: UnsafeMutablePointer<fuse_file_info>) {
        let written = ub_fuse_write_to_fd(buffers, Int32(file.pointee.fh), offset)
        if written < 0 { return _ = fuse_reply_err(request, Int32(-written)) }
        told(.modified, node: id)
        _ = fuse_reply_write(request, written)
    }

    func flush(_ request: fuse_req_t, _ file: UnsafeMutablePointer<fuse_file_info>) {
        // as close(2) of the caller's descriptor would: errors of delayed writes surface here
        let copy = dup(Int32(file.pointee.fh))
        let result = copy < 0 ? -1 : close(copy)
        _ = fuse_reply_err(request, result == 0 ? 0 : errno)
    }

    func release(_ request: fuse_req_t, _ id: UInt64, _ file: UnsafeMutablePointer<fuse_file_info>) {
        closeHandle(Int32(file.pointee.fh))
        // as IN_CLOSE_WRITE: the last close of a file opened for writing
        if file.pointee.flags & O_ACCMODE != O_RDONLY { told(.closedAfterWriting, node: id) }
        _ = fuse_reply_err(request, 0)
    }

    func fsync(_ request: fuse_req_t, dataOnly: Bool, _ file: UnsafeMutablePointer<fuse_file_info>) {
        let fd = Int32(file.pointee.fh)
        let result = dataOnly ? fdatasync(fd) : Glibc.fsync(fd)
        _ = fuse_reply_err(request, result == 0 ? 0 : errno)
    }

    func fallocate(_ request: fuse_req_t, _ id: UInt64, mode: Int32, offset: off_t, length: off_t, _ file: UnsafeMutablePointer<fuse_file_info>) {
        let result = ub_fallocate(Int32(file.pointee.fh), mode, offset, length)
        if result == 0 { told(.modified, node: id) }
        _ = fuse_reply_err(request, result == 0 ? 0 : errno)
    }
}
