// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore

/// Coordinates reading and writing of files and folders among threads and processes, and tells
/// file presenters about it: Apple's `NSFileCoordinator`, with the same Swift spellings plus
/// throwing and async/await forms.
///
/// ```swift
/// let coordinator = FileCoordinator(filePresenter: nil)
/// try coordinator.coordinate(writingItemAt: url, options: .forReplacing) { url in
///     try data.write(to: url)
/// }
/// ```
///
/// Rules (Apple's): readers share, writers exclude; deleting, moving or replacing a folder covers
/// everything inside it; a coordinator made with a presenter never messages that presenter, and
/// coordinators made with the same presenter (the same ``purposeIdentifier``) never wait for each
/// other. Presenters get, in order: relinquish → save or accommodate deletion → (the accessor
/// runs) → did change / did move → reacquire.
///
/// Across processes, coordination goes through the coordination service hosted by
/// `ubiq daemon` (a Unix socket under `$XDG_RUNTIME_DIR`). When no daemon runs, coordinators
/// in different processes still exclude each other through open-file-description locks, but
/// **presenters in other processes are not messaged** (they neither save first nor hear of the
/// change); presenters in this process are messaged as usual.
///
/// Unlike Apple's, coordination never hangs: a presenter that does not answer, or a claim that
/// cannot be granted, fails after ``timeout`` (`UbiquityError.timedOut`); a nested coordination
/// that would wait for a claim held by the same thread fails at once (`wouldDeadlock`).
public final class FileCoordinator: Sendable {
    /// The presenter this coordinator acts for (never messaged by it).
    public let filePresenter: (any FilePresenter)?
    private let purpose: Mutex<(id: String, locked: Bool)>
    let activeClaims = Mutex<Set<UInt64>>([])
    let cancelled = Atomic<Bool>(false)
    private let timeoutSetting = Mutex<Duration?>(nil)

    /// Makes a coordinator, optionally acting for `filePresenter`. Use one per operation.
    public init(filePresenter: (any FilePresenter)? = nil) {
        self.filePresenter = filePresenter
        if let filePresenter {
            purpose = Mutex((PresenterRegistry.purposeIdentifier(of: filePresenter), true))
        } else {
            purpose = Mutex((PurposeIdentifiers.next(), false))
        }
    }

    /// Coordinations with the same purpose never block each other, even across processes.
    /// Unique per coordinator; shared by all coordinators made with the same presenter.
    public var purposeIdentifier: String { purpose.withLock { $0.id } }

    /// Sets the purpose identifier. Allowed once, on a coordinator made without a presenter,
    /// to a non-empty string; otherwise throws `invalidArgument` (Apple raises an exception).
    public func setPurposeIdentifier(_ identifier: String) throws {
        try purpose.withLock { state in
            guard !identifier.isEmpty else {
                throw UbiquityError(.invalidArgument, "purposeIdentifier must not be empty")
            }
            guard !state.locked else {
                throw UbiquityError(.invalidArgument,
                    "purposeIdentifier can be set only once, and never on a coordinator made with a file presenter")
            }
            state = (identifier, true)
        }
    }

    /// How long a coordination may wait for other claims and for presenters before it fails with
    /// `timedOut`. Defaults to ``CoordinationConfiguration/timeout``.
    public var timeout: Duration {
        get { timeoutSetting.withLock { $0 } ?? CoordinationRuntime.shared.configuration.timeout }
        set { timeoutSetting.withLock { $0 = newValue } }
    }

    // MARK: Presenters

    /// Registers `filePresenter` with every coordinator, in this process and (through the daemon)
    /// in others. Balance with ``removeFilePresenter(_:)``; the presenter is retained until then.
    public class func addFilePresenter(_ filePresenter: any FilePresenter) {
        CoordinationRuntime.shared.addPresenter(filePresenter)
    }

    /// Unregisters `filePresenter`.
    public class func removeFilePresenter(_ filePresenter: any FilePresenter) {
        CoordinationRuntime.shared.removePresenter(filePresenter)
    }

    /// The presenters registered in this process.
    public class var filePresenters: [any FilePresenter] { CoordinationRuntime.shared.registry.all }

    // MARK: Cancel and moves

    /// Cancels this coordinator's waiting coordinations: they fail with `cancelled`
    /// (`NSUserCancelledError` when bridged) and their accessors never run. An accessor that
    /// already runs is not interrupted. Callable from any thread.
    public func cancel() {
        cancelled.store(true, ordering: .relaxed)
        let ids = activeClaims.withLock { $0 }
        for id in ids { CoordinationRuntime.shared.cancel(claimID: id) }
    }

    /// Announces a move before it happens (a no-op on Linux, kept for porting).
    public func item(at oldURL: URL, willMoveTo newURL: URL) {}

    /// Announces that `oldURL` moved to `newURL`. Call it inside a coordinated write: presenters of
    /// the item (and of everything inside it) get `presentedItemDidMove(to:)`, presenters of the
    /// folders around it `presentedSubitem(at:didMoveTo:)`, and file versions follow the item.
    public func item(at oldURL: URL, didMoveTo newURL: URL) {
        guard let old = try? CanonicalPath.canonicalize(oldURL.path),
              let new = try? CanonicalPath.canonicalize(newURL.path), old != new else { return }
        CoordinationRuntime.shared.itemDidMove(from: old, to: new, purpose: purposeIdentifier)
    }

    /// Tells presenters observing ubiquity attributes of the item that `attributes` changed.
    public func item(at url: URL, didChangeUbiquityAttributes attributes: Set<URLResourceKey>) {
        guard let path = try? CanonicalPath.canonicalize(url.path) else { return }
        CoordinationRuntime.shared.ubiquityAttributesChanged(path: path, keys: attributes.map(\.rawValue))
    }
}

/// Cheap unique purpose identifiers: a per-process random prefix and a counter.
enum PurposeIdentifiers {
    private static let prefix = "\(getpid())-" + String(UInt64.random(in: 0...UInt64.max), radix: 36) + "-"
    private static let counter = Atomic<UInt64>(0)
    static func next() -> String { prefix + String(counter.wrappingAdd(1, ordering: .relaxed).oldValue, radix: 36) }
}
