// SPDX-License-Identifier: Apache-2.0
import CFuse
import Glibc

/// libfuse's table of low-level operations: C functions that find the file system in the
/// session's user data and call its method. Operations left out (locks, access) are the
/// kernel's: POSIX and BSD locks are kept by the kernel for the mount, permissions are checked
/// by the kernel against the attributes (`default_permissions`).
extension MountFileSystem {
    /// The file system a request is for.
    static func of(_ request: fuse_req_t?) -> MountFileSystem {
        Unmanaged<MountFileSystem>.fromOpaque(fuse_req_userdata(request)!).takeUnretainedValue()
    }

    /// The operations.
    static func operations() -> fuse_lowlevel_ops {
        var ops = fuse_lowlevel_ops()
        ops.`init` = { userdata, connection in
            guard let connection else { return }
            // splice where the kernel can, O_TRUNC with the open (so truncating an evicted file
            // is known as such), large writes
            let wanted = UInt32(FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE | FUSE_CAP_SPLICE_READ | FUSE_CAP_ATOMIC_O_TRUNC)
            connection.pointee.want |= connection.pointee.capable & wanted
            connection.pointee.max_write = 1 << 20
        }
        ops.lookup = { request, parent, name in MountFileSystem.of(request).lookup(request!, parent, String(cString: name!)) }
        ops.forget = { request, id, count in
            MountFileSystem.of(request).forget(id, count)
            fuse_reply_none(request)
        }
        ops.forget_multi = { request, count, forgets in
            let fs = MountFileSystem.of(request)
            for index in 0..<count { fs.forget(forgets![index].ino, forgets![index].nlookup) }
            fuse_reply_none(request)
        }
        ops.getattr = { request, id, file in MountFileSystem.of(request).getattr(request!, id, file) }
        ops.setattr = { request, id, wanted, fields, file in MountFileSystem.of(request).setattr(request!, id, wanted!.pointee, fields, file) }
        ops.readlink = { request, id in MountFileSystem.of(request).readlink(request!, id) }
        ops.mknod = { request, parent, name, mode, device in MountFileSystem.of(request).mknod(request!, parent, String(cString: name!), mode, device) }
        ops.mkdir = { request, parent, name, mode in MountFileSystem.of(request).mkdir(request!, parent, String(cString: name!), mode) }
        ops.unlink = { request, parent, name in MountFileSystem.of(request).remove(request!, parent, String(cString: name!), folder: false) }
        ops.rmdir = { request, parent, name in MountFileSystem.of(request).remove(request!, parent, String(cString: name!), folder: true) }
        ops.symlink = { request, target, parent, name in MountFileSystem.of(request).symlink(request!, String(cString: target!), parent, String(cString: name!)) }
        ops.rename = { request, parent, name, newParent, newName, flags in
            MountFileSystem.of(request).rename(request!, parent, String(cString: name!), newParent, String(cString: newName!), flags: flags)
        }
        ops.link = { request, id, parent, name in MountFileSystem.of(request).link(request!, id, parent, String(cString: name!)) }
        ops.open = { request, id, file in MountFileSystem.of(request).open(request!, id, file!) }
        ops.create = { request, parent, name, mode, file in MountFileSystem.of(request).create(request!, parent, String(cString: name!), mode, file!) }
        ops.read = { request, _, size, offset, file in MountFileSystem.of(request).read(request!, size: size, offset: offset, file!) }
        ops.write_buf = { request, id, buffers, offset, file in MountFileSystem.of(request).write(request!, id, buffers!, offset: offset, file!) }
        ops.flush = { request, _, file in MountFileSystem.of(request).flush(request!, file!) }
        ops.release = { request, id, file in MountFileSystem.of(request).release(request!, id, file!) }
        ops.fsync = { request, _, dataOnly, file in MountFileSystem.of(request).fsync(request!, dataOnly: dataOnly != 0, file!) }
        ops.fallocate = { request, id, mode, offset, length, file in MountFileSystem.of(request).fallocate(request!, id, mode: mode, offset: offset, length: length, file!) }
        ops.opendir = { request, id, file in MountFileSystem.of(request).opendir(request!, id, file!) }
        ops.readdir = { request, id, size, offset, file in MountFileSystem.of(request).readdir(request!, id, size: size, offset: Int(offset), file: file!, plus: false) }
        ops.readdirplus = { request, id, size, offset, file in MountFileSystem.of(request).readdir(request!, id, size: size, offset: Int(offset), file: file!, plus: true) }
        ops.releasedir = { request, _, file in MountFileSystem.of(request).releasedir(request!, file!) }
        ops.fsyncdir = { request, _, _, _ in fuse_reply_err(request, 0) }
        ops.statfs = { request, _ in MountFileSystem.of(request).statfs(request!) }
        ops.setxattr = { request, id, name, value, size, flags in MountFileSystem.of(request).setxattr(request!, id, String(cString: name!), value, size: size, flags: flags) }
        ops.getxattr = { request, id, name, size in MountFileSystem.of(request).getxattr(request!, id, String(cString: name!), size: size) }
        ops.listxattr = { request, id, size in MountFileSystem.of(request).listxattr(request!, id, size: size) }
        ops.removexattr = { request, id, name in MountFileSystem.of(request).removexattr(request!, id, String(cString: name!)) }
        return ops
    }
}
