// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import UbiquityCore

/// A folder's items on disk merged with its rows in the index (`ubiq ls`): a sorted directory
/// walk (`readdir` on directory descriptors, `fstatat` relative to them, no path strings per
/// item) beside the index snapshot's rows, which are sorted the same way — no lookups.
///
/// Siblings come byte-wise sorted (as `LC_ALL=C ls`), each folder before its contents. Items only
/// on disk have no attributes (not indexed yet); items only in the index (deleted on disk, the
/// daemon has not seen it yet) come with `isOnDisk == false`.
public enum IndexListing {
    /// What an item is.
    public enum Kind: UInt8, Sendable {
        case other, folder, file, symlink
    }

    /// One listed item.
    public struct Item: Sendable {
        /// What it is (from `d_type`, `fstatat` when the file system does not say; for items only
        /// in the index, the index's folder flag).
        public var kind: Kind
        /// Its row in the index; nil when it is not indexed.
        public var attributes: UbiquitousAttributes?
        /// Whether it exists on disk (false: only the index has it).
        public var isOnDisk: Bool
        /// Size and modification time (`stat: true`, items on disk only).
        public var size: Int64?
        /// Modification time in nanoseconds since 1970 (`stat: true`, items on disk only).
        public var modificationNanoseconds: Int64?

        /// An item with the given values.
        public init(kind: Kind, attributes: UbiquitousAttributes?, isOnDisk: Bool, size: Int64? = nil, modificationNanoseconds: Int64? = nil) {
            self.kind = kind
            self.attributes = attributes
            self.isOnDisk = isOnDisk
            self.size = size
            self.modificationNanoseconds = modificationNanoseconds
        }
    }

    /// What to list.
    public struct Options: Sendable {
        /// Descend into folders.
        public var recursive: Bool
        /// Include names starting with '.'.
        public var all: Bool
        /// Fill in size and modification time (one `fstatat` per item).
        public var stat: Bool

        /// Options with the given values.
        public init(recursive: Bool = false, all: Bool = false, stat: Bool = false) {
            self.recursive = recursive
            self.all = all
            self.stat = stat
        }
    }

    /// Lists `directory` (absolute, canonical) merged with `snapshot`. `visit` gets each item
    /// with its absolute path's bytes (valid only during the call) and where the name shown
    /// (the path relative to `directory`) starts in them. A subfolder that cannot be read goes to
    /// `failed` and the walk goes on; `directory` itself not readable throws.
    public static func walk(
        directory: String, snapshot: IndexStatusSnapshot, options: Options,
        visit: (Item, UnsafeBufferPointer<UInt8>, Int) -> Void,
        failed: (String, any Error) -> Void
    ) throws {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw UbiquityError.posix("opendir", path: directory) }
        var base = Array(directory.utf8)
        while base.last == UInt8(ascii: "/") { base.removeLast() }  // "/" lists as "" + "/name"
        var walker = Walker(snapshot: snapshot, options: options, path: base, displayStart: base.count + 1)
        let rows = walker.subtree(0..<snapshot.count)
        walker.walk(fd: fd, rows: rows, visit: visit, failed: failed)
    }
}

extension IndexListing {
    /// The state of one walk: the absolute path of the current item, grown and shrunk in place.
    struct Walker {
        let snapshot: IndexStatusSnapshot
        let options: Options
        var path: [UInt8]
        let displayStart: Int

        /// A directory entry: its name's place in the directory's name buffer and `d_type`.
        struct DiskEntry {
            var start: Int32
            var length: Int32
            var type: UInt8
        }

        /// An index child: its name's place in the snapshot's bytes and its row (-1: a folder
        /// that has no row of its own but rows below it).
        struct IndexEntry {
            var start: Int
            var length: Int
            var row: Int
        }

        /// The rows below `path` + "/" among `rows`.
        func subtree(_ rows: Range<Int>) -> Range<Int> {
            var key = path
            key.append(UInt8(ascii: "/"))
            let lower = key.withUnsafeBufferPointer { snapshot.lowerBound($0, from: rows.lowerBound, to: rows.upperBound) }
            key[key.count - 1] = UInt8(ascii: "0")  // '/' + 1: past every path below
            let upper = key.withUnsafeBufferPointer { snapshot.lowerBound($0, from: lower, to: rows.upperBound) }
            return lower..<upper
        }

