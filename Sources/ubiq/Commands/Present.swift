// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Synchronization
import Ubiquity

/// `ubiq present PATH`: makes any program a file presenter. Messages arrive as JSON lines on
/// stdout; those that need an answer carry an `id`, answered with `{"ack":ID}` (or
/// `{"ack":ID,"error":"…"}`) on stdin. Protocol: docs/coordination-protocol.md.
struct Present: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "present",
        abstract: "Register a file presenter for PATH and print the messages it receives as JSON lines.",
        discussion: """
            Prints {"event":"ready",…} once registered, then one object per message, e.g.
              {"id":7,"event":"relinquishToWriter"}    answer with {"ack":7}
              {"id":8,"event":"savePresentedItemChanges"}
              {"event":"didChange"}
              {"event":"didMove","to":"/abs/new/path"}
              {"event":"reacquire"}
            Messages with an "id" hold the coordination until answered (or until the time-out).
            Exits at end of stdin (unless --auto-ack), on SIGTERM or SIGINT.

            --editor is the protocol of the editor plugins (docs/editors.md): relinquish and \
            accommodate messages are answered at once, only savePresentedItemChanges waits; \
            stdin also takes {"cmd":"begin-write","id":N} (answered {"event":"granted","id":N} \
            once a coordinated write is held), {"cmd":"end-write","id":N}, \
            {"cmd":"abort-write","id":N} and {"cmd":"state"}; {"event":"state",…} lines report \
            the sync state. When stdin closes during a write, the last saved content is put back.

            Examples:
              ubiq present ~/Ubiquity/notes.txt --auto-ack
              coproc ubiq present notes.txt   # answer acks from a script
            """
    )

    @Argument(help: "The file or folder to present (it need not exist yet).")
    var path: String

    @Flag(help: "Answer every message at once instead of waiting for acks on stdin.")
    var autoAck = false

    @Flag(help: "The editor-plugin protocol: coordinated saves and sync state on stdin/stdout (docs/editors.md).")
    var editor = false

    @Flag(help: "With --editor: exit after the ready line when PATH is not in a folder `ubiq daemon` syncs.")
    var onlySynced = false

    @Option(help: "With --editor: seconds between sync-state checks (default 1).")
    var stateInterval: Double = 1

    @Flag(help: "Accepted for symmetry with other commands: the output is always JSON lines.")
    var json = false

    func validate() throws {
        if editor && autoAck { throw ValidationError("--editor and --auto-ack exclude each other: the editor answers save requests") }
        if onlySynced && !editor { throw ValidationError("--only-synced needs --editor") }
        if !(stateInterval > 0) { throw ValidationError("--state-interval must be a positive number of seconds, got \(stateInterval)") }
    }

    func run() async throws {
        let absolute: String
        do { absolute = try CLI.absolutePath(path) } catch { throw CLI.report(error, command: "present") }
        if editor { return await runEditor(absolute) }
        let presenter = JSONLinePresenter(url: URL(fileURLWithPath: absolute), autoAck: autoAck)
        FileCoordinator.addFilePresenter(presenter)
        let termination = autoAck ? TerminationSignals() : nil
        CLI.printLine(CLI.jsonObject([
            ("event", "ready"), ("path", presenter.presentedItemURL?.path ?? absolute),
            ("daemon", FileCoordinator.isUsingCoordinationService),
        ]))
        if let termination {
            await termination.wait { FileCoordinator.removeFilePresenter(presenter) }
        } else {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let thread = Thread {
                    while let line = readLine() { presenter.handleAnswer(line) }
                    presenter.failPending("ubiq present: stdin closed")
                    FileCoordinator.removeFilePresenter(presenter)
                    continuation.resume()
                }
                thread.name = "ubiq.present.stdin"
                thread.start()
            }
        }
    }
}

extension Present {
    /// `--editor`: the presenter answers relinquish and accommodate messages itself, the
    /// session handles coordinated saves and pushes the sync state.
    func runEditor(_ absolute: String) async {
        signal(SIGPIPE, SIG_IGN)  // the editor may die first: writes then fail instead of killing us
        let url = URL(fileURLWithPath: absolute)
        let folder = EditorSession.syncedFolder(holding: absolute)
        let presenter = JSONLinePresenter(url: url, autoAck: false, answersOnlySaves: true)
        if onlySynced && folder == nil {
            CLI.printLine(CLI.jsonObject([("event", "ready"), ("path", absolute), ("synced", false), ("folder", nil)]))
            return
        }
        let session = EditorSession(url: url, presenter: presenter, stateInterval: stateInterval)
        presenter.onNotification = { session.nudge() }
        FileCoordinator.addFilePresenter(presenter)
        CLI.printLine(CLI.jsonObject([
            ("event", "ready"), ("path", presenter.presentedItemURL?.path ?? absolute),
            ("daemon", FileCoordinator.isUsingCoordinationService), ("synced", folder != nil), ("folder", folder),
        ]))
        let polling = Task { await session.runStatePolling() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                while let line = readLine() {
                    if !session.handleCommand(line) { presenter.handleAnswer(line) }
                }
                session.editorGone()
                presenter.failPending("ubiq present: stdin closed")
                FileCoordinator.removeFilePresenter(presenter)
                continuation.resume()
            }
            thread.name = "ubiq.present.stdin"
            thread.start()
        }
        polling.cancel()
    }
}

