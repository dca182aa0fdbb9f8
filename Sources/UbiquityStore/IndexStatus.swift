import Foundation

/// What the metadata index holds and how fresh it is.
package struct IndexStatus: Sendable, Hashable {
    /// The number of indexed items (files, folders and symbolic links).
    package var itemCount: Int
    /// How many of them are folders.
    package var folderCount: Int
    /// The bytes the database takes on disk (main file, WAL and shared memory), 0 in memory.
    package var databaseBytes: Int64
    /// The registered roots.
    package var roots: [IndexRootStatus]
    /// Whether the database was found corrupt when opened and rebuilt empty.
    package var wasRebuilt: Bool

    /// A status with the given values.
    package init(itemCount: Int, folderCount: Int, databaseBytes: Int64, roots: [IndexRootStatus], wasRebuilt: Bool) {
        self.itemCount = itemCount
        self.folderCount = folderCount
        self.databaseBytes = databaseBytes
        self.roots = roots
        self.wasRebuilt = wasRebuilt
    }
}

/// The scan state of one indexed root.
package struct IndexRootStatus: Sendable, Hashable {
    /// The absolute path of the root.
    package var path: String
    /// When the last full scan started.
    package var lastScanStarted: Date?
    /// When the last full scan finished (nil while the first one runs).
    package var lastScanFinished: Date?
    /// Whether events were lost and a rescan is due.
    package var rescanPending: Bool
    /// Why (for example the inotify watch limit, with the sysctl to raise).
    package var message: String?

    /// A root status with the given values.
    package init(path: String, lastScanStarted: Date?, lastScanFinished: Date?, rescanPending: Bool, message: String?) {
        self.path = path
        self.lastScanStarted = lastScanStarted
        self.lastScanFinished = lastScanFinished
        self.rescanPending = rescanPending
        self.message = message
    }
}