        /// Walks the directory open as `fd` (nil: one only the index has) whose rows are `rows`.
        mutating func walk(fd: Int32?, rows: Range<Int>, visit: (Item, UnsafeBufferPointer<UInt8>, Int) -> Void,
                           failed: (String, any Error) -> Void) {
            var names: [UInt8] = []
            var disk: [DiskEntry] = []
            var handle: OpaquePointer?
            if let fd {
                guard let opened = fdopendir(fd) else {
                    let error = UbiquityError.posix("opendir", path: String(decoding: path, as: UTF8.self))
                    close(fd)
                    return failed(String(decoding: path, as: UTF8.self), error)
                }
                handle = opened
                Self.read(opened, all: options.all, names: &names, entries: &disk)
            }
            defer { if let handle { closedir(handle) } }
            let dirFD = handle.map { dirfd($0) } ?? -1
            let index = indexChildren(rows)
            let snapshot = self.snapshot, options = self.options, displayStart = self.displayStart

            var i = 0, j = 0
            names.withUnsafeBufferPointer { nameBytes in
                while i < disk.count || j < index.count {
                    let order: Int
                    if i == disk.count { order = 1 } else if j == index.count { order = -1 } else {
                        order = Self.compareNames(nameBytes, disk[i], index[j], snapshot)
                    }
                    var item = Item(kind: .other, attributes: nil, isOnDisk: order <= 0)
                    let nameLength: Int
                    var entryName: UnsafePointer<CChar>?
                    if order <= 0 {
                        let entry = disk[i]
                        nameLength = Int(entry.length)
                        let name = UnsafeRawPointer(nameBytes.baseAddress! + Int(entry.start))
                        entryName = name.assumingMemoryBound(to: CChar.self)
                        path.append(UInt8(ascii: "/"))
                        path.append(contentsOf: UnsafeRawBufferPointer(start: name, count: nameLength))
                        item.kind = Self.kind(entry.type)
                        if item.kind == .other && entry.type == UInt8(DT_UNKNOWN) || options.stat {
                            var st = stat()
                            if fstatat(dirFD, entryName!, &st, AT_SYMLINK_NOFOLLOW) == 0 {
                                item.kind = Self.kind(st.st_mode)
                                if options.stat {
                                    item.size = Int64(st.st_size)
                                    item.modificationNanoseconds = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
                                }
                            }
                        }
                        i += 1
                    } else {
                        nameLength = index[j].length
                        path.append(UInt8(ascii: "/"))
                        snapshot.bytes.withUnsafeBufferPointer { all in
                            path.append(contentsOf: UnsafeBufferPointer(rebasing: all[index[j].start..<index[j].start + nameLength]))
                        }
                        item.kind = index[j].row < 0 || snapshot.folders[index[j].row] ? .folder : .file
                    }
                    if order >= 0 {
                        if index[j].row >= 0 { item.attributes = snapshot.rows[index[j].row] }
                        j += 1
                    }
                    path.withUnsafeBufferPointer { visit(item, $0, displayStart) }
                    if options.recursive && item.kind == .folder {
                        let below = subtree(rows)
                        if let entryName {
                            let child = openat(dirFD, entryName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                            if child >= 0 {
                                walk(fd: child, rows: below, visit: visit, failed: failed)
                            } else {
                                let shown = String(decoding: path, as: UTF8.self)
                                failed(shown, UbiquityError.posix("opendir", path: shown))
                            }
                        } else {
                            walk(fd: nil, rows: below, visit: visit, failed: failed)
                        }
                    }
                    path.removeLast(nameLength + 1)
                }
            }
        }

        /// Reads the directory's entries into `names` (each NUL-terminated) and sorts them.
        static func read(_ handle: OpaquePointer, all: Bool, names: inout [UInt8], entries: inout [DiskEntry]) {
            let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
            while let raw = readdir(handle) {
                let name = UnsafeRawPointer(raw).advanced(by: nameOffset).assumingMemoryBound(to: UInt8.self)
                let length = strlen(UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self))
                if name[0] == UInt8(ascii: ".") {
                    if !all { continue }
                    if length == 1 || (length == 2 && name[1] == UInt8(ascii: ".")) { continue }
                }
                entries.append(DiskEntry(start: Int32(names.count), length: Int32(length), type: raw.pointee.d_type))
                names.append(contentsOf: UnsafeBufferPointer(start: name, count: length + 1))  // with the NUL
            }
            names.withUnsafeBufferPointer { bytes in
                let base = bytes.baseAddress!
                entries.sort { a, b in
                    let common = Int(min(a.length, b.length))
                    let result = memcmp(base + Int(a.start), base + Int(b.start), common)
                    return result != 0 ? result < 0 : a.length < b.length
                }
            }
        }

