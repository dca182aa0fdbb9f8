// SPDX-License-Identifier: Apache-2.0
import Glibc
import UbiquityCore

/// The folders open through the mount (`opendir` to `releasedir`): each a listing taken when
/// it was opened (and again when it is read from the start), as a view shows it. Handles are
/// numbers from 2⁴⁰ up, apart from file descriptors (a file's handle is its descriptor).
struct FolderHandles: Sendable {
    /// One open folder.
    struct Listing: Sendable {
        /// The folder's path (relative to the mounted folder).
        var path: String
        /// The view it was opened in.
        var view: MountView
        /// The names, as shown.
        var entries: [MountView.Entry]
        /// Their types (`d_type`: an evicted file's is a regular file's).
        var types: [UInt8]

        /// The listing of the folder at `path` whose names on disk are `names`, in `view`.
        init(path: String, view: MountView, names: [(name: String, type: UInt8)]) {
            self.path = path
            self.view = view
            entries = view.entries(names.map(\.name))
            guard view == .documents else {
                types = names.map(\.type)  // the names as on disk, in their order
                return
            }
            var byName: [String: UInt8] = [:]
            for (name, type) in names { byName[name] = type }
            types = entries.map { $0.isDataless ? UInt8(DT_REG) : byName[$0.name] ?? 0 }
        }
    }

    private var listings: [UInt64: Listing] = [:]
    /// The first folder handle (file handles are descriptors, below it).
    static let firstHandle: UInt64 = 1 << 40
    private var next: UInt64 = firstHandle

    /// Keeps `listing`; its handle.
    mutating func open(_ listing: Listing) -> UInt64 {
        let handle = next
        next += 1
        listings[handle] = listing
        return handle
    }

    /// The listing of `handle`.
    subscript(handle: UInt64) -> Listing? {
        get { listings[handle] }
        set { listings[handle] = newValue }
    }

    /// Drops `handle`.
    mutating func close(_ handle: UInt64) { listings[handle] = nil }
}
