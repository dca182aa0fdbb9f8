import UbiquityCore

/// Roots fed by the code that changes them (``FolderChangeFeed``: the mounted folder's FUSE
/// handlers) rather than by inotify: no watch is added under them; their changes are drained
/// from the feed's queue on the reader thread, as inotify's queue is, and go to the same
/// coalescers.
extension HubState {
    /// The key of a ``FileWatcher/sync(root:timeout:)`` marker in a fed root (no file is made).
    static func markerKey(_ feed: String, _ number: UInt64) -> String { feed + "\u{0}marker-\(number)" }

    /// Drains every feed a root is fed from, ingesting its changes for the owners of the roots
    /// under it; a feed that overflowed or went away asks for a rescan of those roots.
    mutating func drainFeeds(now: UInt64, outbox: inout HubOutbox) {
        for (feed, owners) in fedOwners where !owners.isEmpty {
            guard FolderChangeFeed.shared.isOpen(feed) else {
                for owner in owners {
                    let message = WatchMessages.rootChanged(root: owner.root)
                    watchers[owner.watcher]?.logger.warning("\(message)")
                    watchers[owner.watcher]?.coalescer.request(RescanRequest(path: owner.root, reason: .rootChanged, message: message), at: now)
                    removeRoot(owner.root, of: owner.watcher, keepPending: true)
                }
                fedOwners[feed] = nil
                continue
            }
            let drained = FolderChangeFeed.shared.drain(feed)
            var hidden: [String: Bool] = [:]  // folder → whether it is (under) an ignored folder, per owner root
            for change in drained.changes {
                if case .marker(let number) = change.kind {
                    let key = Self.markerKey(feed, number)
                    if let waiter = cookies.removeValue(forKey: key) { markerSeen(waiter, outbox: &outbox, now: now) }
                    continue
                }
                guard let kind = Self.kind(change.kind) else { continue }
                let event = WatchEvent(kind, change.path, isDirectory: change.isDirectory)
                var seen: [UInt64] = []
                for owner in owners where !seen.contains(owner.watcher) && WatchPaths.isWithin(change.path, root: owner.root) {
                    guard let rules = watchers[owner.watcher]?.roots[owner.root]?.rules,
                          !Self.underIgnoredFolder(change.path, root: owner.root, rules: rules, cache: &hidden) else { continue }
                    seen.append(owner.watcher)
                    watchers[owner.watcher]?.coalescer.ingest(event, at: now)
                }
            }
            if drained.overflowed {
                for owner in owners {
                    let message = WatchMessages.feedOverflow(root: owner.root)
                    watchers[owner.watcher]?.logger.warning("\(message)")
                    watchers[owner.watcher]?.coalescer.request(RescanRequest(path: owner.root, reason: .overflow, message: message), at: now)
                }
            }
        }
    }

    /// A watcher's marker came through its feed: everything posted before it was ingested.
    private mutating func markerSeen(_ waiter: CookieWaiter, outbox: inout HubOutbox, now: UInt64) {
        if watchers[waiter.watcher] != nil,
           var batch = watchers[waiter.watcher]!.coalescer.flush(at: now, force: true, exists: WatchPaths.exists) {
            watchers[waiter.watcher]!.delivered += 1
            batch.sequence = watchers[waiter.watcher]!.delivered
            outbox.batches.append((watchers[waiter.watcher]!.continuation, batch))
        }
        outbox.resumes.append((waiter.continuation, nil))
    }

    static func kind(_ kind: FolderChangeFeed.Change.Kind) -> WatchEvent.Kind? {
        switch kind {
        case .created: .created
        case .modified: .modified
        case .closedAfterWriting: .closedAfterWriting
        case .deleted: .deleted
        case .movedFrom(let cookie): .movedFrom(cookie: cookie)
        case .movedTo(let cookie): .movedTo(cookie: cookie)
        case .marker: nil
        }
    }

    /// Whether a folder above `path` (below `root`) is ignored: inotify would not have watched
    /// it, so nothing in it is reported. `cache` remembers folders already asked.
    static func underIgnoredFolder(_ path: String, root: String, rules: IgnoreRules, cache: inout [String: Bool]) -> Bool {
        guard let slash = path.lastIndex(of: "/") else { return false }
        let parent = String(path[..<slash])
        if parent.utf8.count <= root.utf8.count { return false }
        let key = root + "\u{0}" + parent
        if let known = cache[key] { return known }
        let hidden = WatchPaths.isIgnored(parent, root: root, rules: rules, isDirectory: true)
            || underIgnoredFolder(parent, root: root, rules: rules, cache: &cache)
        cache[key] = hidden
        return hidden
    }
}
