import CInotifyTools
import Glibc
import UbiquityCore

extension HubState {
    /// Reads up to `limit` events from libinotifytools and applies them.
    mutating func drain(now: UInt64, limit: Int, outbox: inout HubOutbox) {
        guard initialized else {
            drainedToEmpty = true
            return
        }
        drainedToEmpty = false
        var count = 0
        while count < limit {
            // Timeout 0: select() does not wait (the reader thread polls the descriptor itself).
            guard let event = inotifytools_next_events(0, 1) else {
                drainedToEmpty = true
                break
            }
            count += 1
            process(RawInotifyEvent(event), now: now, outbox: &outbox)
        }
        if drainedToEmpty, let pending = pendingFolderMove {
            pendingFolderMove = nil
            folderMovedOut(pending.path)
        }
    }

    /// Emits every batch that is due.
    mutating func flushDue(now: UInt64, outbox: inout HubOutbox) {
        for id in watchers.keys {
            guard watchers[id]!.coalescer.hasPending else { continue }
            if var batch = watchers[id]!.coalescer.flush(at: now, exists: WatchPaths.exists) {
                watchers[id]!.delivered += 1
                batch.sequence = watchers[id]!.delivered
                outbox.batches.append((watchers[id]!.continuation, batch))
            }
        }
    }

    /// Applies one event: folder bookkeeping here, change tracking in each owner's coalescer.
    mutating func process(_ event: RawInotifyEvent, now: UInt64, outbox: inout HubOutbox) {
        let mask = event.mask
        if mask & InotifyMask.overflow != 0 {
            for (id, watcher) in watchers {
                for root in watcher.roots.keys {
                    let message = WatchMessages.overflow(root: root)
                    watcher.logger.warning("\(message)")
                    watchers[id]?.coalescer.request(RescanRequest(path: root, reason: .overflow, message: message), at: now)
                }
            }
            return
        }
        if let pending = pendingFolderMove, !(mask & InotifyMask.movedTo != 0 && event.cookie == pending.cookie) {
            pendingFolderMove = nil
            folderMovedOut(pending.path)
        }
        guard let folder = folders[event.wd] else { return }
        if mask & InotifyMask.ignored != 0 {
            forgetRemovedWatch(event.wd)
            return
        }
        if event.name.isEmpty {
            if mask & (InotifyMask.deleteSelf | InotifyMask.moveSelf) != 0 {
                // After IN_DELETE_SELF the kernel watch is already gone.
                if mask & InotifyMask.deleteSelf != 0 { forgetRemovedWatch(event.wd) }
                rootGone(wd: event.wd, now: now)
            }
            return
        }
        let path = WatchPaths.join(folder.path, event.name)
        let isDirectory = mask & InotifyMask.isDirectory != 0
        let owners = folder.owners
        if isDirectory {
            if mask & InotifyMask.create != 0 {
                folderAppeared(path, owners: owners, now: now)
            } else if mask & InotifyMask.movedFrom != 0 {
                pendingFolderMove = (event.cookie, path)
            } else if mask & InotifyMask.movedTo != 0 {
                if let pending = pendingFolderMove, pending.cookie == event.cookie {
                    pendingFolderMove = nil
                    folderRenamed(from: pending.path, to: path, parentOwners: owners, now: now)
                } else {
                    folderAppeared(path, owners: owners, now: now)
                }
            }
        }
        if let kind = InotifyMask.kind(of: mask, cookie: event.cookie) {
            let change = WatchEvent(kind, path, isDirectory: isDirectory)
            if owners.count == 1, let owner = owners.first {
                watchers[owner.watcher]?.coalescer.ingest(change, at: now)
            } else {
                // each watcher once (the daemon's index and its sync engine both watch the folder)
                var seen: [UInt64] = []
                for owner in owners where !seen.contains(owner.watcher) {
                    seen.append(owner.watcher)
                    watchers[owner.watcher]?.coalescer.ingest(change, at: now)
                }
            }
        }
        if mask & InotifyMask.create != 0, event.name.hasPrefix(WatchPaths.cookiePrefix),
           let waiter = cookies.removeValue(forKey: path) {
            cookieSeen(waiter, path: path, now: now, outbox: &outbox)
        }
    }

