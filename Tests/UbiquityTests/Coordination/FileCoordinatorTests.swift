// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
@testable import Ubiquity

@Suite("FileCoordinator in one process")
struct FileCoordinatorTests {
    @Test("a write: relinquish, accessor, didChange, reacquire — in that order")
    func writeMessageOrder() throws {
        let dir = TemporaryDirectory()
        let file = dir.file("a.txt", "one")
        let presenter = RecordingPresenter(file)
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }
        try FileCoordinator().coordinate(writingItemAt: file) { url in
            presenter.record("accessor")
            try Data("two".utf8).write(to: url)
        }
        #expect(presenter.waitForEvents(4) == ["relinquishToWriter", "accessor", "didChange", "reacquire"])
    }

    @Test("a read: relinquish, save, accessor, reacquire; withoutChanges skips the save")
    func readMessageOrder() throws {
        let dir = TemporaryDirectory()
        let file = dir.file("a.txt", "one")
        let presenter = RecordingPresenter(file)
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }
        var error: NSError?
        FileCoordinator().coordinate(readingItemAt: file, options: [], error: &error) { _ in presenter.record("accessor") }
        #expect(error == nil)
        #expect(presenter.waitForEvents(4) == ["relinquishToReader", "save", "accessor", "reacquire"])
        try FileCoordinator().coordinate(readingItemAt: file, options: .withoutChanges) { _ in presenter.record("accessor") }
        #expect(Array(presenter.waitForEvents(7).suffix(3)) == ["relinquishToReader", "accessor", "reacquire"])
    }

    @Test("a coordinator made with a presenter never messages it")
    func selfExclusion() throws {
        let dir = TemporaryDirectory()
        let file = dir.file("a.txt", "one")
        let mine = RecordingPresenter(file), other = RecordingPresenter(file)
        FileCoordinator.addFilePresenter(mine)
        FileCoordinator.addFilePresenter(other)
        defer { FileCoordinator.removeFilePresenter(mine); FileCoordinator.removeFilePresenter(other) }
        try FileCoordinator(filePresenter: mine).coordinate(writingItemAt: file) { _ in }
        #expect(other.waitForEvents(3) == ["relinquishToWriter", "didChange", "reacquire"])
        #expect(mine.events.isEmpty)
    }

    @Test("deleting: presenters accommodate the deletion; folder presenters hear of the subitem")
    func deletion() throws {
        let dir = TemporaryDirectory()
        let folder = dir.url.appendingPathComponent("docs")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("a.txt")
        try Data("x".utf8).write(to: file)
        let filePresenter = RecordingPresenter(file), folderPresenter = RecordingPresenter(folder)
        FileCoordinator.addFilePresenter(filePresenter)
        FileCoordinator.addFilePresenter(folderPresenter)
        defer { FileCoordinator.removeFilePresenter(filePresenter); FileCoordinator.removeFilePresenter(folderPresenter) }
        try FileCoordinator().coordinate(writingItemAt: file, options: .forDeleting) { try FileManager.default.removeItem(at: $0) }
        #expect(filePresenter.waitForEvents(3) == ["relinquishToWriter", "accommodateDeletion", "reacquire"])
        #expect(folderPresenter.waitForEvents(2) == ["accommodateSubitemDeletion a.txt", "subitemDidChange a.txt"])
    }

    @Test("deleting a folder covers presenters of everything inside it")
    func folderDeletionCoversSubtree() throws {
        let dir = TemporaryDirectory()
        let folder = dir.url.appendingPathComponent("docs/deep")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("a.txt")
        try Data("x".utf8).write(to: file)
        let inner = RecordingPresenter(file)
        FileCoordinator.addFilePresenter(inner)
        defer { FileCoordinator.removeFilePresenter(inner) }
        let top = dir.url.appendingPathComponent("docs")
        try FileCoordinator().coordinate(writingItemAt: top, options: .forDeleting) { try FileManager.default.removeItem(at: $0) }
        #expect(inner.waitForEvents(3) == ["relinquishToWriter", "accommodateDeletion", "reacquire"])
    }

    @Test("a move: presenters follow the item and folder presenters hear of it; no didChange for the mover")
    func move() throws {
        let dir = TemporaryDirectory()
        let source = dir.file("a.txt", "x"), destination = dir.url.appendingPathComponent("b.txt")
        let presenter = RecordingPresenter(source), folder = RecordingPresenter(dir.url)
        FileCoordinator.addFilePresenter(presenter)
        FileCoordinator.addFilePresenter(folder)
        defer { FileCoordinator.removeFilePresenter(presenter); FileCoordinator.removeFilePresenter(folder) }
        let coordinator = FileCoordinator()
        try coordinator.coordinate(writingItemAt: source, options: .forMoving, writingItemAt: destination, options: .forReplacing) { from, to in
            try FileManager.default.moveItem(at: from, to: to)
            coordinator.item(at: from, didMoveTo: to)
        }
        #expect(presenter.waitForEvents(3) == ["relinquishToWriter", "didMove b.txt", "reacquire"])
        #expect(presenter.presentedItemURL?.lastPathComponent == "b.txt")
        #expect(folder.waitForEvents(1) == ["subitemDidMove a.txt b.txt"])
        // The presenter is now known at the new path.
        try FileCoordinator().coordinate(writingItemAt: destination) { _ in }
        #expect(presenter.waitForEvents(6).suffix(3) == ["relinquishToWriter", "didChange", "reacquire"])
    }

    @Test("creating an item inside a presented folder: subitemDidAppear")
    func subitemAppears() throws {
        let dir = TemporaryDirectory()
        let folder = RecordingPresenter(dir.url)
        FileCoordinator.addFilePresenter(folder)
        defer { FileCoordinator.removeFilePresenter(folder) }
        try FileCoordinator().coordinate(writingItemAt: dir.url.appendingPathComponent("new.txt")) { try Data("n".utf8).write(to: $0) }
        #expect(folder.waitForEvents(1) == ["subitemDidAppear new.txt"])
    }

    @Test("writers never overlap each other or readers; readers overlap each other")
    func exclusion() async throws {
        let dir = TemporaryDirectory()
        let file = dir.file("a.txt", "0")
        let active = Mutex((readers: 0, writers: 0, violations: 0, maxReaders: 0))
        DispatchQueue.concurrentPerform(iterations: 64) { i in
            let coordinator = FileCoordinator()
            if i % 3 == 0 {
                try! coordinator.coordinate(writingItemAt: file) { _ in
                    active.withLock { s in
                        if s.writers > 0 || s.readers > 0 { s.violations += 1 }
                        s.writers += 1
                    }
                    usleep(300)
                    active.withLock { $0.writers -= 1 }
                }
            } else {
                try! coordinator.coordinate(readingItemAt: file) { _ in
                    active.withLock { s in
                        if s.writers > 0 { s.violations += 1 }
                        s.readers += 1
                        s.maxReaders = max(s.maxReaders, s.readers)
                    }
                    usleep(300)
                    active.withLock { $0.readers -= 1 }
                }
            }
        }
        #expect(active.withLock { $0.violations } == 0)
    }

    @Test("a presenter that never answers ends in timedOut, not a hang; the next claim proceeds")
    func unresponsivePresenter() throws {
        let dir = TemporaryDirectory()
        let file = dir.file("a.txt", "x")
        let stuck = RecordingPresenter(file, answer: .never)
        FileCoordinator.addFilePresenter(stuck)
        let coordinator = FileCoordinator()
        coordinator.timeout = .milliseconds(300)
        var ran = false
        #expect {
            try coordinator.coordinate(writingItemAt: file) { _ in ran = true }
        } throws: { error in
            // The message names the presenter that did not answer and where it lives.
            guard let error = error as? UbiquityError, error.code == .timedOut else { return false }
            return error.message.contains("presenter of '\(file.path)'") && error.message.contains("in process \(getpid())")
        }
        #expect(!ran)
        FileCoordinator.removeFilePresenter(stuck)
        try FileCoordinator().coordinate(writingItemAt: file) { _ in ran = true }
        #expect(ran)
    }

    @Test("a claim that waits too long fails with timedOut naming what holds the item")
    func waitTimeoutNamesHolder() throws {
        let dir = TemporaryDirectory()
        let file = dir.file("a.txt", "x")
        let release = holdWrite(file)
        defer { release() }
        let waiter = FileCoordinator()
        waiter.timeout = .milliseconds(200)
        #expect {
            try waiter.coordinate(readingItemAt: file) { _ in }
        } throws: { error in
            guard let error = error as? UbiquityError, error.code == .timedOut else { return false }
            return error.message.contains("coordinated write of '\(file.path)' by process \(getpid()) (holding)")
        }
    }

    @Test("a presenter that refuses makes the coordination fail with its error")
    func refusingPresenter() throws {
        let dir = TemporaryDirectory()
        let file = dir.file("a.txt", "x")
        let refusing = RecordingPresenter(file, answer: .fail)
        FileCoordinator.addFilePresenter(refusing)
        defer { FileCoordinator.removeFilePresenter(refusing) }
        #expect {
            try FileCoordinator().coordinate(readingItemAt: file) { _ in }
        } throws: { ($0 as? UbiquityError)?.code == .presenterFailed }
        // It relinquished, so it reacquires even though the read failed.
        #expect(presenter(refusing, reaches: "reacquire"))
    }

    /// Holds a coordinated write of `file` on another thread until the returned closure is called.
    func holdWrite(_ file: URL) -> () -> Void {
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        Thread {
            try? FileCoordinator().coordinate(writingItemAt: file) { _ in holding.signal(); release.wait() }
        }.start()
        holding.wait()
        return { release.signal() }
    }

    func presenter(_ presenter: RecordingPresenter, reaches event: String) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 10)
        while !presenter.events.contains(event) && Date() < deadline { usleep(2000) }
        return presenter.events.contains(event)
    }

    @Test("a nested write of the same item with another coordinator fails at once instead of deadlocking")
    func nestedDeadlock() throws {
        let dir = TemporaryDirectory()
        let file = dir.file("a.txt", "x")
        let outer = FileCoordinator()
        try outer.coordinate(writingItemAt: file) { url in
            #expect {
                try FileCoordinator().coordinate(writingItemAt: url) { _ in }
            } throws: { ($0 as? UbiquityError)?.code == .wouldDeadlock }
            // The same coordinator may nest (Apple allows a read inside its own write).
            try outer.coordinate(readingItemAt: url) { _ in }
        }
    }

    @Test("cancel fails a waiting coordination with NSUserCancelledError and never runs its accessor")
    func cancel() throws {
        let dir = TemporaryDirectory()
        let file = dir.file("a.txt", "x")
        let release = holdWrite(file)
        let waiter = FileCoordinator()
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) { waiter.cancel() }
        var error: NSError?
        var ran = false
        waiter.coordinate(writingItemAt: file, options: [], error: &error) { _ in ran = true }
        release()
        #expect(!ran)
        #expect(error?.domain == NSCocoaErrorDomain && error?.code == NSUserCancelledError)
    }

    @Test("a presenter saving (a coordinated write of its own) while a reader waits does not deadlock")
    func saveDuringRead() throws {
        let dir = TemporaryDirectory()
        let file = dir.file("a.txt", "old")
        let document = RecordingPresenter(file) { presenter in
            try! FileCoordinator(filePresenter: presenter).coordinate(writingItemAt: file) { try! Data("saved".utf8).write(to: $0) }
        }
        FileCoordinator.addFilePresenter(document)
        defer { FileCoordinator.removeFilePresenter(document) }
        let coordinator = FileCoordinator()
        coordinator.timeout = .seconds(10)
        let text = try coordinator.coordinate(readingItemAt: file) { String(decoding: try Data(contentsOf: $0), as: UTF8.self) }
        #expect(text == "saved")
    }

    @Test("two-item coordination does not deadlock against the reverse order")
    func twoItemOrdering() throws {
        let dir = TemporaryDirectory()
        let a = dir.file("a", "a"), b = dir.file("b", "b")
        DispatchQueue.concurrentPerform(iterations: 40) { i in
            let (x, y) = i % 2 == 0 ? (a, b) : (b, a)
            try! FileCoordinator().coordinate(writingItemAt: x, options: [], writingItemAt: y, options: []) { _, _ in _ = usleep(100) }
        }
    }

    @Test("intents: one claim for several items, accessor on the given queue")
    func intents() async throws {
        let dir = TemporaryDirectory()
        let a = dir.file("a", "a"), b = dir.file("b", "b")
        let presenter = RecordingPresenter(b)
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }
        let queue = OperationQueue()
        let intents = [FileAccessIntent.readingIntent(with: a), FileAccessIntent.writingIntent(with: b, options: .forMerging)]
        let error: (any Error)? = await withCheckedContinuation { continuation in
            FileCoordinator().coordinate(with: intents, queue: queue) { error in
                try? Data("merged".utf8).write(to: intents[1].url)
                continuation.resume(returning: error)
            }
        }
        #expect(error == nil)
        #expect(presenter.waitForEvents(4) == ["relinquishToWriter", "save", "didChange", "reacquire"])
        let text = try await FileCoordinator().coordinate(readingItemAt: b) { url async throws in String(decoding: try Data(contentsOf: url), as: UTF8.self) }
        #expect(text == "merged")
    }

    @Test("prepare messages the subtree once, reacquire waits for the batch completion")
    func prepare() throws {
        let dir = TemporaryDirectory()
        let file = dir.file("a.txt", "x")
        let presenter = RecordingPresenter(file)
        FileCoordinator.addFilePresenter(presenter)
        defer { FileCoordinator.removeFilePresenter(presenter) }
        let coordinator = FileCoordinator()
        try coordinator.prepare(forReadingItemsAt: [dir.url], writingItemsAt: []) { done in
            presenter.record("batch")
            try! coordinator.coordinate(readingItemAt: file) { _ in }
            done()
        }
        #expect(presenter.waitForEvents(4) == ["relinquishToReader", "save", "batch", "reacquire"])
    }

    @Test("forUploading hands the accessor a snapshot that is removed afterwards")
    func forUploading() throws {
        let dir = TemporaryDirectory()
        let file = dir.file("a.txt", "content")
        var snapshot: URL?
        let text = try FileCoordinator().coordinate(readingItemAt: file, options: .forUploading) { url in
            snapshot = url
            return String(decoding: try Data(contentsOf: url), as: UTF8.self)
        }
        #expect(text == "content")
        #expect(snapshot != file)
        #expect(!FileManager.default.fileExists(atPath: snapshot!.path))
    }

    @Test("relative paths and non-file URLs are refused with a clear error")
    func badInput() {
        #expect {
            try FileCoordinator().coordinate(readingItemAt: URL(string: "https://example.com/x")!) { _ in }
        } throws: { ($0 as? UbiquityError)?.code == .invalidArgument }
        #expect(throws: UbiquityError.self) { try CanonicalPath.canonicalize("relative/path") }
        let coordinator = FileCoordinator(filePresenter: RecordingPresenter(nil))
        #expect(throws: UbiquityError.self) { try coordinator.setPurposeIdentifier("x") }
        #expect(throws: UbiquityError.self) { try FileCoordinator().setPurposeIdentifier("") }
    }

    @Test("coordinators sharing a purpose identifier do not wait for each other")
    func purposeIdentifier() throws {
        let dir = TemporaryDirectory()
        let file = dir.file("a.txt", "x")
        let a = FileCoordinator(), b = FileCoordinator()
        try a.setPurposeIdentifier("shared-purpose")
        try b.setPurposeIdentifier("shared-purpose")
        try a.coordinate(writingItemAt: file) { _ in
            try b.coordinate(writingItemAt: file) { _ in }
        }
    }
}
