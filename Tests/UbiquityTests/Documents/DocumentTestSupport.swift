// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
@testable import Ubiquity

/// A one-string document, as the samples use, that records what happens to it.
final class NoteDocument: Document, @unchecked Sendable {  // @unchecked: its state is behind a Mutex
    private struct Record {
        var text = ""
        var loads = 0
        var events: [String] = []
        var duringContents: (@Sendable () -> Void)?
    }
    private let record = Mutex(Record())

    /// The document's text (set it with ``edit(_:)`` to count a change).
    var text: String { record.withLock { $0.text } }
    /// How many times the document was loaded.
    var loads: Int { record.withLock { $0.loads } }
    /// `disableEditing` / `enableEditing` calls, in order.
    var events: [String] { record.withLock { $0.events } }

    /// Changes the text and counts the change.
    func edit(_ text: String) {
        record.withLock { $0.text = text }
        updateChangeCount(.done)
    }

    /// Runs `action` while the next save takes its snapshot (an edit made during a save).
    func duringNextSnapshot(_ action: @escaping @Sendable () -> Void) {
        record.withLock { $0.duringContents = action }
    }

    override func load(fromContents contents: Any, ofType typeName: String?) throws {
        guard let data = contents as? Data else { throw UbiquityError(.invalidArgument, "expected Data") }
        record.withLock {
            $0.text = String(decoding: data, as: UTF8.self)
            $0.loads += 1
        }
    }

    override func contents(forType typeName: String) throws -> Any {
        let (text, action) = record.withLock { record in
            defer { record.duringContents = nil }
            return (record.text, record.duringContents)
        }
        action?()
        return Data(text.utf8)
    }

    override func disableEditing() { record.withLock { $0.events.append("disableEditing") } }
    override func enableEditing() { record.withLock { $0.events.append("enableEditing") } }
}

/// A private temporary folder (symbolic links resolved) with its own version store.
final class DocumentSandbox: Sendable {
    let root: URL
    var versions: URL { root.appendingPathComponent(".versions", isDirectory: true) }

    init() throws {
        let base = FileManager.default.temporaryDirectory
            .appendingPathComponent("ubiq-documents-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        guard let real = realpath(base.path, nil) else { throw UbiquityError.posix("realpath", path: base.path) }
        defer { free(real) }
        root = URL(fileURLWithPath: String(cString: real), isDirectory: true)
    }

    deinit { try? FileManager.default.removeItem(at: root) }

    /// The URL of `name` in the sandbox, written with `text` unless nil.
    func file(_ name: String, _ text: String? = nil) throws -> URL {
        let url = root.appendingPathComponent(name)
        if let text { try Data(text.utf8).write(to: url) }
        return url
    }

    /// Runs `body` with the version store inside the sandbox (documents made in `body` use it).
    func run<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        try await VersionStoreLocation.$override.withValue(versions) { try await body() }
    }
}

/// The text of the file at `url`, or nil when it cannot be read.
func documentFileText(_ url: URL) -> String? {
    (try? Data(contentsOf: url)).map { String(decoding: $0, as: UTF8.self) }
}

/// Waits until `condition` holds, polling; false if it still does not after `limit` (generous:
/// tests assert on outcomes, never on timing).
func documentEventually(within limit: Duration = .seconds(30), _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now.advanced(by: limit)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}

/// Collects a document's state-change notifications.
final class DocumentNotificationRecorder: @unchecked Sendable {  // @unchecked: `observer` is set once, in init
    private let states = Mutex<[Document.State]>([])
    private var observer: (any NSObjectProtocol)?

    init(_ document: Document) {
        observer = NotificationCenter.default.addObserver(
            forName: Document.stateChangedNotification, object: document, queue: nil
        ) { [weak self] notification in
            guard let document = notification.object as? Document else { return }
            self?.states.withLock { $0.append(document.documentState) }
        }
    }

    var received: [Document.State] { states.withLock { $0 } }

    func stop() {
        if let observer { NotificationCenter.default.removeObserver(observer) }
    }
}
