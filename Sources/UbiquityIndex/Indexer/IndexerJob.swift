import Dispatch
import Logging
import Synchronization
import UbiquityCore
import UbiquityStore

/// The blocking work of an ``Indexer``, run on its worker queue with a snapshot of its roots.
struct IndexerJob: Sendable {
    let index: MetadataIndex
    let scanner: TreeScanner
    let logger: Logger
    let roots: [String: IgnoreRules]
    /// The thread a scan's batches are written on while the walk goes on (two cores: the walk
    /// and SQLite at once).
    let writer: BackgroundThread

    /// Counts a step's delta and, when the job's caller wants the merged delta, keeps it (the
    /// index published it on its change feed when the step committed).
    func publish(_ delta: IndexDelta, into steps: inout IndexJobSteps) {
        guard !delta.isEmpty else { return }
        steps.note(delta)
    }

    /// The registered root equal to or containing `path` (the innermost), with its rules and
    /// `path` relative to it.
    func root(of path: String) -> (path: String, rules: IgnoreRules, relative: String)? {
        var best: (path: String, rules: IgnoreRules, relative: String)?
        for (root, rules) in roots {
            let relative: String
            if path == root {
                relative = ""
            } else if path.hasPrefix(root == "/" ? "/" : root + "/") {
                relative = String(path.dropFirst(root == "/" ? 1 : root.count + 1))
            } else {
                continue
            }
            if best == nil || root.count > best!.path.count { best = (root, rules, relative) }
        }
        return best
    }

    /// Scans the subtree strictly under `folder` and reconciles the index with it.
    @discardableResult
    func scanSubtree(_ folder: String, root: String, rules: IgnoreRules, bulk: Bool = false,
                     into total: inout IndexJobSteps) throws -> ScanSummary {
        let relative = folder == root ? "" : String(folder.dropFirst(root == "/" ? 1 : root.count + 1))
        let session = try index.beginScan(root: folder, bulk: bulk)
        do {
            // the walk hands its batches to the writer thread (two at most waiting) and goes on
            let writes = PipelinedWrites(writer: writer, steps: total)
            let summary: ScanSummary
            do {
                summary = try scanner.scan(root: folder, ignoring: rules, relativePrefix: relative) { batch in
                    try writes.submit { try index.addScanned(batch, to: session) }
                }
            } catch {
                _ = try? writes.finish()
                throw error
            }
            total = try writes.finish()
            publish(try index.finishScan(session), into: &total)
            // names that are not UTF-8 are no rows: their folders are named on the feed (sync reports them)
            index.publishUnindexable(summary.foldersWithInvalidNames.sorted().map { $0 + "/\u{FFFD}" })
            return summary
        } catch {
            index.cancelScan(session)
            throw error
        }
    }

    /// Brings `path` and its subtree up to date.
    func rescan(_ path: String, into total: inout IndexJobSteps, summaries: inout [String: ScanSummary]) throws {
        guard let (root, rules, relative) = root(of: path) else {
            throw UbiquityError(.invalidArgument, "'\(path)' is not under an indexed root")
        }
        if relative.isEmpty {
            do {
                summaries[root] = try scanSubtree(root, root: root, rules: rules, into: &total)
            } catch let error as UbiquityError where error.code == .notFound {
                logger.warning("An indexed root is missing; its items were removed from the index", metadata: ["root": "\(root)"])
                let session = try index.beginScan(root: root)
                publish(try index.finishScan(session), into: &total)
                try index.setRescanPending(root: root, true, message: "The folder '\(root)' is missing")
            }
            return
        }
        guard let record = TreeScanner.record(at: path),
              !isIgnored(relative: relative, isDirectory: false, rules: rules) else {
            publish(try index.remove(pathsAndSubtrees: [path]), into: &total)
            return
        }
        if record.isDirectory, rules.isIgnored(name: record.name, relativePath: relative, isDirectory: true) {
            publish(try index.remove(pathsAndSubtrees: [path]), into: &total)
            return
        }
        publish(try index.apply([record]), into: &total)
        if record.isDirectory {
            var summary = ScanSummary()
            do {
                summary = try scanSubtree(path, root: root, rules: rules, into: &total)
            } catch let error as UbiquityError where error.code == .notFound {
                publish(try index.remove(pathsAndSubtrees: [path]), into: &total)
            } catch let error as UbiquityError where error.code == .permissionDenied {
                summary.warnings.append(ScanWarning(kind: .permissionDenied, path: path, message: error.message))
            }
            summaries[root, default: ScanSummary()].warnings.append(contentsOf: summary.warnings)
        } else {
            // A folder replaced by a file: its former contents are gone.
            publish(try index.remove(pathsAndSubtrees: descendantsOnly(path)), into: &total)
        }
    }

