// SPDX-License-Identifier: Apache-2.0
import Foundation

/// An object that presents a file or folder to the user and must hear of other coordinated
/// access to it: Apple's `NSFilePresenter`, with the same Swift spellings.
///
/// Register with ``FileCoordinator/addFilePresenter(_:)`` and unregister with
/// ``FileCoordinator/removeFilePresenter(_:)``. Every message except `presentedItemURL` is
/// delivered on ``presentedItemOperationQueue``. All methods but the two properties have default
/// implementations that do what Apple does when a presenter does not implement them.
///
/// Messages that take a completion handler or a relinquish block **must** call it, or every
/// coordinator waiting on this presenter fails after the coordination time-out.
public protocol FilePresenter: AnyObject, Sendable {
    /// The item presented (`nil` while it does not exist yet). Called on any thread at any time.
    var presentedItemURL: URL? { get }
    /// The queue on which every other message is delivered.
    var presentedItemOperationQueue: OperationQueue { get }

    /// Someone wants to read: call `reader`, optionally with a reacquirer run after the read.
    func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void)
    /// Someone wants to write: call `writer`, optionally with a reacquirer run after the write.
    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void)
    /// Write unsaved changes to disk, then call the handler (with an error to make a reader fail).
    func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void)
    /// The item is about to be deleted: close it, then call the handler.
    func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void)
    /// The item's local copy is about to be evicted. The default refuses (as Apple's does).
    func accommodatePresentedItemEviction(completionHandler: @escaping @Sendable ((any Error)?) -> Void)
    /// The item (or a folder above it) moved: update `presentedItemURL`.
    func presentedItemDidMove(to newURL: URL)
    /// The item's contents or attributes were written.
    func presentedItemDidChange()
    /// Observed ubiquity attributes changed.
    func presentedItemDidChangeUbiquityAttributes(_ attributes: Set<URLResourceKey>)
    /// The ubiquity attributes this presenter wants to hear about (default: all of them).
    var observedPresentedItemUbiquityAttributes: Set<URLResourceKey> { get }
    /// A version of the item was added (a conflict, for instance). Sent to every presenter of the
    /// item, including the one that made the change.
    func presentedItemDidGain(_ version: FileVersion)
    /// A version of the item was removed.
    func presentedItemDidLose(_ version: FileVersion)
    /// A conflict version of the item was marked resolved.
    func presentedItemDidResolveConflict(_ version: FileVersion)
    /// An item inside the presented folder is about to be deleted.
    func accommodatePresentedSubitemDeletion(at url: URL, completionHandler: @escaping @Sendable ((any Error)?) -> Void)
    /// An item appeared inside the presented folder.
    func presentedSubitemDidAppear(at url: URL)
    /// An item inside the presented folder moved.
    func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL)
    /// An item inside the presented folder changed, appeared or was deleted.
    func presentedSubitemDidChange(at url: URL)
    /// An item inside the presented folder gained a version.
    func presentedSubitem(at url: URL, didGain version: FileVersion)
    /// An item inside the presented folder lost a version.
    func presentedSubitem(at url: URL, didLose version: FileVersion)
    /// A conflict version of an item inside the presented folder was resolved.
    func presentedSubitem(at url: URL, didResolve version: FileVersion)
}

extension FilePresenter {
    /// Relinquishes at once, with no reacquirer.
    public func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) { reader(nil) }
    /// Relinquishes at once, with no reacquirer.
    public func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) { writer(nil) }
    /// Nothing to save.
    public func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) { completionHandler(nil) }
    /// Nothing to close.
    public func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) { completionHandler(nil) }
    /// Refuses: a presenter that does not implement eviction prevents it, as on Apple's platforms.
    public func accommodatePresentedItemEviction(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        completionHandler(UbiquityError(.presenterFailed, "the presenter of this item does not support eviction"))
    }
    /// Ignored.
    public func presentedItemDidMove(to newURL: URL) {}
    /// Ignored.
    public func presentedItemDidChange() {}
    /// Ignored.
    public func presentedItemDidChangeUbiquityAttributes(_ attributes: Set<URLResourceKey>) {}
    /// Every ubiquity attribute.
    public var observedPresentedItemUbiquityAttributes: Set<URLResourceKey> { [] }
    /// Ignored.
    public func presentedItemDidGain(_ version: FileVersion) {}
    /// Ignored.
    public func presentedItemDidLose(_ version: FileVersion) {}
    /// Ignored.
    public func presentedItemDidResolveConflict(_ version: FileVersion) {}
    /// Nothing to do.
    public func accommodatePresentedSubitemDeletion(at url: URL, completionHandler: @escaping @Sendable ((any Error)?) -> Void) { completionHandler(nil) }
    /// Ignored.
    public func presentedSubitemDidAppear(at url: URL) {}
    /// Ignored.
    public func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) {}
    /// Ignored.
    public func presentedSubitemDidChange(at url: URL) {}
    /// Ignored.
    public func presentedSubitem(at url: URL, didGain version: FileVersion) {}
    /// Ignored.
    public func presentedSubitem(at url: URL, didLose version: FileVersion) {}
    /// Ignored.
    public func presentedSubitem(at url: URL, didResolve version: FileVersion) {}
}
