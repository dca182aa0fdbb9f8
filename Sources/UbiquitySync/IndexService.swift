import Foundation
import Logging
import Synchronization
import UbiquityCore
import UbiquityIndex
import UbiquityStore

/// The daemon's index: one ``IndexHost`` over the index file, watching the containers folder
/// for as long as the daemon runs (and other folders while queries need them), answering the
/// control socket, rescanning every root periodically (the correctness backstop), and
/// rebuilding the index from a full scan when its file is deleted or corrupted underneath it.
package final class IndexService: Sendable {
    /// The index file.
    package let databasePath: String
    /// Folders indexed for as long as the daemon runs.
    package let permanentRoots: [String]
    let logger: Logger
    private let hostBox: HostReference
    let control: ControlService
    private let tasks = Mutex<[Task<Void, Never>]>([])
    private let identity: Mutex<FileIdentity?>
    /// Told when the index file was rebuilt (a new device database: the sync, whose journals
    /// were in the old one, starts again on it).
    private let rebuildRelay = Broadcaster<Void>()
    /// Every delta of the host of the moment, across rebuilds (``childFolderChanges(of:)``).
    private let deltaRelay = Broadcaster<IndexDelta>()

    struct FileIdentity: Equatable {
        var device: UInt64
        var inode: UInt64
    }

    /// Opens (or rebuilds) the index at `databasePath` and binds the control socket.
    package init(databasePath: String, controlSocket: String, permanentRoots: [String], logger: Logger) throws {
        self.databasePath = databasePath
        // symbolic links resolved: the engines' folders are canonical, and the index's rows must
        // be named as they name them for the change feed to reach them
        self.permanentRoots = permanentRoots.map { (try? CanonicalPath.canonicalize($0, resolveLast: true)) ?? $0 }
        self.logger = logger
        let index = try MetadataIndex(path: databasePath, logger: logger)
        if index.wasRebuilt {
            logger.warning("the index file was corrupt: moved it aside and rebuilt the index from a full scan",
                           metadata: ["ubiquity.index": "\(databasePath)"])
        }
        let host = IndexHost(index: index, logger: logger)
        let box = HostReference(host)
        hostBox = box
        identity = Mutex(Self.identity(of: databasePath))
        control = try ControlService(socketPath: controlSocket, hostProvider: { box.current },
                                     databasePath: databasePath, logger: logger)
        relayDeltas(of: host)
    }

    /// Hands `host`'s deltas to ``deltaRelay`` until the host shuts down.
    private func relayDeltas(of host: IndexHost) {
        let deltas = host.deltas()
        let relay = deltaRelay
        tasks.withLock { $0.append(Task { for await delta in deltas { relay.yield(delta) } }) }
    }

    /// A stream with an element whenever a folder directly in `folder` (an indexed root, as the
    /// containers folder is) appears, goes or moves, or its `infoFile` changes: the kernel's word
    /// through the index's watcher, for the app-container sync instead of listing the folder
    /// every few seconds.
    package func childFolderChanges(of folder: String, infoFile: String) -> AsyncStream<Void> {
        let parent = (try? CanonicalPath.canonicalize(folder, resolveLast: true)) ?? folder
        let deltas = deltaRelay.subscribe()
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let relay = Task {
            for await delta in deltas where Self.changesChildFolders(of: parent, infoFile: infoFile, delta) { continuation.yield() }
            continuation.finish()
        }
        continuation.onTermination = { _ in relay.cancel() }
        return stream
    }

    /// Whether `delta` adds, removes or moves a folder directly in `parent` (a removed path
    /// counts whatever it was: the delta no longer says), or touches the `infoFile` of one.
    static func changesChildFolders(of parent: String, infoFile: String, _ delta: IndexDelta) -> Bool {
        func isChild(_ path: String) -> Bool {
            path.hasPrefix(parent + "/") && !path.utf8.dropFirst(parent.utf8.count + 1).contains(UInt8(ascii: "/"))
        }
        func isInfo(_ path: String) -> Bool {
            path.hasSuffix("/" + infoFile) && isChild(String(path.dropLast(infoFile.count + 1)))
        }
        return delta.added.contains { ($0.isDirectory && isChild($0.path)) || isInfo($0.path) }
            || delta.changed.contains { isInfo($0.path) }
            || delta.removed.contains { isChild($0) || isInfo($0) }
            || delta.moved.contains { isChild($0.from) || isInfo($0.from) || ($0.record.isDirectory && isChild($0.record.path)) || isInfo($0.record.path) }
    }

    /// A stream with an element each time the index file is rebuilt while the daemon runs: the
    /// device database (and the journals in it) is a new one, ``host``'s from then on.
    package func rebuilds() -> AsyncStream<Void> { rebuildRelay.subscribe() }

    /// The host answering queries now.
    package var host: IndexHost { hostBox.current }

    /// The control socket path.
    package var controlSocket: String { control.socketPath }

    /// Starts answering on the control socket, indexes the permanent roots, and starts the
    /// periodic rescan (every `rescanInterval`) and the index-file watchdog: the kernel tells it
    /// when the file is written, replaced or removed (``FileChangeSignal``); every
    /// `watchdogBackstop` it looks anyway, in case the folder could not be watched.
    package func start(rescanInterval: Duration = .seconds(3600), watchdogBackstop: Duration = .seconds(60)) {
        control.start()
        let host = self.host
        let roots = permanentRoots
        let logger = self.logger
        let initial = Task {
            for root in roots {
                do { try await host.addPermanentRoot(root) } catch {
                    logger.error("cannot index \(root)", metadata: ["ubiquity.error": "\(error)"])
                }
            }
        }
        let backstop = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: rescanInterval)
                guard let self, !Task.isCancelled else { return }
                for root in self.host.roots {
                    do { try await self.host.rescan(root) } catch {
                        logger.warning("periodic rescan failed", metadata: ["ubiquity.root": "\(root)", "ubiquity.error": "\(error)"])
                    }
                }
            }
        }
        let (checks, check) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let signal = FileChangeSignal(path: databasePath, suffixes: [], logger: logger) { check.yield() }
        let watchdog = Task { [weak self] in
            defer { signal?.stop() }
            // One check at a time: a rebuild in progress is not started twice.
            for await _ in checks {
                guard let self, !Task.isCancelled else { return }
                await self.checkIndexFile()
            }
        }
        let watchdogTimer = Task {
            while (try? await Task.sleep(for: watchdogBackstop)) != nil { check.yield() }
            check.finish()
        }
        tasks.withLock { $0 += [initial, backstop, watchdog, watchdogTimer] }
    }

    /// Stops everything.
    package func stop() {
        for task in tasks.withLock({ $0 }) { task.cancel() }
        control.stop()
        host.shutdown()
    }

    /// The status report (as `ubiq index status` shows it).
    package func statusReport() throws -> IndexStatusReport {
        try host.statusReport(database: databasePath)
    }

    /// Rebuilds the index when its file was deleted, replaced or no longer looks like SQLite.
    func checkIndexFile() async {
        let now = Self.identity(of: databasePath)
        let expected = identity.withLock { $0 }
        guard now == nil || now != expected || !Self.hasSQLiteHeader(databasePath) else { return }
        let reason = now == nil ? "was deleted" : now != expected ? "was replaced" : "is corrupt"
        logger.warning("the index file \(reason) while the daemon ran: rebuilding it from a full scan",
                       metadata: ["ubiquity.index": "\(databasePath)"])
        do {
            if now != nil && now == expected {
                // Corrupt in place: move it aside so a fresh file can take its name.
                try? FileManager.default.moveItem(atPath: databasePath, toPath: databasePath + ".corrupt-\(Int(Date().timeIntervalSince1970))")
            }
            for suffix in ["-wal", "-shm"] { unlink(databasePath + suffix) }
            let index = try MetadataIndex(path: databasePath, logger: logger)
            let fresh = IndexHost(index: index, logger: logger)
            let old = hostBox.replace(with: fresh)
            relayDeltas(of: fresh)
            identity.withLock { $0 = Self.identity(of: databasePath) }
            let roots = Set(permanentRoots + old.roots)
            old.shutdown()
            for root in roots.sorted() {
                do { try await fresh.addPermanentRoot(root) } catch {
                    logger.error("cannot index \(root)", metadata: ["ubiquity.error": "\(error)"])
                }
            }
            fresh.note("the index file \(reason) while the daemon ran; it was rebuilt from a full scan")
            rebuildRelay.yield(())
        } catch {
            logger.error("cannot rebuild the index", metadata: ["ubiquity.error": "\(error)"])
        }
    }

    static func identity(of path: String) -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    static func hasSQLiteHeader(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        return header.isEmpty || header == Data("SQLite format 3\0".utf8)
    }
}

/// The daemon's current index host, replaced when the index is rebuilt.
final class HostReference: Sendable {
    private let host: Mutex<IndexHost>

    init(_ host: IndexHost) { self.host = Mutex(host) }

    /// The host answering now.
    var current: IndexHost { host.withLock { $0 } }

    /// Puts `fresh` in place and returns the host it replaces.
    func replace(with fresh: IndexHost) -> IndexHost {
        host.withLock { current in
            defer { current = fresh }
            return current
        }
    }
}
