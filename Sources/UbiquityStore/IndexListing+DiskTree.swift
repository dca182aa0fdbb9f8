// SPDX-License-Identifier: Apache-2.0
import Glibc
import UbiquityCore

extension IndexListing {
    /// The disk side of a listing, read before the merge (so that it can be read while another
    /// thread reads the index): every folder's entries sorted byte-wise, each folder's entries
    /// contiguous, all names in one buffer — no `String` or array per item.
    struct DiskTree {
        /// One directory entry.
        struct Entry {
            /// Where its name starts in ``names`` (NUL-terminated there).
            var start: Int32
            /// The name's length in bytes.
            var length: Int32
            /// What it is (from `d_type`, or `fstatat` when the file system does not say).
            var kind: Kind
            /// The folder read for it (an index into ``folders``), -1 when none was read.
            var folder: Int32 = -1
            /// The `errno` of opening it as a folder, 0 when that did not fail.
            var openError: Int32 = 0
        }

        /// An entry's size and modification time (nanoseconds since 1970), from `fstatat`.
        struct Status {
            var size: Int64
            var modified: Int64
            /// False when `fstatat` failed (the entry went away meanwhile).
            var known: Bool
        }

        /// Every name, each followed by a NUL.
        var names: [UInt8] = []
        /// Every entry; those of one folder are contiguous and sorted.
        var entries: [Entry] = []
        /// Each entry's status, in the same places (`stat` only; empty otherwise).
        var statuses: [Status] = []
        /// Each folder's entries: folder 0 is the listed directory.
        var folders: [Range<Int>] = []

        /// The stub named `name` (`length` bytes) in `directory` when it is an evicted file's
        /// (``Placeholder``: a stub's name, no file of the document's name beside it, its JSON),
        /// with the document's name and a NUL in `documentName`; nil otherwise.
        static func stub(named name: UnsafePointer<UInt8>, length: Int, in directory: Int32, documentName: inout [UInt8]) -> Placeholder? {
            let suffix = Array(".icloud".utf8)
            guard length > 8, memcmp(name + length - suffix.count, suffix, suffix.count) == 0 else { return nil }
            documentName.removeAll(keepingCapacity: true)
            documentName.append(contentsOf: UnsafeBufferPointer(start: name + 1, count: length - 8))
            documentName.append(0)
            var there = stat()
            let taken = documentName.withUnsafeBufferPointer { document in
                fstatat(directory, UnsafeRawPointer(document.baseAddress!).assumingMemoryBound(to: CChar.self), &there, AT_SYMLINK_NOFOLLOW) == 0
            }
            guard !taken else { return nil }
            return Placeholder.read(stubNamed: UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self), in: directory)
        }

        /// Reads the directory open as `fd` (taken over and closed) and, when `options.recursive`,
        /// every folder below it. A subfolder that cannot be opened is kept with its `errno`, for
        /// the merge to report in order.
        static func read(fd: Int32, options: Options) -> DiskTree {
            var tree = DiskTree()
            tree.names.reserveCapacity(64 * 1024)
            _ = tree.readFolder(fd: fd, options: options)
            return tree
        }

        /// Reads one folder (taking over `fd`) and returns its index in ``folders``, or -1 with
        /// `errno` set when it could not be read.
        mutating func readFolder(fd: Int32, options: Options) -> Int32 {
            guard let handle = fdopendir(fd) else {
                let error = errno
                close(fd)
                errno = error
                return -1
            }
            defer { closedir(handle) }
            let directory = dirfd(handle)
            var local: [Entry] = []
            var localStatuses: [Status] = []
            let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
            var documentName: [UInt8] = []
            while let raw = readdir(handle) {
                let name = UnsafeRawPointer(raw).advanced(by: nameOffset).assumingMemoryBound(to: UInt8.self)
                let length = strlen(UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self))
                if name[0] == UInt8(ascii: ".") {
                    if length == 1 || (length == 2 && name[1] == UInt8(ascii: ".")) { continue }
                    // an evicted file's stub (`.NAME.icloud`): listed as the file NAME, with its size
                    if let stub = Self.stub(named: name, length: length, in: directory, documentName: &documentName) {
                        if options.stat {
                            var own = stat()
                            let known = fstatat(directory, UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self), &own, AT_SYMLINK_NOFOLLOW) == 0
                            localStatuses.append(Status(size: stub.size,
                                                        modified: Int64(own.st_mtim.tv_sec) * 1_000_000_000 + Int64(own.st_mtim.tv_nsec),
                                                        known: known))
                        }
                        local.append(Entry(start: Int32(names.count), length: Int32(documentName.count - 1), kind: .file))
                        names.append(contentsOf: documentName)  // with the NUL
                        continue
                    }
                    if !options.all { continue }
                }
                let type = raw.pointee.d_type
                var entry = Entry(start: Int32(names.count), length: Int32(length), kind: Walker.kind(type))
                if options.stat || (entry.kind == .other && type == UInt8(DT_UNKNOWN)) {
                    var st = stat()
                    let found = fstatat(directory, UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self), &st, AT_SYMLINK_NOFOLLOW) == 0
                    if found { entry.kind = Walker.kind(st.st_mode) }
                    if options.stat {
                        localStatuses.append(Status(size: Int64(st.st_size),
                                                    modified: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec),
                                                    known: found))
                    }
                }
                local.append(entry)
                names.append(contentsOf: UnsafeBufferPointer(start: name, count: length + 1))  // with the NUL
            }
            // sorted through a permutation of small indices (entries in hash order from ext4)
            var order = Array(0..<Int32(local.count))
            names.withUnsafeBufferPointer { bytes in
                local.withUnsafeBufferPointer { entries in
                    let base = bytes.baseAddress!
                    order.sort { left, right in
                        let a = entries[Int(left)], b = entries[Int(right)]
                        let common = Int(min(a.length, b.length))
                        let result = memcmp(base + Int(a.start), base + Int(b.start), common)
                        return result != 0 ? result < 0 : a.length < b.length
                    }
                }
            }
            let index = Int32(folders.count)
            let first = entries.count
            for position in order { entries.append(local[Int(position)]) }
            if options.stat { for position in order { statuses.append(localStatuses[Int(position)]) } }
            folders.append(first..<entries.count)
            guard options.recursive else { return index }
            for position in first..<first + local.count where entries[position].kind == .folder {
                let child = names.withUnsafeBufferPointer { bytes in
                    let name = UnsafeRawPointer(bytes.baseAddress! + Int(entries[position].start)).assumingMemoryBound(to: CChar.self)
                    return openat(directory, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                }
                guard child >= 0 else { entries[position].openError = errno; continue }
                let folder = readFolder(fd: child, options: options)
                if folder < 0 { entries[position].openError = errno } else { entries[position].folder = folder }
            }
            return index
        }
    }
}
