// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import UbiquityCore

/// Calls a handler when a file, or a file beside it named with one of `suffixes` (an SQLite
/// database's `-wal`, `-journal`), is written, created, replaced or removed: a watch of the
/// file's folder through the process's one inotify hub (``FileWatcher``), so an idle process
/// does nothing and no thread or inotify instance is added per file. A batch of changes calls
/// the handler once; a batch that may have lost events (an overflow, the folder replaced) calls
/// it too.
///
/// Used for the files other processes write and this one must notice: the account file (the
/// identity monitor), a key-value store's file (``KeyValueStore`` in apps, the daemon's
/// key-value sync). ``init(path:suffixes:logger:onChange:)`` returns nil when the folder cannot
/// be watched: the caller then polls.
package final class FileChangeSignal: Sendable {
    private let watcher: FileWatcher
    private let consumer: Task<Void, Never>
    /// Where every signal's handler runs, one at a time.
    private static let handlers = BackgroundThread(name: "ubiquity.file-signal", nice: 0)

    /// Watches `path` (and `path + suffix` for each of `suffixes`); `onChange` runs on the
    /// signals' one handler thread (it may block briefly: a stat, an SQLite read), never on the
    /// cooperative pool.
    package init?(path: String, suffixes: [String] = ["-wal", "-journal"], logger: Logger = Logger(label: "ubiquity.file-change-signal"),
                 onChange: @escaping @Sendable () -> Void) {
        let url = URL(fileURLWithPath: path)
        guard let folder = try? CanonicalPath.canonicalize(url.deletingLastPathComponent().path, resolveLast: true) else { return nil }
        let base = url.lastPathComponent
        let paths = Set(([base] + suffixes.map { base + $0 }).map { folder + "/" + $0 })
        watcher = FileWatcher(configuration: .init(settle: .milliseconds(5), maximumLatency: .milliseconds(50), quickSettle: .milliseconds(1)),
                              logger: logger)
        do {
            try watcher.watch(root: folder, ignoring: IgnoreRules(patterns: []))
        } catch {
            return nil
        }
        let batches = watcher.batches
        consumer = Task {
            for await batch in batches where Self.matters(batch, paths: paths) { Self.handlers.async(onChange) }
        }
    }

    /// Stops watching (once; also when released).
    package func stop() {
        watcher.stop()
        consumer.cancel()
    }

    deinit { stop() }

    /// Whether a batch calls the handler: it touches one of `paths`, or asks for a rescan
    /// (something may have been missed).
    static func matters(_ batch: WatchBatch, paths: Set<String>) -> Bool {
        guard batch.rescans.isEmpty else { return true }
        return batch.changes.contains { change in
            switch change {
            case .changed(let path), .removed(let path): paths.contains(path)
            case .moved(let from, let to): paths.contains(from) || paths.contains(to)
            }
        }
    }
}
