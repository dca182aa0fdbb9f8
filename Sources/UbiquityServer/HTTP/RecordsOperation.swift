// SPDX-License-Identifier: Apache-2.0

/// An operation of the `/database/1/…` endpoints: one route each (``RecordsRoutes``), named by
/// its path after the database (`records/modify`).
package enum RecordsOperation: String, CaseIterable, Sendable {
    case recordsModify = "records/modify"
    case recordsLookup = "records/lookup"
    case recordsQuery = "records/query"
    case recordsChanges = "records/changes"
    case zonesList = "zones/list"
    case zonesLookup = "zones/lookup"
    case zonesModify = "zones/modify"
    case zonesChanges = "zones/changes"
    case changesDatabase = "changes/database"
    case changesZone = "changes/zone"
    case usersCurrent = "users/current"
    case usersCaller = "users/caller"
    case usersDiscover = "users/discover"
    case usersLookupEmail = "users/lookup/email"
    case usersLookupID = "users/lookup/id"
    case usersLookupContacts = "users/lookup/contacts"
    case usersDiscoverability = "users/discoverability"
    case assetsUpload = "assets/upload"
    case assetsRereference = "assets/rereference"
    case subscriptionsList = "subscriptions/list"
    case subscriptionsLookup = "subscriptions/lookup"
    case subscriptionsModify = "subscriptions/modify"
    case tokensCreate = "tokens/create"
    case tokensRegister = "tokens/register"
    /// A Ubiquity extension: a synced document's server versions (`DocumentHistory`).
    case documentsVersions = "documents/versions"
    /// A Ubiquity extension: puts an earlier version back.
    case documentsVersionsRestore = "documents/versions/restore"
    /// A Ubiquity extension: Recently Deleted.
    case documentsTrash = "documents/trash"
    /// A Ubiquity extension: restores from Recently Deleted.
    case documentsTrashRestore = "documents/trash/restore"
    /// A Ubiquity extension: deletes from Recently Deleted for good.
    case documentsTrashDelete = "documents/trash/delete"

    /// Whether CloudKit documents the operation without a database segment (on the public
    /// database): `…/development/tokens/create`.
    var mayOmitDatabase: Bool { DatabasePath.databaseless.contains(rawValue) }
}
