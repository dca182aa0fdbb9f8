import Foundation

/// What the metadata index holds and how fresh it is.
public struct IndexStatus: Sendable, Hashable {
    /// The number of indexed items (files, folders and symbolic links).
    public var itemCount: Int
    /// How many of them are folders.
    public var folderCount: Int
    /// The bytes the database takes on disk (main file, WAL and shared memory), 0 in memory.
    public var databaseBytes: Int64
    /// The registered roots.
    public var roots: [IndexRootStatus]
    /// Whether the database was found corrupt when opened and rebuilt empty.
    public var wasRebuilt: Bool

    /// A status with the given values.
    public init(itemCount: Int, folderCount: Int, databaseBytes: Int64, roots: [IndexRootStatus], wasRebuilt: Bool) {
        self.itemCount = itemCount
        self.folderCount = folderCount
        self.databaseBytes = databaseBytes
        self.roots = roots
        self.wasRebuilt = wasRebuilt
    }
}

/// The scan state of one indexed root.
public struct IndexRootStatus: Sendable, Hashable {
    /// The absolute path of the root.
    public var path: String
    /// When the last full scan started.
    public var lastScanStarted: Date?
    /// When the last full scan finished (nil while the first one runs).
    public var lastScanFinished: Date?
    /// Whether events were lost and a rescan is due.
    public var rescanPending: Bool
    /// Why (for example the inotify watch limit, with the sysctl to raise).
    public var message: String?

    /// A root status with the given values.
    public init(path: String, lastScanStarted: Date?, lastScanFinished: Date?, rescanPending: Bool, message: String?) {
        self.path = path
        self.lastScanStarted = lastScanStarted
        self.lastScanFinished = lastScanFinished
        self.rescanPending = rescanPending
        self.message = message
    }
}
