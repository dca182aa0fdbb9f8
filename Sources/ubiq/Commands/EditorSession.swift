// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Ubiquity
import UbiquityIndex
import UbiquitySync

/// The editor side of `ubiq present --editor`: coordinated saves asked for on stdin
/// (`begin-write` … `end-write`), the file's sync state pushed as `state` lines, and the last
/// saved content put back when the editor dies mid-save. Protocol: docs/editors.md.
final class EditorSession: Sendable {
    /// How a held write ends.
    enum Outcome: Sendable {
        /// The editor saved: keep what it wrote (re-applying the skip-backup attribute if the
        /// save dropped it).
        case commit
        /// The save failed or the editor died mid-save: put the last saved content back.
        case restore(reason: String)
    }

    /// A coordinated write held for the editor.
    private struct HeldWrite {
        var id: Int
        var outcome: Outcome?
        var finished = false
    }

    private struct State {
        var write: HeldWrite?
        var lastState: String?
        var fastPollUntil = Date.distantPast
        var closed = false
    }

    let url: URL
    let presenter: JSONLinePresenter
    private let state = Mutex(State())
    private let wakeup = NSCondition()
    private let stateInterval: Double

    init(url: URL, presenter: JSONLinePresenter, stateInterval: Double) {
        self.url = url
        self.presenter = presenter
        self.stateInterval = stateInterval
    }

    /// Whether stdout is still read (after stdin closed, the editor is gone: nothing is printed).
    private func emit(_ pairs: [(String, Any?)]) {
        guard !state.withLock({ $0.closed }) else { return }
        CLI.printLine(CLI.jsonObject(pairs))
    }

    // MARK: Commands

    /// Handles one stdin line that is a command (`{"cmd":…}`); returns false when it is not one.
    func handleCommand(_ line: String) -> Bool {
        guard let data = line.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let command = object["cmd"] as? String else { return false }
        let id = (object["id"] as? NSNumber)?.intValue ?? 0
        switch command {
        case "begin-write":
            let timeout = (object["timeout"] as? NSNumber)?.doubleValue ?? 30
            beginWrite(id: id, timeout: timeout > 0 ? timeout : 30)
        case "end-write":
            finishWrite(id: id, .commit)
        case "abort-write":
            finishWrite(id: id, .restore(reason: (object["reason"] as? String) ?? "the save failed"))
        case "state":
            publishState(force: true)
        default:
            emit([("event", "error"), ("id", id), ("error", "unknown command '\(command)'; expected begin-write, end-write, abort-write or state")])
        }
        return true
    }

    /// Takes a coordinated write of the file on its own thread (other presenters relinquish and
    /// save first), answers `granted`, and holds it until `end-write` or `abort-write`.
    private func beginWrite(id: Int, timeout: Double) {
        let busy = state.withLock { state -> Int? in
            if let write = state.write, !write.finished { return write.id }
            state.write = HeldWrite(id: id)
            return nil
        }
        if let busy {
            emit([("event", "failed"), ("id", id), ("error", "write \(busy) is still in progress; send end-write first")])
            return
        }
        let thread = Thread { [self] in
            let coordinator = FileCoordinator(filePresenter: presenter)
            coordinator.timeout = .milliseconds(Int64(timeout * 1000))
            do {
                try coordinator.coordinate(writingItemAt: url) { url in
                    let before = Snapshot.take(of: url.path)
                    emit([("event", "granted"), ("id", id), ("excluded", before?.excluded ?? false)])
                    let outcome = waitForOutcome(id: id)
                    finish(url.path, before, outcome, id: id)
                }
            } catch {
                state.withLock { $0.write = nil }
                emit([("event", "failed"), ("id", id), ("error", "\(error)")])
            }
            nudge()
        }
        thread.name = "ubiq.present.write"
        thread.start()
    }

    private func waitForOutcome(id: Int) -> Outcome {
        wakeup.lock()
        defer { wakeup.unlock() }
        while true {
            if let outcome = state.withLock({ $0.write?.outcome }) { return outcome }
            wakeup.wait()
        }
    }

    private func finishWrite(id: Int, _ outcome: Outcome) {
        let known = state.withLock { state -> Bool in
            guard state.write?.id == id, state.write?.outcome == nil else { return false }
            state.write?.outcome = outcome
            return true
        }
        guard known else {
            emit([("event", "error"), ("id", id), ("error", "no write \(id) in progress")])
            return
        }
        wakeup.lock()
        wakeup.broadcast()
        wakeup.unlock()
    }

    /// Ends the held write (still under the claim).
    private func finish(_ path: String, _ before: Snapshot?, _ outcome: Outcome, id: Int) {
        var extra: [(String, Any?)] = []
        switch outcome {
        case .commit:
            if before?.excluded == true, FileStamp.of(path) != nil, (try? BackupExclusion.isExcluded(path)) == false {
                // a save by rename (vim's backupcopy=auto, emacs's backups) made a new file without it
                do {
                    try BackupExclusion.setExcluded(true, path)
                    extra.append(("restoredSkipBackup", true))
                } catch {
                    extra.append(("warning", "could not put the skip-backup attribute back: \(error)"))
                }
            }
            before?.discard()
            emit([("event", "ended"), ("id", id)] + extra)
        case .restore(let reason):
            let kept = Snapshot.restore(before, at: path)
            emit([("event", "restored"), ("id", id), ("reason", reason), ("interrupted", kept)])
        }
        state.withLock { $0.write?.finished = true; $0.write = nil }
    }

