// SPDX-License-Identifier: Apache-2.0
import CFuse
import CUbiquityShims
import Glibc
import UbiquityCore

/// Making, removing and renaming names: mkdir, mknod, symlink, link, unlink, rmdir, rename,
/// readlink.
extension MountFileSystem {
    /// When the daemon itself changes a stub, the document's name in the other programs' view
    /// changes with it: the kernel is told to forget what it cached of that name.
    func noteOwnStubChange(_ name: String, in parent: UInt64, view: MountView) {
        guard view == .raw, let document = Placeholder.documentName(ofStub: name) else { return }
        invalidations.forget(document, in: parent)
    }

    /// Runs `make` on the path of `name` in `parent` and answers with the new entry.
    private func makeName(_ request: fuse_req_t, _ parent: UInt64, _ name: String, folder: Bool = false, _ make: (String) -> Int32) {
        guard let path = nodes.withLock({ $0.path(of: name, in: parent) }) else { return _ = fuse_reply_err(request, ESTALE) }
        let view = view(request)
        if view == .documents, case .dataless = resolve(path, in: view) { return _ = fuse_reply_err(request, EEXIST) }
        guard make(Self.at(path)) == 0 else { return _ = fuse_reply_err(request, errno) }
        noteOwnStubChange(name, in: parent, view: view)
        told(.created, path, isDirectory: folder)
        replyEntry(request, name, in: parent, view: view)
    }

    func mkdir(_ request: fuse_req_t, _ parent: UInt64, _ name: String, _ mode: mode_t) {
        makeName(request, parent, name, folder: true) { at in
            guard mkdirat(root, at, mode & 0o7777) == 0 else { return -1 }
            return fchmodat(root, at, mode & 0o7777, 0)
        }
    }

    func mknod(_ request: fuse_req_t, _ parent: UInt64, _ name: String, _ mode: mode_t, _ device: dev_t) {
        makeName(request, parent, name) { at in
            guard mknodat(root, at, mode, device) == 0 else { return -1 }
            return fchmodat(root, at, mode & 0o7777, 0)
        }
    }

    func symlink(_ request: fuse_req_t, _ target: String, _ parent: UInt64, _ name: String) {
        makeName(request, parent, name) { at in symlinkat(target, root, at) }
    }

    func link(_ request: fuse_req_t, _ id: UInt64, _ parent: UInt64, _ name: String) {
        guard let source = nodes.withLock({ $0.path(of: id) }) else { return _ = fuse_reply_err(request, ESTALE) }
        makeName(request, parent, name) { at in linkat(root, Self.at(source), root, at, 0) }
    }

    func readlink(_ request: fuse_req_t, _ id: UInt64) {
        guard let path = nodes.withLock({ $0.path(of: id) }) else { return _ = fuse_reply_err(request, ESTALE) }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlinkat(root, Self.at(path), &buffer, buffer.count - 1)
        guard count >= 0 else { return _ = fuse_reply_err(request, errno) }
        buffer[count] = 0
        _ = fuse_reply_readlink(request, buffer)
    }

    /// Removes `name` in `parent` (`folder`: rmdir); an evicted file's stub goes with its name.
    func remove(_ request: fuse_req_t, _ parent: UInt64, _ name: String, folder: Bool) {
        guard let path = nodes.withLock({ $0.path(of: name, in: parent) }) else { return _ = fuse_reply_err(request, ESTALE) }
        let view = view(request)
        var target = path
        if !folder, case .dataless = resolve(path, in: view) { target = Placeholder.stubPath(for: path) }
        guard unlinkat(root, Self.at(target), folder ? AT_REMOVEDIR : 0) == 0 else { return _ = fuse_reply_err(request, errno) }
        nodes.withLock { $0.remove(name, in: parent) }
        if target != path { forgetOnDisk(target) }  // the stub, which the daemon's view may have cached
        noteOwnStubChange(name, in: parent, view: view)
        told(.deleted, path, isDirectory: folder)
        _ = fuse_reply_err(request, 0)
    }

    func rename(_ request: fuse_req_t, _ parent: UInt64, _ name: String, _ newParent: UInt64, _ newName: String, flags: UInt32) {
        guard let (from, to) = nodes.withLock({ table -> (String, String)? in
            guard let from = table.path(of: name, in: parent), let to = table.path(of: newName, in: newParent) else { return nil }
            return (from, to)
        }) else { return _ = fuse_reply_err(request, ESTALE) }
        let view = view(request)
        let exchange = flags & 2 != 0  // RENAME_EXCHANGE
        let noReplace = flags & 1 != 0  // RENAME_NOREPLACE
        let root = self.root
        // The kernel holds the folders' locks while this waits: nothing here may wait for sync
        // to work through the mount (a download would), only on the disk under it.
        let sourceDataless: Bool
        if view == .documents, case .dataless = resolve(from, in: view) { sourceDataless = true } else { sourceDataless = false }
        let target = view == .documents ? resolve(to, in: view) : .missing(ENOENT)
        if case .dataless = target, noReplace { return _ = fuse_reply_err(request, EEXIST) }
        if exchange && (sourceDataless || { if case .dataless = target { return true } else { return false } }()) {
            return _ = fuse_reply_err(request, EINVAL)  // an evicted file is not exchanged: download it first
        }
        if sourceDataless {
            // an evicted file renamed: its stub is (sync sends the new path only); a file it
            // replaces goes, as it would under a rename
            let result = ub_renameat(root, Placeholder.stubPath(for: from), root, Placeholder.stubPath(for: to), noReplace ? 1 : 0, 0)
            guard result == 0 else { return _ = fuse_reply_err(request, errno) }
            if case .present(let st) = target { unlinkat(root, to, (st.st_mode & S_IFMT) == S_IFDIR ? AT_REMOVEDIR : 0) }
            forgetOnDisk(Placeholder.stubPath(for: from))
            forgetOnDisk(Placeholder.stubPath(for: to))
            nodes.withLock { $0.move(name, in: parent, to: newName, in: newParent) }
            toldRename(from: from, to: to, exchange: false)
            return _ = fuse_reply_err(request, 0)
        }
        if case .dataless = target {
            // renamed over an evicted file (an editor's save): the document's next version
            let error = replacePlaceholder(to) {
                guard ub_renameat(root, from, root, to, 0, 0) == 0 else { throw UbiquityError.posix("rename", path: to) }
            }
            guard error == 0 else { return _ = fuse_reply_err(request, error) }
            nodes.withLock { $0.move(name, in: parent, to: newName, in: newParent) }
            toldRename(from: from, to: to, exchange: false)
            return _ = fuse_reply_err(request, 0)
        }
        guard ub_renameat(root, Self.at(from), root, Self.at(to), noReplace ? 1 : 0, exchange ? 1 : 0) == 0 else {
            return _ = fuse_reply_err(request, errno)
        }
        nodes.withLock { $0.move(name, in: parent, to: newName, in: newParent, exchange: exchange) }
        noteOwnStubChange(name, in: parent, view: view)
        noteOwnStubChange(newName, in: newParent, view: view)
        toldRename(from: from, to: to, exchange: exchange)
        _ = fuse_reply_err(request, 0)
    }
}