    /// Applies a batch's changes in order. Runs of changed files (the usual burst: many files
    /// written) are written in one index transaction each (``MetadataIndex/applyFiles(_:)``);
    /// anything else (folders, removals, moves, ignored or vanished items) goes one by one.
    func apply(_ changes: [WatchChange], into total: inout IndexJobSteps) throws {
        let changes = Self.standingForStubs(changes)
        // names that are not valid UTF-8 (U+FFFD for the bad bytes) are never rows: told as such
        let unindexable = changes.compactMap { change -> String? in
            switch change {
            case .changed(let path), .removed(let path), .moved(_, let path): path.contains("\u{FFFD}") ? path : nil
            }
        }
        index.publishUnindexable(unindexable)
        var files: [IndexRecord] = []
        func flush(into total: inout IndexJobSteps) throws {
            guard !files.isEmpty else { return }
            publish(try index.applyFiles(files), into: &total)
            files.removeAll(keepingCapacity: true)
        }
        for change in changes {
            if case .changed(let path) = change, let record = writtenFile(at: Indexer.normalize(path)) {
                files.append(record)
                if files.count >= Self.filesPerTransaction { try flush(into: &total) }
                continue
            }
            try flush(into: &total)
            try apply(change, into: &total)
        }
        try flush(into: &total)
    }

    /// The changes with evicted files' stubs (``Placeholder``) read as their documents: a stub
    /// written, removed or moved is a change of its document's row (looked at again: the file is
    /// there, or its stub, or nothing), and a file removed that left a stub behind (evicted) is
    /// looked at again rather than removed.
    static func standingForStubs(_ changes: [WatchChange]) -> [WatchChange] {
        func document(_ path: String) -> String? {
            path.utf8.last == UInt8(ascii: "d") ? Placeholder.documentPath(ofStub: path) : nil
        }
        var result: [WatchChange] = []
        result.reserveCapacity(changes.count)
        for change in changes {
            switch change {
            case .changed(let path):
                result.append(.changed(document(path) ?? path))
            case .removed(let path):
                if let document = document(path) {
                    result.append(.changed(document))
                } else if Placeholder.isEvicted(Indexer.normalize(path)) {
                    result.append(.changed(path))
                } else {
                    result.append(change)
                }
            case .moved(let from, let to):
                guard document(from) != nil || document(to) != nil else {
                    result.append(change)
                    continue
                }
                result.append(.changed(document(from) ?? from))
                result.append(.changed(document(to) ?? to))
            }
        }
        return result
    }

    /// Files written per index transaction.
    static let filesPerTransaction = 2000

    /// The record of the file at `path` when a `.changed` there is a plain file update: under a
    /// root, a file (not a folder) now, and not ignored. Nil otherwise (the one-by-one path
    /// decides).
    private func writtenFile(at path: String) -> IndexRecord? {
        guard let (_, rules, relative) = root(of: path), !relative.isEmpty,
              let record = TreeScanner.record(at: path), !record.isDirectory,
              !isIgnored(relative: relative, isDirectory: false, rules: rules) else { return nil }
        return record
    }

