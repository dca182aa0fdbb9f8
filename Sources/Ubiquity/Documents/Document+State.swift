// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore

extension Document {
    /// The document's condition (`UIDocument.State`, same raw values).
    public struct State: OptionSet, Sendable, Hashable, CustomStringConvertible {
        /// The raw value.
        public let rawValue: UInt
        /// Makes a state from a raw value.
        public init(rawValue: UInt) { self.rawValue = rawValue }

        /// Open, with nothing wrong.
        public static let normal: State = []
        /// Not opened successfully yet, or closed since; properties may not be valid.
        public static let closed = State(rawValue: 1 << 0)
        /// The file has unresolved conflict versions (`FileVersion.unresolvedConflictVersionsOfItem(at:)`).
        public static let inConflict = State(rawValue: 1 << 1)
        /// An error prevents saving.
        public static let savingError = State(rawValue: 1 << 2)
        /// Editing is unsafe (set before ``Document/disableEditing()``, cleared before
        /// ``Document/enableEditing()``).
        public static let editingDisabled = State(rawValue: 1 << 3)
        /// The document is busy loading or saving and ``Document/progress`` is valid.
        public static let progressAvailable = State(rawValue: 1 << 4)

        /// The flags' names, such as `[inConflict, savingError]`, or `normal`.
        public var description: String {
            let names: [(State, String)] = [(.closed, "closed"), (.inConflict, "inConflict"), (.savingError, "savingError"),
                                            (.editingDisabled, "editingDisabled"), (.progressAvailable, "progressAvailable")]
            let present = names.filter { contains($0.0) }.map(\.1)
            return present.isEmpty ? "normal" : "[" + present.joined(separator: ", ") + "]"
        }
    }

    /// A change to the document (`UIDocument.ChangeKind`, same raw values).
    public enum ChangeKind: Int, Sendable {
        /// A change was made.
        case done = 0
        /// A change was undone.
        case undone = 1
        /// An undone change was redone.
        case redone = 2
        /// The document is now in step with its file.
        case cleared = 3
    }

    /// What a save does (`UIDocument.SaveOperation`, same raw values).
    public enum SaveOperation: Int, Sendable {
        /// Creates the file; fails with `alreadyExists` when one is there.
        case forCreating = 0
        /// Replaces the file's content.
        case forOverwriting = 1
    }

    /// The change count at the start of a save, given back to
    /// ``Document/updateChangeCount(withToken:for:)`` when it succeeds.
    public struct ChangeCountToken: Sendable, Hashable {
        let generation: UInt64
    }

    /// Posted on `NotificationCenter.default` (object: the document) whenever ``documentState``
    /// changes; the name is Apple's.
    public static let stateChangedNotification = Notification.Name("UIDocumentStateChangedNotification")

    // MARK: Attributes

    /// The document's file. Follows the file when it moves (``presentedItemDidMove(to:)``).
    public var fileURL: URL { storage.withLock { $0.fileURL } }

    /// The file's name without its extension.
    public var localizedName: String { fileURL.deletingPathExtension().lastPathComponent }

    /// The file's type: its extension (Linux has no UTIs), or nil when it has none.
    public var fileType: String? { Document.fileType(of: fileURL) }

    /// The file's modification date as of the last successful open, save or revert; nil until
    /// one has succeeded.
    public var fileModificationDate: Date? { storage.withLock { $0.fileModificationDate } }

    /// The document's condition.
    public var documentState: State { storage.withLock { $0.state } }

    /// Progress of a long load or save while ``State/progressAvailable`` is set, otherwise nil.
    public var progress: Progress? { storage.withLock { $0.progress } }

    /// The last error passed to ``handleError(_:userInteractionPermitted:)`` by the default
    /// implementation, if any.
    public var lastError: (any Error)? { storage.withLock { $0.lastError } }

    /// The state after every change of ``documentState`` (each access makes a new stream; it
    /// ends when the stream is dropped or cancelled).
    public var stateChanges: AsyncStream<State> {
        stateStreams.subscribe()
    }

    static func fileType(of url: URL) -> String? {
        let ext = url.pathExtension
        return ext.isEmpty ? nil : ext
    }

    /// Changes the state; when it differs, posts the notification and feeds the streams.
    func updateState(_ change: (inout State) -> Void) {
        let changed = storage.withLock { storage -> Bool in
            var state = storage.state
            change(&state)
            guard state != storage.state else { return false }
            storage.state = state
            stateStreams.yield(state)  // under the lock: the streams see the states in order
            return true
        }
        guard changed else { return }
        NotificationCenter.default.post(name: Document.stateChangedNotification, object: self)
    }

    // MARK: Change tracking

    /// Records a change: ``ChangeKind/done`` and ``ChangeKind/redone`` add one,
    /// ``ChangeKind/undone`` takes one away, ``ChangeKind/cleared`` marks the document saved.
    /// Any change but `cleared` schedules an autosave ``autosaveInterval`` later.
    public func updateChangeCount(_ change: ChangeKind) {
        storage.withLock { storage in
            switch change {
            case .done, .redone: storage.changeCount += 1
            case .undone: storage.changeCount -= 1
            case .cleared: storage.changeCount = 0
            }
            storage.changeGeneration &+= 1
            if change == .cleared || storage.changeCount == 0 {
                storage.autosaveGeneration &+= 1  // cancels a pending autosave
                storage.autosavePending = false
            }
        }
        if change != .cleared { scheduleAutosave() }
    }

    /// The token for a save starting now.
    public func changeCountToken(for saveOperation: SaveOperation) -> ChangeCountToken {
        storage.withLock { ChangeCountToken(generation: $0.changeGeneration) }
    }

    /// Called when a save that started with `token` succeeded: marks the document saved unless
    /// it changed since the token was taken.
    public func updateChangeCount(withToken token: ChangeCountToken, for saveOperation: SaveOperation) {
        let unchanged = storage.withLock { $0.changeGeneration == token.generation }
        if unchanged { updateChangeCount(.cleared) }
    }

    // MARK: Autosave

    /// How long after a change the document saves itself (default 5 seconds; zero or less
    /// turns autosaving off). Closing and readers' requests still save.
    public var autosaveInterval: Duration {
        get { storage.withLock { $0.autosaveInterval } }
        set {
            storage.withLock { storage in
                storage.autosaveInterval = newValue
                if newValue <= .zero {
                    storage.autosaveGeneration &+= 1
                    storage.autosavePending = false
                }
            }
        }
    }

    /// Arms the autosave timer unless it is armed, autosave is off or the document is closed.
    func scheduleAutosave() {
        let armed = storage.withLock { storage -> (UInt64, Duration)? in
            guard !storage.autosavePending, storage.autosaveInterval > .zero, storage.changeCount != 0,
                  !storage.state.contains(.closed) else { return nil }
            storage.autosavePending = true
            storage.autosaveGeneration &+= 1
            return (storage.autosaveGeneration, storage.autosaveInterval)
        }
        guard let (generation, interval) = armed else { return }
        let (seconds, attoseconds) = interval.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let delay = nanoseconds.overflow ? Int.max : Int(clamping: nanoseconds.partialValue + attoseconds / 1_000_000_000)
        autosaveQueue.asyncAfter(deadline: .now() + .nanoseconds(delay)) { [weak self] in
            guard let self else { return }
            let due = self.storage.withLock { storage -> Bool in
                guard storage.autosavePending, storage.autosaveGeneration == generation else { return false }
                storage.autosavePending = false
                return true
            }
            if due { self.autosave(completionHandler: nil) }
        }
    }
}
