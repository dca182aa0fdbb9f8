// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Logging
import Synchronization
import UbiquityCore

/// Runs the user's hooks on the daemon's events: every executable named after the event in the
/// hooks folder (`hooks/did-download`) or inside a folder named after it with `.d`
/// (`hooks/did-download.d/*`, in name order), with the event as JSON on stdin and the main facts
/// in environment variables (``HookInvocation``).
///
/// ``post(_:)`` never blocks and never fails: events queue (at most ``maximumPending``; beyond
/// that the oldest are dropped and a warning is logged) and one task runs them in order, each
/// hook limited to ``timeout`` (then its process group is killed). Failures — a non-zero exit, a
/// time-out, a file that cannot be run — are logged with the first lines of the hook's output;
/// sync never waits for a hook.
package final class HookRunner: Sendable {
    /// The default hooks folder: `$XDG_CONFIG_HOME/ubiquity/hooks`.
    package static func defaultDirectory(paths: UbiquityPaths = UbiquityPaths()) -> URL {
        paths.configDirectory.appendingPathComponent("hooks", isDirectory: true)
    }

    /// Bytes of a hook's output kept for the log and ``HookResult/output``.
    package static let outputLimit = 4096

    /// The hooks folder.
    package let directory: URL
    /// How long one hook may run.
    package let timeout: Duration
    /// How many events may wait before the oldest are dropped.
    package let maximumPending: Int
    let logger: Logger
    private let queue: Mutex<Queue>
    /// The hooks folder's path, and when it was last seen there or not (``hasFolder()``).
    private let directoryPath: String
    private let folderSeen = Mutex<(at: ContinuousClock.Instant, present: Bool)?>(nil)

    /// How long a look at whether the hooks folder exists holds: a folder made while the
    /// daemon runs has its hooks run within this time. (Sync posts an event per file; a `stat`
    /// of the folder for each was ~1 % of a daemon's CPU syncing 10,000 small files.)
    static let folderCheckInterval = Duration.seconds(1)

    private struct Queue {
        var pending: [HookInvocation] = []
        var dropped = 0
        var worker: Task<Void, Never>?
        var stopped = false
    }

    /// A runner for the hooks in `directory`.
    package init(directory: URL = HookRunner.defaultDirectory(), timeout: Duration = .seconds(30), maximumPending: Int = 256, logger: Logger) {
        self.directory = directory
        self.timeout = timeout
        self.maximumPending = max(1, maximumPending)
        self.logger = logger
        queue = Mutex(Queue())
        directoryPath = directory.path
    }

    /// The hooks `event` runs, in order: executable regular files only (hidden files and editor
    /// backups are skipped).
    package func hooks(for event: HookEvent) -> [URL] {
        var found: [URL] = []
        let single = directory.appendingPathComponent(event.rawValue)
        if Self.isRunnable(single) { found.append(single) }
        let folder = directory.appendingPathComponent(event.rawValue + ".d", isDirectory: true)
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
        for name in names where !name.hasPrefix(".") && !name.hasSuffix("~") && !name.hasSuffix(".swp") {
            let file = folder.appendingPathComponent(name)
            if Self.isRunnable(file) { found.append(file) }
        }
        return found
    }

    /// Files in the hooks folder that look like hooks but will not run (not executable, or named
    /// after no event), with the reason: for `ubiq hooks list`.
    package func problems() -> [(file: URL, reason: String)] {
        var problems: [(URL, String)] = []
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
        let events = Set(HookEvent.allCases.map(\.rawValue))
        for name in names where !name.hasPrefix(".") {
            let file = directory.appendingPathComponent(name)
            let event = name.hasSuffix(".d") ? String(name.dropLast(2)) : name
            if !events.contains(event) {
                problems.append((file, "no event is named \(event.debugDescription); events: \(HookEvent.allCases.map(\.rawValue).joined(separator: ", "))"))
            } else if !name.hasSuffix(".d"), !Self.isRunnable(file) {
                problems.append((file, "not an executable file (chmod +x it)"))
            }
        }
        return problems
    }

    static func isRunnable(_ file: URL) -> Bool {
        var info = stat()
        guard stat(file.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return false }
        return access(file.path, X_OK) == 0
    }

    /// Queues `invocation` for the hooks of its event (returns at once).
    /// The invocation is made only when the hooks folder exists.
    package func post(_ invocation: @autoclosure () -> HookInvocation) {
        // no hooks folder (the usual case): a stat now and then, not a listing per synced file
        guard hasFolder() else { return }
        let invocation = invocation()
        guard !hooks(for: invocation.event).isEmpty else { return }
        let dropped = queue.withLock { queue -> Int in
            guard !queue.stopped else { return 0 }
            queue.pending.append(invocation)
            var dropped = 0
            if queue.pending.count > maximumPending {
                dropped = queue.pending.count - maximumPending
                queue.pending.removeFirst(dropped)
                queue.dropped += dropped
            }
            if queue.worker == nil { queue.worker = Task { await self.drain() } }
            return dropped
        }
        if dropped > 0 {
            logger.warning("hooks are slower than events: dropped the oldest", metadata: ["dropped": "\(dropped)", "hooks": "\(directory.path)"])
        }
    }

    /// Whether the hooks folder exists, looked at once per ``folderCheckInterval``.
    private func hasFolder() -> Bool {
        let now = ContinuousClock.now
        if let seen = folderSeen.withLock({ $0 }), seen.at.duration(to: now) < Self.folderCheckInterval { return seen.present }
        let present = FileStamp.of(directoryPath) != nil
        folderSeen.withLock { $0 = (now, present) }
        return present
    }

    /// Runs every hook of `invocation` now and returns how each ended (`ubiq hooks test`).
    package func run(_ invocation: HookInvocation) async -> [HookResult] {
        var results: [HookResult] = []
        let input = invocation.json.serialized()
        for hook in hooks(for: invocation.event) {
            let result = await HookProcess.run(hook, input: input, environment: invocation.environment, timeout: timeout, outputLimit: Self.outputLimit)
            log(result, invocation)
            results.append(result)
        }
        return results
    }

    /// Stops taking events and waits for the one running (pending ones are dropped).
    package func stop() async {
        let worker = queue.withLock { queue -> Task<Void, Never>? in
            queue.stopped = true
            queue.pending.removeAll()
            return queue.worker
        }
        await worker?.value
    }

    private func drain() async {
        while true {
            let next = queue.withLock { queue -> HookInvocation? in
                guard !queue.pending.isEmpty else {
                    queue.worker = nil
                    return nil
                }
                return queue.pending.removeFirst()
            }
            guard let next else { return }
            _ = await run(next)
        }
    }

    private func log(_ result: HookResult, _ invocation: HookInvocation) {
        var metadata: Logger.Metadata = ["hook": "\(result.executable.path)", "event": "\(invocation.event)"]
        if let path = invocation.facts["path"] { metadata["path"] = "\(path)" }
        if !result.output.isEmpty { metadata["output"] = "\(result.output.prefix(1000))" }
        if let failure = result.failure {
            logger.warning("a hook could not be run", metadata: metadata.merging(["error": "\(failure)"]) { $1 })
        } else if result.timedOut {
            logger.warning("a hook ran past its time limit and was killed", metadata: metadata.merging(["limit": "\(timeout)"]) { $1 })
        } else if result.status != 0 {
            logger.warning("a hook failed", metadata: metadata.merging(["status": "\(result.status ?? -1)"]) { $1 })
        } else {
            logger.debug("a hook ran", metadata: metadata)
        }
    }
}