    /// Applies one watcher change.
    func apply(_ change: WatchChange, into total: inout IndexJobSteps) throws {
        var ignored: [String: ScanSummary] = [:]
        switch change {
        case .changed(let path):
            let path = Indexer.normalize(path)
            guard let (_, _, relative) = root(of: path), !relative.isEmpty else { return }
            let existing = try index.record(at: path)
            if let existing, existing.isDirectory, let now = TreeScanner.record(at: path), now.isDirectory {
                // A folder's own attributes changed: its contents are watched separately.
                publish(try index.apply([now]), into: &total)
            } else {
                try rescan(path, into: &total, summaries: &ignored)
            }
        case .removed(let path):
            let path = Indexer.normalize(path)
            guard root(of: path) != nil else { return }
            publish(try index.remove(pathsAndSubtrees: [path]), into: &total)
        case .moved(let from, let to):
            let from = Indexer.normalize(from), to = Indexer.normalize(to)
            let destination = root(of: to)
            guard let destination, !destination.relative.isEmpty else {
                if root(of: from) != nil { publish(try index.remove(pathsAndSubtrees: [from]), into: &total) }
                return
            }
            guard root(of: from) != nil, let old = try index.record(at: from) else {
                try rescan(to, into: &total, summaries: &ignored)
                return
            }
            publish(try index.move(from: from, to: to), into: &total)
            let now = TreeScanner.record(at: to)
            if let now, now.isDirectory == old.isDirectory,
               !isIgnored(relative: destination.relative, isDirectory: now.isDirectory, rules: destination.rules) {
                // rename(2) changes the ctime: refresh the moved row itself.
                publish(try index.apply([now]), into: &total)
            } else {
                try rescan(to, into: &total, summaries: &ignored)
            }
        }
    }

    private func isIgnored(relative: String, isDirectory: Bool, rules: IgnoreRules) -> Bool {
        let name = IndexRecord.lastComponent(of: relative)
        return rules.isIgnored(name: name, relativePath: relative, isDirectory: isDirectory)
    }

    /// The paths of the rows strictly under `path` (to drop a folder's contents, not the row).
    private func descendantsOnly(_ path: String) throws -> [String] {
        try index.records(under: path).map(\.path)
    }
}

/// What a job's steps changed: every step's delta when the caller wants them merged (tests, a
/// caller that reads the delta), else only how many rows each kind of change touched (the host
/// and `ubiq index scan`: a first scan of 100,000 files keeps no 100,000 records for nobody).
package struct IndexJobSteps: Sendable {
    /// Whether the deltas are kept.
    let keepsDeltas: Bool
    private(set) var deltas: [IndexDelta] = []
    /// Rows added, changed, removed and moved by the steps (not net of each other).
    package private(set) var counts = IndexChangeCounts()

    init(keepsDeltas: Bool) { self.keepsDeltas = keepsDeltas }

    mutating func note(_ delta: IndexDelta) {
        counts.added += delta.added.count
        counts.changed += delta.changed.count
        counts.removed += delta.removed.count
        counts.moved += delta.moved.count
        if keepsDeltas { deltas.append(delta) }
    }

    /// The steps' deltas folded into one (empty when they were not kept).
    var merged: IndexDelta { IndexDelta.merging(deltas) }
}

/// How many rows a job added, changed, removed and moved.
package struct IndexChangeCounts: Sendable, Hashable {
    package var added = 0
    package var changed = 0
    package var removed = 0
    package var moved = 0
}

/// A scan's writes on another thread, in order, while the walk goes on: at most two batches
/// wait, the first write that fails stops the rest and is thrown by the next ``submit(_:)`` or
/// by ``finish()``.
final class PipelinedWrites: Sendable {
    private let writer: BackgroundThread
    private let slots = DispatchSemaphore(value: PipelinedWrites.depth)
    private let state: Mutex<(steps: IndexJobSteps, failure: (any Error)?)>
    static let depth = 2

    init(writer: BackgroundThread, steps: IndexJobSteps) {
        self.writer = writer
        state = Mutex((steps, nil))
    }

    /// Queues `write` after the ones queued before (waiting while two wait already).
    func submit(_ write: @escaping @Sendable () throws -> IndexDelta) throws {
        if let failure = state.withLock({ $0.failure }) { throw failure }
        slots.wait()
        writer.async { [self] in
            defer { slots.signal() }
            guard state.withLock({ $0.failure == nil }) else { return }
            do {
                let delta = try write()
                if !delta.isEmpty { state.withLock { $0.steps.note(delta) } }
            } catch {
                state.withLock { $0.failure = error }
            }
        }
    }

    /// Waits for every queued write; returns the steps with theirs, or throws the first failure.
    func finish() throws -> IndexJobSteps {
        for _ in 0..<Self.depth { slots.wait() }
        for _ in 0..<Self.depth { slots.signal() }
        return try state.withLock { state in
            if let failure = state.failure { throw failure }
            return state.steps
        }
    }
}
