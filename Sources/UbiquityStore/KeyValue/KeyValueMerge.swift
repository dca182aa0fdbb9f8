// SPDX-License-Identifier: Apache-2.0

/// How a server entry meets the local row: last writer wins by timestamp, the server having
/// decided among devices. Pure (no I/O); ``KeyValueDatabase/applyServerEntries(_:reason:writer:syncState:)``
/// applies its decisions.
package enum KeyValueMerge {
    /// What to do with the local row.
    package enum Decision: Sendable, Hashable {
        /// Leave it (a local change not uploaded yet is newer, or nothing to do).
        case keep
        /// Write this row (clean); `visible` when the value a reader sees changes.
        case write(KeyValueDatabase.Entry, visible: Bool)
    }

    /// The decision for `server` given the local row `local` (nil when the key has no row).
    ///
    /// - A record deleted outright on the server (no timestamp) removes a clean local value and
    ///   keeps a local change not uploaded yet.
    /// - The same version as the local one: the local row becomes clean (the server has it).
    /// - A local change not uploaded yet with a later timestamp is kept (it uploads next).
    /// - Otherwise the server's entry is taken.
    package static func decide(local: KeyValueDatabase.Entry?, server: KeyValueDatabase.ServerEntry) -> Decision {
        guard let modified = server.modified else {
            guard let local, !local.dirty, local.encodedValue != nil else { return .keep }
            return .write(.init(key: server.key, encodedValue: nil, modified: local.modified, dirty: false), visible: true)
        }
        if let local {
            if local.modified == modified, local.encodedValue == server.encodedValue {
                return local.dirty ? .write(.init(key: server.key, encodedValue: local.encodedValue, modified: modified, dirty: false), visible: false)
                    : .keep
            }
            if local.dirty, local.modified > modified { return .keep }
        } else if server.encodedValue == nil {
            return .keep
        }
        return .write(.init(key: server.key, encodedValue: server.encodedValue, modified: modified, dirty: false),
                      visible: local?.encodedValue != server.encodedValue)
    }
}
