import CInotifyTools
import Glibc
import Logging
import UbiquityCore

/// One root of one watcher: the unit that owns folder watches.
struct RootKey: Hashable, Sendable {
    var watcher: UInt64
    var root: String
}

/// A watched folder: its current path and the roots that want it.
struct WatchedFolder: Sendable {
    var path: String
    var owners: Set<RootKey>
}

/// The hub's view of one ``FileWatcher``.
struct HubWatcher: Sendable {
    struct Root: Sendable {
        var rules: IgnoreRules
        var wd: Int32 = -1
        /// The feed that tells this root's changes (no inotify watches), if any.
        var feed: String?
    }

    var coalescer: WatchCoalescer
    var continuation: AsyncStream<WatchBatch>.Continuation
    /// Batches handed to the stream so far (each batch carries its number as `sequence`).
    var delivered: UInt64 = 0
    var roots: [String: Root] = [:]
    var failAddWatch: (@Sendable (String) -> Int32?)?
    var logger: Logger
}

/// A ``FileWatcher/sync(root:timeout:)`` call waiting for its cookie file to be seen.
struct CookieWaiter: Sendable {
    var watcher: UInt64
    var deadline: UInt64
    var continuation: CheckedContinuation<Void, any Error>
    var created = false
}

/// Work to do once the hub's lock is released: deliveries never happen under the lock.
struct HubOutbox: Sendable {
    var batches: [(AsyncStream<WatchBatch>.Continuation, WatchBatch)] = []
    var resumes: [(CheckedContinuation<Void, any Error>, UbiquityError?)] = []
    var finishes: [AsyncStream<WatchBatch>.Continuation] = []
    var unlinks: [String] = []

    /// Yields the batches, resumes the waiters, ends streams and removes cookie files.
    func deliver() {
        for (continuation, batch) in batches { continuation.yield(batch) }
        for (continuation, error) in resumes {
            if let error { continuation.resume(throwing: error) } else { continuation.resume() }
        }
        for continuation in finishes { continuation.finish() }
        for path in unlinks { unlink(path) }
    }
}

/// Everything the hub guards with its one lock, including every call into libinotifytools
/// (which keeps global state and is not thread-safe).
struct HubState: Sendable {
    var initialized = false
    var fd: Int32 = -1
    var readerRunning = false
    var watchers: [UInt64: HubWatcher] = [:]
    var folders: [Int32: WatchedFolder] = [:]
    var wdByPath: [String: Int32] = [:]
    var pendingFolderMove: (cookie: UInt32, path: String)?
    var cookies: [String: CookieWaiter] = [:]
    var cookiesToCreate: [String] = []
    var pendingUnlinks: [String] = []
    var drainedToEmpty = true
    /// The roots fed by a ``FolderChangeFeed`` (by feed), which have no inotify watches.
    var fedOwners: [String: Set<RootKey>] = [:]

    /// Whether a reader thread is needed (some root is watched, a sync waits, or a batch is
    /// still to be delivered: a root that went away leaves its rescan request).
    var needsReader: Bool {
        !cookies.isEmpty || watchers.values.contains { !$0.roots.isEmpty || $0.coalescer.hasPending }
    }

    // MARK: Library

    /// Initialises libinotifytools once and finds its descriptor (for `poll`).
    mutating func initializeLibrary() throws {
        if initialized { return }
        let before = Self.inotifyDescriptors()
        guard inotifytools_initialize() != 0 else {
            throw UbiquityError.posix("inotifytools_initialize", errno: inotifytools_error())
        }
        let created = Self.inotifyDescriptors().subtracting(before)
        guard created.count == 1, let descriptor = created.first else {
            inotifytools_cleanup()
            throw UbiquityError(.io, "could not identify libinotifytools' inotify descriptor in /proc/self/fd")
        }
        fd = descriptor
        initialized = true
    }

    /// Closes libinotifytools' instance and forgets every watch.
    mutating func shutdownLibrary() {
        guard initialized else { return }
        inotifytools_cleanup()
        initialized = false
        fd = -1
        folders = [:]
        wdByPath = [:]
        pendingFolderMove = nil
    }

