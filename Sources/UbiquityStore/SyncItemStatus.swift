// SPDX-License-Identifier: Apache-2.0

/// An item's sync state: the one set of states the daemon's sync reports, the index keeps, the
/// control socket carries (``ItemSyncState/sync``) and the library and the CLI show. On the wire,
/// the raw values.
package enum SyncItemStatus: String, Codable, Sendable, Hashable, CaseIterable {
    /// The server has this version.
    case uploaded
    /// Changed (or new) here and not sent yet.
    case uploading
    /// Has unresolved conflict versions.
    case inConflict = "in conflict"
    /// Carries the skip-backup attribute: never uploaded.
    case excluded
    /// Not known: no daemon said, or a daemon newer than this build sent a state it does not know.
    case unknown

    /// Decodes the raw value; a value this build does not know is ``unknown``, never an error,
    /// so an item's other facts still arrive from a newer daemon.
    package init(from decoder: any Decoder) throws {
        self = Self(rawValue: try decoder.singleValueContainer().decode(String.self)) ?? .unknown
    }
}
