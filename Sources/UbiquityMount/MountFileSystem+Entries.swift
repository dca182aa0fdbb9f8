// SPDX-License-Identifier: Apache-2.0
import CFuse
import Glibc
import UbiquityCore

/// Names and attributes: lookup, getattr, setattr, readdir, forget.
extension MountFileSystem {
    /// The attributes shown for `resolved` (nil when missing), and how long the kernel may keep
    /// them. The inode number is the file's on disk (an evicted file's, its stub's), not the
    /// node's: it stays the same across the kernel's forgets, as sync's journal expects.
    func attributes(_ resolved: Resolved, id: UInt64) -> (stat, Double)? {
        switch resolved {
        case .present(let st):
            return (st, configuration.cacheSeconds)
        case .dataless(let st, _):
            return (st, 0)
        case .missing:
            return nil
        }
    }

    /// Answers a lookup of `name` in `parent` with its entry (one more lookup of its node).
    func replyEntry(_ request: fuse_req_t, _ name: String, in parent: UInt64, view: MountView) {
        guard let path = nodes.withLock({ $0.path(of: name, in: parent) }) else { return _ = fuse_reply_err(request, ESTALE) }
        let resolved = resolve(path, in: view)
        if case .missing(let error) = resolved { return _ = fuse_reply_err(request, error) }
        guard let id = nodes.withLock({ $0.lookUp(name, in: parent) }), let (st, seconds) = attributes(resolved, id: id) else {
            return _ = fuse_reply_err(request, ESTALE)
        }
        var entry = fuse_entry_param()
        entry.ino = id
        entry.attr = st
        entry.attr_timeout = seconds
        entry.entry_timeout = seconds
        if fuse_reply_entry(request, &entry) != 0 { nodes.withLock { $0.unlookUp(id) } }
    }

    func lookup(_ request: fuse_req_t, _ parent: UInt64, _ name: String) {
        replyEntry(request, name, in: parent, view: view(request))
    }

    func forget(_ id: UInt64, _ count: UInt64) {
        nodes.withLock { $0.forget(id, count: count) }
    }

    func getattr(_ request: fuse_req_t, _ id: UInt64, _ file: UnsafeMutablePointer<fuse_file_info>?) {
        if let file, file.pointee.fh < FolderHandles.firstHandle {
            var st = stat()
            guard fstat(Int32(file.pointee.fh), &st) == 0 else { return _ = fuse_reply_err(request, errno) }
            // a file still downloading has its whole size already (the kernel reads up to it)
            if let total = arriving.withLock({ $0[Int32(file.pointee.fh)] })?.total { st.st_size = Int(total) }
            return _ = fuse_reply_attr(request, &st, configuration.cacheSeconds)
        }
        guard let path = nodes.withLock({ $0.path(of: id) }) else { return _ = fuse_reply_err(request, ESTALE) }
        let resolved = resolve(path, in: view(request))
        if case .missing(let error) = resolved { return _ = fuse_reply_err(request, error) }
        guard let (found, seconds) = attributes(resolved, id: id) else { return _ = fuse_reply_err(request, ENOENT) }
        var st = found
        _ = fuse_reply_attr(request, &st, seconds)
    }