    /// Stdin closed: a write still held means the editor died mid-save.
    func editorGone() {
        let held = state.withLock { state -> Int? in
            state.closed = true
            guard let write = state.write, write.outcome == nil else { return state.write?.id }
            state.write?.outcome = .restore(reason: "the editor went away mid-save")
            return write.id
        }
        guard held != nil else { return }
        wakeup.lock()
        wakeup.broadcast()
        wakeup.unlock()
        // wait for the writer thread to put things back and release the claim
        let deadline = Date(timeIntervalSinceNow: 30)
        while state.withLock({ $0.write != nil }) && Date() < deadline { usleep(5000) }
    }

    // MARK: Sync state

    /// Polls the file's sync state and prints `state` lines when it changes (faster for a few
    /// seconds after something happened to the file).
    func runStatePolling() async {
        while !Task.isCancelled {
            publishState(force: false)
            let fast = state.withLock { $0.fastPollUntil > Date() }
            try? await Task.sleep(for: .milliseconds(Int64((fast ? min(stateInterval, 0.2) : stateInterval) * 1000)))
        }
    }

    /// Makes the next few seconds of polling fast (after a change, a save, a version event).
    func nudge() {
        state.withLock { $0.fastPollUntil = Date(timeIntervalSinceNow: 5) }
    }

    /// Prints the state line when it changed (or always, when `force`).
    func publishState(force: Bool) {
        let pairs = Self.state(of: url)
        let line = CLI.jsonObject([("event", "state")] + pairs)
        let changed = state.withLock { state -> Bool in
            defer { state.lastState = line }
            return state.lastState != line
        }
        if changed || force { emit([("event", "state")] + pairs) }
    }

    /// The file's sync state: `sync` (uploaded, uploading, downloading, evicted, in conflict,
    /// excluded…, or null outside a synced folder), `progress` (0…100 while an upload or a
    /// download runs, else absent), `conflicts`, `excluded`, `exists`.
    static func state(of url: URL) -> [(String, Any?)] {
        let exists = FileStamp.of(url.path) != nil
        let conflicts = exists ? FileVersion.unresolvedConflictVersionsOfItem(at: url)?.count ?? 0 : 0
        let excluded = exists && ((try? BackupExclusion.isExcluded(url.path)) ?? false)
        let item = exists ? SyncJournal.itemState(ofItemAt: url.path, conflicts: conflicts, database: Status.defaultIndexDatabase()) : nil
        let (sync, progress) = item.map(Self.syncText) ?? (nil, nil)
        var pairs: [(String, Any?)] = [("sync", sync)]
        if let progress { pairs.append(("progress", progress)) }
        return pairs + [("conflicts", conflicts), ("excluded", excluded), ("exists", exists)]
    }

    /// The `sync` text and the whole percent of a running transfer: a download wins over an
    /// upload, both over `evicted` (a placeholder); conflicts and exclusion win over all.
    static func syncText(_ item: ItemSyncState) -> (String, Int?) {
        if item.sync == .excluded || item.sync == .inConflict { return (item.sync.rawValue, nil) }
        if item.isDownloading { return ("downloading", Int((item.percentDownloaded ?? 0).rounded(.down))) }
        // no percentage before the first byte went out (a save waiting for its upload)
        if item.isUploading { return ("uploading", item.percentUploaded.flatMap { $0 > 0 ? Int($0.rounded(.down)) : nil }) }
        if item.downloadingStatus == .notDownloaded { return ("evicted", nil) }
        return (item.sync.rawValue, nil)
    }

    /// The synced folder holding `path` (existing or not), if any.
    static func syncedFolder(holding path: String, database: String = Status.defaultIndexDatabase()) -> String? {
        SyncJournal.holding((try? CanonicalPath.canonicalize(path)) ?? path, database: database)?.journal.folder
    }
}

extension EditorSession {
    /// A copy of a file's last saved content, taken when a save begins, next to the file (so it
    /// can be renamed back) under the temporary prefix that sync and the index ignore.
    struct Snapshot: Sendable {
        /// The copy; nil when the file did not exist before the save.
        var copy: String?
        /// Whether the file carried the skip-backup attribute.
        var excluded: Bool

        static func take(of path: String) -> Snapshot? {
            guard let stamp = FileStamp.of(path), !stamp.isDirectory else { return Snapshot(copy: nil, excluded: false) }
            let directory = (path as NSString).deletingLastPathComponent
            let name = (path as NSString).lastPathComponent
            let copy = directory + "/" + SafeSave.temporaryPrefix + "editor-" + name.prefix(40) + "-" + UUID().uuidString.prefix(8)
            do {
                try FileManager.default.copyItem(atPath: path, toPath: copy)
                try? ExtendedAttributes.copyUserAttributes(from: path, to: copy)
                chmod(copy, mode_t(stamp.mode & 0o7777))
                try? FileManager.default.setAttributes([.modificationDate: stamp.modificationDate], ofItemAtPath: copy)
                let fd = open(copy, O_RDONLY | O_CLOEXEC)
                if fd >= 0 { fsync(fd); close(fd) }
            } catch {
                unlink(copy)
                return nil  // no copy (no space?): the save goes ahead unprotected
            }
            return Snapshot(copy: copy, excluded: (try? BackupExclusion.isExcluded(path)) ?? false)
        }

        func discard() {
            if let copy { unlink(copy) }
        }

        /// Puts the snapshot back at `path`; what the interrupted save left is kept (never
        /// uploaded: it ends in `~`) as `NAME.interrupted~`. Returns that name, or nil.
        static func restore(_ snapshot: Snapshot?, at path: String) -> String? {
            var kept: String?
            if let stamp = FileStamp.of(path), !stamp.isDirectory, snapshot != nil {
                let aside = path + ".interrupted~"
                if rename(path, aside) == 0 { kept = aside }
            }
            if let copy = snapshot?.copy { rename(copy, path) }
            return kept
        }
    }
}
