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
    /// The birth time in nanoseconds since 1970, when the file system reports one (`statx`): a
    /// freed inode handed out again gets a new one, so it tells a new file from a renamed one.
    /// Not part of the stamp's equality: a stamp made from stored parts may lack it.
    public var birthNanoseconds: Int64?

    /// The modification time as a `Date`.
    public var modificationDate: Date { Date(timeIntervalSince1970: Double(modificationNanoseconds) / 1e9) }

    /// The stamp of the item at `path` (not following a final symbolic link), or nil if missing.
    public static func of(_ path: String) -> FileStamp? {
        var stat = StatX()
        return stat.stat(path, in: AT_FDCWD).map(FileStamp.init)
    }

    /// The stamp of an open file.
    public static func of(descriptor fd: Int32) -> FileStamp? {
        var stat = StatX()
        return stat.stat(descriptor: fd).map(FileStamp.init)
    }

    /// A stamp from its parts.
    public init(device: UInt64, inode: UInt64, size: Int64, modificationNanoseconds: Int64, changeNanoseconds: Int64,
                isDirectory: Bool = false, isSymbolicLink: Bool = false, mode: UInt32 = 0o644, birthNanoseconds: Int64? = nil) {
        self.device = device
        self.inode = inode
        self.size = size
        self.modificationNanoseconds = modificationNanoseconds
        self.changeNanoseconds = changeNanoseconds
        self.isDirectory = isDirectory
        self.isSymbolicLink = isSymbolicLink
        self.mode = mode
        self.birthNanoseconds = birthNanoseconds
    }

    init(_ found: StatX.Result) {
        device = found.device
        inode = found.inode
        size = found.size
        modificationNanoseconds = found.mtimeNanoseconds
        changeNanoseconds = found.ctimeNanoseconds
        birthNanoseconds = found.birthNanoseconds
        isDirectory = found.isDirectory
        isSymbolicLink = found.isSymbolicLink
        mode = found.mode & 0o7777
    }

    /// Whether the stamps agree on everything but the birth time (which one may lack).
    public static func == (lhs: FileStamp, rhs: FileStamp) -> Bool {
        lhs.device == rhs.device && lhs.inode == rhs.inode && lhs.size == rhs.size && lhs.modificationNanoseconds == rhs.modificationNanoseconds
            && lhs.changeNanoseconds == rhs.changeNanoseconds && lhs.isDirectory == rhs.isDirectory && lhs.isSymbolicLink == rhs.isSymbolicLink
            && lhs.mode == rhs.mode
    }

    /// Hashes what ``==`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(device)
        hasher.combine(inode)
        hasher.combine(size)
        hasher.combine(modificationNanoseconds)
        hasher.combine(changeNanoseconds)
        hasher.combine(mode)
    }

    /// Whether the content may differ: identity, size or modification time changed.
    public func contentDiffers(from other: FileStamp) -> Bool {
        device != other.device || inode != other.inode || size != other.size
            || modificationNanoseconds != other.modificationNanoseconds
    }
}
