// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Foundation
import Glibc
import Synchronization
import UbiquityCore

/// A folder's items on disk merged with its rows in the index (`ubiq ls`): a sorted directory
/// walk (`readdir` on directory descriptors, `fstatat` relative to them, no path strings per
/// item; ``DiskTree``) beside the index snapshot's rows, which are sorted the same way — no
/// lookups. The folder tree is read while another thread reads the index rows, then merged.
///
/// Siblings come byte-wise sorted (as `LC_ALL=C ls`), each folder before its contents. Items only
/// on disk have no attributes (not indexed yet); items only in the index (deleted on disk, the
/// daemon has not seen it yet) come with `isOnDisk == false`.
package enum IndexListing {
    /// What an item is.
    package enum Kind: UInt8, Sendable {
        case other, folder, file, symlink
    }

    /// One listed item.
    package struct Item: Sendable {
        /// What it is (from `d_type`, `fstatat` when the file system does not say; for items only
        /// in the index, the index's folder flag).
        package var kind: Kind
        /// Its row in the index; nil when it is not indexed.
        package var attributes: UbiquitousAttributes?
        /// Whether it exists on disk (false: only the index has it).
        package var isOnDisk: Bool
        /// Size and modification time (`stat: true`, items on disk only).
        package var size: Int64?
        /// Modification time in nanoseconds since 1970 (`stat: true`, items on disk only).
        package var modificationNanoseconds: Int64?

        /// An item with the given values.
        package init(kind: Kind, attributes: UbiquitousAttributes?, isOnDisk: Bool, size: Int64? = nil, modificationNanoseconds: Int64? = nil) {
            self.kind = kind
            self.attributes = attributes
            self.isOnDisk = isOnDisk
            self.size = size
            self.modificationNanoseconds = modificationNanoseconds
        }
    }

    /// What to list.
    package struct Options: Sendable {
        /// Descend into folders.
        package var recursive: Bool
        /// Include names starting with '.'.
        package var all: Bool
        /// Fill in size and modification time (one `fstatat` per item).
        package var stat: Bool

        /// Options with the given values.
        package init(recursive: Bool = false, all: Bool = false, stat: Bool = false) {
            self.recursive = recursive
            self.all = all
            self.stat = stat
        }
    }

    /// Lists `directory` (absolute, canonical) merged with `snapshot`. `visit` gets each item
    /// with its absolute path's bytes (valid only during the call) and where the name shown
    /// (the path relative to `directory`) starts in them. A subfolder that cannot be read goes to
    /// `failed` and the walk goes on; `directory` itself not readable throws.
    package static func walk(
        directory: String, snapshot: IndexStatusSnapshot, options: Options,
        visit: (Item, UnsafeBufferPointer<UInt8>, Int) -> Void,
        failed: (String, any Error) -> Void
    ) throws {
        try walk(directory: directory, options: options, readingSnapshot: { snapshot }, visit: visit, failed: failed)
    }

    /// Lists `directory` as ``walk(directory:snapshot:options:visit:failed:)`` does, reading the
    /// index rows with `readSnapshot` on another thread while this one reads the folder tree
    /// (`ubiq ls -R`: the two reads take about as long as each other, and the merge needs both).
    package static func walk(
        directory: String, options: Options,
        readingSnapshot readSnapshot: @escaping @Sendable () -> IndexStatusSnapshot,
        visit: (Item, UnsafeBufferPointer<UInt8>, Int) -> Void,
        failed: (String, any Error) -> Void
    ) throws {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw UbiquityError.posix("opendir", path: directory) }
        let reading = ConcurrentRead(readSnapshot)
        let tree = DiskTree.read(fd: fd, options: options)
        let snapshot = reading.wait()
        guard !tree.folders.isEmpty else { throw UbiquityError.posix("opendir", path: directory) }
        var base = Array(directory.utf8)
        while base.last == UInt8(ascii: "/") { base.removeLast() }  // "/" lists as "" + "/name"
        var walker = Walker(snapshot: snapshot, tree: tree, options: options, path: base, displayStart: base.count + 1)
        let rows = walker.subtree(0..<snapshot.count)
        walker.walk(folder: 0, rows: rows, visit: visit, failed: failed)
    }

    /// A value computed on a thread of its own (Dispatch's, not the cooperative pool: the read
    /// blocks on file I/O), waited for once.
    final class ConcurrentRead<Value: Sendable>: Sendable {
        private let result = Mutex<Value?>(nil)
        private let done = DispatchSemaphore(value: 0)

        init(_ compute: @escaping @Sendable () -> Value) {
            DispatchQueue.global(qos: .userInitiated).async { [self] in
                let value = compute()
                result.withLock { $0 = value }
                done.signal()
            }
        }

        func wait() -> Value {
            done.wait()
            return result.withLock { $0! }
        }
    }
}

