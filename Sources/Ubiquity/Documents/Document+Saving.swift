// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore

// Saving. Everything here runs on the file-access queue.
extension Document {
    /// Saves the document to `url` (see ``save(to:for:completionHandler:)``).
    @discardableResult
    public func save(to url: URL, for saveOperation: SaveOperation) async -> Bool {
        await withCheckedContinuation { continuation in
            save(to: url, for: saveOperation) { continuation.resume(returning: $0) }
        }
    }

    /// Saves unsaved changes to ``fileURL`` (see ``autosave(completionHandler:)``).
    @discardableResult
    public func autosave() async -> Bool {
        await withCheckedContinuation { continuation in
            autosave { continuation.resume(returning: $0) }
        }
    }

    /// Whether there is something to save and the document is open.
    var needsAutosave: Bool { hasUnsavedChanges && !documentState.contains(.closed) }

    func performSave(to url: URL, for saveOperation: SaveOperation) -> Bool {
        begin(.save)
        defer { end() }
        // Taken before the snapshot: changes made from here on keep the document dirty.
        let token = changeCountToken(for: saveOperation)
        var keptConflict = false
        do {
            if saveOperation == .forCreating, FileStamp.of(url.path) != nil {
                throw UbiquityError(.alreadyExists, "'\(url.path)' already exists; saving for creating does not replace it")
            }
            let contents = try self.contents(forType: savingFileType ?? "")
            let coordinator = FileCoordinator(filePresenter: self)
            let options: FileCoordinator.WritingOptions = saveOperation == .forCreating ? .forReplacing : []
            try coordinator.coordinate(writingItemAt: url, options: options) { actual in
                let onDisk = FileStamp.of(actual.path)
                let original = onDisk == nil ? nil : actual
                // The file changed since the document last read or wrote it, and no check has
                // dealt with it yet: keep that content as a conflict version before replacing it.
                if saveOperation == .forOverwriting, let onDisk, let known = knownStamp(of: url),
                   onDisk.contentDiffers(from: known) {
                    try keepAsConflictVersion(actual, modificationDate: onDisk.modificationDate)
                    keptConflict = true
                }
                try writeContents(contents, to: actual, for: saveOperation, originalContentsURL: original)
                guard let stamp = FileStamp.of(actual.path) else {
                    throw UbiquityError(.io, "'\(url.path)' is missing right after it was saved")
                }
                // Inside the claim, so that the presenter registration follows the new URL.
                storage.withLock { storage in
                    storage.fileURL = url
                    storage.recordedStamp = stamp
                    storage.fileModificationDate = stamp.modificationDate
                }
                registerPresenter()  // a document saved for creating is open
            }
        } catch {
            handleError(error, userInteractionPermitted: false)
            return false
        }
        updateChangeCount(withToken: token, for: saveOperation)
        updateState { $0.remove([.closed, .savingError]) }
        if keptConflict {
            updateState { $0.insert(.inConflict) }
        } else if saveOperation == .forCreating {
            refreshConflictState()
        }
        return true
    }

    /// The stamp recorded at the last open, save or revert, if `url` is the document's file.
    private func knownStamp(of url: URL) -> FileStamp? {
        storage.withLock { $0.fileURL.standardizedFileURL == url.standardizedFileURL ? $0.recordedStamp : nil }
    }
}
