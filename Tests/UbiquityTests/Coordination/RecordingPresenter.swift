// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
@testable import Ubiquity

/// A presenter for tests: records every message in order and answers as configured.
final class RecordingPresenter: FilePresenter {
    enum Answer: Sendable { case immediately, never, fail }
    private let state: Mutex<(url: URL?, events: [String])>
    let answer: Answer
    let onSave: (@Sendable (RecordingPresenter) -> Void)?
    let presentedItemOperationQueue: OperationQueue = {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        return queue
    }()

    init(_ url: URL?, answer: Answer = .immediately, onSave: (@Sendable (RecordingPresenter) -> Void)? = nil) {
        state = Mutex((url, []))
        self.answer = answer
        self.onSave = onSave
    }

    var presentedItemURL: URL? { state.withLock { $0.url } }
    var events: [String] { state.withLock { $0.events } }
    func record(_ event: String) { state.withLock { $0.events.append(event) } }

    /// Waits (polling, generous deadline) until `count` events were recorded.
    func waitForEvents(_ count: Int, seconds: Double = 10) -> [String] {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while events.count < count && Date() < deadline { usleep(2000) }
        return events
    }

    private func respond(_ handler: @escaping @Sendable ((any Error)?) -> Void) {
        switch answer {
        case .immediately: handler(nil)
        case .never: break
        case .fail: handler(UbiquityError(.presenterFailed, "refused by test presenter"))
        }
    }

    func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        record("relinquishToReader")
        guard answer != .never else { return }
        reader { self.record("reacquire") }
    }
    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        record("relinquishToWriter")
        guard answer != .never else { return }
        writer { self.record("reacquire") }
    }
    func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        record("save")
        onSave?(self)
        respond(completionHandler)
    }
    func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        record("accommodateDeletion")
        respond(completionHandler)
    }
    func accommodatePresentedSubitemDeletion(at url: URL, completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        record("accommodateSubitemDeletion \(url.lastPathComponent)")
        respond(completionHandler)
    }
    func presentedItemDidChange() { record("didChange") }
    func presentedItemDidMove(to newURL: URL) {
        state.withLock { $0.url = newURL }
        record("didMove \(newURL.lastPathComponent)")
    }
    func presentedSubitemDidAppear(at url: URL) { record("subitemDidAppear \(url.lastPathComponent)") }
    func presentedSubitemDidChange(at url: URL) { record("subitemDidChange \(url.lastPathComponent)") }
    func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) {
        record("subitemDidMove \(oldURL.lastPathComponent) \(newURL.lastPathComponent)")
    }
}

/// A fresh temporary folder per test (tests run in parallel).
struct TemporaryDirectory: ~Copyable {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-test-" + UUID().uuidString)
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func file(_ name: String, _ contents: String? = nil) -> URL {
        let file = url.appendingPathComponent(name)
        if let contents { try! Data(contents.utf8).write(to: file) }
        return file
    }
    deinit { try? FileManager.default.removeItem(at: url) }
}
