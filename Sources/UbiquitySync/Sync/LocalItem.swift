// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Glibc
import UbiquityCore

/// One item found by the local scan.
package struct LocalItem: Sendable, Hashable {
    /// The path relative to the synced folder.
    package var path: String
    /// What `lstat` says.
    package var stat: SyncStat
    /// A symbolic link's target.
    package var target: String?
    /// Whether it carries the skip-backup attribute (its subtree is skipped).
    package var excluded: Bool
    /// Whether it is an evicted file's hidden stub (``Placeholder``) standing for the file at
    /// ``path``: ``stat`` is the stub's. Its bytes are never uploaded.
    package var isStub = false
}

/// File-system work of the sync engine (blocking: run through `BlockingWork`).
enum SyncFiles {
    /// Names sync never uploads beyond the folder's ignore rules: our temporary files.
    static let reservedPrefixes = [".ubiquity-", SafeSave.temporaryPrefix]

    /// The prefix of the engine's own temporary files (ignored by the watcher and the scan).
    static let temporaryPrefix = SafeSave.temporaryPrefix + "sync-"

    /// Whether `name` is one of the engine's temporary files: `.ubiq-tmp-sync-XXXX`, or the
    /// asset transfer's own `..ubiq-tmp-sync-XXXX.download-YYYY` made while downloading to it.
    static func isOwnTemporary(_ name: String) -> Bool {
        name.hasPrefix(temporaryPrefix) || name.hasPrefix("." + temporaryPrefix)
    }

    /// Whether `name` is a temporary or editor file sync leaves alone.
    static func isIgnored(name: String, relativePath: String, isDirectory: Bool, rules: IgnoreRules) -> Bool {
        if isOwnTemporary(name) || reservedPrefixes.contains(where: { name.hasPrefix($0) }) { return true }
        return rules.isIgnored(name: name, relativePath: relativePath, isDirectory: isDirectory)
    }

    /// Every item under `root` (not following symbolic links), by relative path, and the names
    /// that cannot be synced. Ignored names and the contents of excluded folders are left out;
    /// excluded items are reported as such.
    static func scan(root: String, rules: IgnoreRules) -> LocalScan {
        var scan = LocalScan()
        self.scan(root: root, from: [""], rules: rules, into: &scan)
        return scan
    }

    /// Whether a folder above `path` (relative to `root`) is excluded from backup on the disk.
    static func isInsideExcludedFolder(_ path: String, root: String) -> Bool {
        var current = Substring(path)
        while let slash = current.lastIndex(of: "/") {
            current = current[..<slash]
            if (try? BackupExclusion.isExcluded(root + "/" + current)) == true { return true }
        }
        return false
    }

    /// Whether a folder above `path` (relative) is one of `folders`.
    static func isInside(_ path: String, anyOf folders: Set<String>) -> Bool {
        var current = Substring(path)
        while let slash = current.lastIndex(of: "/") {
            current = current[..<slash]
            if folders.contains(String(current)) { return true }
        }
        return false
    }

