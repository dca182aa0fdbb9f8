// SPDX-License-Identifier: Apache-2.0
import Foundation

extension Record {
    /// A record's identity (`CKRecord.ID`): its name and its zone.
    public struct ID: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The record's name, unique in its zone.
        public let recordName: String
        /// The zone that holds the record.
        public let zoneID: RecordZone.ID

        /// Makes an ID; the name defaults to a new UUID and the zone to the default zone.
        public init(recordName: String = UUID().uuidString, zoneID: RecordZone.ID = .default) {
            self.recordName = recordName
            self.zoneID = zoneID
        }

        /// `recordName` (with `@zone` outside the default zone).
        public var description: String {
            zoneID.isDefault && zoneID.ownerName == RecordZone.ID.currentUserOwnerName ? recordName : "\(recordName)@\(zoneID)"
        }
    }
}
