// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore

// Opening, reverting and closing. Everything here runs on the file-access queue.
extension Document {
    /// Opens the document (see ``open(completionHandler:)``).
    @discardableResult
    public func open() async -> Bool {
        await withCheckedContinuation { continuation in
            open { continuation.resume(returning: $0) }
        }
    }

    /// Reverts the document to the contents of `url` (see ``revert(toContentsOf:completionHandler:)``).
    @discardableResult
    public func revert(toContentsOf url: URL) async -> Bool {
        await withCheckedContinuation { continuation in
            revert(toContentsOf: url) { continuation.resume(returning: $0) }
        }
    }

    /// Closes the document (see ``close(completionHandler:)``).
    @discardableResult
    public func close() async -> Bool {
        await withCheckedContinuation { continuation in
            close { continuation.resume(returning: $0) }
        }
    }

    func performOpen() -> Bool {
        begin(.open)
        defer { end() }
        return loadMarkingOpen(from: fileURL)
    }

    func performRevert(to url: URL) -> Bool {
        begin(.revert)
        defer { end() }
        updateState { $0.insert(.editingDisabled) }
        disableEditing()
        defer {
            updateState { $0.remove(.editingDisabled) }
            enableEditing()
        }
        return loadMarkingOpen(from: url)
    }

    /// Reads `url` under coordination and marks the document open (or reports the error).
    private func loadMarkingOpen(from url: URL) -> Bool {
        do {
            try readCoordinated(from: url)
            updateState { $0.remove([.closed, .savingError]) }
            refreshConflictState()
            return true
        } catch {
            handleError(error, userInteractionPermitted: false)
            return false
        }
    }

    /// Unregisters the presenter and marks the document closed (no saving).
    func performClose() {
        let wasPresenting = storage.withLock { storage in
            defer {
                storage.isPresenting = false
                storage.autosaveGeneration &+= 1
                storage.autosavePending = false
                storage.checkPending = false
            }
            return storage.isPresenting
        }
        if wasPresenting { FileCoordinator.removeFilePresenter(self) }
        updateState { $0.insert(.closed) }
    }

    /// A coordinated read of `url` (made with this document as presenter) that records the
    /// file's stamp, calls ``read(from:)``, makes `url` the ``fileURL``, clears the change count
    /// and registers the presenter, all while other writers are held off.
    func readCoordinated(from url: URL) throws {
        let coordinator = FileCoordinator(filePresenter: self)
        try coordinator.coordinate(readingItemAt: url, options: []) { actual in
            // The stamp is taken before reading: a change racing the read is seen again later.
            guard let stamp = FileStamp.of(actual.path) else {
                throw UbiquityError(.notFound, "no document at '\(url.path)'")
            }
            guard !stamp.isDirectory else {
                throw UbiquityError(.unsupported, "'\(url.path)' is a folder; Document reads flat files only")
            }
            try read(from: actual)
            storage.withLock { storage in
                storage.fileURL = url
                storage.recordedStamp = stamp
                storage.fileModificationDate = stamp.modificationDate
                storage.changeCount = 0
                storage.changeGeneration &+= 1
                storage.autosaveGeneration &+= 1
                storage.autosavePending = false
            }
            registerPresenter()
        }
    }

    /// Registers the document as a presenter once (called inside a coordinated access, so no
    /// other coordinated access can slip in between reading and registering).
    func registerPresenter() {
        let register = storage.withLock { storage in
            defer { storage.isPresenting = true }
            return !storage.isPresenting
        }
        if register { FileCoordinator.addFilePresenter(self) }
    }

    func begin(_ operation: FileOperation) {
        storage.withLock { $0.operation = operation }
    }

    func end() {
        storage.withLock { $0.operation = nil }
    }
}