extension IndexListing {
    /// The state of one merge: the absolute path of the current item, grown and shrunk in place.
    struct Walker {
        let snapshot: IndexStatusSnapshot
        let tree: DiskTree
        let options: Options
        var path: [UInt8]
        let displayStart: Int

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

        /// Merges the tree's folder `folder` (-1: one only the index has) with its rows `rows`.
        mutating func walk(folder: Int32, rows: Range<Int>, visit: (Item, UnsafeBufferPointer<UInt8>, Int) -> Void,
                           failed: (String, any Error) -> Void) {
            let disk = folder >= 0 ? tree.folders[Int(folder)] : 0..<0
            let index = indexChildren(rows)
            let snapshot = self.snapshot, tree = self.tree, options = self.options, displayStart = self.displayStart

            var i = disk.lowerBound, j = 0
            tree.names.withUnsafeBufferPointer { nameBytes in
                while i < disk.upperBound || j < index.count {
                    let order: Int
                    if i == disk.upperBound { order = 1 } else if j == index.count { order = -1 } else {
                        order = Self.compareNames(nameBytes, tree.entries[i], index[j], snapshot)
                    }
                    var item = Item(kind: .other, attributes: nil, isOnDisk: order <= 0)
                    let nameLength: Int
                    var entry: DiskTree.Entry?
                    if order <= 0 {
                        let found = tree.entries[i]
                        entry = found
                        nameLength = Int(found.length)
                        path.append(UInt8(ascii: "/"))
                        path.append(contentsOf: UnsafeBufferPointer(rebasing: nameBytes[Int(found.start)..<Int(found.start) + nameLength]))
                        item.kind = found.kind
                        if options.stat, tree.statuses[i].known {
                            item.size = tree.statuses[i].size
                            item.modificationNanoseconds = tree.statuses[i].modified
                        }
                        i += 1
                    } else {
                        nameLength = index[j].length
                        path.append(UInt8(ascii: "/"))
                        snapshot.bytes.withUnsafeBufferPointer { all in
                            path.append(contentsOf: UnsafeBufferPointer(rebasing: all[index[j].start..<index[j].start + nameLength]))
                        }
                        item.kind = index[j].row < 0 || snapshot.isFolder(index[j].row) ? .folder : .file
                    }
                    if order >= 0 {
                        if index[j].row >= 0 { item.attributes = snapshot.attributes(ofRow: index[j].row) }
                        j += 1
                    }
                    path.withUnsafeBufferPointer { visit(item, $0, displayStart) }
                    if options.recursive && item.kind == .folder {
                        let below = subtree(rows)
                        if let entry {
                            if entry.folder >= 0 {
                                walk(folder: entry.folder, rows: below, visit: visit, failed: failed)
                            } else if entry.openError != 0 {
                                let shown = String(decoding: path, as: UTF8.self)
                                failed(shown, UbiquityError.posix("opendir", path: shown, errno: entry.openError))
                            }
                        } else {
                            walk(folder: -1, rows: below, visit: visit, failed: failed)
                        }
                    }
                    path.removeLast(nameLength + 1)
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
        static func compareNames(_ names: UnsafeBufferPointer<UInt8>, _ disk: DiskTree.Entry, _ index: IndexEntry,
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
