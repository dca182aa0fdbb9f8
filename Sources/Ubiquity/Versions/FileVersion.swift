// SPDX-License-Identifier: Apache-2.0
import Foundation

/// PLACEHOLDER, replaced by the versions work: a version of a file (Apple's `NSFileVersion`).
public final class FileVersion: Sendable {
    /// The item the version belongs to.
    public let itemURL: URL
    /// Stable identifier of the version.
    public let persistentIdentifier: String
    init(itemURL: URL, persistentIdentifier: String) {
        self.itemURL = itemURL
        self.persistentIdentifier = persistentIdentifier
    }
    /// Looks a version up by identifier.
    public class func version(itemAt url: URL, forPersistentIdentifier identifier: String) -> FileVersion? {
        FileVersion(itemURL: url, persistentIdentifier: identifier)
    }
}

extension FileVersion {
    /// Versions follow their item when it moves (called by `FileCoordinator.item(at:didMoveTo:)`).
    package static func itemDidMove(from old: String, to new: String) {}
}