    func setattr(_ request: fuse_req_t, _ id: UInt64, _ wanted: stat, _ fields: Int32, _ file: UnsafeMutablePointer<fuse_file_info>?) {
        guard let path = nodes.withLock({ $0.path(of: id) }) else { return _ = fuse_reply_err(request, ESTALE) }
        let view = view(request)
        var target = path
        if case .dataless(let st, _) = resolve(path, in: view) {
            if fields & FUSE_SET_ATTR_SIZE != 0 {
                // a truncation to nothing replaces the document; any other size needs its bytes
                let error = wanted.st_size == 0 ? replaceByEmptyFile(path, mode: st.st_mode) : materialize(path)
                guard error == 0 else { return _ = fuse_reply_err(request, error) }
            } else {
                target = Placeholder.stubPath(for: path)  // mode and times: the stub keeps them
            }
        }
        let descriptor: Int32? = file.flatMap { $0.pointee.fh < FolderHandles.firstHandle ? Int32($0.pointee.fh) : nil }
        if fields & FUSE_SET_ATTR_MODE != 0 {
            let result = descriptor.map { fchmod($0, wanted.st_mode & 0o7777) } ?? fchmodat(root, Self.at(target), wanted.st_mode & 0o7777, 0)
            guard result == 0 else { return _ = fuse_reply_err(request, errno) }
        }
        if fields & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID) != 0 {
            let uid = fields & FUSE_SET_ATTR_UID != 0 ? wanted.st_uid : uid_t.max
            let gid = fields & FUSE_SET_ATTR_GID != 0 ? wanted.st_gid : gid_t.max
            guard fchownat(root, Self.at(target), uid, gid, AT_SYMLINK_NOFOLLOW) == 0 else { return _ = fuse_reply_err(request, errno) }
        }
        if fields & FUSE_SET_ATTR_SIZE != 0 {
            let result: Int32
            if let descriptor {
                result = ftruncate(descriptor, wanted.st_size)
            } else {
                let fd = openat(root, Self.at(target), O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
                result = fd < 0 ? -1 : ftruncate(fd, wanted.st_size)
                let saved = errno
                if fd >= 0 { close(fd) }
                errno = saved
            }
            guard result == 0 else { return _ = fuse_reply_err(request, errno) }
        }
        if fields & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME) != 0 {
            let omit = timespec(tv_sec: 0, tv_nsec: Int((1 << 30) - 2))  // UTIME_OMIT
            let now = timespec(tv_sec: 0, tv_nsec: Int((1 << 30) - 1))  // UTIME_NOW
            var times = [omit, omit]
            if fields & FUSE_SET_ATTR_ATIME != 0 { times[0] = fields & FUSE_SET_ATTR_ATIME_NOW != 0 ? now : wanted.st_atim }
            if fields & FUSE_SET_ATTR_MTIME != 0 { times[1] = fields & FUSE_SET_ATTR_MTIME_NOW != 0 ? now : wanted.st_mtim }
            let result = descriptor.map { futimens($0, &times) } ?? utimensat(root, Self.at(target), &times, AT_SYMLINK_NOFOLLOW)
            guard result == 0 else { return _ = fuse_reply_err(request, errno) }
        }
        if target != path { forgetOnDisk(target) }  // the stub changed: the daemon's view may have cached it
        told(.modified, path, isDirectory: rawStat(target).map { ($0.st_mode & S_IFMT) == S_IFDIR } ?? false)
        getattr(request, id, file)
    }

    // MARK: Folders

    /// The names of the folder at `path` on disk (without `.` and `..`) with their types
    /// (`d_type`), or errno.
    func rawNames(_ path: String) -> Result<[(name: String, type: UInt8)], Errno> {
        let fd = openat(root, Self.at(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, let stream = fdopendir(fd) else {
            let error = errno
            return .failure(Errno(error))
        }
        defer { closedir(stream) }
        var names: [(name: String, type: UInt8)] = []
        while let entry = Glibc.readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != "." && name != ".." { names.append((name, entry.pointee.d_type)) }
        }
        return .success(names)
    }

    func opendir(_ request: fuse_req_t, _ id: UInt64, _ file: UnsafeMutablePointer<fuse_file_info>) {
        guard let path = nodes.withLock({ $0.path(of: id) }) else { return _ = fuse_reply_err(request, ESTALE) }
        let view = view(request)
        switch rawNames(path) {
        case .failure(let error): _ = fuse_reply_err(request, error.rawValue)
        case .success(let names):
            let handle = folders.withLock { $0.open(.init(path: path, view: view, names: names)) }
            file.pointee.fh = handle
            if fuse_reply_open(request, file) != 0 { folders.withLock { $0.close(handle) } }
        }
    }

    func releasedir(_ request: fuse_req_t, _ file: UnsafeMutablePointer<fuse_file_info>) {
        folders.withLock { $0.close(file.pointee.fh) }
        _ = fuse_reply_err(request, 0)
    }

    /// Answers a readdir (`plus`: with each entry's attributes, a lookup of each).
    func readdir(_ request: fuse_req_t, _ id: UInt64, size: Int, offset: Int, file: UnsafeMutablePointer<fuse_file_info>, plus: Bool) {
        let handle = file.pointee.fh
        guard var listing = folders.withLock({ $0[handle] }) else { return _ = fuse_reply_err(request, EBADF) }
        if offset == 0, case .success(let names) = rawNames(listing.path) {
            // read from the start again (rewinddir): what is there now
            listing = .init(path: listing.path, view: listing.view, names: names)
            folders.withLock { $0[handle] = listing }
        }
        var buffer = [CChar](repeating: 0, count: size)
        var used = 0
        let all: [(name: String, type: UInt8)] = [(".", UInt8(DT_DIR)), ("..", UInt8(DT_DIR))] + zip(listing.entries, listing.types).map { ($0.name, $1) }
        var index = offset
        while index < all.count {
            let (name, type) = all[index]
            let remaining = size - used
            let added: Int
            if plus && name != "." && name != ".." {
                let path = listing.path.isEmpty ? name : listing.path + "/" + name
                let resolved = resolve(path, in: listing.view)
                if case .missing = resolved { index += 1; continue }  // gone since the listing
                guard let child = nodes.withLock({ $0.lookUp(name, in: id) }), let (st, seconds) = attributes(resolved, id: child) else { index += 1; continue }
                var entry = fuse_entry_param()
                entry.ino = child
                entry.attr = st
                entry.attr_timeout = seconds
                entry.entry_timeout = seconds
                added = buffer.withUnsafeMutableBufferPointer { fuse_add_direntry_plus(request, $0.baseAddress! + used, remaining, name, &entry, off_t(index + 1)) }
                if added > remaining { nodes.withLock { $0.unlookUp(child) } }
            } else {
                var st = stat()
                st.st_ino = 1  // not shown: the kernel answers `.` and `..` itself
                st.st_mode = mode_t(type) << 12  // d_type as the kernel reads it back
                if plus {
                    // `.` and `..` in a readdirplus answer: its format, no node (ino 0)
                    var entry = fuse_entry_param()
                    entry.attr = st
                    added = buffer.withUnsafeMutableBufferPointer { fuse_add_direntry_plus(request, $0.baseAddress! + used, remaining, name, &entry, off_t(index + 1)) }
                } else {
                    added = buffer.withUnsafeMutableBufferPointer { fuse_add_direntry(request, $0.baseAddress! + used, remaining, name, &st, off_t(index + 1)) }
                }
            }
            if added > remaining { break }
            used += added
            index += 1
        }
        _ = buffer.withUnsafeBufferPointer { fuse_reply_buf(request, $0.baseAddress, used) }
    }

    func statfs(_ request: fuse_req_t) {
        var st = statvfs()
        guard fstatvfs(root, &st) == 0 else { return _ = fuse_reply_err(request, errno) }
        _ = fuse_reply_statfs(request, &st)
    }
}

/// An errno value as an error.
struct Errno: Error, Sendable {
    let rawValue: Int32
    init(_ value: Int32) { rawValue = value }
}