/// A presenter that reports every message as a JSON line and waits for acks.
final class JSONLinePresenter: FilePresenter {
    private struct State {
        var url: URL?
        var nextID = 1
        var pending: [Int: @Sendable ((any Error)?) -> Void] = [:]
        var onNotification: (@Sendable () -> Void)?
    }
    private let state: Mutex<State>
    private let autoAck: Bool
    /// Editor mode: only `savePresentedItemChanges` waits for an ack; relinquish and accommodate
    /// messages are printed without an id and answered at once (the editor reloads or warns
    /// when it hears `didChange`).
    private let answersOnlySaves: Bool

    /// Called after every message (editor mode: the sync state is checked again soon).
    var onNotification: (@Sendable () -> Void)? {
        get { state.withLock { $0.onNotification } }
        set { state.withLock { $0.onNotification = newValue } }
    }
    let presentedItemOperationQueue: OperationQueue = {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        return queue
    }()

    init(url: URL, autoAck: Bool, answersOnlySaves: Bool = false) {
        state = Mutex(State(url: url))
        self.autoAck = autoAck
        self.answersOnlySaves = answersOnlySaves
    }

    var presentedItemURL: URL? { state.withLock { $0.url } }

    private func emit(_ event: String, _ extra: [(String, Any?)] = []) {
        CLI.printLine(CLI.jsonObject([("event", event)] + extra))
        state.withLock { $0.onNotification }?()
    }

    /// Prints a message that needs an answer; `answer` runs when the ack arrives.
    private func ask(_ event: String, _ extra: [(String, Any?)] = [], answer: @escaping @Sendable ((any Error)?) -> Void) {
        if answersOnlySaves && event != "savePresentedItemChanges" {
            emit(event, extra)
            answer(nil)
            return
        }
        let id = state.withLock { state -> Int in
            defer { state.nextID += 1 }
            if !autoAck { state.pending[state.nextID] = answer }
            return state.nextID
        }
        CLI.printLine(CLI.jsonObject([("id", id), ("event", event)] + extra))
        if autoAck { answer(nil) }
    }

    /// Handles one stdin line: `{"ack":N}` or `{"ack":N,"error":"…"}`.
    func handleAnswer(_ line: String) {
        guard let data = line.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let id = (object["ack"] as? NSNumber)?.intValue else {
            if !line.trimmingCharacters(in: .whitespaces).isEmpty {
                FileHandle.standardError.write(Data("ubiq present: ignoring line that is not {\"ack\":ID}: \(line)\n".utf8))
            }
            return
        }
        guard let answer = state.withLock({ $0.pending.removeValue(forKey: id) }) else {
            FileHandle.standardError.write(Data("ubiq present: no pending message with id \(id)\n".utf8))
            return
        }
        if let message = object["error"] as? String {
            answer(UbiquityError(.presenterFailed, message))
        } else {
            answer(nil)
        }
    }

    /// Answers every pending message with an error (stdin closed).
    func failPending(_ message: String) {
        let pending = state.withLock { state in defer { state.pending.removeAll() }; return Array(state.pending.values) }
        for answer in pending { answer(UbiquityError(.presenterFailed, message)) }
    }

    // A relinquish cannot be refused (Apple's API has no error for it): an error in its ack is
    // reported on stderr and the item is relinquished; refuse in the save or accommodate answer.
    func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        ask("relinquishToReader") { [self] error in
            if let error { Self.warnIgnoredRefusal(error) }
            reader { self.emit("reacquire") }
        }
    }

    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        ask("relinquishToWriter") { [self] error in
            if let error { Self.warnIgnoredRefusal(error) }
            writer { self.emit("reacquire") }
        }
    }

    private static func warnIgnoredRefusal(_ error: any Error) {
        FileHandle.standardError.write(Data("ubiq present: a relinquish cannot be refused (\(error)); answer the save or accommodate message with an error instead\n".utf8))
    }

    func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        ask("savePresentedItemChanges", answer: completionHandler)
    }

    func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        ask("accommodateDeletion", answer: completionHandler)
    }

    func accommodatePresentedSubitemDeletion(at url: URL, completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        ask("accommodateSubitemDeletion", [("path", url.path)], answer: completionHandler)
    }

    func presentedItemDidMove(to newURL: URL) {
        state.withLock { $0.url = newURL }
        emit("didMove", [("to", newURL.path)])
    }

    func presentedItemDidChange() { emit("didChange") }
    func presentedSubitemDidAppear(at url: URL) { emit("subitemDidAppear", [("path", url.path)]) }
    func presentedSubitemDidChange(at url: URL) { emit("subitemDidChange", [("path", url.path)]) }
    func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) {
        emit("subitemDidMove", [("path", oldURL.path), ("to", newURL.path)])
    }
    func presentedItemDidGain(_ version: FileVersion) { emit("didGainVersion", [("version", version.persistentIdentifier)]) }
    func presentedItemDidLose(_ version: FileVersion) { emit("didLoseVersion", [("version", version.persistentIdentifier)]) }
    func presentedItemDidResolveConflict(_ version: FileVersion) {
        emit("didResolveConflictVersion", [("version", version.persistentIdentifier)])
    }
    func presentedSubitem(at url: URL, didGain version: FileVersion) {
        emit("subitemDidGainVersion", [("path", url.path), ("version", version.persistentIdentifier)])
    }
    func presentedSubitem(at url: URL, didLose version: FileVersion) {
        emit("subitemDidLoseVersion", [("path", url.path), ("version", version.persistentIdentifier)])
    }
    func presentedSubitem(at url: URL, didResolve version: FileVersion) {
        emit("subitemDidResolveConflictVersion", [("path", url.path), ("version", version.persistentIdentifier)])
    }
    func presentedItemDidChangeUbiquityAttributes(_ attributes: Set<URLResourceKey>) {
        emit("didChangeUbiquityAttributes", [("attributes", attributes.map(\.rawValue).sorted().joined(separator: ","))])
    }
}
