// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// What `stat(2)` says about an item, enough to tell whether it changed: identity, size, kind
/// and modification/change times to the nanosecond.
public struct FileStamp: Hashable, Sendable {
    /// Device and inode.
    public var device: UInt64, inode: UInt64
    /// Size in bytes.
    public var size: Int64
    /// Modification and status-change times in nanoseconds since 1970.
    public var modificationNanoseconds: Int64, changeNanoseconds: Int64
    /// Whether the item is a directory, or a symbolic link (not followed).
    public var isDirectory: Bool, isSymbolicLink: Bool
    /// The permission bits.
    public var mode: UInt32

    /// The modification time as a `Date`.
    public var modificationDate: Date { Date(timeIntervalSince1970: Double(modificationNanoseconds) / 1e9) }

    /// The stamp of the item at `path` (not following a final symbolic link), or nil if missing.
    public static func of(_ path: String) -> FileStamp? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return FileStamp(st)
    }

    /// The stamp of an open file.
    public static func of(descriptor fd: Int32) -> FileStamp? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return FileStamp(st)
    }

    /// A stamp from its parts.
    public init(device: UInt64, inode: UInt64, size: Int64, modificationNanoseconds: Int64, changeNanoseconds: Int64,
                isDirectory: Bool = false, isSymbolicLink: Bool = false, mode: UInt32 = 0o644) {
        self.device = device
        self.inode = inode
        self.size = size
        self.modificationNanoseconds = modificationNanoseconds
        self.changeNanoseconds = changeNanoseconds
        self.isDirectory = isDirectory
        self.isSymbolicLink = isSymbolicLink
        self.mode = mode
    }

    init(_ st: stat) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        modificationNanoseconds = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
        changeNanoseconds = Int64(st.st_ctim.tv_sec) * 1_000_000_000 + Int64(st.st_ctim.tv_nsec)
        isDirectory = (st.st_mode & S_IFMT) == S_IFDIR
        isSymbolicLink = (st.st_mode & S_IFMT) == S_IFLNK
        mode = UInt32(st.st_mode & 0o7777)
    }

    /// Whether the content may differ: identity, size or modification time changed.
    public func contentDiffers(from other: FileStamp) -> Bool {
        device != other.device || inode != other.inode || size != other.size
            || modificationNanoseconds != other.modificationNanoseconds
    }
}
