import Foundation
import UbiquityCore

/// One indexed item (a row of the metadata index): what `lstat` says about it, its name and
/// content type, and its ubiquitous state.
package struct IndexRecord: Sendable, Hashable, Codable {
    /// The absolute path.
    package var path: String
    /// The last path component.
    package var name: String
    /// The size in bytes (0 for folders).
    package var size: Int64
    /// The birth time, when the file system reports one.
    package var creationDate: Date?
    /// The modification time.
    package var contentChangeDate: Date
    /// The uniform type identifier (from the name; `public.folder` for folders).
    package var contentType: String
    /// Whether the item is a folder (symbolic links are not: they are indexed as files).
    package var isDirectory: Bool
    /// The inode number.
    package var inode: UInt64
    /// The modification time in nanoseconds since 1970.
    package var mtimeNanoseconds: Int64
    /// The status-change time in nanoseconds since 1970.
    package var ctimeNanoseconds: Int64
    /// The iCloud-style state.
    package var ubiquitous: UbiquitousAttributes
    /// `st_mode`: the type and permission bits (0 when not read).
    package var mode: UInt32 = 0
    /// A symbolic link's target.
    package var linkTarget: String?
    /// Whether the row stands for an evicted file's hidden stub (``Placeholder``): the stub's
    /// times, inode and mode under the document's name and size.
    package var isStub = false

    /// Whether the item is a symbolic link (from ``mode``).
    package var isSymbolicLink: Bool { mode & 0o170000 == 0o120000 }

    /// What travels to clients (the control socket): the sync facts stay in the daemon.
    private enum CodingKeys: String, CodingKey {
        case path, name, size, creationDate, contentChangeDate, contentType, isDirectory, inode, mtimeNanoseconds,
             ctimeNanoseconds, ubiquitous
    }

    /// A record with every field given.
    package init(
        path: String, name: String, size: Int64, creationDate: Date?, contentChangeDate: Date,
        contentType: String, isDirectory: Bool, inode: UInt64, mtimeNanoseconds: Int64,
        ctimeNanoseconds: Int64, ubiquitous: UbiquitousAttributes = UbiquitousAttributes()
    ) {
        self.path = path
        self.name = name
        self.size = size
        self.creationDate = creationDate
        self.contentChangeDate = contentChangeDate
        self.contentType = contentType
        self.isDirectory = isDirectory
        self.inode = inode
        self.mtimeNanoseconds = mtimeNanoseconds
        self.ctimeNanoseconds = ctimeNanoseconds
        self.ubiquitous = ubiquitous
    }

    /// A record whose name, content type and content change date are derived from `path`,
    /// `isDirectory` and `mtimeNanoseconds`.
    package init(
        path: String, size: Int64, isDirectory: Bool, inode: UInt64, mtimeNanoseconds: Int64,
        ctimeNanoseconds: Int64, creationDate: Date? = nil,
        ubiquitous: UbiquitousAttributes = UbiquitousAttributes()
    ) {
        let name = IndexRecord.lastComponent(of: path)
        self.init(
            path: path, name: name, size: size, creationDate: creationDate,
            contentChangeDate: Date(timeIntervalSince1970: Double(mtimeNanoseconds) / 1e9),
            contentType: ContentType.identifier(forFileName: name, isDirectory: isDirectory),
            isDirectory: isDirectory, inode: inode, mtimeNanoseconds: mtimeNanoseconds,
            ctimeNanoseconds: ctimeNanoseconds, ubiquitous: ubiquitous)
    }

    /// The last component of a `/`-separated path (the path itself when it has no `/`).
    package static func lastComponent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return String(trimmed) }
        let name = trimmed[trimmed.index(after: slash)...]
        return name.isEmpty ? String(trimmed) : String(name)
    }

    /// The same record with the sync facts the scanner reads beside the stat.
    package func with(mode: UInt32, linkTarget: String?, isStub: Bool = false) -> IndexRecord {
        var record = self
        record.mode = mode
        record.linkTarget = linkTarget
        record.isStub = isStub
        return record
    }

    /// Whether the file-system facts the quick-check compares (size, times, inode, kind) equal
    /// those of `other`.
    package func hasSameStat(as other: IndexRecord) -> Bool {
        size == other.size && mtimeNanoseconds == other.mtimeNanoseconds && inode == other.inode
            && ctimeNanoseconds == other.ctimeNanoseconds && isDirectory == other.isDirectory
    }
}