        /// The direct children of `path` among `rows` (all below `path` + "/"), sorted by name.
        func indexChildren(_ rows: Range<Int>) -> [IndexEntry] {
            guard !rows.isEmpty else { return [] }
            var children: [IndexEntry] = []
            let prefix = path.count + 1
            snapshot.bytes.withUnsafeBufferPointer { all in
                var row = rows.lowerBound
                var sorted = true
                while row < rows.upperBound {
                    let start = snapshot.starts[row] + prefix, end = snapshot.starts[row + 1]
                    guard start < end else { row += 1; continue }
                    var length = end - start
                    if let slash = memchr(all.baseAddress! + start, Int32(UInt8(ascii: "/")), length) {
                        length = UnsafeRawPointer(all.baseAddress! + start).distance(to: UnsafeRawPointer(slash))
                    }
                    let hidden = all[start] == UInt8(ascii: ".") && !options.all
                    if start + length == end {  // the child's own row
                        if !hidden { children.append(IndexEntry(start: start, length: length, row: row)) }
                        row += 1
                        continue
                    }
                    // a row below the child: add the child if its own row did not come before
                    // (it sorts before its descendants, after siblings it is a prefix of)
                    if !hidden && !Self.contains(children, all, start: start, length: length) {
                        if let last = children.last, Self.compare(all, last, start: start, length: length) > 0 { sorted = false }
                        children.append(IndexEntry(start: start, length: length, row: -1))
                    }
                    // skip the child's subtree: up to the first path past child + "/"
                    var key = Array(UnsafeBufferPointer(rebasing: all[snapshot.starts[row]..<start + length]))
                    key.append(UInt8(ascii: "0"))
                    row = key.withUnsafeBufferPointer { snapshot.lowerBound($0, from: row, to: rows.upperBound) }
                }
                if !sorted {
                    children.sort { a, b in Self.compare(all, a, start: b.start, length: b.length) < 0 }
                }
            }
            return children
        }

        /// Whether a child named by `start`/`length` is among `children` (only the last few can
        /// be: those the name is a prefix of).
        static func contains(_ children: [IndexEntry], _ all: UnsafeBufferPointer<UInt8>, start: Int, length: Int) -> Bool {
            for child in children.reversed() {
                guard child.length >= length, memcmp(all.baseAddress! + child.start, all.baseAddress! + start, length) == 0 else { return false }
                if child.length == length { return true }
            }
            return false
        }

        /// Byte-wise order of an index child and a name in the same buffer.
        static func compare(_ all: UnsafeBufferPointer<UInt8>, _ entry: IndexEntry, start: Int, length: Int) -> Int {
            let common = min(entry.length, length)
            let result = common > 0 ? memcmp(all.baseAddress! + entry.start, all.baseAddress! + start, common) : 0
            return result != 0 ? Int(result) : entry.length - length
        }

        /// Byte-wise order of a directory entry and an index child.
        static func compareNames(_ names: UnsafeBufferPointer<UInt8>, _ disk: DiskEntry, _ index: IndexEntry,
                                 _ snapshot: IndexStatusSnapshot) -> Int {
            snapshot.bytes.withUnsafeBufferPointer { all in
                let common = min(Int(disk.length), index.length)
                let result = common > 0 ? memcmp(names.baseAddress! + Int(disk.start), all.baseAddress! + index.start, common) : 0
                return result != 0 ? Int(result) : Int(disk.length) - index.length
            }
        }

        static func kind(_ type: UInt8) -> Kind {
            switch Int32(type) {
            case Int32(DT_DIR): .folder
            case Int32(DT_REG): .file
            case Int32(DT_LNK): .symlink
            default: .other
            }
        }

        static func kind(_ mode: mode_t) -> Kind {
            switch mode & S_IFMT {
            case S_IFDIR: .folder
            case S_IFREG: .file
            case S_IFLNK: .symlink
            default: .other
            }
        }
    }
}
