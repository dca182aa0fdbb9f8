// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// Tells presenters about gained, lost and resolved versions, and remembers the last versions it
/// announced so that a presenter in this process can still get the `FileVersion` object when the
/// store no longer lists it (a removed version) or when the announcement was made for a store the
/// presenter's thread does not see (``VersionStoreLocation/override``).
enum VersionAnnouncements {
    private static let recent = Mutex<[(key: String, version: FileVersion)]>([])
    private static let limit = 128

    /// Posts `kind` for `version` of the item at canonical `path`.
    static func post(_ kind: VersionEventKind, _ version: FileVersion, path: String) {
        let key = path + "\n" + version.persistentIdentifier
        recent.withLock { list in
            list.removeAll { $0.key == key }
            list.append((key, version))
            if list.count > limit { list.removeFirst(list.count - limit) }
        }
        CoordinationRuntime.shared.versionEvent(kind, path: path, versionID: version.persistentIdentifier)
    }

    /// Forgets the versions announced (as a process does once 128 newer ones were announced).
    static func forgetRecent() {
        recent.withLock { $0.removeAll() }
    }

    /// The version last announced for the item at canonical `path` with `identifier`.
    static func recentVersion(path: String, identifier: String) -> FileVersion? {
        let key = path + "\n" + identifier
        return recent.withLock { list in list.last { $0.key == key }?.version }
    }
}
