// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore

/// A version of a file: Apple's `NSFileVersion`, with the same Swift spellings.
///
/// The *current* version is the file itself (``persistentIdentifier`` `"current"`). *Other*
/// versions are snapshots kept in the version store, outside the user's folders, under
/// `UbiquityPaths().versionsDirectory` (`$UBIQUITY_HOME/versions` or
/// `$XDG_DATA_HOME/ubiquity/versions`, read when each call is made). *Conflict* versions are
/// other versions made by sync when two devices changed the file; they stay until resolved.
///
/// ```swift
/// let saved = try FileVersion.addOfItem(at: url, withContentsOf: url)   // snapshot now
/// for conflict in FileVersion.unresolvedConflictVersionsOfItem(at: url) ?? [] {
///     try conflict.markResolved()
/// }
/// try FileVersion.removeOtherVersionsOfItem(at: url)
/// ```
///
/// Versions follow their item through renames: the item carries its identity in the extended
/// attribute `user.ubiquity.item-id` (kept by `SafeSave`), and a path index, updated by
/// `FileCoordinator.item(at:didMoveTo:)`, links paths to items on file systems without user
/// attributes. Every change to the store is atomic and serialised across processes.
///
/// As with Apple's, adding, removing and replacing do not coordinate by themselves: do them inside
/// a coordinated write of the item so that presenters hear of them in order. Paths must be
/// absolute; relative ones fail with `invalidArgument` (or give nil).
///
/// Differences from Apple's: `isResolved = false` is ignored instead of raising; the throwing
/// ``markResolved()`` is added; versions of folders (file packages) cannot be added yet.
public final class FileVersion: Sendable, Hashable, CustomStringConvertible {
    /// Where this version's contents are: the item itself for the current version, a file in the
    /// version store otherwise. Never show it to users or derive names from it.
    public let url: URL
    /// The item's name for display (its name when the version was made).
    public let localizedName: String?
    /// The name of the device that saved this version (recorded for every stored version; nil for
    /// the current version). Defaults to `UBIQUITY_DEVICE_NAME` or the host name.
    public let localizedNameOfSavingComputer: String?
    /// When the version's content was last modified.
    public let modificationDate: Date?
    /// Identifies the version among the item's versions: `"current"` for the current version,
    /// a UUID string for others. Stable across processes and renames.
    public let persistentIdentifier: String
    /// Whether this is a conflict version (made by sync; the current version never is).
    public let isConflict: Bool
    /// The size of the version's content in bytes.
    public let size: Int64

    /// The identifier kept for the current version.
    static let currentIdentifier = "current"

    /// The item's canonical path when this object was made.
    let itemPath: String
    /// The item's id in the store (nil for the current version).
    let itemID: String?
    /// The store holding the content (nil for the current version).
    let store: VersionStore?
    /// SHA-256 of the stored content (nil for the current version).
    let sha256: String?
    /// The content file's name in the item's folder (nil for the current version).
    let storedFile: String?
    private let resolvedState: Atomic<Bool>

    /// Makes the current version of the item at canonical `path`.
    init(currentAt path: String, stamp: FileStamp) {
        url = URL(fileURLWithPath: path, isDirectory: stamp.isDirectory)
        localizedName = CanonicalPath.lastComponent(of: path)
        localizedNameOfSavingComputer = nil
        modificationDate = stamp.modificationDate
        persistentIdentifier = Self.currentIdentifier
        isConflict = false
        size = stamp.size
        itemPath = path
        itemID = nil
        store = nil
        sha256 = nil
        storedFile = nil
        resolvedState = Atomic(true)
    }

    /// Makes a stored version from its manifest record.
    init(record: VersionManifest.Record, itemID: String, itemPath: String, store: VersionStore) {
        url = URL(fileURLWithPath: store.contentPath(itemID, file: record.file), isDirectory: false)
        localizedName = record.displayName
        localizedNameOfSavingComputer = record.savingComputer
        modificationDate = record.modificationDate
        persistentIdentifier = record.id
        isConflict = record.conflict
        size = record.size
        self.itemPath = itemPath
        self.itemID = itemID
        self.store = store
        sha256 = record.sha256
        storedFile = record.file
        resolvedState = Atomic(record.resolved || !record.conflict)
    }

    /// Whether this is the item's current version.
    var isCurrent: Bool { itemID == nil }

    /// Whether the conflict was resolved; always true for versions that are not conflicts.
    ///
    /// Setting true records it in the store and tells presenters (errors are ignored; use
    /// ``markResolved()`` to see them). Setting false is ignored: a resolved conflict stays
    /// resolved (Apple's raises an exception).
    public var isResolved: Bool {
        get { resolvedState.load(ordering: .acquiring) }
        set { if newValue { try? markResolved() } }
    }

    /// Records that the conflict is resolved in this object only.
    func setResolvedLocally() { resolvedState.store(true, ordering: .releasing) }

    /// Whether the system may delete this version to reclaim space: true for ordinary stored
    /// versions, false for the current version and for conflict versions.
    public var isDiscardable: Bool { !isCurrent && !isConflict }

    /// Whether the content is on this machine: true, unless the version was removed since.
    public var hasLocalContents: Bool { FileStamp.of(url.path) != nil }

    // MARK: Hashable

    private var identity: String {
        if let itemID { return itemID + "/" + persistentIdentifier }
        return "current:" + itemPath
    }

    /// Two objects are equal when they stand for the same version of the same item.
    public static func == (lhs: FileVersion, rhs: FileVersion) -> Bool { lhs.identity == rhs.identity }

    /// Hashes the item and the version identifier.
    public func hash(into hasher: inout Hasher) { hasher.combine(identity) }

    /// `FileVersion(<id> of <path>, conflict, unresolved, <size> bytes, modified <date>)`.
    public var description: String {
        var parts = ["\(persistentIdentifier) of \(itemPath)"]
        if isConflict { parts.append(isResolved ? "resolved conflict" : "unresolved conflict") }
        parts.append("\(size) bytes")
        if let modificationDate { parts.append("modified \(modificationDate)") }
        return "FileVersion(" + parts.joined(separator: ", ") + ")"
    }
}
