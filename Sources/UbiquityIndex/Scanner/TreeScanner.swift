import Foundation
import Glibc
import UbiquityCore
import UbiquityStore

/// A fast recursive walk of a folder tree that produces ``IndexRecord``s in bounded batches,
/// like `find -printf`: `readdir` and `statx`/`fstatat` relative to each folder's descriptor,
/// never following symbolic links.
///
/// Robust against a live tree: entries and folders that vanish mid-scan are skipped, unreadable
/// folders are skipped with a warning, names that are not valid UTF-8 are skipped and counted
/// (the first few reported with their bytes escaped). ``scan(root:ignoring:onBatch:)`` blocks:
/// run it on a dedicated thread, never on the Swift cooperative pool.
package struct TreeScanner: Sendable {
    /// How many records each batch holds (the last may hold fewer).
    package var batchSize: Int
    /// How many invalid names are reported individually in ``ScanSummary/warnings``.
    package var maximumInvalidNameWarnings = 5
    /// Test hook: opening a folder at one of these paths fails with the given `errno` (to
    /// exercise permission errors when running as root, which ignores permissions).
    package var simulatedOpenErrors: [String: Int32] = [:]

    /// A scanner handing on batches of `batchSize` records.
    package init(batchSize: Int = 2_000) {
        self.batchSize = max(1, batchSize)
    }

    /// Walks everything under `root` (not `root` itself), skipping names `rules` ignore and not
    /// descending into ignored folders, and hands the records to `onBatch` in batches.
    ///
    /// - Parameter relativePrefix: the path of `root` relative to the root the ignore rules are
    ///   written for (empty when `root` is that root), so that patterns with `/` match.
    /// - Throws: ``UbiquityError`` when `root` cannot be opened as a folder, or whatever
    ///   `onBatch` throws (which stops the scan).
    package func scan(
        root: String, ignoring rules: IgnoreRules, relativePrefix: String = "",
        onBatch: ([IndexRecord]) throws -> Void
    ) throws -> ScanSummary {
        var root = root
        while root.count > 1, root.hasSuffix("/") { root.removeLast() }
        var summary = ScanSummary()
        var stat = StatX()
        var batch: [IndexRecord] = []
        batch.reserveCapacity(batchSize)
        var pending: [(path: String, relative: String, isRoot: Bool)] = [(root, relativePrefix, true)]
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        let ignore = IgnoreMatcher(rules)

        while let (folder, relative, isRoot) = pending.popLast() {
            guard let directory = openDirectory(folder) else {
                let err = errno
                if isRoot { throw UbiquityError.posix("open", path: folder, errno: err) }
                record(openError: err, path: folder, into: &summary)
                continue
            }
            defer { closedir(directory) }
            let fd = dirfd(directory)
            let prefix = folder == "/" ? "/" : folder + "/"
            while true {
                errno = 0
                guard let entry = readdir(directory) else {
                    if errno != 0 {
                        summary.warnings.append(ScanWarning(kind: .ioError, path: folder,
                                                            message: String(cString: strerror(errno))))
                    }
                    break
                }
                let cName = UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: CChar.self)
                if cName[0] == 0x2E && (cName[1] == 0 || (cName[1] == 0x2E && cName[2] == 0)) { continue }
                guard let name = String(validatingCString: cName) else {
                    summary.invalidNameCount += 1
                    summary.foldersWithInvalidNames.insert(folder)
                    if summary.invalidNameCount <= maximumInvalidNameWarnings {
                        summary.warnings.append(ScanWarning(
                            kind: .invalidName, path: prefix + Self.escaped(cName),
                            message: "The name is not valid UTF-8; the item is not indexed"))
                    }
                    continue
                }
                if let document = Placeholder.documentName(ofStub: name) {
                    // an evicted file's stub: the file is indexed under its own name (unless a
                    // file of that name is there too: that one is)
                    let documentRelative = relative.isEmpty ? document : relative + "/" + document
                    var there = Glibc.stat()
                    if fstatat(fd, document, &there, AT_SYMLINK_NOFOLLOW) != 0,
                       !rules.isIgnored(name: document, relativePath: documentRelative, isDirectory: false),
                       let record = Self.stubRecord(documentPath: prefix + document) {
                        batch.append(record)
                        summary.itemCount += 1
                        if batch.count >= batchSize {
                            try onBatch(batch)
                            batch.removeAll(keepingCapacity: true)
                        }
                    }
                    continue
                }
                let itemRelative = relative.isEmpty ? name : relative + "/" + name
                let type = Int32(entry.pointee.d_type)
                if type != Int32(DT_UNKNOWN),
                   ignore.isIgnored(name: cName, relativePath: itemRelative, isDirectory: type == Int32(DT_DIR)) {
                    continue
                }
                guard let info = stat.stat(cName, in: fd) else {
                    let err = errno
                    if err == ENOENT {
                        summary.vanishedCount += 1
                    } else {
                        summary.warnings.append(ScanWarning(kind: err == EACCES || err == EPERM ? .permissionDenied : .ioError,
                                                            path: prefix + name, message: String(cString: strerror(err))))
                    }
                    continue
                }
                let isDirectory = info.isDirectory
                if type == Int32(DT_UNKNOWN),
                   ignore.isIgnored(name: cName, relativePath: itemRelative, isDirectory: isDirectory) {
                    continue
                }
                let path = prefix + name
                batch.append(Self.makeRecord(path: path, name: name, info, linkTarget: info.isSymbolicLink ? Self.linkTarget(cName, in: fd) : nil))
                summary.itemCount += 1
                if isDirectory {
                    summary.directoryCount += 1
                    pending.append((path, itemRelative, false))
                }
                if batch.count >= batchSize {
                    try onBatch(batch)
                    batch.removeAll(keepingCapacity: true)
                }
            }
        }
        if !batch.isEmpty { try onBatch(batch) }
        return summary
    }

    /// The record of the item at `path` from `lstat` (a symbolic link describes itself), or nil
    /// if it does not exist or cannot be examined.
    ///
    /// An evicted file (nothing at `path`, its hidden stub beside it: ``Placeholder``) is
    /// described by its stub, with the document's size and "not downloaded".
    package static func record(at path: String) -> IndexRecord? {
        var stat = StatX()
        var path = path
        while path.utf8.count > 1, path.hasSuffix("/") { path.removeLast() }
        guard let info = path.withCString({ stat.stat($0, in: AT_FDCWD) }) else {
            return errno == ENOENT ? stubRecord(documentPath: path) : nil
        }
        let target = info.isSymbolicLink ? path.withCString { linkTarget($0, in: AT_FDCWD) } : nil
        return makeRecord(path: path, name: IndexRecord.lastComponent(of: path), info, linkTarget: target)
    }

    /// The record of the evicted file at `documentPath` from its stub (the stub's times, inode
    /// and mode; the document's name and size; not downloaded), or nil when there is no stub.
    static func stubRecord(documentPath: String) -> IndexRecord? {
        let stubPath = Placeholder.stubPath(for: documentPath)
        var stat = StatX()
        guard let info = stubPath.withCString({ stat.stat($0, in: AT_FDCWD) }), !info.isDirectory,
              let stub = Placeholder.read(stubAt: stubPath) else { return nil }
        var record = makeRecord(path: documentPath, name: IndexRecord.lastComponent(of: documentPath), info, linkTarget: nil)
        record.size = stub.size
        record.isStub = true
        record.ubiquitous.downloadingStatus = .notDownloaded
        return record
    }

    // MARK: - Helpers

    private func openDirectory(_ path: String) -> OpaquePointer? {
        if let simulated = simulatedOpenErrors[path] {
            errno = simulated
            return nil
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        guard let directory = fdopendir(fd) else {
            let err = errno
            close(fd)
            errno = err
            return nil
        }
        return directory
    }

    private func record(openError err: Int32, path: String, into summary: inout ScanSummary) {
        switch err {
        case ENOENT, ENOTDIR, ELOOP:
            // Deleted or replaced (by a file or a symbolic link) since its parent was read.
            summary.vanishedCount += 1
        case EACCES, EPERM:
            summary.warnings.append(ScanWarning(kind: .permissionDenied, path: path,
                                                message: "The folder cannot be read; its contents are not indexed"))
        default:
            summary.warnings.append(ScanWarning(kind: .ioError, path: path, message: String(cString: strerror(err))))
        }
    }

    static func makeRecord(path: String, name: String, _ info: StatX.Result, linkTarget: String?) -> IndexRecord {
        let isDirectory = info.isDirectory
        return IndexRecord(
            path: path, name: name, size: isDirectory ? 0 : info.size,
            creationDate: info.birthNanoseconds.map { Date(timeIntervalSince1970: Double($0) / 1e9) },
            contentChangeDate: Date(timeIntervalSince1970: Double(info.mtimeNanoseconds) / 1e9),
            contentType: ContentType.identifier(forFileName: name, isDirectory: isDirectory),
            isDirectory: isDirectory, inode: info.inode, mtimeNanoseconds: info.mtimeNanoseconds,
            ctimeNanoseconds: info.ctimeNanoseconds).with(mode: info.mode, linkTarget: linkTarget)
    }

    /// The target of the symbolic link `name` in the folder `directory` (a descriptor, or
    /// `AT_FDCWD` for an absolute path); nil when it cannot be read.
    static func linkTarget(_ name: UnsafePointer<CChar>, in directory: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlinkat(directory, name, &buffer, buffer.count - 1)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The bytes of a C string with anything but printable ASCII escaped as `\xNN`.
    static func escaped(_ cName: UnsafePointer<CChar>) -> String {
        var result = ""
        var pointer = cName
        while pointer.pointee != 0 {
            let byte = UInt8(bitPattern: pointer.pointee)
            if byte >= 0x20 && byte < 0x7F && byte != 0x5C {
                result.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                result += "\\x" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
            pointer += 1
        }
        return result
    }
}

private extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
