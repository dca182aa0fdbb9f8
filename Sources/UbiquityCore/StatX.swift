// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// `statx(2)` through the C library (Swift's Glibc module does not import it), for birth times.
/// Falls back to `fstatat(2)` (no birth time) when the C library or the kernel lacks it.
package struct StatX: ~Copyable {
    private typealias Function = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UInt32, UnsafeMutableRawPointer) -> Int32

    /// The C library's `statx`, if it has one.
    private static let function: Function? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "statx") else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
    }()

    private static let basicStats: UInt32 = 0x7ff  // STATX_BASIC_STATS
    private static let birthTime: UInt32 = 0x800  // STATX_BTIME
    private static let emptyPath: Int32 = 0x1000  // AT_EMPTY_PATH

    /// What one call found.
    package struct Result {
        /// `st_mode`: the type and permission bits.
        package var mode: UInt32
        /// The device, encoded as `st_dev` is (`makedev`).
        package var device: UInt64
        /// The inode.
        package var inode: UInt64
        /// The size in bytes.
        package var size: Int64
        /// The modification, status-change and birth times in nanoseconds since 1970 (the
        /// birth time when the file system reports one).
        package var mtimeNanoseconds: Int64, ctimeNanoseconds: Int64, birthNanoseconds: Int64?
        /// The kind, from ``mode``.
        package var isDirectory: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFDIR) }
        package var isSymbolicLink: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFLNK) }
    }

    /// `struct statx` (256 bytes, kernel ABI).
    private let buffer = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 8)
    private var useStatx = StatX.function != nil

    package init() {}
    deinit { buffer.deallocate() }

    /// Stats `name` relative to the folder `directory` (a descriptor, or `AT_FDCWD` for an
    /// absolute path) without following a final symbolic link. Returns nil and leaves `errno` set.
    package mutating func stat(_ name: UnsafePointer<CChar>, in directory: Int32) -> Result? {
        stat(name, in: directory, flags: AT_SYMLINK_NOFOLLOW)
    }

    /// Stats the open file `descriptor` (`AT_EMPTY_PATH`). Returns nil and leaves `errno` set.
    package mutating func stat(descriptor: Int32) -> Result? {
        stat("", in: descriptor, flags: StatX.emptyPath)
    }

    /// `statx`, or `fstatat` with the same flags when the C library or the kernel lacks it.
    private mutating func stat(_ name: UnsafePointer<CChar>, in directory: Int32, flags: Int32) -> Result? {
        if useStatx, let function = StatX.function {
            if function(directory, name, flags, StatX.basicStats | StatX.birthTime, buffer) == 0 { return result() }
            guard errno == ENOSYS else { return nil }
            useStatx = false
        }
        var st = Glibc.stat()
        guard fstatat(directory, name, &st, flags) == 0 else { return nil }
        return Self.result(st)
    }

    /// What the last successful `statx` call wrote into ``buffer``.
    private func result() -> Result {
        let mask = buffer.load(fromByteOffset: 0, as: UInt32.self)
        func time(_ offset: Int) -> Int64 {
            buffer.load(fromByteOffset: offset, as: Int64.self) * 1_000_000_000 + Int64(buffer.load(fromByteOffset: offset + 8, as: UInt32.self))
        }
        return Result(
            mode: UInt32(buffer.load(fromByteOffset: 28, as: UInt16.self)),
            device: Self.device(major: buffer.load(fromByteOffset: 136, as: UInt32.self), minor: buffer.load(fromByteOffset: 140, as: UInt32.self)),
            inode: buffer.load(fromByteOffset: 32, as: UInt64.self),
            size: Int64(bitPattern: buffer.load(fromByteOffset: 40, as: UInt64.self)),
            mtimeNanoseconds: time(112), ctimeNanoseconds: time(96),
            birthNanoseconds: mask & StatX.birthTime != 0 ? time(80) : nil)
    }

    /// What `fstat` or `fstatat` found (no birth time).
    private static func result(_ st: Glibc.stat) -> Result {
        Result(
            mode: UInt32(st.st_mode), device: UInt64(st.st_dev), inode: UInt64(st.st_ino), size: Int64(st.st_size),
            mtimeNanoseconds: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec),
            ctimeNanoseconds: Int64(st.st_ctim.tv_sec) * 1_000_000_000 + Int64(st.st_ctim.tv_nsec),
            birthNanoseconds: nil)
    }

    /// glibc's `makedev`: how `st_dev` encodes a device's major and minor numbers.
    private static func device(major: UInt32, minor: UInt32) -> UInt64 {
        let major = UInt64(major), minor = UInt64(minor)
        return (major & 0xffff_f000) << 32 | (major & 0xfff) << 8 | (minor & 0xffff_ff00) << 12 | (minor & 0xff)
    }
}
