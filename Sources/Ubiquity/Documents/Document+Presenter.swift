// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore

// The document as a file presenter. Messages arrive on `presentedItemOperationQueue`; anything
// that touches the file is passed on to the file-access queue, so the presenter queue never
// waits for file access (which may itself be waiting for a coordinated access).
extension Document {
    /// Lets a reader in once in-flight file access (a save, a load) has finished.
    public func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        performAsynchronousFileAccess { reader(nil) }
    }

    /// Lets a writer in at once; when it is done, checks whether the file changed and reloads
    /// (or records a conflict, when there are unsaved changes).
    public func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        writer { [weak self] in self?.scheduleDiskCheck() }
    }

    /// A reader wants the current contents: autosaves if there are unsaved changes.
    public func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        autosave { [weak self] success in
            if success {
                completionHandler(nil)
            } else {
                completionHandler(self?.lastError ?? UbiquityError(.io, "the document could not save its changes"))
            }
        }
    }

    /// The file is about to be deleted: closes without saving, then lets the deletion go on.
    public func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        performAsynchronousFileAccess { [self] in
            performClose()
            completionHandler(nil)
        }
    }

    /// The file moved: ``fileURL`` follows it.
    public func presentedItemDidMove(to newURL: URL) {
        storage.withLock { $0.fileURL = newURL }
    }

    /// The file was written (by a coordinated writer, or without coordination): reloads, or
    /// records a conflict when there are unsaved changes. Repeated messages cause one reload.
    public func presentedItemDidChange() {
        scheduleDiskCheck()
    }

    /// A version was added: recomputes ``State/inConflict``.
    public func presentedItemDidGain(_ version: FileVersion) {
        performAsynchronousFileAccess { [self] in refreshConflictState() }
    }

    /// A version was removed: recomputes ``State/inConflict``.
    public func presentedItemDidLose(_ version: FileVersion) {
        performAsynchronousFileAccess { [self] in refreshConflictState() }
    }

    /// A conflict was resolved: recomputes ``State/inConflict``.
    public func presentedItemDidResolveConflict(_ version: FileVersion) {
        performAsynchronousFileAccess { [self] in refreshConflictState() }
    }

    // MARK: Reacting to changes on disk

    /// Queues one check of the file on the file-access queue (coalescing repeated requests;
    /// the short delay lets a burst of uncoordinated writes settle first).
    func scheduleDiskCheck() {
        let schedule = storage.withLock { storage in
            guard !storage.checkPending, storage.isPresenting else { return false }
            storage.checkPending = true
            return true
        }
        guard schedule else { return }
        fileAccessQueue.asyncAfter(deadline: .now() + .milliseconds(20)) { [weak self] in
            self?.checkDisk()
        }
    }

    /// Compares the file with the stamp recorded at the last open, save or revert: unchanged →
    /// nothing; changed and no unsaved changes → revert; changed with unsaved changes → keep
    /// the edits, preserve the file's content as a conflict version, set `.inConflict`.
    func checkDisk() {
        let (url, recorded, presenting) = storage.withLock { storage in
            storage.checkPending = false
            return (storage.fileURL, storage.recordedStamp, storage.isPresenting)
        }
        guard presenting, let current = FileStamp.of(url.path), !current.isDirectory else { return }
        if let recorded, !current.contentDiffers(from: recorded) { return }
        if !hasUnsavedChanges {
            _ = performRevert(to: url)  // directly, so that a second queued check sees the new stamp
        } else {
            preserveDiskContentAsConflict(url)
        }
    }
}