    /// A sync cookie arrived: everything before it was read, so deliver it all, then resume.
    private mutating func cookieSeen(_ waiter: CookieWaiter, path: String, now: UInt64, outbox: inout HubOutbox) {
        if let watcher = watchers[waiter.watcher] {
            if var batch = watchers[waiter.watcher]!.coalescer.flush(at: now, force: true, exists: WatchPaths.exists) {
                watchers[waiter.watcher]!.delivered += 1
                batch.sequence = watchers[waiter.watcher]!.delivered
                outbox.batches.append((watcher.continuation, batch))
            }
        }
        outbox.resumes.append((waiter.continuation, nil))
        outbox.unlinks.append(path)
    }

    /// A folder was created or moved in from outside: watch it and ask for a scan of it.
    private mutating func folderAppeared(_ path: String, owners: Set<RootKey>, now: UInt64) {
        for owner in owners {
            guard let rules = watchers[owner.watcher]?.roots[owner.root]?.rules,
                  !WatchPaths.isIgnored(path, root: owner.root, rules: rules, isDirectory: true) else { continue }
            let result = watchSubtree(path, owner: owner, now: now)
            if result.start == .added {
                watchers[owner.watcher]?.coalescer.request(RescanRequest(path: path, reason: .newDirectory), at: now)
            }
        }
    }

    /// A watched folder was renamed (both ends seen): keep its watches, fix every path below it.
    private mutating func folderRenamed(from source: String, to destination: String,
                                        parentOwners: Set<RootKey>, now: UInt64) {
        let affected = folders.compactMap { WatchPaths.isWithin($0.value.path, root: source) ? $0.key : nil }
        guard !affected.isEmpty else {
            folderAppeared(destination, owners: parentOwners, now: now)
            return
        }
        var movedOwners: Set<RootKey> = []
        for wd in affected {
            guard let old = folders[wd]?.path else { continue }
            if wdByPath[old] == wd { wdByPath[old] = nil }
            folders[wd]?.path = WatchPaths.rebase(old, from: source, to: destination)
            if old == source { movedOwners = folders[wd]?.owners ?? [] }
        }
        for wd in affected { if let path = folders[wd]?.path { wdByPath[path] = wd } }
        renameInLibrary(from: source, to: destination, wds: affected)

        for owner in movedOwners {
            let rules = watchers[owner.watcher]?.roots[owner.root]?.rules
            let keep = parentOwners.contains(owner) && rules.map {
                !WatchPaths.isIgnored(destination, root: owner.root, rules: $0, isDirectory: true)
            } == true
            if !keep { removeOwner(owner, under: destination) }
        }
        for owner in parentOwners where !movedOwners.contains(owner) {
            folderAppeared(destination, owners: [owner], now: now)
        }
    }

    /// Keeps libinotifytools' wd→path bookkeeping right after a folder rename.
    private mutating func renameInLibrary(from source: String, to destination: String, wds: [Int32]) {
        let old = source + "/"
        let new = destination + "/"
        // replace_filename re-sorts its tree while walking it and can miss entries: repeat for
        // any watch that still carries the old prefix.
        for _ in 0..<4 {
            inotifytools_replace_filename(old, new)
            let stragglers = wds.contains { wd in
                guard let name = inotifytools_filename_from_wd(wd) else { return false }
                return String(cString: name).hasPrefix(old)
            }
            if !stragglers { break }
        }
    }

    /// A folder moved out of every watched folder: drop its watches.
    private mutating func folderMovedOut(_ path: String) {
        for (wd, folder) in folders where WatchPaths.isWithin(folder.path, root: path) { dropWatch(wd) }
    }

    /// A root was deleted or moved (`IN_DELETE_SELF`/`IN_MOVE_SELF` on its own watch).
    private mutating func rootGone(wd: Int32, now: UInt64) {
        for (id, watcher) in watchers {
            for (root, record) in watcher.roots where record.wd == wd {
                let message = WatchMessages.rootChanged(root: root)
                watcher.logger.warning("\(message)")
                watchers[id]?.coalescer.request(RescanRequest(path: root, reason: .rootChanged, message: message), at: now)
                removeRoot(root, of: id, keepPending: true)
            }
        }
    }
}