    private static func inotifyDescriptors() -> Set<Int32> {
        var result: Set<Int32> = []
        guard let stream = opendir("/proc/self/fd") else { return result }
        defer { closedir(stream) }
        var buffer = [CChar](repeating: 0, count: 64)
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
            }
            guard let descriptor = Int32(name) else { continue }
            let count = readlink("/proc/self/fd/" + name, &buffer, buffer.count - 1)
            guard count > 0 else { continue }
            let target = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if target == "anon_inode:inotify" { result.insert(descriptor) }
        }
        return result
    }

    // MARK: Watches

    /// Watches the folder at `path` for `owner` (through libinotifytools, so its bookkeeping
    /// knows the folder) and records the watch descriptor.
    mutating func addWatch(_ path: String, owner: RootKey) -> AddWatchOutcome {
        guard initialized else { return .failed(EBADF) }
        if let hook = watchers[owner.watcher]?.failAddWatch, let code = hook(path) {
            return AddWatchOutcome(errno: code)
        }
        guard inotifytools_watch_file(path, Int32(bitPattern: InotifyMask.folderWatch)) != 0 else {
            return AddWatchOutcome(errno: inotifytools_error())
        }
        // libinotifytools does not return the descriptor; adding the same inode again with the
        // same mask returns the existing one (and changes nothing).
        let wd = inotify_add_watch(fd, path, InotifyMask.folderWatch)
        guard wd >= 0 else { return AddWatchOutcome(errno: errno) }
        guard inotifytools_filename_from_wd(wd) != nil else {
            // The folder was replaced between the two calls: this watch is not libinotifytools'.
            inotify_rm_watch(fd, wd)
            return .skipped
        }
        if let old = wdByPath[path], old != wd, folders[old]?.path == path {
            // A stale descriptor for a folder that was replaced; its IN_IGNORED is still queued.
            folders[old] = nil
        }
        folders[wd, default: WatchedFolder(path: path, owners: [])].owners.insert(owner)
        folders[wd]?.path = path
        wdByPath[path] = wd
        if path == owner.root { watchers[owner.watcher]?.roots[owner.root]?.wd = wd }
        return .added
    }

    /// Removes the kernel watch `wd` and forgets it.
    mutating func dropWatch(_ wd: Int32) {
        if let folder = folders.removeValue(forKey: wd), wdByPath[folder.path] == wd {
            wdByPath[folder.path] = nil
        }
        _ = inotifytools_remove_watch_by_wd(wd)
    }

    /// The kernel removed `wd` (`IN_IGNORED`: the folder was deleted or its file system unmounted).
    mutating func forgetRemovedWatch(_ wd: Int32) {
        if let folder = folders.removeValue(forKey: wd), wdByPath[folder.path] == wd {
            wdByPath[folder.path] = nil
        }
        // libinotifytools cannot drop an entry without inotify_rm_watch (which fails now, and
        // prints); rename it out of the way so a folder re-created at the same path is tracked.
        if let name = inotifytools_filename_from_wd(wd) {
            let old = String(cString: name)  // the walk frees the entry's own string
            inotifytools_replace_filename(old, "\u{1}ubiquity-removed-watch-\(wd)/")
        }
    }

    /// Removes `owner` from every folder at or below `path`, dropping watches nobody wants.
    mutating func removeOwner(_ owner: RootKey, under path: String?) {
        for (wd, folder) in folders where folder.owners.contains(owner) {
            if let path, !WatchPaths.isWithin(folder.path, root: path) { continue }
            folders[wd]?.owners.remove(owner)
            if folders[wd]?.owners.isEmpty == true { dropWatch(wd) }
        }
    }

    /// Watches `path` and the folders below it for `owner`; reports a watch limit.
    mutating func watchSubtree(_ path: String, owner: RootKey, now: UInt64) -> FolderWalk.Result {
        guard let rules = watchers[owner.watcher]?.roots[owner.root]?.rules else { return FolderWalk.Result() }
        let result = FolderWalk.run(start: path, root: owner.root, rules: rules) { folder in
            addWatch(folder, owner: owner)
        }
        if let limit = result.limit { reportLimit(owner, path: limit.path, errno: limit.errno, now: now) }
        return result
    }

    /// Queues a ``RescanRequest/Reason/watchLimit`` request for `owner`.
    mutating func reportLimit(_ owner: RootKey, path: String, errno code: Int32, now: UInt64) {
        let message = WatchMessages.watchLimit(path: path, errno: code,
                                               maxUserWatches: Int(inotifytools_get_max_user_watches()))
        watchers[owner.watcher]?.logger.warning("\(message)")
        watchers[owner.watcher]?.coalescer.request(
            RescanRequest(path: path, reason: .watchLimit, message: message), at: now)
    }

    /// Watches of `watcher`.
    func watchCount(of watcher: UInt64) -> Int {
        folders.values.reduce(0) { count, folder in
            count + (folder.owners.contains { $0.watcher == watcher } ? 1 : 0)
        }
    }

    /// Stops watching `root` for `watcher`.
    mutating func removeRoot(_ root: String, of watcher: UInt64, keepPending: Bool) {
        if let feed = watchers[watcher]?.roots[root]?.feed { fedOwners[feed]?.remove(RootKey(watcher: watcher, root: root)) }
        removeOwner(RootKey(watcher: watcher, root: root), under: nil)
        watchers[watcher]?.roots[root] = nil
        if !keepPending { watchers[watcher]?.coalescer.removeRoot(root) }
    }
}