    /// Adds every item under the folders `start` (relative; "" is the root) to `found`.
    private static func scan(root: String, from start: [String], rules: IgnoreRules, into found: inout LocalScan) {
        var folders = start
        while let relative = folders.popLast() {
            let absolute = relative.isEmpty ? root : root + "/" + relative
            guard let entries = DirectoryEntries.read(absolute) else { continue }
            for name in entries.invalid {  // record names are strings: reported, never synced
                found.unsyncable.insert(relative.isEmpty ? name : relative + "/" + name)
            }
            var names: Set<String>?  // asked only when the folder holds a stub
            for name in entries.names {
                let path = relative.isEmpty ? name : relative + "/" + name
                let full = root + "/" + path
                if let document = Placeholder.documentName(ofStub: name) {
                    // an evicted file: its stub stands for it under its own name (unless a file
                    // of that name was made since: the pass judges that one)
                    if names == nil { names = Set(entries.names) }
                    let documentPath = relative.isEmpty ? document : relative + "/" + document
                    if names?.contains(document) == true || isIgnored(name: document, relativePath: documentPath, isDirectory: false, rules: rules) { continue }
                    if let stub = stubItem(path: documentPath, absolute: root + "/" + documentPath) { found.items[documentPath] = stub }
                    continue
                }
                if isOwnTemporary(name) {
                    // left by a download that was interrupted (only the worker makes them), or
                    // the new-file writer's folder of temporaries with what it holds
                    if relative.isEmpty && name == NewFilesFolder.name { NewFilesFolder.clear(root: root) } else { unlink(full) }
                    continue
                }
                guard let stamp = FileStamp.of(full) else { continue }
                if isIgnored(name: name, relativePath: path, isDirectory: stamp.isDirectory, rules: rules) { continue }
                let item = localItem(path: path, absolute: full, stamp: stamp)
                found.items[path] = item
                if item.stat.kind == .folder && !item.excluded { folders.append(path) }
            }
        }
    }

    /// The local item at `absolute` (an evicted file's stub when only that is there), or nil
    /// when nothing is there.
    static func item(path: String, absolute: String) -> LocalItem? {
        if let stamp = FileStamp.of(absolute) { return localItem(path: path, absolute: absolute, stamp: stamp) }
        return stubItem(path: path, absolute: absolute)
    }

    /// The stub standing for the evicted file at `absolute` (nothing there, a regular file at
    /// its stub's path), as the item at `path`, with the stub's stat and the document's size;
    /// nil otherwise. The journal says what it stands for (the stub's bytes may be anything).
    static func stubItem(path: String, absolute: String) -> LocalItem? {
        let stubPath = Placeholder.stubPath(for: absolute)
        guard let stamp = FileStamp.of(stubPath), !stamp.isDirectory, !stamp.isSymbolicLink,
              FileStamp.of(absolute) == nil else { return nil }
        var stat = SyncStat(stamp)
        if let stub = Placeholder.read(stubAt: stubPath) { stat.size = stub.size }  // the document's size, as listed
        return LocalItem(path: path, stat: stat, target: nil, excluded: false, isStub: true)
    }

    static func localItem(path: String, absolute: String, stamp: FileStamp) -> LocalItem {
        let stat = SyncStat(stamp)
        let target = stat.kind == .symlink ? try? FileManager.default.destinationOfSymbolicLink(atPath: absolute) : nil
        let excluded = stat.kind != .symlink && ((try? BackupExclusion.isExcluded(absolute)) ?? false)
        return LocalItem(path: path, stat: stat, target: target, excluded: excluded)
    }

    /// The hex SHA-256 of `data`.
    static func hash(_ data: some DataProtocol) -> String {
        Hex.encode(SHA256.hash(data: data))
    }

    /// Copies the file at `source` to `destination` while hashing it; returns the hash and the
    /// source's stat before and after (they differ when the file changed during the copy).
    static func stage(_ source: String, to destination: String) throws -> (hash: String, before: FileStamp, after: FileStamp) {
        let input = open(source, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard input >= 0 else { throw UbiquityError.posix("open", path: source) }
        defer { close(input) }
        guard let before = FileStamp.of(descriptor: input) else { throw UbiquityError.posix("fstat", path: source) }
        unlink(destination)
        let output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw UbiquityError.posix("open", path: destination) }
        defer { close(output) }
        var hasher = SHA256()
        try readAll(input, path: source) { chunk in
            hasher.update(bufferPointer: chunk)
            try SafeSave.writeAll(output, chunk, path: destination)
        }
        guard let after = FileStamp.of(source) else { throw UbiquityError(.notFound, "'\(source)' vanished while it was read") }
        return (Hex.encode(hasher.finalize()), before, after)
    }

