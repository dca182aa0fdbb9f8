// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore

/// A document backed by one file, with coordinated safe-saving, change tracking, autosave,
/// revert-on-external-change and conflict surfacing: Apple's `UIDocument`, with the same Swift
/// spellings plus async/await forms.
///
/// Subclass it and override ``load(fromContents:ofType:)`` (you get the file's `Data`) and
/// ``contents(forType:)`` (return `Data`):
///
/// ```swift
/// final class NoteDocument: Document, @unchecked Sendable {
///     private let text = Mutex("")
///     override func load(fromContents contents: Any, ofType typeName: String?) throws {
///         guard let data = contents as? Data else { throw UbiquityError(.invalidArgument, "not a file") }
///         text.withLock { $0 = String(decoding: data, as: UTF8.self) }
///     }
///     override func contents(forType typeName: String) throws -> Any {
///         Data(text.withLock { $0 }.utf8)
///     }
/// }
/// let note = NoteDocument(fileURL: url)
/// guard await note.open() else { … }
/// ```
///
/// **Threads and queues.** All reading and writing goes through one private serial queue
/// (``performAsynchronousFileAccess(_:)``), so ``load(fromContents:ofType:)``,
/// ``contents(forType:)``, ``read(from:)`` and ``writeContents(_:to:for:originalContentsURL:)``
/// are called there, one at a time, never concurrently. Linux has no notion of a "current
/// dispatch queue" to call back on, so completion handlers run on a private serial completion
/// queue of the document; prefer the async forms (``open()``, ``save(to:for:)``, …). Unlike
/// Apple's, the completion handlers have no `nil` default, so that `await document.close()`
/// always means the async form (with the default, Swift picks the handler form when the result
/// is discarded, and the call does not wait).
///
/// **As a file presenter.** While open, the document is registered with
/// ``FileCoordinator/addFilePresenter(_:)``. A coordinated read by someone else makes it save
/// unsaved changes first; a write by someone else (or an uncoordinated change reported through
/// ``presentedItemDidChange()``) makes it reload when it has no unsaved changes, or, when it has,
/// keep the local edits, preserve the file's new content as a conflict version and set
/// ``State/inConflict``: a conflict never loses data.
///
/// Limits: flat files only (no `FileWrapper` packages); ``progress`` stays nil (there is nothing
/// to download on open yet); conflict versions go to the version store in force
/// (`VersionStoreLocation`) for the task that made the document.
///
/// `@unchecked Sendable`: the class is open (subclasses add their own state, which they must
/// protect), and every piece of its own mutable state lives behind one `Mutex`; the queues it
/// holds are thread-safe.
open class Document: FilePresenter, @unchecked Sendable {
    /// Everything that changes, behind ``storage``.
    struct Storage {
        var fileURL: URL
        var state: State = .closed
        var fileModificationDate: Date?
        var progress: Progress?
        var changeCount = 0
        var changeGeneration: UInt64 = 0
        var recordedStamp: FileStamp?
        var isPresenting = false
        var autosaveInterval: Duration = .seconds(5)
        var autosaveGeneration: UInt64 = 0
        var autosavePending = false
        var checkPending = false
        var lastError: (any Error)?
        var operation: FileOperation?
    }

    /// What the file-access queue is doing (so that ``handleError(_:userInteractionPermitted:)``
    /// knows a save error from a read error).
    enum FileOperation { case open, save, revert, check }

    let storage: Mutex<Storage>
    /// The streams of ``stateChanges``.
    let stateStreams = Broadcaster<State>()
    /// The serial queue of all file access (``performAsynchronousFileAccess(_:)``).
    let fileAccessQueue = DispatchQueue(label: "ubiquity.document.file-access")
    /// Where completion handlers run.
    let completionQueue = DispatchQueue(label: "ubiquity.document.completion")
    /// Where the autosave timer runs.
    let autosaveQueue = DispatchQueue(label: "ubiquity.document.autosave")
    private let presenterQueue: OperationQueue
    /// The version store in force for the task that made the document (tests point it at a
    /// temporary folder); conflict versions go there.
    let versionStoreOverride: URL?

    /// Makes a closed document for the file at `fileURL` (which need not exist yet: create it
    /// with ``save(to:for:completionHandler:)`` and ``SaveOperation/forCreating``).
    public init(fileURL: URL) {
        storage = Mutex(Storage(fileURL: fileURL))
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "ubiquity.document.presenter"
        presenterQueue = queue
        versionStoreOverride = VersionStoreLocation.override
    }

    // MARK: Presenter identity

    /// The document's file (``fileURL``).
    public var presentedItemURL: URL? { fileURL }

    /// A serial queue of the document's own, on which presenter messages arrive.
    public var presentedItemOperationQueue: OperationQueue { presenterQueue }

    // MARK: Reading and writing (override points)

    /// Loads the document from `contents` (the file's `Data`). Called on the file-access queue
    /// by ``read(from:)``, during ``open(completionHandler:)`` and reverts. The default throws
    /// `unsupported`: subclasses must override it.
    open func load(fromContents contents: Any, ofType typeName: String?) throws {
        throw UbiquityError(.unsupported, "\(type(of: self)) does not override load(fromContents:ofType:)")
    }

    /// Returns a snapshot of the document to save, as `Data`. Called on the file-access queue at
    /// the start of a save. The default throws `unsupported`: subclasses must override it.
    open func contents(forType typeName: String) throws -> Any {
        throw UbiquityError(.unsupported, "\(type(of: self)) does not override contents(forType:)")
    }

