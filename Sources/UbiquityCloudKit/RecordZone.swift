// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

/// A record zone (`CKRecordZone`): a named group of records in a database. The private
/// database has a default zone and any number of custom zones; custom zones support change
/// fetching and atomic batches. The public database has only the default zone.
public struct RecordZone: Sendable, Hashable, CustomStringConvertible {
    /// A zone's identity (`CKRecordZone.ID`): its name and its owner.
    public struct ID: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The owner name that stands for the signed-in user (`CKCurrentUserDefaultName`).
        public static let currentUserOwnerName = "__defaultOwner__"
        /// The default zone's name (`CKRecordZone.ID.defaultZoneName`).
        public static let defaultZoneName = WireZoneID.defaultZoneName

        /// The zone's name, unique in its database.
        public let zoneName: String
        /// The user record name of the zone's owner; ``currentUserOwnerName`` for the caller.
        public let ownerName: String

        /// Makes a zone ID. The owner defaults to the signed-in user.
        public init(zoneName: String = ID.defaultZoneName, ownerName: String = ID.currentUserOwnerName) {
            self.zoneName = zoneName
            self.ownerName = ownerName
        }

        /// The default zone of a database.
        public static let `default` = ID()

        /// Whether this is the default zone.
        public var isDefault: Bool { zoneName == ID.defaultZoneName }

        /// `zoneName` (and `:owner` when the owner is not the caller).
        public var description: String {
            ownerName == ID.currentUserOwnerName ? zoneName : "\(zoneName):\(ownerName)"
        }
    }

    /// What a zone can do (`CKRecordZone.Capabilities`).
    public struct Capabilities: OptionSet, Sendable, Hashable {
        /// The raw bits.
        public let rawValue: UInt
        /// Makes capabilities from raw bits.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// The zone supports fetching changes (`FetchRecordZoneChangesOperation`).
        public static let fetchChanges = Capabilities(rawValue: 1 << 0)
        /// Batches in the zone can be atomic (`ModifyRecordsOperation.isAtomic`).
        public static let atomic = Capabilities(rawValue: 1 << 1)
        /// The zone can be shared.
        public static let sharing = Capabilities(rawValue: 1 << 2)
        /// The whole zone can be shared.
        public static let zoneWideSharing = Capabilities(rawValue: 1 << 3)
    }

    /// The zone's identity.
    public let zoneID: ID
    /// What the zone supports (from the server, or the custom-zone defaults for a new zone).
    public var capabilities: Capabilities
    /// The zone's current change token as the server last reported it (a CKWS extra; nil for a
    /// zone made locally).
    public internal(set) var currentServerChangeToken: ServerChangeToken?

    /// A new custom zone with the given name, owned by the signed-in user.
    public init(zoneName: String) {
        self.init(zoneID: ID(zoneName: zoneName))
    }

    /// A zone with the given ID.
    public init(zoneID: ID) {
        self.zoneID = zoneID
        capabilities = zoneID.isDefault ? [] : [.fetchChanges, .atomic]
    }

    /// The default zone (`CKRecordZone.default()`).
    public static func `default`() -> RecordZone { RecordZone(zoneID: .default) }

    /// `RecordZone(name)`.
    public var description: String { "RecordZone(\(zoneID))" }
}

extension RecordZone.ID {
    /// The wire dictionary: the caller's own zones are sent without an owner.
    var wire: WireZoneID {
        WireZoneID(zoneName: zoneName, ownerRecordName: ownerName == RecordZone.ID.currentUserOwnerName ? nil : ownerName)
    }

    /// A zone ID from the wire (no owner means the caller).
    init(wire: WireZoneID) {
        self.init(zoneName: wire.zoneName, ownerName: wire.ownerRecordName ?? RecordZone.ID.currentUserOwnerName)
    }

    /// `self` when `wire` names the same zone (so results keep the IDs the caller used, whose
    /// owner may be the current-user placeholder), otherwise the zone the server named.
    func matching(_ wire: WireZoneID?) -> RecordZone.ID {
        guard let wire else { return self }
        if wire.zoneName == zoneName, wire.ownerRecordName == nil || ownerName == RecordZone.ID.currentUserOwnerName
            || wire.ownerRecordName == ownerName {
            return self
        }
        return RecordZone.ID(wire: wire)
    }
}

extension RecordZone {
    /// Reads a zone dictionary (`{"zoneID", "syncToken", "atomic"}`).
    init(json: JSONValue, requested: RecordZone.ID?) throws {
        let reader = try WireReader(json, path: "zone")
        guard let zoneJSON = try reader.value("zoneID") else { throw WireReader.missing("zone.zoneID", "a zone ID dictionary") }
        let wire = try WireZoneID(json: zoneJSON, path: "zone.zoneID")
        self.init(zoneID: requested?.matching(wire) ?? RecordZone.ID(wire: wire))
        if let atomic = try reader.bool("atomic") {
            if atomic { capabilities.insert(.atomic) } else { capabilities.remove(.atomic) }
        }
        currentServerChangeToken = try reader.string("syncToken").map(ServerChangeToken.init(rawValue:))
    }
}
