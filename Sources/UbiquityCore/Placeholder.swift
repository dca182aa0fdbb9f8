// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// An evicted file on disk (`docs/sync.md`, "Eviction"): a sparse file of the real size at the
/// real path (no blocks, so `ls -l` shows name and size and nothing is stored), carrying the
/// user attribute `user.org.ubiquity.evicted` with the record it stands for (JSON: record ID,
/// change tag, content hash, size). Reading it gives zeros until it is downloaded.
public struct Placeholder: Codable, Sendable, Hashable {
    /// The extended attribute that marks a placeholder.
    public static let attribute = "user.org.ubiquity.evicted"

    /// The record's name (the item's ID).
    public var id: String
    /// The change tag of the version it stands for.
    public var changeTag: String
    /// The content hash of that version.
    public var hash: String
    /// The real size in bytes.
    public var size: Int64

    /// A marker from its parts.
    public init(id: String, changeTag: String, hash: String, size: Int64) {
        self.id = id
        self.changeTag = changeTag
        self.hash = hash
        self.size = size
    }

    /// The marker of the placeholder at `path`, or nil when the item carries none.
    public static func read(_ path: String) -> Placeholder? {
        guard let bytes = try? ExtendedAttributes.value(attribute, at: path) else { return nil }
        return try? JSONDecoder().decode(Placeholder.self, from: Data(bytes))
    }

    /// Whether the file at `path` still holds no data of its own: `lseek(SEEK_DATA)` finds no
    /// data in it (a write into a placeholder makes some). Block counts would not do: the marker
    /// itself may take a block (ext4 keeps a large attribute outside the inode). On a file system
    /// that cannot tell holes (it reports all data) this is never true, and only the journal's
    /// stat tells a placeholder from an edit.
    public static func isHollow(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return false }
        let seekData: Int32 = 3  // SEEK_DATA (Linux)
        return lseek(fd, 0, seekData) < 0 && errno == ENXIO
    }

    /// Makes the placeholder at `path` (a new file, or truncating an existing placeholder to
    /// nothing first so no old block stays): `size` bytes with no blocks, the permission bits,
    /// the modification time, and the marker.
    public func write(at path: String, mode: UInt32, modifiedMilliseconds: Int64) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode_t(mode & 0o7777))
        guard fd >= 0 else { throw UbiquityError.posix("open", path: path) }
        defer { close(fd) }
        guard ftruncate(fd, 0) == 0, ftruncate(fd, off_t(size)) == 0 else { throw UbiquityError.posix("ftruncate", path: path) }
        fchmod(fd, mode_t(mode & 0o7777))
        try ExtendedAttributes.setValue(Array(try JSONEncoder().encode(self)), for: Self.attribute, at: path)
        if modifiedMilliseconds > 0 {
            let time = timespec(tv_sec: Int(modifiedMilliseconds / 1000), tv_nsec: Int(modifiedMilliseconds % 1000) * 1_000_000)
            var times = [time, time]
            futimens(fd, &times)
        }
        fsync(fd)
    }

    /// Removes the marker from `path` (a placeholder the user wrote into: now a real file).
    public static func unmark(_ path: String) {
        try? ExtendedAttributes.removeValue(for: attribute, at: path)
    }
}