    /// Reads the file at `source` into memory while hashing it, when it has at most `limit`
    /// bytes (nil otherwise: it is staged as a file); returns the content, its hash and the
    /// source's stat before and after (they differ when the file changed during the read).
    static func readSmall(_ source: String, limit: Int64) throws -> (data: Data, hash: String, before: FileStamp, after: FileStamp)? {
        let input = open(source, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard input >= 0 else { throw UbiquityError.posix("open", path: source) }
        defer { close(input) }
        guard let before = FileStamp.of(descriptor: input) else { throw UbiquityError.posix("fstat", path: source) }
        guard before.size <= limit else { return nil }
        var data = Data()
        data.reserveCapacity(Int(before.size))
        try readAll(input, path: source) { chunk in
            data.append(contentsOf: chunk)
            if data.count > limit { throw UbiquityError(.io, "'\(source)' grew while it was read") }
        }
        guard let after = FileStamp.of(source) else { throw UbiquityError(.notFound, "'\(source)' vanished while it was read") }
        return (data, hash(data), before, after)
    }

    /// Reads `input` to its end in 1 MiB pieces, giving each to `body`.
    private static func readAll(_ input: Int32, path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let size = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(input, buffer.baseAddress, size)
            if count < 0 { if errno == EINTR { continue }; throw UbiquityError.posix("read", path: path) }
            if count == 0 { return }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }

    /// The hex SHA-256 of the file at `path`.
    static func hashFile(_ path: String) throws -> String {
        let input = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard input >= 0 else { throw UbiquityError.posix("open", path: path) }
        defer { close(input) }
        var hasher = SHA256()
        try readAll(input, path: path) { hasher.update(bufferPointer: $0) }
        return Hex.encode(hasher.finalize())
    }

    /// The content hash of a local item: a file's content, a link's target, nothing for folders.
    static func contentHash(of item: LocalItem, absolute: String) throws -> String {
        switch item.stat.kind {
        case .folder: return ""
        case .symlink: return hash(Data((item.target ?? "").utf8))
        case .file: return try hashFile(absolute)
        }
    }

    /// The folder of a path relative to the synced folder ("" at the top): what is before its
    /// last `/`. Never `NSString`'s `deletingLastPathComponent`, which traps on a name of one
    /// character (`"m"`) in this toolchain's Foundation.
    static func relativeParent(of relative: String) -> String {
        guard let slash = relative.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        return String(relative[..<slash])
    }

    /// The folders on the way to `paths` (relative; the top itself not among them).
    static func foldersOnTheWay(to paths: some Sequence<String>) -> Set<String> {
        var folders = Set<String>()
        for path in paths {
            var parent = relativeParent(of: path)
            while !parent.isEmpty, folders.insert(parent).inserted { parent = relativeParent(of: parent) }
        }
        return folders
    }

    /// A temporary name in the folder of `absolute` that the watcher and the scan ignore.
    static func temporaryPath(near absolute: String) -> String {
        parent(of: absolute) + "/" + temporaryPrefix + UUID().uuidString.prefix(8)
    }

    /// The folder of an absolute path: cut at the last `/` when the path is plain (absolute,
    /// no `//`, no trailing `/`, not at the top), else what `NSString` says.
    static func parent(of absolute: String) -> String {
        let bytes = absolute.utf8
        guard bytes.first == UInt8(ascii: "/"), bytes.last != UInt8(ascii: "/"),
              let slash = bytes.lastIndex(of: UInt8(ascii: "/")), slash != bytes.startIndex,
              // (memmem: Foundation's `contains(_:)` on strings costs ~1 µs a call, the standard
              // library's generic one more, and the new-file writer asks for every file)
              !ByteSearch.contains(absolute, "//") else { return (absolute as NSString).deletingLastPathComponent }
        return String(decoding: bytes[..<slash], as: UTF8.self)
    }

    /// Writes `data` to a new file at `path` (mode 0600; fsynced when installed).
    static func writeNew(_ path: String, _ data: Data) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: path) }
        defer { close(fd) }
        try data.withUnsafeBytes { try SafeSave.writeAll(fd, $0, path: path) }
    }

    /// Creates the folders leading to `absolute`, each one made durable in its parent (a
    /// folder whose name a power loss takes would take the synced files in it along: the next
    /// pass would send them as deleted).
    static func makeParents(of absolute: String) throws {
        for folder in Set(try makeFolders(parent(of: absolute)).map(parent(of:))) { try SafeSave.syncDirectory(folder) }
    }

    /// Makes the file at `absolute` durable where it is: its bytes, then its name (its folder
    /// synced): ``SyncEngine/makeDurable(file:)``.
    static func makeDurable(file absolute: String) throws {
        try Durability.syncFile(at: absolute)
        try SafeSave.syncDirectory(parent(of: absolute))
    }

    /// Makes the folder at `absolute` and the missing ones on the way to it; returns those it
    /// made, outermost first (their names are durable once their parents are synced).
    static func makeFolders(_ absolute: String) throws -> [String] {
        var missing: [String] = []
        var folder = absolute
        while FileStamp.of(folder) == nil, folder != "/", !folder.isEmpty {
            missing.append(folder)
            folder = parent(of: folder)
        }
        for folder in missing.reversed() {
            guard mkdir(folder, 0o777) == 0 || errno == EEXIST else { throw UbiquityError.posix("mkdir", path: folder) }
        }
        if let existing = FileStamp.of(absolute), !existing.isDirectory {
            throw UbiquityError(.alreadyExists, "'\(absolute)' is not a folder")
        }
        return missing.reversed()
    }

    /// Makes `temporary` final: mode, modification time, fsync, then rename over `absolute`
    /// (keeping the user attributes of what it replaces) and fsync of the folder. Returns the
    /// temporary's stamp taken just before the rename (what was written: a stamp taken after
    /// could already be of someone's edit), which `beforeRename` is told first (a download's
    /// landing note: SyncJournal+Landings.swift); when it throws, nothing is renamed.
    @discardableResult
    static func install(_ temporary: String, at absolute: String, mode: UInt32, modifiedMilliseconds: Int64,
                        beforeRename: (FileStamp?) throws -> Void = { _ in }) throws -> FileStamp? {
        chmod(temporary, mode_t(mode & 0o7777))
        if modifiedMilliseconds > 0 {
            var times = [timespec(tv_sec: Int(modifiedMilliseconds / 1000), tv_nsec: Int(modifiedMilliseconds % 1000) * 1_000_000),
                         timespec(tv_sec: Int(modifiedMilliseconds / 1000), tv_nsec: Int(modifiedMilliseconds % 1000) * 1_000_000)]
            utimensat(AT_FDCWD, temporary, &times, 0)
        }
        do { try Durability.syncFile(at: temporary) } catch {
            unlink(temporary)
            throw error
        }
        if FileStamp.of(absolute) != nil { try? ExtendedAttributes.copyUserAttributes(from: absolute, to: temporary) }
        let stamp = FileStamp.of(temporary)
        do { try beforeRename(stamp) } catch {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, absolute) == 0 else {
            let error = UbiquityError.posix("rename", path: absolute)
            unlink(temporary)
            throw error
        }
        try SafeSave.syncDirectory((absolute as NSString).deletingLastPathComponent)
        return stamp
    }
}

extension SyncFiles {
    /// Whether a record's path is usable: relative, no empty, `.` or `..` components, no NUL,
    /// and not an evicted file's stub name (`.NAME.icloud` is reserved: ``Placeholder``).
    static func isValid(relativePath path: String) -> Bool {
        // on the bytes (the scan asks this for every path it is given)
        let bytes = path.utf8
        guard !bytes.isEmpty, !bytes.contains(0) else { return false }
        if bytes.last == UInt8(ascii: "d"), Placeholder.documentPath(ofStub: path) != nil { return false }
        return !bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).contains { component in
            component.isEmpty || component.elementsEqual([UInt8(ascii: ".")]) || component.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")])
        }
    }
}
