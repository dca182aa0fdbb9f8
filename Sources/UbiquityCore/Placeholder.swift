// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// An evicted file on disk (`docs/sync.md`, "Eviction"): as on iOS, a small hidden *stub*
/// `.NAME.icloud` in place of `NAME`, so no program can open the placeholder as if it were the
/// document. The real name is free: reading it fails with "No such file", and anything written
/// there is a new file that sync never takes for the server's content.
///
/// The stub's bytes are JSON with Apple's keys (`NSURLNameKey`, `NSURLFileSizeKey`,
/// `NSURLFileResourceTypeKey`) and the record it stands for; the stub file itself keeps the
/// document's permission bits, modification time and user attributes. The journal of the
/// synced folder is the truth about what is evicted: the stub is what the folder shows (its
/// name and size for the index, `ubiq ls` and metadata queries).
public struct Placeholder: Codable, Sendable, Hashable {
    /// The document's name (`NSURLNameKey`).
    public var name: String
    /// The real size in bytes (`NSURLFileSizeKey`).
    public var size: Int64
    /// `NSURLFileResourceTypeRegular` (`NSURLFileResourceTypeKey`): only files are evicted.
    public var resourceType: String
    /// The record's name (the item's ID).
    public var id: String
    /// The change tag of the version it stands for.
    public var changeTag: String
    /// The content hash of that version.
    public var hash: String

    enum CodingKeys: String, CodingKey {
        case name = "NSURLNameKey", size = "NSURLFileSizeKey", resourceType = "NSURLFileResourceTypeKey"
        case id = "UbiquityRecordName", changeTag = "UbiquityChangeTag", hash = "UbiquityContentHash"
    }

    /// A stub's content from its parts.
    public init(name: String, id: String, changeTag: String, hash: String, size: Int64) {
        self.name = name
        self.size = size
        self.resourceType = "NSURLFileResourceTypeRegular"
        self.id = id
        self.changeTag = changeTag
        self.hash = hash
    }

    /// The longest stub file read (a stub is well under 1 KiB; anything larger is not one).
    static let maximumStubSize = 16 * 1024

    // MARK: Names

    /// Whether `name` is a stub's name: `.NAME.icloud` with a non-empty `NAME`. Such names are
    /// reserved in a synced folder: never synced as items of their own.
    public static func isStubName(_ name: some StringProtocol) -> Bool {
        let bytes = name.utf8
        return bytes.count > 8 && bytes.first == UInt8(ascii: ".") && name.hasSuffix(".icloud")
    }

    /// The stub's name for the document `name` (`.NAME.icloud`).
    public static func stubName(for name: String) -> String { "." + name + ".icloud" }

    /// The document's name for the stub `name`, or nil when `name` is not a stub's name.
    public static func documentName(ofStub name: some StringProtocol) -> String? {
        guard isStubName(name) else { return nil }
        return String(name.dropFirst().dropLast(7))
    }

    /// The stub's path for the document at `path` (any `/`-separated path, absolute or relative).
    public static func stubPath(for path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return stubName(for: path) }
        return String(path[...slash]) + stubName(for: String(path[path.index(after: slash)...]))
    }

    /// The document's path for the stub at `path`, or nil when its last component is not a
    /// stub's name.
    public static func documentPath(ofStub path: String) -> String? {
        guard let slash = path.lastIndex(of: "/") else { return documentName(ofStub: path) }
        return documentName(ofStub: path[path.index(after: slash)...]).map { String(path[...slash]) + $0 }
    }

    /// Whether a document named `name` can be evicted: its stub's name fits in `NAME_MAX`.
    public static func canStand(forName name: String) -> Bool { stubName(for: name).utf8.count <= Int(NAME_MAX) }

    // MARK: Reading and writing

    /// The content of the stub file at `stubPath`, or nil when there is none or it is not a
    /// stub (not a regular file, too large, not its JSON).
    public static func read(stubAt stubPath: String) -> Placeholder? {
        read(descriptor: open(stubPath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK))
    }

    /// The content of the stub named `name` in the folder open as `directory`, or nil (see
    /// ``read(stubAt:)``).
    public static func read(stubNamed name: UnsafePointer<CChar>, in directory: Int32) -> Placeholder? {
        read(descriptor: openat(directory, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK))
    }

    /// The content of the stub open as `fd` (taken over and closed; nil when negative).
    private static func read(descriptor fd: Int32) -> Placeholder? {
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size <= maximumStubSize else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size) + 1)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count > 0, count <= Int(st.st_size) else { return nil }
        return try? JSONDecoder().decode(Placeholder.self, from: Data(bytes[0..<count]))
    }

    /// The stub standing for the document at `path` when nothing is at `path` itself (an
    /// evicted document), else nil.
    public static func standingFor(_ path: String) -> Placeholder? {
        var st = stat()
        guard lstat(path, &st) != 0, errno == ENOENT else { return nil }
        return read(stubAt: stubPath(for: path))
    }

    /// Whether the document at `path` is evicted: nothing is at `path`, and its stub is there.
    public static func isEvicted(_ path: String) -> Bool { standingFor(path) != nil }

    /// The stamp of the item at `path`, or of its stub when it is evicted (nil when neither is there).
    public static func stamp(ofItemAt path: String) -> FileStamp? {
        FileStamp.of(path) ?? FileStamp.of(stubPath(for: path))
    }

    /// Writes this stub at `stubPath` atomically (a temporary file in the same folder, fsynced,
    /// renamed over): the JSON, the permission bits, the modification time, and the user
    /// attributes of `attributesFrom` when given (the document being evicted). Returns the
    /// stub's stamp, taken before the rename.
    @discardableResult
    public func write(at stubPath: String, mode: UInt32, modifiedMilliseconds: Int64, attributesFrom: String? = nil) throws -> FileStamp {
        let folder = (stubPath as NSString).deletingLastPathComponent
        let temporary = folder + "/" + SafeSave.temporaryPrefix + "stub-" + UUID().uuidString.prefix(8)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: temporary) }
        do {
            defer { close(fd) }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            var json = try encoder.encode(self)
            json.append(UInt8(ascii: "\n"))
            try json.withUnsafeBytes { try SafeSave.writeAll(fd, $0, path: temporary) }
            if let attributesFrom { try? ExtendedAttributes.copyUserAttributes(from: attributesFrom, to: temporary) }
            fchmod(fd, mode_t(mode & 0o7777))
            if modifiedMilliseconds > 0 {
                let time = timespec(tv_sec: Int(modifiedMilliseconds / 1000), tv_nsec: Int(modifiedMilliseconds % 1000) * 1_000_000)
                var times = [time, time]
                futimens(fd, &times)
            }
            try Durability.syncFile(fd, path: temporary)
        } catch {
            unlink(temporary)
            throw error
        }
        guard let stamp = FileStamp.of(temporary) else { throw UbiquityError.posix("stat", path: temporary) }
        guard rename(temporary, stubPath) == 0 else {
            let error = UbiquityError.posix("rename", path: stubPath)
            unlink(temporary)
            throw error
        }
        try SafeSave.syncDirectory(folder)
        return stamp
    }

    /// Removes the stub standing for the document at `path` (it is downloaded, or gone).
    /// Returns whether there was one (the removal is durable once its folder is synced).
    @discardableResult
    public static func removeStub(for path: String) -> Bool {
        unlink(stubPath(for: path)) == 0
    }
}