    /// Reads the file at `url` and calls ``load(fromContents:ofType:)``. Called inside a
    /// coordinated read on the file-access queue; if you call it yourself, coordinate the read
    /// and go through ``performAsynchronousFileAccess(_:)``.
    open func read(from url: URL) throws {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch let error as CocoaError where error.code == .fileReadNoPermission {
            throw UbiquityError(.permissionDenied, "cannot read '\(url.path)': permission denied", underlying: error)
        } catch let error as CocoaError where error.code == .fileReadNoSuchFile {
            throw UbiquityError(.notFound, "cannot read '\(url.path)': no such file", underlying: error)
        } catch {
            throw UbiquityError(.io, "cannot read '\(url.path)'", underlying: error)
        }
        try load(fromContents: data, ofType: Document.fileType(of: url))
    }

    /// Writes `contents` (which must be `Data`) to `url` with a safe-save: a temporary file in
    /// the same folder, fsynced and renamed over the destination, so that a crash leaves the old
    /// or the new content, never a mix. ``SaveOperation/forCreating`` refuses to replace an
    /// existing file (`alreadyExists`). Called inside a coordinated write on the file-access
    /// queue; `originalContentsURL` is the file being replaced, if any.
    open func writeContents(_ contents: Any, to url: URL, for saveOperation: SaveOperation,
                            originalContentsURL: URL?) throws {
        guard let data = contents as? Data else {
            throw UbiquityError(.invalidArgument,
                                "contents(forType:) returned \(type(of: contents)); Document writes Data only")
        }
        try SafeSave.write(data, to: url.path, mode: saveOperation == .forCreating ? .create : .overwrite)
    }

    /// The type to save as: the file's extension by default.
    open var savingFileType: String? { fileType }

    /// Whether the document has changes not yet saved, from the change count.
    open var hasUnsavedChanges: Bool { storage.withLock { $0.changeCount != 0 } }

    // MARK: Errors and editing (override points)

    /// Called on the file-access queue when opening, saving or reverting fails. The default
    /// records the error (``lastError``) and, for a save, sets ``State/savingError``.
    open func handleError(_ error: any Error, userInteractionPermitted: Bool) {
        let isSave = storage.withLock { storage in
            storage.lastError = error
            return storage.operation == .save
        }
        if isSave { updateState { $0.insert(.savingError) } }
    }

    /// Called (on the file-access queue) before the document's contents are replaced by a
    /// revert, after ``State/editingDisabled`` is set. The default does nothing.
    open func disableEditing() {}

    /// Called (on the file-access queue) when editing is safe again, after
    /// ``State/editingDisabled`` is cleared. The default does nothing.
    open func enableEditing() {}

    // MARK: Operations (override points; the async forms call these)

    /// Opens the document: a coordinated read of ``fileURL`` that calls ``read(from:)``, then
    /// registers the document as a file presenter. The state becomes ``State/normal`` (plus
    /// ``State/inConflict`` when the file has unresolved conflict versions). The handler gets
    /// whether it worked, on the document's completion queue.
    open func open(completionHandler: (@Sendable (Bool) -> Void)?) {
        performAsynchronousFileAccess { [self] in
            let success = performOpen()
            complete(completionHandler, success)
        }
    }

    /// Saves the document to `url` through a coordinated write (made with this document as the
    /// presenter, so it is not messaged about its own save) and ``writeContents(_:to:for:originalContentsURL:)``.
    /// Changes made while saving keep the document dirty. ``SaveOperation/forCreating`` fails
    /// with `alreadyExists` if a file is there, and opens the document when it succeeds.
    open func save(to url: URL, for saveOperation: SaveOperation, completionHandler: (@Sendable (Bool) -> Void)?) {
        performAsynchronousFileAccess { [self] in
            let success = performSave(to: url, for: saveOperation)
            complete(completionHandler, success)
        }
    }

    /// Saves the document to ``fileURL`` through ``save(to:for:completionHandler:)`` (so an
    /// override sees autosaves too) if it is open and has unsaved changes; the handler gets true
    /// when there was nothing to save. Called by the autosave timer, by
    /// ``close(completionHandler:)`` and when a reader asks the document to save.
    open func autosave(completionHandler: (@Sendable (Bool) -> Void)?) {
        performAsynchronousFileAccess { [self] in
            guard needsAutosave else {
                complete(completionHandler, true)
                return
            }
            save(to: fileURL, for: .forOverwriting, completionHandler: completionHandler)
        }
    }

    /// Saves unsaved changes, unregisters the document as a file presenter and sets
    /// ``State/closed``. The handler gets whether the save (if any) worked.
    open func close(completionHandler: (@Sendable (Bool) -> Void)?) {
        autosave { [self] saved in
            performAsynchronousFileAccess { [self] in
                performClose()
                complete(completionHandler, saved)
            }
        }
    }

    /// Discards unsaved changes and reads the document again from `url` (which becomes
    /// ``fileURL``): ``disableEditing()``, a coordinated ``read(from:)``, ``enableEditing()``.
    open func revert(toContentsOf url: URL, completionHandler: (@Sendable (Bool) -> Void)?) {
        performAsynchronousFileAccess { [self] in
            let success = performRevert(to: url)
            complete(completionHandler, success)
        }
    }

    /// Runs `block` on the document's serial file-access queue, after every file access queued
    /// before it (open, save, revert, close all go through it).
    public func performAsynchronousFileAccess(_ block: @escaping @Sendable () -> Void) {
        fileAccessQueue.async(execute: block)
    }

    func complete(_ handler: (@Sendable (Bool) -> Void)?, _ success: Bool) {
        guard let handler else { return }
        completionQueue.async { handler(success) }
    }
}
